"""Scripted agents: ``expert``, ``noisy:<rate>`` and ``random``.

They write real assistant turns with native tool calls, so their trajectories are
training data like any model's.
"""

from __future__ import annotations

import hashlib
import json
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
        return _ExpertPolicy(get_task(instance.task).require_expert()(instance))

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


def random_tool_turn(
    rng: random.Random, tools: list[dict[str, Any]], n: int, avoid: frozenset[str] = frozenset()
) -> Message:
    """A call of a random tool (not one named in ``avoid``) with schema-sampled arguments."""
    choices = [t for t in tools if t["function"]["name"] not in avoid] or tools
    fn = rng.choice(choices)["function"]
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
    if t == "array" and "prefixItems" in schema:  # per-position schemas (a bounded vector)
        return [sample_from_schema(rng, item, defs) for item in schema["prefixItems"]]
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
    """The expert with noise: random tool calls, and spoiled answers.

    Each turn is replaced by a random tool call with probability ``rate`` (the expert
    recovers from those: it reads the conversation). With probability ``spoil`` the
    episode's answer is spoiled, so the failure reaches the reward: every call of the
    task's answer tool carries perturbed arguments (numbers moved 20-50%, lists
    reordered), or, where the task has no answer tool, the agent gives up after a few
    turns. ``bootcamp eval --agent noisy:0.3`` sets both to 0.3, so about 30% of
    episodes fail; ``noisy:0.3:0`` keeps the random calls and never spoils.
    """

    def __init__(self, rate: float, seed: int = 0, spoil: float = 0.0) -> None:
        for name, value in (("rate", rate), ("spoil", spoil)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"noisy {name} must be in [0, 1], got {value}")
        self.rate = rate
        self.spoil = spoil
        self.seed = seed
        self.name = f"noisy:{rate:g}" if spoil == rate else f"noisy:{rate:g}:{spoil:g}"

    def policy(self, instance: Instance, sample: int = 0) -> _NoisyPolicy:
        spec = get_task(instance.task)
        rng = _rng_for(instance, f"noisy:{self.rate}:{self.seed}:{sample}")
        spoiled = rng.random() < self.spoil
        final = next((t.name for t in spec.world.tool_specs().values() if t.final), None)
        return _NoisyPolicy(spec.require_expert()(instance), self.rate, rng, spoiled, final)

    async def aclose(self) -> None:
        return None


class _NoisyPolicy:
    def __init__(
        self,
        expert: ExpertPolicy,
        rate: float,
        rng: random.Random,
        spoiled: bool = False,
        final_tool: str | None = None,
    ) -> None:
        self.expert, self.rate, self.rng = expert, rate, rng
        self.spoiled, self.final_tool = spoiled, final_tool
        self.give_up_at = rng.randint(1, 8) if spoiled and final_tool is None else None
        self.n = 0

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn:
        self.n += 1
        if self.give_up_at is not None and self.n >= self.give_up_at:
            return AgentTurn(assistant("I am stuck and will stop here."))
        if self.rng.random() < self.rate:
            # Random calls never answer: a failed answer is what ``spoil`` is for.
            avoid = frozenset({self.final_tool} if self.final_tool else ())
            return AgentTurn(random_tool_turn(self.rng, tools, self.n, avoid))
        turn = self.expert.next_turn(messages)
        if self.spoiled and turn.tool_calls:
            calls = [
                self._spoil(c) if c.function.name == self.final_tool else c for c in turn.tool_calls
            ]
            turn = turn.model_copy(update={"tool_calls": calls})
        return AgentTurn(turn)

    def _spoil(self, call: ToolCall) -> ToolCall:
        try:
            args = json.loads(call.function.arguments)
        except json.JSONDecodeError:
            return call
        return ToolCall.make(call.id, call.function.name, perturb(self.rng, args))


def perturb(rng: random.Random, value: Any) -> Any:
    """A nearby but wrong value: numbers moved 20-50% either way, lists reordered."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        factor = rng.uniform(0.2, 0.5) * rng.choice((-1, 1))
        moved = value * (1 + factor) if value else factor
        return (
            round(moved)
            if isinstance(value, int) and round(moved) != value
            else (value + rng.choice((-1, 1)) if isinstance(value, int) else moved)
        )
    if isinstance(value, dict):
        return {k: perturb(rng, v) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) > 1 and all(isinstance(v, str) for v in value) and len(set(value)) > 1:
            items = list(value)  # labels stay valid; their order is wrong
            while items == value:
                rng.shuffle(items)
            return items
        return [perturb(rng, v) for v in value]
    if isinstance(value, str):
        return value[::-1] if len(value) > 1 and value[::-1] != value else value + "?"
    return value


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
