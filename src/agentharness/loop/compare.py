"""Compare two runs: per-task mean reward and success, deltas with bootstrap intervals.

The unit of resampling is the instance (``Instance.instance_id``): the samples of one
instance are averaged first, since they are not independent. When both runs hold the
same instances of a task the comparison is *paired* (the bootstrap resamples instances
and the per-instance differences B - A), which removes instance difficulty from the
noise; otherwise the runs are resampled independently. Intervals are percentile
bootstrap intervals from a seeded generator, so the same inputs and seed give the same
numbers. Deltas are B minus A (after minus before).
"""

from __future__ import annotations

import statistics
import zlib
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np
from pydantic import BaseModel, Field

from agentharness.core.registry import group_versions
from agentharness.loop.checks import LoopInputError
from agentharness.store.schema import EpisodeRecord

OVERALL = "overall"
# An instance counts as solved when at least half its samples are successes.
SOLVED_RATE = 0.5
TIE = 1e-9


class Delta(BaseModel):
    """One metric of one task in both runs."""

    a: float
    b: float
    delta: float
    ci: tuple[float, float] | None = Field(description="None with fewer than two instances")


class TaskComparison(BaseModel):
    task: str
    paired: bool
    instances_a: int
    instances_b: int
    common_instances: int
    episodes_a: int
    episodes_b: int
    reward: Delta
    success: Delta
    verdict: str = Field(description="better | worse | no clear change | too few instances")
    # Where a mean delta comes from: a few instances won big, or many won a little, and
    # whether B also lost instances A had. Paired comparisons only (None otherwise).
    wins: int | None = Field(None, description="instances whose mean reward is higher in B")
    losses: int | None = Field(None, description="instances whose mean reward is lower in B")
    solved_gained: int | None = Field(
        None, description="instances solved (success rate >= 0.5) in B but not in A"
    )
    solved_lost: int | None = Field(
        None, description="instances solved (success rate >= 0.5) in A but not in B"
    )

    def wins_text(self) -> str:
        """``+15 / -1 (solved +14 / -0)``, or ``-`` when unpaired."""
        if self.wins is None or self.losses is None:
            return "-"
        return f"+{self.wins} / -{self.losses} (solved +{self.solved_gained} / -{self.solved_lost})"


class CompareReport(BaseModel):
    run_a: str
    run_b: str
    agents_a: list[str]
    agents_b: list[str]
    seed: int
    n_boot: int
    confidence: float
    tasks: list[TaskComparison]
    overall: TaskComparison | None
    only_in_a: list[str]
    only_in_b: list[str]

    def summary_lines(self) -> list[str]:
        """Plain sentences, one per task."""
        pct = f"{self.confidence:.0%}"
        lines = [f"B = {self.run_b} vs A = {self.run_a} (deltas are B - A, {pct} bootstrap CI)"]
        for t in [*self.tasks, *([self.overall] if self.overall else [])]:
            ci = t.reward.ci
            ci_text = f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "(no interval)"
            how = "paired" if t.paired else "unpaired"
            lines.append(
                f"{t.task}: reward {t.reward.a:.3f} -> {t.reward.b:.3f} ({t.reward.delta:+.3f} "
                f"{ci_text}), success {t.success.a:.0%} -> {t.success.b:.0%}; "
                f"{how}, {t.instances_a}/{t.instances_b} instances: {t.verdict}"
                + (f"; instances B won / lost: {t.wins_text()}" if t.paired else "")
            )
        for name, only in (("A", self.only_in_a), ("B", self.only_in_b)):
            if only:
                lines.append(f"only in {name} (not compared): {', '.join(only)}")
        return lines


