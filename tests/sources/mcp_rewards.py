"""The reward module of the mcp: source tests: add two numbers with the server's tools."""

from __future__ import annotations

import json
import random
from typing import Any

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.reward import Reward
from agentharness.core.tools import World

DIFFICULTIES = ("easy", "medium", "hard")


def generate(seed: int, difficulty: str) -> dict[str, Any]:
    rng = random.Random(seed)
    top = {"easy": 100, "medium": 10**4, "hard": 10**6}[difficulty]
    a, b = rng.randint(1, top), rng.randint(1, top)
    return {
        "prompt": f"What is {a} + {b}? Use the calculator's tools, then submit the sum.",
        "public": {"a": a, "b": b},
        "hidden": {"sum": a + b},
    }


def score(instance: Instance, world: World, trajectory: Any) -> Reward:
    answer = (world.final_answer or {}).get("answer", "")
    ok = answer.strip() == str(instance.hidden["sum"])
    used = any(c.name == "add" and not c.is_error for c in trajectory.tool_calls)
    return Reward(total=1.0 if ok and used else 0.0, success=ok and used)


def broken(instance: Instance, world: World, trajectory: Any) -> Reward:
    raise RuntimeError("reward bug")


class Expert:
    def __init__(self, instance: Instance) -> None:
        self.instance = instance

    def next_turn(self, messages: list[Message]) -> Message:
        if messages[-1].role == "tool":
            total = json.loads(messages[-1].text) if messages[-1].text.isdigit() else None
            return assistant(tool_calls=[ToolCall.make("s", "submit", {"answer": str(total)})])
        args = {"a": self.instance.public["a"], "b": self.instance.public["b"]}
        return assistant(tool_calls=[ToolCall.make("a", "add", args)])


def expert(instance: Instance) -> Expert:
    return Expert(instance)
