"""Helpers for the server tests: a fake clock, and a ``servegate`` task whose tool blocks until
another episode opens its gate (to prove that steps of different episodes run concurrently,
without timing anything)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel

from agentharness.core import (
    Instance,
    Interaction,
    Message,
    Problem,
    Reward,
    TaskSpec,
    ToolResult,
    World,
    tool,
)
from agentharness.core.episode import Trajectory
from agentharness.core.messages import assistant, system, user
from agentharness.serve import BackgroundServer

# ``serve(**create_app_kwargs)``: starts a real server (the ``serve`` fixture).
ServerFactory = Callable[..., BackgroundServer]

GATE_WAIT_S = 20.0  # only reached when steps are wrongly serialized

_gates: dict[int, threading.Event] = {}
_entered: dict[int, threading.Event] = {}
_gates_lock = threading.Lock()


def gate(seed: int) -> threading.Event:
    with _gates_lock:
        return _gates.setdefault(seed, threading.Event())


def entered(seed: int) -> threading.Event:
    with _gates_lock:
        return _entered.setdefault(seed, threading.Event())


class GateConfig(BaseModel):
    pass


class GateGenerator:
    def generate(self, config: GateConfig, seed: int) -> Problem:
        return Problem(public={}, hidden={})

    def prompt(self, instance: Instance) -> list[Message]:
        return [system("You open gates."), user("Wait at your gate, or open another one.")]


class GateWorld(World):
    @tool
    def wait_gate(self) -> str:
        """Block until this episode's gate (keyed by its seed) is opened by another episode."""
        seed = self.instance.seed
        entered(seed).set()
        return "gate opened" if gate(seed).wait(GATE_WAIT_S) else "gate timed out"

    @tool
    def open_gate(self, seed: int) -> str:
        """Open the gate of the episode with this seed.

        Args:
            seed: the seed of the episode whose gate to open.
        """
        gate(seed).set()
        return "opened"

    @tool(final=True)
    def answer(self, text: str) -> ToolResult:
        """Finish.

        Args:
            text: anything.
        """
        return ToolResult(text="done")


class GateExpert:
    """Answers at once (the gate task is about concurrency, not solving)."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance

    def next_turn(self, messages: list[Message]) -> Message:
        return assistant('<tool_call>{"name": "answer", "arguments": {"text": "ok"}}</tool_call>')


def gate_reward(instance: Instance, world: World, trajectory: Trajectory) -> Reward:
    return Reward(total=1.0 if world.final_answer else 0.0, success=world.final_answer is not None)


# Registered only while a test asks for the ``gate_task`` fixture, so it never joins the
# suite-wide tests that parametrize over every registered task (conformance, knobs).
GATE = TaskSpec(
    name="servegate",
    version=1,
    modality="text",
    description="Test task: a tool that blocks until another episode opens its gate.",
    config_model=GateConfig,
    difficulties={"medium": {}},
    generator=GateGenerator(),
    world=GateWorld,
    interaction=Interaction(),
    reward=gate_reward,
    expert=GateExpert,
)


class FakeClock:
    """A monotonic clock the test moves by hand, so expiry needs no sleeping."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def sessions_of(server: BackgroundServer) -> Any:
    """The session store of a running server (to watch the background sweep)."""
    app = server.app
    assert isinstance(app, FastAPI)
    return app.state.sessions
