"""Expert corrections of a policy's own episodes: SFT rows in the states the policy reaches.

A model trained on expert conversations only ever saw the expert's states. Once it errs it
is somewhere the teacher never was, and the data holds no example of what to do there:
SmolLM2 after SFT on escape_room-v1's expert read the clue, walked into the locked door
without picking up the key on the floor, and tried the same door for the rest of its 14
turns in all 40 held-out episodes; the expert never walks into a locked door, so no
conversation shows what to do after one. Labelling the policy's own states with the
expert's action is DAgger (Ross, Gordon and Bagnell, 2011); this is that step over logs:

1. each *unsolved* episode of the runs is replayed turn by turn (its recorded assistant
   turns stepped through a fresh environment under the task's own budget); when the replay
   does not reproduce the logged conversation the episode is dropped (``not_replayable``);
2. at each of its assistant turns ``k``, the task's expert, fresh, reads the conversation
   before that turn and plays on to the end;
3. when that continuation solves the instance, the conversation before turn ``k`` and the
   expert's turn ``k`` become one per-turn SFT row (``prompt`` + ``completion``, the layout
   of ``bootcamp export sft --per-turn``: trained on the completion only, so the policy's
   own wrong turns are context, never targets).

The continuation must *solve*, not score: its reward is lower than a clean expert
episode's wherever the task pays for efficiency, and the policy's wasted turns are not the
expert's. Experts decide from the visible conversation (the noisy agent relies on it), so
a row's completion is imitable from its prompt. How useful a row is depends on how the
task's expert reads a foreign state: escape_room's replays every call that succeeded and
plans on from there, while an expert that tracks its own calls (robot_reach's search
restarts from ``start_poses`` after a policy's ``dls_step``) labels a restart. The
report's ``agreed`` (rows whose expert turn makes the calls the policy made) and the rows
per task say which case a run is in. A pure function over logs plus the tasks: same runs,
same rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentharness.core.episode import Episode, ToolCallRecord
from agentharness.core.registry import UnknownTaskError, episode_for, get_task
from agentharness.export.sft import TOOL_FORMATS, ToolFormat, sft_rows
from agentharness.loop.checks import LoopInputError
from agentharness.store.schema import EpisodeRecord, Timings

DROP_REASONS = (
    "unknown_task",
    "not_replayable",
    "no_expert",
    "expert_error",
    "expert_unsolved",
    "agrees",
)


class CorrectionReport(BaseModel):
    """What a correction pass read, wrote and passed over."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    episodes: int = Field(description="episodes read")
    corrected: int = Field(description="unsolved episodes, whose turns were relabelled")
    rows: int = Field(description="SFT rows written: one per relabelled turn")
    rows_by_task: dict[str, int] = Field(description="rows per task id")
    agreed: int = Field(description="rows kept whose expert turn makes the calls the policy made")
    dropped: dict[str, int] = Field(
        description="turns (whole episodes for unknown_task, not_replayable and no_expert) "
        "left out, by reason"
    )

    def line(self) -> str:
        dropped = ", ".join(f"{n} {why}" for why, n in self.dropped.items() if n) or "none"
        tasks = ", ".join(f"{t} {n}" for t, n in sorted(self.rows_by_task.items())) or "none"
        return (
            f"{self.rows} correction rows ({tasks}) from {self.corrected} unsolved of "
            f"{self.episodes} episodes; the expert made the policy's calls in {self.agreed}; "
            f"dropped: {dropped}"
        )


