"""The episode log record: a versioned schema, one JSON line per finished episode.

Version history:

* 1 — first release.
* 2 — tool messages carry ``outcome`` (structured data, error flag) and tool call
  records carry ``data``; version-1 records read unchanged.

Readers accept every version they know; a record from a newer version is rejected
with a message saying to upgrade agentharness.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentharness.core.episode import Episode, ToolCallRecord, Usage
from agentharness.core.instance import Instance
from agentharness.core.messages import Message
from agentharness.core.reward import Reward

SCHEMA_VERSION = 2


class Timings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    started_at: float = Field(description="unix time the episode started")
    wall_s: float = 0.0
    agent_s: float = Field(0.0, description="time spent waiting for the agent")
    env_s: float = Field(0.0, description="time spent in the environment (parse, tools, reward)")


class EpisodeRecord(BaseModel):
    """One finished episode, complete enough to replay, export and re-score."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    episode_id: str
    task: str
    seed: int
    difficulty: str
    sample: int
    agent: str
    instance: Instance
    messages: list[Message]
    tools: list[dict[str, Any]]
    tool_calls: list[ToolCallRecord]
    step_rewards: list[float]
    reward: Reward
    end_reason: str
    turns: int
    format_errors: int = 0
    nudges: int = 0
    usage: Usage
    timings: Timings
    error: str | None = None

    @staticmethod
    def make_id(instance: Instance, sample: int, agent: str) -> str:
        return f"{instance.instance_id}#{sample}@{agent}"

    @classmethod
    def from_episode(
        cls, episode: Episode, *, agent: str, sample: int, timings: Timings
    ) -> EpisodeRecord:
        inst = episode.instance
        return cls(
            episode_id=cls.make_id(inst, sample, agent),
            task=inst.task,
            seed=inst.seed,
            difficulty=inst.difficulty,
            sample=sample,
            agent=agent,
            instance=inst,
            messages=episode.messages,
            tools=episode.tools,
            tool_calls=episode.tool_calls,
            step_rewards=episode.step_rewards,
            reward=episode.reward(),
            end_reason=episode.end_reason or "agent_error",
            turns=episode.turns,
            format_errors=episode.format_errors,
            nudges=episode.nudges,
            usage=episode.usage,
            timings=timings,
            error=episode.error,
        )

    @property
    def tool_errors(self) -> int:
        return sum(1 for c in self.tool_calls if c.is_error)
