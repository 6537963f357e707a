"""Scripted agents: ``expert``, ``noisy:<rate>`` and ``random``.

They write real assistant turns with native tool calls, so their trajectories are
training data like any model's.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from agentharness.agents.base import AgentTurn
from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.registry import get_task
from agentharness.core.task import ExpertPolicy


def _rng_for(instance: Instance, salt: str) -> random.Random:
    digest = hashlib.sha256(f"{instance.instance_id}:{salt}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class ExpertAgent:
    """Each task's privileged solver, acting through the task's tools."""

    name = "expert"

    def policy(self, instance: Instance, sample: int = 0) -> _ExpertPolicy:
        return _ExpertPolicy(get_task(instance.task).expert(instance))

    async def aclose(self) -> None:
        return None


class _ExpertPolicy:
    def __init__(self, expert: ExpertPolicy) -> None:
        self.expert = expert

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn:
        return AgentTurn(self.expert.next_turn(messages))


class RandomAgent:
    """Calls a random tool with arguments sampled from its JSON schema."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def policy(self, instance: Instance, sample: int = 0) -> _RandomPolicy:
        return _RandomPolicy(_rng_for(instance, f"random:{self.seed}:{sample}"))

    async def aclose(self) -> None:
        return None


class _RandomPolicy:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.n = 0

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn:
        self.n += 1
        return AgentTurn(random_tool_turn(self.rng, tools, self.n))


def random_tool_turn(rng: random.Random, tools: list[dict[str, Any]], n: int) -> Message:
    fn = rng.choice(tools)["function"]
    args = sample_from_schema(rng, fn.get("parameters", {}))
    return assistant(
        tool_calls=[ToolCall.make(f"rnd_{n}_{rng.randrange(10**6)}", fn["name"], args)]
    )


def sample_from_schema(
    rng: random.Random, schema: dict[str, Any], defs: dict[str, Any] | None = None
) -> Any:
    """A random value that roughly fits a JSON schema (bounded sizes)."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return sample_from_schema(rng, defs.get(schema["$ref"].split("/")[-1], {}), defs)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return sample_from_schema(rng, rng.choice(schema[key]), defs)
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if "const" in schema:
        return schema["const"]
    t = schema.get("type")
    if t == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {k: sample_from_schema(rng, v, defs) for k, v in props.items()}
    if t == "array":
        lo = schema.get("minItems", 1)
        hi = min(schema.get("maxItems", lo + 6), lo + 6)
        return [
            sample_from_schema(rng, schema.get("items", {}), defs)
            for _ in range(rng.randint(lo, max(lo, hi)))
        ]
    if t == "integer":
        lo = int(
            schema.get(
                "minimum",
                schema.get("exclusiveMinimum", -1) + 1 if "exclusiveMinimum" in schema else 0,
            )
        )
        hi = int(schema.get("maximum", lo + 20))
        return rng.randint(lo, max(lo, hi))
    if t == "number":
        lo = float(schema.get("minimum", schema.get("exclusiveMinimum", 0.0)))
        hi = float(schema.get("maximum", lo + 10.0))
        return rng.uniform(lo, hi)
    if t == "boolean":
        return rng.random() < 0.5
    if t == "null":
        return None
    words = ["north", "south", "key", "box", "door", "1234", "a", "b", "look", "up"]
    return rng.choice(words)


class NoisyAgent:
    """The expert, but each turn is replaced by a random tool call with probability ``rate``."""

    def __init__(self, rate: float, seed: int = 0) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"noisy rate must be in [0, 1], got {rate}")
        self.rate = rate
        self.seed = seed
        self.name = f"noisy:{rate:g}"

    def policy(self, instance: Instance, sample: int = 0) -> _NoisyPolicy:
        expert = get_task(instance.task).expert(instance)
        return _NoisyPolicy(expert, self.rate, _rng_for(instance, f"noisy:{self.rate}:{self.seed}:{sample}"))

    async def aclose(self) -> None:
        return None


class _NoisyPolicy:
    def __init__(self, expert: ExpertPolicy, rate: float, rng: random.Random) -> None:
        self.expert, self.rate, self.rng = expert, rate, rng
        self.n = 0

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn:
        self.n += 1
        if self.rng.random() < self.rate:
            return AgentTurn(random_tool_turn(self.rng, tools, self.n))
        return AgentTurn(self.expert.next_turn(messages))


class NothingAgent:
    """Never calls a tool: the do-nothing floor of the conformance check."""

    name = "nothing"

    def policy(self, instance: Instance, sample: int = 0) -> _NothingPolicy:
        return _NothingPolicy()

    async def aclose(self) -> None:
        return None


class _NothingPolicy:
    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn:
        return AgentTurn(assistant("I am not sure what to do."))
