"""Mine failures: group failed episodes into clusters that say what fails and how often.

A failure is an episode whose reward says ``success=False``. A cluster is the set of
failures sharing one key:

    (task, difficulty, binned generator knobs, end reason, weakest reward component)

The first three are the *conditions* (what the agent was asked to do); the last two
are *how* it failed. A cluster's ``rate`` is its failures over all episodes under the
same conditions, so "35% of medium escape-room episodes ran out of turns with the
outcome component weakest" reads straight off it. Marginal tables (by task, by
difficulty, by end reason, by weakest component, by knob bin) back the clusters up.

Mining is a pure function of the records: they are sorted by episode id first, so the
order in which a concurrent run appended them does not matter.
"""

from __future__ import annotations

import hashlib
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from agentharness.core.registry import UnknownTaskError, get_task
from agentharness.core.reward import Reward
from agentharness.loop.knobs import config_bins, off_preset
from agentharness.store.schema import EpisodeRecord

NO_COMPONENT = "none"


class Example(BaseModel):
    """A failed episode shown as an example of its cluster."""

    episode_id: str
    instance_id: str
    seed: int
    reward: float
    turns: int
    explanation: str = ""


class FailureCluster(BaseModel):
    """Failures under the same conditions that ended the same way."""

    id: str = Field(description="Stable short hash of the key.")
    key: str = Field(description="task|difficulty|knob=bin;...|end_reason|weakest")
    task: str
    difficulty: str
    params: dict[str, str] = Field(description="Bin of every generator knob.")
    off_preset: dict[str, str] = Field(
        description="Knobs whose bin differs from the difficulty's preset."
    )
    end_reason: str
    weakest: str = Field(description="Reward component with the lowest value.")
    failures: int
    episodes: int = Field(description="Episodes under the same conditions (failed or not).")
    rate: float = Field(description="failures / episodes under these conditions")
    share: float = Field(description="failures / all failures mined")
    mean_reward: float
    examples: list[Example]
    episode_ids: list[str]
    instance_ids: list[str]

    @property
    def conditions(self) -> str:
        knobs = ", ".join(f"{k} {v}" for k, v in self.off_preset.items()) or "preset knobs"
        return f"{self.task} {self.difficulty} ({knobs})"


class GroupStat(BaseModel):
    """Failures of one group (a task, an end reason, a knob bin, ...)."""

    group: str
    episodes: int
    failures: int
    rate: float


class MineReport(BaseModel):
    """Everything ``bootcamp mine`` prints, as data."""

    runs: list[str] = Field(default_factory=list)
    episodes: int
    failures: int
    failure_rate: float
    by_task: list[GroupStat]
    by_difficulty: list[GroupStat]
    by_end_reason: list[GroupStat]
    by_weakest: list[GroupStat] = Field(description="among failures only")
    by_knob: list[GroupStat] = Field(description="knobs that vary within a task")
    clusters: list[FailureCluster]
    warnings: list[str] = Field(default_factory=list)

    def summary_lines(self, top: int = 10) -> list[str]:
        """Plain sentences: what fails and how often."""
        if not self.episodes:
            return ["No episodes to mine."]
        lines = [
            f"{self.failures} of {self.episodes} episodes failed "
            f"({self.failure_rate:.0%}) in {len(self.clusters)} cluster(s)."
        ]
        for s in self.by_difficulty:
            lines.append(f"  {s.group}: {s.failures} of {s.episodes} failed ({s.rate:.0%}).")
        for i, c in enumerate(self.clusters[:top], 1):
            lines.append(
                f"#{i} [{c.id}] {c.failures} failure(s), {c.rate:.0%} of {c.episodes} episode(s) "
                f"on {c.conditions}: ended '{c.end_reason}', weakest component "
                f"'{c.weakest}', mean reward {c.mean_reward:.2f}."
            )
            for ex in c.examples:
                why = f" - {ex.explanation}" if ex.explanation else ""
                lines.append(f"     e.g. {ex.episode_id} (reward {ex.reward:.2f}){why}")
        if len(self.clusters) > top:
            lines.append(f"... and {len(self.clusters) - top} more cluster(s) (see --json).")
        return lines


def weakest_component(reward: Reward) -> str:
    """The component with the lowest value; ties go to the one listed first (the gate)."""
    if not reward.components:
        return NO_COMPONENT
    return min(reward.components, key=lambda c: c.value).name


def is_failure(record: EpisodeRecord) -> bool:
    """A failure is an episode its reward does not call a success."""
    return not record.reward.success


def conditions_of(record: EpisodeRecord) -> tuple[str, str, dict[str, str]]:
    """(task, difficulty, knob bins) of an episode; bins are empty for unknown tasks."""
    try:
        spec = get_task(record.task)
    except UnknownTaskError:
        return record.task, record.difficulty, {}
    return record.task, record.difficulty, config_bins(spec, record.instance.config)


