"""Generator knobs, generically: bins for mining, neighbours and difficulty shifts for synthesis.

Every task's config is a pydantic model whose fields are the knobs, with bounds in their
``Field`` constraints and presets in ``spec.difficulties`` (ordered easiest first). This
module reads only that, so mining and synthesis work on every task, present and future.

Bins are a pure function of the task spec: a numeric knob is cut at the midpoints
between its distinct preset values, plus one bin beyond each end preset (half the gap to
the next preset away, or a quarter of the value when all presets agree). So bins read as
"around the easy preset", "beyond hard", and a small step usually stays in its bin.
Non-numeric knobs (bools, choices, tuples) bin by their exact value.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from dataclasses import dataclass
from typing import Any, cast

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, ValidationError

from agentharness.core.task import TaskSpec

INF = math.inf


def is_number(value: Any) -> bool:
    """An int or float knob value (bools are categorical)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fmt(x: float) -> str:
    # Whole numbers print whole (14500, not 1.45e+04); others to 4 significant digits.
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e12 else f"{x:.4g}"


@dataclass(frozen=True)
class KnobBins:
    """How one knob is binned. ``edges`` cut the line; bin i is [edges[i-1], edges[i])."""

    name: str
    numeric: bool
    integer: bool
    edges: tuple[float, ...]
    anchors: tuple[tuple[float, tuple[str, ...]], ...]  # preset value -> preset names
    lo: float | None
    hi: float | None

    def index(self, value: float) -> int:
        i = 0
        while i < len(self.edges) and value >= self.edges[i]:
            i += 1
        return i

    def interval(self, value: float) -> tuple[float, float]:
        """The [low, high) bounds of the bin ``value`` falls in (may be infinite)."""
        i = self.index(value)
        low = self.edges[i - 1] if i > 0 else -INF
        high = self.edges[i] if i < len(self.edges) else INF
        return low, high

    def label(self, value: Any) -> str:
        """A readable, exact bin label, e.g. ``[4,6.5) ~medium`` or ``>=9.5``."""
        if not self.numeric or not is_number(value):
            return json.dumps(value, separators=(",", ":"), sort_keys=True)
        low, high = self.interval(float(value))
        if low == -INF and high == INF:
            text = "any"
        elif low == -INF:
            text = f"<{_fmt(high)}"
        elif high == INF:
            text = f">={_fmt(low)}"
        else:
            text = f"[{_fmt(low)},{_fmt(high)})"
        names = [n for a, ns in self.anchors if low <= a < high for n in ns]
        return f"{text} ~{'/'.join(names)}" if names else text


def field_bounds(model: type[BaseModel], name: str) -> tuple[float | None, float | None]:
    """Inclusive-ish (low, high) bounds of a numeric field from its Field constraints."""
    lo: float | None = None
    hi: float | None = None
    for m in model.model_fields[name].metadata:
        if isinstance(m, Ge):
            lo = float(m.ge)  # type: ignore[arg-type]
        elif isinstance(m, Gt):
            lo = float(m.gt)  # type: ignore[arg-type]
        elif isinstance(m, Le):
            hi = float(m.le)  # type: ignore[arg-type]
        elif isinstance(m, Lt):
            hi = float(m.lt)  # type: ignore[arg-type]
    return lo, hi


def preset_configs(spec: TaskSpec) -> dict[str, dict[str, Any]]:
    """Full config (JSON form) of every difficulty preset, easiest first."""
    out: dict[str, dict[str, Any]] = {}
    for name in spec.difficulties:
        try:
            out[name] = spec.make_config(name).model_dump(mode="json")
        except ValueError:  # a broken preset must not break mining of the others
            continue
    return out


_CACHE: dict[str, tuple[TaskSpec, dict[str, KnobBins]]] = {}


def knob_bins(spec: TaskSpec) -> dict[str, KnobBins]:
    """The bins of every knob of ``spec`` (a pure function of the spec, cached per id)."""
    hit = _CACHE.get(spec.id)
    if hit is not None and hit[0] is spec:
        return hit[1]
    bins = _compute_bins(spec)
    _CACHE[spec.id] = (spec, bins)
    return bins


def _compute_bins(spec: TaskSpec) -> dict[str, KnobBins]:
    presets = preset_configs(spec)
    bins: dict[str, KnobBins] = {}
    for name, info in spec.config_model.model_fields.items():
        values = [p[name] for p in presets.values() if name in p]
        if values and all(is_number(v) for v in values):
            anchors: dict[float, list[str]] = {}
            for preset, cfg in presets.items():
                if name in cfg:
                    anchors.setdefault(float(cfg[name]), []).append(preset)
            points = sorted(anchors)
            integer = info.annotation is int or all(isinstance(v, int) for v in values)
            if len(points) > 1:
                w_low = (points[1] - points[0]) / 2
                w_high = (points[-1] - points[-2]) / 2
            else:
                w_low = w_high = abs(points[0]) * 0.25 or (1.0 if integer else 0.1)
            lo, hi = field_bounds(spec.config_model, name)
            mids = [(a + b) / 2 for a, b in itertools.pairwise(points)]
            edges = [points[0] - w_low, *mids, points[-1] + w_high]
            edges = [e for e in edges if (lo is None or e > lo) and (hi is None or e <= hi)]
            bins[name] = KnobBins(
                name=name,
                numeric=True,
                integer=integer,
                edges=tuple(edges),
                anchors=tuple((a, tuple(anchors[a])) for a in points),
                lo=lo,
                hi=hi,
            )
        else:
            bins[name] = KnobBins(
                name=name, numeric=False, integer=False, edges=(), anchors=(), lo=None, hi=None
            )
    return bins


