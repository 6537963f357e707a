"""Helpers for testing a task: build turns, open episodes, play policies, score them.

Shared by the built-in tasks' tests and by task packages made with ``bootcamp new``::

    ep = episode("thermal", seed=3, difficulty="easy")
    reply = step_call(ep, "simulate", {"powers": [10, 20]})
    assert reply.outcome is not None and not reply.outcome.is_error
    assert run_expert(ep.instance).reward().success
"""

from __future__ import annotations

import asyncio
import random
import statistics
from collections.abc import Iterable
from typing import Any

from agentharness.agents.base import Agent
from agentharness.agents.scripted import random_tool_turn
from agentharness.core.episode import Episode
from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.registry import episode_for, get_task
from agentharness.rollout.runner import run_one


def call(name: str, args: dict[str, Any] | str | None = None, call_id: str = "c1") -> Message:
    """An assistant turn with one native tool call."""
    return assistant(tool_calls=[ToolCall.make(call_id, name, {} if args is None else args)])


def episode(task: str | Instance, seed: int = 0, difficulty: str = "easy", **knobs: Any) -> Episode:
    """A fresh episode on ``task``'s generated instance (``name`` or ``name-vN``), or on
    the given instance."""
    if isinstance(task, Instance):
        return episode_for(task)
    return episode_for(get_task(task).instance(seed, difficulty, **knobs))


def step_call(
    ep: Episode, name: str, args: dict[str, Any] | str | None = None, call_id: str = "c1"
) -> Message:
    """Apply one tool call to ``ep`` and return the tool's reply message."""
    obs = ep.step(call(name, args, call_id))
    return next(m for m in obs.messages if m.role == "tool")


def run_expert(instance: Instance, noise: float = 0.0, seed: int = 0) -> Episode:
    """The task's expert played to the end; ``noise`` interleaves random tool calls."""
    ep = episode_for(instance)
    expert = get_task(instance.task).require_expert()(instance)
    rng = random.Random(seed)
    turn = 0
    while not ep.done:
        turn += 1
        if rng.random() < noise:
            ep.step(random_tool_turn(rng, ep.tools, turn))
        else:
            ep.step(expert.next_turn(ep.messages))
    return ep


def run_agent(agent: Agent, instance: Instance, sample: int = 0) -> Episode:
    """Any agent (scripted, lazy, a model) played to the end on ``instance``."""
    ep, _ = asyncio.run(run_one(instance, agent.policy(instance, sample)))
    return ep


def scores(agent: Agent, instances: Iterable[Instance]) -> tuple[float, float]:
    """Mean reward and success rate of ``agent`` over ``instances``."""
    rewards = [run_agent(agent, inst).reward() for inst in instances]
    return (
        statistics.fmean(r.total for r in rewards),
        statistics.fmean(float(r.success) for r in rewards),
    )


__all__ = ["call", "episode", "run_agent", "run_expert", "scores", "step_call"]