def _params_key(bins: dict[str, str]) -> str:
    return ";".join(f"{k}={v}" for k, v in bins.items())


def cluster_id(key: str) -> str:
    """A short id of a cluster key, stable across runs (provenance refers to it)."""
    return "c" + hashlib.sha256(key.encode()).hexdigest()[:8]


def _stat(group: str, episodes: int, failures: int) -> GroupStat:
    return GroupStat(
        group=group,
        episodes=episodes,
        failures=failures,
        rate=failures / episodes if episodes else 0.0,
    )


def _stats(counts: dict[str, list[int]]) -> list[GroupStat]:
    rows = [_stat(g, n, f) for g, (n, f) in counts.items()]
    return sorted(rows, key=lambda s: (-s.failures, -s.rate, s.group))


def mine(
    records: Iterable[EpisodeRecord],
    *,
    examples: int = 3,
    runs: Sequence[str] = (),
    warnings: Sequence[str] = (),
) -> MineReport:
    """Cluster the failures of ``records`` (see the module docstring)."""
    recs = sorted(records, key=lambda r: r.episode_id)
    conds: dict[str, tuple[str, str, dict[str, str]]] = {}
    group_sizes: Counter[str] = Counter()
    by_task: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_diff: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_end: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_weak: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    knob_values: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    failed: dict[str, list[EpisodeRecord]] = defaultdict(list)
    cluster_meta: dict[str, tuple[str, str, str, dict[str, str], str, str]] = {}

    for r in recs:
        task, difficulty, bins = conds[r.episode_id] = conditions_of(r)
        cond_key = f"{task}|{difficulty}|{_params_key(bins)}"
        group_sizes[cond_key] += 1
        fail = is_failure(r)
        for table, name in (
            (by_task, task),
            (by_diff, f"{task} / {difficulty}"),
            (by_end, r.end_reason),
        ):
            table[name][0] += 1
            table[name][1] += fail
        for knob, label in bins.items():
            knob_values[task][knob].add(label)
        if fail:
            weakest = weakest_component(r.reward)
            by_weak[weakest][0] += 1
            by_weak[weakest][1] += 1
            key = f"{cond_key}|{r.end_reason}|{weakest}"
            failed[key].append(r)
            cluster_meta[key] = (cond_key, task, difficulty, bins, r.end_reason, weakest)

    by_knob: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in recs:
        task, _, bins = conds[r.episode_id]
        for knob, label in bins.items():
            if len(knob_values[task][knob]) > 1:
                by_knob[f"{task}: {knob} {label}"][0] += 1
                by_knob[f"{task}: {knob} {label}"][1] += is_failure(r)

    n_fail = sum(len(v) for v in failed.values())
    clusters: list[FailureCluster] = []
    for key, members in failed.items():
        cond_key, task, difficulty, bins, end_reason, weakest = cluster_meta[key]
        try:
            off = off_preset(get_task(task), difficulty, bins)
        except UnknownTaskError:
            off = {}
        clusters.append(
            FailureCluster(
                id=cluster_id(key),
                key=key,
                task=task,
                difficulty=difficulty,
                params=bins,
                off_preset=off,
                end_reason=end_reason,
                weakest=weakest,
                failures=len(members),
                episodes=group_sizes[cond_key],
                rate=len(members) / group_sizes[cond_key],
                share=len(members) / n_fail,
                mean_reward=statistics.fmean(m.reward.total for m in members),
                examples=[
                    Example(
                        episode_id=m.episode_id,
                        instance_id=m.instance.instance_id,
                        seed=m.seed,
                        reward=m.reward.total,
                        turns=m.turns,
                        explanation=m.reward.explanation[:200],
                    )
                    for m in members[:examples]
                ],
                episode_ids=[m.episode_id for m in members],
                instance_ids=sorted({m.instance.instance_id for m in members}),
            )
        )
    clusters.sort(key=lambda c: (-c.failures, -c.rate, c.key))
    return MineReport(
        runs=list(runs),
        episodes=len(recs),
        failures=n_fail,
        failure_rate=n_fail / len(recs) if recs else 0.0,
        by_task=_stats(by_task),
        by_difficulty=_stats(by_diff),
        by_end_reason=_stats(by_end),
        by_weakest=_stats(by_weak),
        by_knob=_stats(by_knob),
        clusters=clusters,
        warnings=list(warnings),
    )


def report_dict(report: MineReport) -> dict[str, Any]:
    """The JSON form written to ``mine.json`` and printed by ``mine --json``."""
    return report.model_dump(mode="json")


__all__ = [
    "Example",
    "FailureCluster",
    "GroupStat",
    "MineReport",
    "cluster_id",
    "conditions_of",
    "is_failure",
    "mine",
    "report_dict",
    "weakest_component",
]