def correction_rows(
    records: Sequence[EpisodeRecord],
    *,
    tool_format: ToolFormat = "text",
    only_disagreeing: bool = False,
    max_per_episode: int | None = None,
) -> tuple[list[dict[str, Any]], CorrectionReport]:
    """Per-turn SFT rows labelling the states of the unsolved episodes in ``records`` with
    the expert's actions, and the report (see the module docstring).

    ``only_disagreeing`` leaves out turns where the expert makes the calls the policy made
    (dropped as ``agrees``: they teach what the policy already does); ``max_per_episode``
    keeps an episode's first rows only (a policy that loops reaches a dozen states with
    the same correction, and the first is where it went wrong).
    """
    if tool_format not in TOOL_FORMATS:
        raise LoopInputError(
            f"tool format must be one of {', '.join(TOOL_FORMATS)}, got {tool_format!r}"
        )
    if max_per_episode is not None and max_per_episode < 1:
        raise LoopInputError(f"max_per_episode must be at least 1, got {max_per_episode}")
    rows: list[dict[str, Any]] = []
    dropped: Counter[str] = Counter({why: 0 for why in DROP_REASONS})
    by_task: Counter[str] = Counter()
    corrected = agreed = 0
    for record in sorted(records, key=lambda r: r.episode_id):
        if record.reward.success:
            continue
        corrected += 1
        turns = sum(m.role == "assistant" for m in record.messages)
        if not turns:
            continue  # the policy never acted: nothing of its to relabel
        try:
            spec = get_task(record.task)
        except UnknownTaskError:  # a retired version's log: its episodes cannot be replayed
            dropped["unknown_task"] += 1
            continue
        if spec.expert is None:
            dropped["no_expert"] += 1
            continue
        if not _replays(record):
            dropped["not_replayable"] += 1
            continue
        kept = 0
        for k in range(1, turns + 1):
            if max_per_episode is not None and kept >= max_per_episode:
                break
            outcome = _expert_from(record, k - 1)
            if isinstance(outcome, str):
                dropped[outcome] += 1
                continue
            if not outcome.reward().success:
                dropped["expert_unsolved"] += 1
                outcome.close()
                continue
            fixed = _record_of(outcome, record)
            outcome.close()
            (row,) = [
                r
                for r in sft_rows([fixed], per_turn=True, tool_format=tool_format)
                if r["turn"] == k
            ]
            same = _calls(fixed.tool_calls, k) == _calls(record.tool_calls, k)
            if same and only_disagreeing:
                dropped["agrees"] += 1
                continue
            agreed += same
            kept += 1
            by_task[record.task] += 1
            rows.append(
                {
                    **row,
                    "corrects": record.episode_id,
                    "policy": record.agent,
                    "policy_reward": record.reward.total,
                    "expert_agrees": same,
                }
            )
    report = CorrectionReport(
        episodes=len(records),
        corrected=corrected,
        rows=len(rows),
        rows_by_task=dict(by_task),
        agreed=agreed,
        dropped=dict(dropped),
    )
    return rows, report


# -- internals ------------------------------------------------------------------------


def _replay(record: EpisodeRecord, turns: int) -> Episode:
    """A fresh episode under the task's own budget with the record's first ``turns`` turns."""
    episode = episode_for(record.instance)
    for message in [m for m in record.messages if m.role == "assistant"][:turns]:
        if episode.done:
            break
        episode.step(message)
    return episode


def _replays(record: EpisodeRecord) -> bool:
    """Whether stepping the record's turns again reproduces its conversation through its
    last assistant turn (what follows may differ: the record's budget may have been
    smaller than the task's)."""
    starts = [i for i, m in enumerate(record.messages) if m.role == "assistant"]
    episode = _replay(record, len(starts))
    try:
        through = starts[-1] + 1
        shown = [m.model_dump() for m in episode.messages[:through]]
        return shown == [m.model_dump() for m in record.messages[:through]]
    finally:
        episode.close()


def _expert_from(record: EpisodeRecord, turns: int) -> Episode | str:
    """The episode with the record's first ``turns`` turns, then the expert to the end;
    a drop reason when the expert cannot play it."""
    episode = _replay(record, turns)
    if episode.done:
        episode.close()
        return "not_replayable"
    try:
        expert = get_task(record.task).require_expert()(record.instance)
        while not episode.done:
            episode.step(expert.next_turn(list(episode.messages)))
    except Exception:  # an expert that cannot act from this state labels nothing here
        episode.close()
        return "expert_error"
    return episode


def _record_of(episode: Episode, source: EpisodeRecord) -> EpisodeRecord:
    return EpisodeRecord.from_episode(
        episode,
        agent=f"expert-after:{source.agent}",
        sample=source.sample,
        timings=Timings(started_at=source.timings.started_at),
    )


def _calls(calls: Sequence[ToolCallRecord], turn: int) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls of one turn as comparable (name, arguments) pairs."""
    return [(c.name, c.arguments) for c in calls if c.turn == turn]
