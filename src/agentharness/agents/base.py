"""The agent contract: given the conversation and tool schemas, produce the next turn.

An :class:`Agent` is shared by all episodes of a run (it owns clients, models,
concurrency limits). For each episode it opens a :class:`Policy`, which may keep
per-episode state (scripted experts do). Agents raise :class:`AgentError` when they
cannot produce a turn (endpoint down after retries); the runner records it as the
episode's ``agent_error`` and goes on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from agentharness.core.episode import Usage
from agentharness.core.instance import Instance
from agentharness.core.messages import Message


class AgentError(Exception):
    """The agent could not produce a turn; the episode ends with ``agent_error``.

    ``usage`` carries what the failed attempts cost (requests, retries) into the log.
    """

    def __init__(self, message: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage


@dataclass(frozen=True)
class AgentTurn:
    message: Message
    usage: Usage | None = None


class Policy(Protocol):
    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn: ...


class Agent(Protocol):
    name: str

    def policy(self, instance: Instance, sample: int = 0) -> Policy:
        """A policy for one episode (``sample`` of ``k`` on this instance).

        Scripted agents may read ``instance.hidden``; stochastic agents vary with ``sample``.
        """
        ...

    async def aclose(self) -> None: ...
