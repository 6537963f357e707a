"""Filter trajectories: keep the episodes worth learning from, and say why others went.

Checks run in a fixed order and an episode is dropped for the first one it fails:

1. ``malformed`` — the agent failed or timed out, or the episode has no assistant turn;
2. ``format_errors`` — malformed turns (unless ``allow_format_errors``); after this, an
   assistant tool call without a tool result is ``malformed`` too (trainers' chat
   templates cannot render it);
3. ``tool_errors`` — tool calls that returned an error (unless ``allow_tool_errors``);
4. ``not_successful`` — with ``success_only``;
5. ``reward_below_min`` — reward below ``min_reward``;
6. ``too_many_turns`` — more assistant turns than ``max_turns``;
7. ``too_many_tokens`` — a conversation longer than ``max_tokens`` (estimated at four
   characters per token over all message text and tool-call arguments; images not counted);
8. ``duplicate`` — the same action sequence (tool names and arguments) on the same
   instance as an episode already kept.

Records are sorted by episode id first, so the result does not depend on the order in
which a concurrent run appended them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agentharness.store.run import RunDir
from agentharness.store.schema import EpisodeRecord

DROP_REASONS = (
    "malformed",
    "format_errors",
    "tool_errors",
    "not_successful",
    "reward_below_min",
    "too_many_turns",
    "too_many_tokens",
    "duplicate",
)
BROKEN_END_REASONS = ("agent_error", "timeout", "env_error")
CHARS_PER_TOKEN = 4


class FilterCriteria(BaseModel):
    """What a kept trajectory must satisfy."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_reward: float | None = Field(None, ge=0.0, le=1.0)
    success_only: bool = False
    max_turns: int | None = Field(None, ge=1)
    max_tokens: int | None = Field(None, ge=1)
    allow_tool_errors: bool = False
    allow_format_errors: bool = False
    dedupe: bool = True


@dataclass
class FilterResult:
    """Kept records (sorted by episode id) and the ids dropped for each reason."""

    kept: list[EpisodeRecord]
    dropped: dict[str, list[str]] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.kept) + sum(len(v) for v in self.dropped.values())

    def counts(self) -> dict[str, int]:
        return {r: len(self.dropped[r]) for r in DROP_REASONS if self.dropped.get(r)}

    def summary(self) -> FilterSummary:
        return FilterSummary(
            input=self.total, kept=len(self.kept), dropped=self.counts(), examples=self.details
        )


class FilterSummary(BaseModel):
    """What filtering did, as ``bootcamp filter --json`` prints it and the loop records it."""

    input: int
    kept: int
    dropped: dict[str, int] = Field(description="episodes dropped per reason, in check order")
    examples: dict[str, str] = Field(
        default_factory=dict, description="one dropped episode per reason, with the detail"
    )


def write_filtered(
    out: Path, result: FilterResult, criteria: FilterCriteria, sources: Sequence[str | Path]
) -> None:
    """Write the kept episodes as the run directory ``out`` (its ``run.json`` says how)."""
    RunDir(out).write_all(
        result.kept,
        {
            "command": "filter",
            "sources": [str(s) for s in sources],
            "criteria": criteria.model_dump(mode="json"),
            "input_episodes": result.total,
            "kept": len(result.kept),
            "dropped": result.counts(),
        },
    )


def estimated_tokens(record: EpisodeRecord) -> int:
    """Conversation length in tokens, estimated from characters (tokenizer-free, stable)."""
    chars = 0
    for m in record.messages:
        chars += len(m.text or "")
        for call in m.tool_calls or []:
            chars += len(call.function.name) + len(call.function.arguments)
    return math.ceil(chars / CHARS_PER_TOKEN)


def malformed_reason(record: EpisodeRecord) -> str | None:
    """Why an episode is not a usable conversation, or ``None`` when it is."""
    return _broken(record) or _unanswered(record)


def _broken(record: EpisodeRecord) -> str | None:
    if record.end_reason in BROKEN_END_REASONS:
        return f"ended {record.end_reason}" + (f": {record.error[:80]}" if record.error else "")
    if record.error:
        return f"error recorded: {record.error[:80]}"
    if not any(m.role == "assistant" for m in record.messages):
        return "no assistant turn"
    return None


def _unanswered(record: EpisodeRecord) -> str | None:
    answered = {m.tool_call_id for m in record.messages if m.role == "tool"}
    for m in record.messages:
        for call in m.tool_calls or []:
            if call.id not in answered:
                return f"tool call {call.id} ({call.function.name}) has no result"
    return None


def action_key(record: EpisodeRecord) -> tuple[str, tuple[tuple[str, str], ...]]:
    """(instance id, the executed tool calls with canonical arguments)."""
    actions = tuple(
        (c.name, json.dumps(c.arguments, sort_keys=True, separators=(",", ":")))
        for c in record.tool_calls
    )
    return record.instance.instance_id, actions


def drop_reason(record: EpisodeRecord, criteria: FilterCriteria) -> tuple[str, str] | None:
    """(reason, detail) for the first check ``record`` fails, ignoring duplicates."""
    bad = _broken(record)
    if bad is not None:
        return "malformed", bad
    if record.format_errors and not criteria.allow_format_errors:
        return "format_errors", f"{record.format_errors} malformed turn(s)"
    bad = _unanswered(record)
    if bad is not None:
        return "malformed", bad
    if record.tool_errors and not criteria.allow_tool_errors:
        return "tool_errors", f"{record.tool_errors} tool error(s)"
    if criteria.success_only and not record.reward.success:
        return "not_successful", f"reward {record.reward.total:.2f}, not a success"
    if criteria.min_reward is not None and record.reward.total < criteria.min_reward:
        return "reward_below_min", f"reward {record.reward.total:.3f} < {criteria.min_reward:g}"
    if criteria.max_turns is not None and record.turns > criteria.max_turns:
        return "too_many_turns", f"{record.turns} turns > {criteria.max_turns}"
    if criteria.max_tokens is not None:
        tokens = estimated_tokens(record)
        if tokens > criteria.max_tokens:
            return "too_many_tokens", f"~{tokens} tokens > {criteria.max_tokens}"
    return None


def filter_records(records: Iterable[EpisodeRecord], criteria: FilterCriteria) -> FilterResult:
    """Split ``records`` into kept and dropped-by-reason (see the module docstring)."""
    result = FilterResult(kept=[])
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for r in sorted(records, key=lambda r: r.episode_id):
        found = drop_reason(r, criteria)
        if found is None and criteria.dedupe:
            key = action_key(r)
            if key in seen:
                found = "duplicate", "same actions on the same instance as a kept episode"
            seen.add(key)
        if found is None:
            result.kept.append(r)
            continue
        reason, detail = found
        result.dropped.setdefault(reason, []).append(r.episode_id)
        result.details.setdefault(reason, f"{r.episode_id}: {detail}")
    return result


__all__ = [
    "DROP_REASONS",
    "FilterCriteria",
    "FilterResult",
    "FilterSummary",
    "action_key",
    "drop_reason",
    "estimated_tokens",
    "filter_records",
    "malformed_reason",
    "write_filtered",
]
