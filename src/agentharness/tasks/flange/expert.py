"""The privileged expert, and the strongest policy without the drawing (``blind_policy``).

The expert reads the drawing's numbers from the hidden data (it cannot see images),
takes the cheapest design meeting the limit and the stress allowable over the permitted
materials and valid bolt patterns (the generator's search,
:func:`~agentharness.tasks.flange.simulator.cheapest_design`), checks it with ``analyze``
and ``cost`` on the dimensions and load it read, and submits it.

The stage is read from which of its own calls already have successful results in the
conversation (``message.outcome``, not the text), so random calls interleaved by a
``noisy`` agent do not derail it.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.tasks.flange.config import FlangeConfig
from agentharness.tasks.flange.generator import FlangeGenerator, design_of
from agentharness.tasks.flange.problem import Hidden, Solution
from agentharness.tasks.flange.simulator import (
    BOLTS,
    MATERIALS,
    DesignError,
    Geometry,
    analyze,
    cost,
    valid_patterns,
)

ANALYZE_ID = "flange_analyze"
COST_ID = "flange_cost"
SUBMIT_ID = "flange_submit"


def reading_args(geom: Geometry) -> dict[str, Any]:
    """The drawing data as the analyze/cost tools take it."""
    return {
        "outer_diameter": geom.outer_d,
        "bore_diameter": geom.bore_d,
        "bolt_circle_diameter": geom.bcd,
        "load_kn": round(geom.load_n / 1000.0, 3),
    }


class _Staged:
    """Analyze, cost, submit: each stage once it has a successful result of the last."""

    def __init__(self, design: dict[str, Any], reading: dict[str, Any]) -> None:
        self.design = design
        self.reading = reading
        self.n = 0

    def _call(self, text: str | None, call_id: str, name: str) -> Message:
        self.n += 1
        args = self.design if name == "submit_design" else {**self.design, **self.reading}
        return assistant(text, tool_calls=[ToolCall.make(f"{call_id}_{self.n}", name, args)])

    @staticmethod
    def _stages(messages: list[Message]) -> dict[str, bool]:
        """For each stage (a call id without its counter): has one of its calls succeeded?"""
        done: dict[str, bool] = {}
        for m in messages:
            if m.role == "tool" and m.tool_call_id:
                stage = m.tool_call_id.rsplit("_", 1)[0]
                ok = m.outcome is not None and not m.outcome.is_error
                done[stage] = done.get(stage, False) or ok
        return done


class FlangeExpert(_Staged):
    """Analyze, cost and submit the cheapest feasible design."""

    def __init__(self, instance: Instance) -> None:
        self.hidden = instance.hidden_as(Hidden)
        self.solution: dict[str, Any] = self.hidden.solution.model_dump()
        super().__init__(self.solution, reading_args(self.hidden.geometry()))

    def _reading(self) -> str:
        h = self.hidden
        d = h.drawing
        if d.load_as_pressure:
            load = (
                f"design pressure p = {d.pressure_mpa:g} MPa on the bore, so the end load is "
                f"F = p*pi*{d.bore_d:g}^2/4 = {h.load_n / 1000:.1f} kN"
            )
        else:
            load = f"axial load F = {d.load_kn:g} kN on the bore edge"
        patterns = valid_patterns(h.geometry())
        sizes = sorted({b for _, b in patterns})
        s = h.solution
        labels = ", ".join(MATERIALS[m].label.lower() for m in d.permitted)
        return (
            f"From drawing {d.number}: outer diameter {d.outer_d:g} mm, bolt circle "
            f"{d.bcd:g} mm, bore {d.bore_d:g} mm; {load}; displacement limit "
            f"{d.limit_mm:g} mm (note 4); unit cost limit ${d.budget_usd:.2f} (note 5); "
            f"permitted materials: {labels}. The edge distances allow bolt sizes "
            f"M{', M'.join(str(x) for x in sizes)}. For each permitted material and valid bolt "
            "pattern I take the thinnest plate meeting the limit and the stress allowable and "
            f"cost it; the cheapest is t = {s.thickness:g} mm {s.material} with "
            f"{s.n_bolts} x M{s.bolt_diameter}. Let me verify it."
        )

    def next_turn(self, messages: list[Message]) -> Message:
        done = self._stages(messages)
        if not done.get(ANALYZE_ID):
            return self._call(self._reading(), ANALYZE_ID, "analyze")
        if not done.get(COST_ID):
            return self._call(
                "The displacement and stress checks pass. Now the cost against the drawing's "
                "limit.",
                COST_ID,
                "cost",
            )
        return self._call(
            "The displacement limit, the stress allowable and the cost limit are met with a "
            f"permitted material. Submitting {json.dumps(self.solution)}.",
            SUBMIT_ID,
            "submit_design",
        )


# -- blind: the strongest policy without the drawing -------------------------------------

PRIOR_SEEDS = range(7_000_000, 7_000_040)  # never evaluated by tests or the check
_THICKNESSES = (6.0, 8.0, 10.0, 12.0, 15.0, 18.0, 22.0, 26.0, 30.0, 36.0, 42.0, 50.0)


def _conforms(hidden: Hidden, design: Solution) -> bool:
    """Whether ``design`` meets every requirement of a sampled drawing."""
    if design.material not in hidden.permitted:
        return False
    geom = hidden.geometry()
    try:
        des = design_of(design.model_dump())
        result = analyze(geom, des)
        total = cost(geom, des).total
    except DesignError:
        return False
    return (
        result.max_displacement <= hidden.limit_mm
        and result.stress_ok
        and total <= hidden.budget_usd
    )


@dataclass(frozen=True)
class Prior:
    """The best constant design over sampled drawings, and the median drawing data."""

    design: Solution
    share: float  # of the sampled drawings the design conforms to
    outer_d: float
    bore_d: float
    bcd: float
    load_kn: float

    def reading(self) -> dict[str, Any]:
        """The median drawing data as the analyze/cost tools take it."""
        return {
            "outer_diameter": self.outer_d,
            "bore_diameter": self.bore_d,
            "bolt_circle_diameter": self.bcd,
            "load_kn": round(self.load_kn, 3),
        }


@lru_cache(maxsize=16)
def prior_design(config_json: str) -> Prior:
    """The single design that conforms to the most drawings sampled from the generator.

    Also the share of sampled drawings it conforms to, and the median drawing data (what
    a guess of the unseen drawing would pass to the tools). Candidates: every sampled
    drawing's cheapest design, and a grid of materials, bolt patterns and thicknesses.
    """
    config = FlangeConfig.model_validate_json(config_json)
    gen = FlangeGenerator()
    hidden = [Hidden.model_validate(gen.generate(config, seed).hidden) for seed in PRIOR_SEEDS]
    candidates = [h.solution for h in hidden]
    patterns = sorted({(s.n_bolts, s.bolt_diameter) for s in candidates})
    for material in MATERIALS:
        for n, d in patterns:
            for t in _THICKNESSES:
                candidates.append(
                    Solution(thickness=t, material=material, n_bolts=n, bolt_diameter=d)
                )
    scored = [
        (sum(_conforms(h, c) for h in hidden) / len(hidden), i) for i, c in enumerate(candidates)
    ]
    share, best = max(scored)
    return Prior(
        design=candidates[best],
        share=share,
        outer_d=statistics.median(h.drawing.outer_d for h in hidden),
        bore_d=statistics.median(h.drawing.bore_d for h in hidden),
        bcd=statistics.median(h.drawing.bcd for h in hidden),
        load_kn=statistics.median(h.load_n / 1000.0 for h in hidden),
    )


class FlangeBlind(_Staged):
    """The strongest policy I can write without the drawing (the ``blind_policy``).

    The text holds nothing instance-specific but the drawing number, and the tools only
    compute on the numbers passed in, so there is nothing to probe: it submits the one
    design that conforms to the most drawings sampled from the generator (the best
    constant answer over the prior), after the analyze and cost an engineer would run on
    a median drawing. Against v2 the same slot held the real attack: read the radial
    span, bolt circle, rim and load out of the tools' error messages and
    ``bolt_stress_mpa``, then submit the stiffest design of one material within the
    budget the text gave.
    """

    def __init__(self, instance: Instance) -> None:
        config = FlangeConfig.model_validate(instance.config)
        prior = prior_design(config.model_dump_json())
        self.share = prior.share
        design = prior.design
        if design.bolt_diameter not in BOLTS:  # pragma: no cover - candidates are valid
            design = design.model_copy(update={"bolt_diameter": 16})
        super().__init__(design.model_dump(), prior.reading())

    def next_turn(self, messages: list[Message]) -> Message:
        done = self._stages(messages)
        if not done.get(ANALYZE_ID) and self.n == 0:
            return self._call(
                "I cannot read the drawing; I assume a typical flange and check the design "
                "that fits the most drawings of this kind.",
                ANALYZE_ID,
                "analyze",
            )
        if not done.get(COST_ID) and self.n == 1:
            return self._call(None, COST_ID, "cost")
        return self._call(
            f"Submitting {json.dumps(self.design)} (it fits about {100 * self.share:.0f}% of "
            "sampled drawings).",
            SUBMIT_ID,
            "submit_design",
        )