def config_bins(spec: TaskSpec, config: dict[str, Any]) -> dict[str, str]:
    """Bin label of every knob of ``config`` (in the config model's field order)."""
    bins = knob_bins(spec)
    return {
        name: bins[name].label(config[name]) if name in config else "n/a"
        for name in spec.config_model.model_fields
    }


def off_preset(spec: TaskSpec, difficulty: str, bins: dict[str, str]) -> dict[str, str]:
    """The knobs whose bin differs from the ``difficulty`` preset's (all of them if unknown)."""
    presets = preset_configs(spec)
    if difficulty not in presets:
        return dict(bins)
    reference = config_bins(spec, presets[difficulty])
    return {k: v for k, v in bins.items() if reference.get(k) != v}


def _clip(value: float, kb: KnobBins) -> float:
    if kb.lo is not None:
        value = max(kb.lo, value)
    if kb.hi is not None:
        value = min(kb.hi, value)
    return value


def _tidy(value: float, integer: bool) -> int | float:
    return round(value) if integer else float(f"{value:.6g}")


def validated(spec: TaskSpec, config: dict[str, Any]) -> dict[str, Any] | None:
    """``config`` checked by the task's config model (JSON form), or ``None`` if rejected."""
    try:
        return spec.config_model.model_validate(config).model_dump(mode="json")
    except (ValidationError, ValueError, TypeError):
        return None


def neighbour_config(
    spec: TaskSpec, config: dict[str, Any], rng: random.Random, attempts: int = 8
) -> dict[str, Any]:
    """A config next to ``config`` in the same bins: ints move one step, floats ~10%.

    Each numeric knob moves with probability 1/2 (at least one moves); a move that would
    leave the knob's bin or break the config model is not taken. When no move works the
    config comes back unchanged (the neighbour then differs by its seed only).
    """
    bins = knob_bins(spec)
    numeric = [k for k in bins if bins[k].numeric and is_number(config.get(k))]
    target = config_bins(spec, config)
    for _ in range(attempts if numeric else 0):
        new = dict(config)
        chosen = [k for k in numeric if rng.random() < 0.5] or [rng.choice(numeric)]
        for k in chosen:
            kb, v = bins[k], float(config[k])
            if kb.integer:
                steps = [v + 1, v - 1]
            else:
                mag = rng.uniform(0.04, 0.12)
                steps = [v * (1 + mag), v * (1 - mag)] if v else [mag, -mag]
            rng.shuffle(steps)
            for step in steps:
                candidate = _tidy(_clip(step, kb), kb.integer)
                if candidate != config[k] and kb.label(candidate) == kb.label(config[k]):
                    new[k] = candidate
                    break
        checked = validated(spec, new)
        if checked is not None and checked != config and config_bins(spec, checked) == target:
            return checked
    return dict(config)


def difficulty_index(spec: TaskSpec, difficulty: str) -> int:
    """Position of ``difficulty`` among the presets (the middle one if unknown)."""
    names = list(spec.difficulties)
    return names.index(difficulty) if difficulty in names else (len(names) - 1) // 2


def shifted_config(
    spec: TaskSpec,
    config: dict[str, Any],
    difficulty: str,
    direction: int,
    fraction: float = 0.5,
) -> dict[str, Any] | None:
    """``config`` moved toward the next harder (``direction=1``) or easier (-1) preset.

    Each numeric knob (and each element of equal-length numeric lists) moves by
    ``fraction`` of the step between the difficulty's preset and the next one; past the
    last preset the previous step is extrapolated. Ints move at least one unit when
    their presets differ; values stay within the field bounds. Non-numeric knobs change
    only when no numeric knob could. Returns ``None`` when no valid, different config
    results (e.g. the knobs are already at their bounds).
    """
    presets = list(preset_configs(spec).values())
    if len(presets) < 2:
        return None
    i = difficulty_index(spec, difficulty)
    j = i + direction
    if 0 <= j < len(presets):
        start, end = presets[i], presets[j]
    else:  # beyond the ends: extrapolate the last step
        start, end = presets[i - direction], presets[i]
    bins = knob_bins(spec)
    for frac in (fraction, fraction / 2):
        new = dict(config)
        for k, v in config.items():
            a, b = start.get(k), end.get(k)
            if k in bins and is_number(v) and is_number(a) and is_number(b):
                delta = float(cast(float, b)) - float(cast(float, a))
                new[k] = _shift(float(v), delta, frac, bins[k])
            elif (
                isinstance(v, list)
                and isinstance(a, list)
                and isinstance(b, list)
                and len(v) == len(a) == len(b)
                and all(is_number(x) for x in [*v, *a, *b])
            ):
                integer = all(isinstance(x, int) for x in v)
                new[k] = [
                    _tidy(float(x) + frac * (float(y1) - float(y0)), integer)
                    for x, y0, y1 in zip(v, a, b, strict=True)
                ]
        if new == config and 0 <= j < len(presets):
            new.update({k: end[k] for k in config if k in end and not is_number(config[k])})
        checked = validated(spec, new)
        if checked is not None and checked != config:
            return checked
    return None


def _shift(v: float, delta: float, frac: float, kb: KnobBins) -> int | float:
    if delta == 0:
        return _tidy(v, kb.integer)
    step = frac * delta
    if kb.integer:
        step = math.copysign(max(1, round(abs(step))), step)
    return _tidy(_clip(v + step, kb), kb.integer)


__all__ = [
    "KnobBins",
    "config_bins",
    "difficulty_index",
    "field_bounds",
    "knob_bins",
    "neighbour_config",
    "off_preset",
    "preset_configs",
    "shifted_config",
    "validated",
]
