"""Per-task summaries of a run: the figures ``bootcamp report`` prints, as typed data."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from math import comb

from pydantic import BaseModel, ConfigDict, Field, RootModel

from agentharness.store.schema import EpisodeRecord


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples with ``c`` successes (Chen et al., 2021)."""
    if k > n:
        k = n
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


class TaskSummary(BaseModel):
    """One versioned task of a run."""

    model_config = ConfigDict(frozen=True)

    task: str = Field(description="versioned task id")
    episodes: int
    instances: int
    mean_reward: float
    success_rate: float
    k: int = Field(description="most samples of one instance")
    pass_at: dict[int, float] = Field(
        description="unbiased pass@n for n in {1, k}, over the task's instances"
    )
    mean_turns: float
    tool_errors: int
    format_errors: int
    end_reasons: dict[str, int] = Field(description="most frequent first")
    difficulties: dict[str, int]
    agents: list[str]
    tokens: int

    @property
    def pass_at_k(self) -> float:
        """pass@k at this task's ``k``."""
        return self.pass_at[self.k]


class RunSummary(RootModel[dict[str, TaskSummary]]):
    """Every task of a run (or of records pooled from several), by versioned task id in
    sorted order; its JSON is that mapping (what ``bootcamp report --json`` prints)."""

    model_config = ConfigDict(frozen=True)

    @property
    def tasks(self) -> list[TaskSummary]:
        return list(self.root.values())

    @property
    def episodes(self) -> int:
        return sum(t.episodes for t in self.root.values())

    def task(self, task_id: str) -> TaskSummary | None:
        """The summary of ``task_id`` (versioned), if the run holds it."""
        return self.root.get(task_id)


def _task_summary(task: str, recs: list[EpisodeRecord]) -> TaskSummary:
    by_instance: dict[str, list[bool]] = defaultdict(list)
    for r in recs:
        by_instance[r.instance.instance_id].append(r.reward.success)
    k = max(len(v) for v in by_instance.values())
    return TaskSummary(
        task=task,
        episodes=len(recs),
        instances=len(by_instance),
        mean_reward=statistics.fmean(r.reward.total for r in recs),
        success_rate=statistics.fmean(float(r.reward.success) for r in recs),
        k=k,
        pass_at={
            n: statistics.fmean(pass_at_k(len(v), sum(v), n) for v in by_instance.values())
            for n in sorted({1, k})
        },
        mean_turns=statistics.fmean(r.turns for r in recs),
        tool_errors=sum(r.tool_errors for r in recs),
        format_errors=sum(r.format_errors for r in recs),
        end_reasons=dict(Counter(r.end_reason for r in recs).most_common()),
        difficulties=dict(Counter(r.difficulty for r in recs)),
        agents=sorted({r.agent for r in recs}),
        tokens=sum(r.usage.total_tokens for r in recs),
    )


def summarize(records: Iterable[EpisodeRecord]) -> RunSummary:
    """Per task: episodes, instances, mean reward, success rate, pass@1/pass@k, end reasons."""
    by_task: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        by_task[r.task].append(r)
    return RunSummary({task: _task_summary(task, recs) for task, recs in sorted(by_task.items())})


__all__ = ["RunSummary", "TaskSummary", "pass_at_k", "summarize"]
