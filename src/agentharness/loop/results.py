"""What each stage of ``bootcamp loop`` returns, as typed data.

Each stage's result is written to its completion marker (``round_k/<stage>.done``, with
``stage`` and ``round`` added) and read back from it on a resume, so a fresh run and a
resumed one see the same values; ``summary.json`` is a :class:`LoopSummary`. The
reports of the stages themselves (``mine.json``, ``compare.json``, the synthesis report)
are :class:`~agentharness.loop.mine.MineReport`,
:class:`~agentharness.loop.compare.CompareReport` and
:class:`~agentharness.loop.synthesize.SynthReport`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agentharness.loop.compare import CompareReport
from agentharness.loop.filter import FilterSummary
from agentharness.loop.synthesize import SynthReport


class _Result(BaseModel):
    # A marker also holds "stage" and "round"; older markers may hold more.
    model_config = ConfigDict(extra="ignore")


class EvalResult(_Result):
    """An evaluation stage (``heldout_before``, ``teacher``, ``heldout_after``)."""

    run: str = Field(description="the run directory")
    agent: str
    episodes: int
    ran: int = Field(description="episodes run by this invocation")
    resumed_past: int = Field(description="episodes already in the run")
    failed_to_generate: list[str] = Field(default_factory=list)
    mean_reward: float | None = None
    success_rate: float | None = None


class MineResult(_Result):
    episodes: int
    failures: int
    clusters: int


class SynthResult(_Result):
    instances: int
    report: SynthReport


class ExportResult(_Result):
    rows: int
    file: str


class TrainResult(_Result):
    trainer: str
    trained: bool
    model: str | None = Field(None, description="the trained model (OUT/final)")
    base: str | None = Field(None, description="the model training started from")
    reason: str | None = Field(None, description="why nothing was trained")


class CompareResult(_Result):
    """The headline of ``compare.json``: overall (or the one task) before -> after."""

    compared: bool
    reward_before: float | None = None
    reward_after: float | None = None
    delta: float | None = None
    ci: tuple[float, float] | None = None
    verdict: str | None = None

    @classmethod
    def of(cls, report: CompareReport) -> CompareResult:
        head = report.overall or report.tasks[0]
        return cls(
            compared=True,
            reward_before=head.reward.a,
            reward_after=head.reward.b,
            delta=head.reward.delta,
            ci=head.reward.ci,
            verdict=head.verdict,
        )


class RoundResult(BaseModel):
    """Every stage of one round (``heldout_before`` only in round 1)."""

    round: int
    heldout_before: EvalResult | None = None
    mine: MineResult
    synth: SynthResult
    teacher: EvalResult
    filter: FilterSummary
    export: ExportResult
    train: TrainResult
    heldout_after: EvalResult
    compare: CompareResult


class RoundSummary(BaseModel):
    """One round in ``summary.json``."""

    round: int
    failures: int
    clusters: int
    synthesized: int
    teacher_episodes: int
    kept: int
    sft_rows: int
    trained: bool
    compare: CompareResult

    @classmethod
    def of(cls, r: RoundResult) -> RoundSummary:
        return cls(
            round=r.round,
            failures=r.mine.failures,
            clusters=r.mine.clusters,
            synthesized=r.synth.instances,
            teacher_episodes=r.teacher.episodes,
            kept=r.filter.kept,
            sft_rows=r.export.rows,
            trained=r.train.trained,
            compare=r.compare,
        )


class LoopSummary(BaseModel):
    """``summary.json``: the headline numbers of every round."""

    out: str
    rounds: list[RoundSummary]


__all__ = [
    "CompareResult",
    "EvalResult",
    "ExportResult",
    "LoopSummary",
    "MineResult",
    "RoundResult",
    "RoundSummary",
    "SynthResult",
    "TrainResult",
]