def bootstrap_delta_ci(
    a: Sequence[float],
    b: Sequence[float],
    *,
    paired: bool,
    rng: np.random.Generator,
    n_boot: int = 2000,
    confidence: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of mean(b) - mean(a).

    ``paired`` needs ``a[i]`` and ``b[i]`` to be the same unit; then the differences
    are resampled together. Returns ``None`` when a side has fewer than two values.
    """
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(xa) < 2 or len(xb) < 2:
        return None
    alpha = (1.0 - confidence) / 2
    if paired:
        if len(xa) != len(xb):
            raise ValueError("paired bootstrap needs equally long arrays")
        d = xb - xa
        idx = rng.integers(0, len(d), size=(n_boot, len(d)))
        stats = d[idx].mean(axis=1)
    else:
        ia = rng.integers(0, len(xa), size=(n_boot, len(xa)))
        ib = rng.integers(0, len(xb), size=(n_boot, len(xb)))
        stats = xb[ib].mean(axis=1) - xa[ia].mean(axis=1)
    lo, hi = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def _per_instance(records: Iterable[EpisodeRecord]) -> dict[str, tuple[float, float]]:
    """instance id -> (mean reward, success rate) over its samples."""
    acc: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        acc[r.instance.instance_id].append(r)
    return {
        iid: (
            statistics.fmean(r.reward.total for r in recs),
            statistics.fmean(float(r.reward.success) for r in recs),
        )
        for iid, recs in acc.items()
    }


def _compare_group(
    name: str,
    a: list[EpisodeRecord],
    b: list[EpisodeRecord],
    *,
    seed: int,
    n_boot: int,
    confidence: float,
) -> TaskComparison:
    ia, ib = _per_instance(a), _per_instance(b)
    common = sorted(set(ia) & set(ib))
    paired = set(ia) == set(ib)
    keys_a = common if paired else sorted(ia)
    keys_b = common if paired else sorted(ib)
    deltas: list[Delta] = []
    for m in (0, 1):
        va = [ia[k][m] for k in keys_a]
        vb = [ib[k][m] for k in keys_b]
        # One generator per (seed, group, metric): a task's interval does not depend on
        # which other tasks are in the runs.
        rng = np.random.default_rng([seed, zlib.crc32(name.encode()), m])
        ci = bootstrap_delta_ci(
            va, vb, paired=paired, rng=rng, n_boot=n_boot, confidence=confidence
        )
        ma, mb = statistics.fmean(va), statistics.fmean(vb)
        deltas.append(Delta(a=ma, b=mb, delta=mb - ma, ci=ci))
    ci = deltas[0].ci
    if ci is None:
        verdict = "too few instances"
    elif ci[0] > 0:
        verdict = "better"
    elif ci[1] < 0:
        verdict = "worse"
    else:
        verdict = "no clear change"
    counts: dict[str, int] = {}
    if paired:
        # differences within TIE are ties: means of the same samples differ only by rounding
        moved = [ib[k][0] - ia[k][0] for k in common]
        solved_a = {k for k in common if ia[k][1] >= SOLVED_RATE}
        solved_b = {k for k in common if ib[k][1] >= SOLVED_RATE}
        counts = {
            "wins": sum(d > TIE for d in moved),
            "losses": sum(d < -TIE for d in moved),
            "solved_gained": len(solved_b - solved_a),
            "solved_lost": len(solved_a - solved_b),
        }
    return TaskComparison(
        task=name,
        paired=paired,
        instances_a=len(ia),
        instances_b=len(ib),
        common_instances=len(common),
        episodes_a=len(a),
        episodes_b=len(b),
        reward=deltas[0],
        success=deltas[1],
        verdict=verdict,
        **counts,
    )


def check_same_versions(a: Iterable[EpisodeRecord], b: Iterable[EpisodeRecord]) -> None:
    """Raise when a task appears in different versions in the two runs."""
    va, vb = group_versions(r.task for r in a), group_versions(r.task for r in b)
    for name in sorted(set(va) & set(vb)):
        if va[name] != vb[name]:
            raise LoopInputError(
                f"task {name} is {', '.join(va[name])} in run A but {', '.join(vb[name])} in "
                "run B; different task versions differ in instances and rewards and cannot be "
                "compared. Evaluate both agents on the same version."
            )


def compare(
    records_a: Iterable[EpisodeRecord],
    records_b: Iterable[EpisodeRecord],
    *,
    seed: int = 0,
    n_boot: int = 2000,
    confidence: float = 0.95,
    run_a: str = "A",
    run_b: str = "B",
) -> CompareReport:
    """Per-task and overall comparison of two runs (see the module docstring)."""
    if not 0.5 <= confidence < 1.0:
        raise ValueError(f"confidence must be in [0.5, 1), got {confidence}")
    a, b = list(records_a), list(records_b)
    check_same_versions(a, b)
    by_a: dict[str, list[EpisodeRecord]] = defaultdict(list)
    by_b: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in a:
        by_a[r.task].append(r)
    for r in b:
        by_b[r.task].append(r)
    shared = sorted(set(by_a) & set(by_b))
    if not shared:
        raise LoopInputError(
            f"{run_a} and {run_b} have no task in common "
            f"(A: {', '.join(sorted(by_a)) or 'none'}; B: {', '.join(sorted(by_b)) or 'none'})"
        )

    def group(name: str, ga: list[EpisodeRecord], gb: list[EpisodeRecord]) -> TaskComparison:
        return _compare_group(name, ga, gb, seed=seed, n_boot=n_boot, confidence=confidence)

    tasks = [group(t, by_a[t], by_b[t]) for t in shared]
    overall = None
    if len(shared) > 1:
        overall = group(
            OVERALL,
            [r for t in shared for r in by_a[t]],
            [r for t in shared for r in by_b[t]],
        )
    return CompareReport(
        run_a=run_a,
        run_b=run_b,
        agents_a=sorted({r.agent for r in a}),
        agents_b=sorted({r.agent for r in b}),
        seed=seed,
        n_boot=n_boot,
        confidence=confidence,
        tasks=tasks,
        overall=overall,
        only_in_a=sorted(set(by_a) - set(by_b)),
        only_in_b=sorted(set(by_b) - set(by_a)),
    )


__all__ = [
    "CompareReport",
    "Delta",
    "TaskComparison",
    "bootstrap_delta_ci",
    "check_same_versions",
    "compare",
]
