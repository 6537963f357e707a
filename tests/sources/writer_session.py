"""A realistic task-writer session, replayed by the scripted OpenAI-compatible server.

The model reads the scaffold, rewrites it into a number-guessing task, runs the check,
sees the expert fail (its binary search never moves the lower bound past a probe), fixes
the expert from that feedback, checks again and finishes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

NAME = "numguess"

SPEC = (Path(__file__).parent / "numguess.md").read_text()  # also the README's example

FILES: dict[str, str] = {
    "numguess/config.py": '''"""Knobs: the range and the probe budget (binary search needs log2(high) probes)."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, model_validator


class NumguessConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    high: int = Field(200, ge=50, le=1_000_000, description="the secret is in 1..high")
    max_probes: int = Field(9, ge=1, le=40, description="probe calls allowed")

    @model_validator(mode="after")
    def _enough_probes(self) -> NumguessConfig:
        need = math.ceil(math.log2(self.high))
        if self.max_probes < need:
            raise ValueError(
                f"max_probes={self.max_probes} cannot search 1..{self.high}: "
                f"a binary search needs {need}"
            )
        return self


DIFFICULTIES: dict[str, dict[str, int]] = {
    "easy": {"high": 200, "max_probes": 9},
    "medium": {"high": 2000, "max_probes": 12},
    "hard": {"high": 100_000, "max_probes": 18},
}
''',
    "numguess/simulator.py": '''"""The domain: comparing a guess with the secret."""

from __future__ import annotations


def compare(secret: int, guess: int) -> str:
    if guess == secret:
        return "correct"
    return "higher" if secret > guess else "lower"
''',
    "numguess/generator.py": '''"""Layer 1: a secret number from the seed."""

from __future__ import annotations

import random

from agentharness.core import Instance, Message, Problem
from agentharness.core.messages import system, user

from numguess.config import NumguessConfig


class NumguessGenerator:
    def generate(self, config: NumguessConfig, seed: int) -> Problem:
        secret = random.Random(seed).randint(1, config.high)
        assert 1 <= secret <= config.high
        public = {"high": config.high, "max_probes": config.max_probes}
        return Problem(public=public, hidden={"secret": secret})

    def prompt(self, instance: Instance) -> list[Message]:
        p = instance.public
        return [
            system("You find secret numbers with as few probes as possible."),
            user(
                f"A secret integer lies between 1 and {p['high']}. `probe(guess)` answers "
                f"higher, lower or correct; you have {p['max_probes']} probes. Then call "
                "`submit(number)`."
            ),
        ]
''',
    "numguess/tools.py": '''"""Layer 2: probe and submit."""

from __future__ import annotations

from agentharness.core import Instance, ToolError, World, tool

from numguess.simulator import compare


class NumguessWorld(World):
    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        self.probes = 0

    def _check(self, n: int) -> None:
        high = self.instance.public["high"]
        if not 1 <= n <= high:
            raise ToolError(f"{n} is out of range; guesses are 1..{high}")

    @tool
    def probe(self, guess: int) -> str:
        """Compare a guess with the secret.

        Args:
            guess: an integer in the range.
        """
        self._check(guess)
        if self.probes >= self.instance.public["max_probes"]:
            raise ToolError("no probes left; submit your answer")
        self.probes += 1
        return compare(self.instance.hidden["secret"], guess)

    @tool(final=True)
    def submit(self, number: int) -> str:
        """Submit the secret; this ends the episode.

        Args:
            number: your answer.
        """
        self._check(number)
        return "submitted"
''',
    "numguess/interaction.py": '''"""Layer 3: budgets and the nudge."""

from __future__ import annotations

from agentharness.core import Budgets, Instance, Interaction, Message, World


class NumguessInteraction(Interaction):
    def __init__(self) -> None:
        super().__init__(Budgets(max_turns=25, max_tool_calls=25))

    def on_no_tool_call(
        self, instance: Instance, world: World, message: Message, nudges: int
    ) -> str | None:
        return "You did not call a tool. Probe, then finish with `submit(number)`."
''',
    "numguess/reward.py": '''"""Layer 4: the right number, gated; fewer probes is a small bonus."""

from __future__ import annotations

from agentharness.core import Instance, Reward, RewardComponent, World
from agentharness.core.episode import Trajectory

from numguess.tools import NumguessWorld


def reward(instance: Instance, world: World, trajectory: Trajectory) -> Reward:
    assert isinstance(world, NumguessWorld)
    if world.final_answer is None:
        return Reward.zero("no answer submitted")
    solved = world.final_answer["number"] == instance.hidden["secret"]
    efficiency = 1.0 - world.probes / (instance.public["max_probes"] + 1)
    return Reward.from_components(
        [
            RewardComponent(name="outcome", value=float(solved), weight=0.9),
            RewardComponent(name="efficiency", value=efficiency, weight=0.1),
        ],
        success=solved,
        gate=1.0 if solved else 0.0,
    )
''',
    "numguess/task.py": '''"""The numguess task's registration."""

from __future__ import annotations

from agentharness.core import TaskSpec

from numguess.config import DIFFICULTIES, NumguessConfig
from numguess.expert import NumguessExpert
from numguess.generator import NumguessGenerator
from numguess.interaction import NumguessInteraction
from numguess.reward import reward
from numguess.tools import NumguessWorld

TASK = TaskSpec(
    name="numguess",
    version=1,
    modality="text",
    description="Find a secret integer with higher/lower probes.",
    config_model=NumguessConfig,
    difficulties=DIFFICULTIES,
    generator=NumguessGenerator(),
    world=NumguessWorld,
    interaction=NumguessInteraction(),
    reward=reward,
    expert=NumguessExpert,
    solved_threshold=0.9,
    tags=("text",),
)
''',
    "tests/test_numguess.py": '''"""numguess: the check, and a wrong answer."""

from __future__ import annotations

import agentharness
from agentharness.conformance import check_task
from agentharness.core import ToolCall
from agentharness.core.messages import assistant
from agentharness.core.registry import register

from numguess import TASK

register(TASK)


def test_conformance_check_passes() -> None:
    report = check_task(TASK)
    assert report.passed, [(r.name, r.detail) for r in report.results if not r.passed]


def test_wrong_answer_scores_zero() -> None:
    ep = agentharness.make("numguess", difficulty="easy").reset(seed=1)
    wrong = ep.instance.hidden["secret"] % 200 + 1
    ep.step(assistant(tool_calls=[ToolCall.make("c", "submit", {"number": wrong})]))
    assert ep.done and ep.reward().total == 0.0
''',
}

_EXPERT = '''"""Binary search through probe."""

from __future__ import annotations

from agentharness.core import Instance, Message, ToolCall
from agentharness.core.messages import assistant


class NumguessExpert:
    def __init__(self, instance: Instance) -> None:
        self.lo, self.hi = 1, instance.public["high"]
        self.last: int | None = None
        self.n = 0

    def next_turn(self, messages: list[Message]) -> Message:
        last = messages[-1]
        if last.role == "tool" and self.last is not None:
            if last.text == "higher":
                self.lo = {LO_UPDATE}
            elif last.text == "lower":
                self.hi = self.last - 1
            elif last.text == "correct":
                self.lo = self.hi = self.last
        self.n += 1
        if self.lo == self.hi:
            args = {"number": self.lo}
            return assistant(tool_calls=[ToolCall.make(f"e{self.n}", "submit", args)])
        self.last = (self.lo + self.hi) // 2
        args = {"guess": self.last}
        return assistant(tool_calls=[ToolCall.make(f"e{self.n}", "probe", args)])
'''
BUGGY_EXPERT = _EXPERT.replace("{LO_UPDATE}", "self.last")  # never passes the probe
FIXED_EXPERT = _EXPERT.replace("{LO_UPDATE}", "self.last + 1")


def _calls(*calls: tuple[str, dict[str, Any]], turn: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{turn}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(calls)
        ],
    }


def _write(*paths: str, turn: int, files: dict[str, str]) -> dict[str, Any]:
    return _calls(*[("write_file", {"path": p, "content": files[p]}) for p in paths], turn=turn)


class Session:
    """The scripted model. ``seen`` keeps the tool results it was shown, per turn."""

    def __init__(self, repair: bool = True) -> None:
        self.repair = repair
        self.seen: dict[int, str] = {}

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        turn = sum(1 for m in messages if m["role"] == "assistant")
        self.seen[turn] = "\\n".join(
            str(m.get("content")) for m in messages[-4:] if m["role"] == "tool"
        )
        files = {**FILES, "numguess/expert.py": BUGGY_EXPERT}
        script = [
            lambda: _calls(("list_files", {}), turn=0),
            # Written as text, as many open models do.
            lambda: {
                "role": "assistant",
                "content": 'Let me look at the tools first.\\n<tool_call>{"name": "read_file", '
                '"arguments": {"path": "numguess/tools.py"}}</tool_call>',
            },
            lambda: _write(
                "numguess/config.py",
                "numguess/simulator.py",
                "numguess/generator.py",
                turn=2,
                files=files,
            ),
            lambda: _write(
                "numguess/tools.py",
                "numguess/interaction.py",
                "numguess/reward.py",
                turn=3,
                files=files,
            ),
            lambda: _write(
                "numguess/expert.py",
                "numguess/task.py",
                "tests/test_numguess.py",
                turn=4,
                files=files,
            ),
            lambda: _calls(("run_check", {}), turn=5),
        ]
        if self.repair:
            script += [
                lambda: (
                    _calls(
                        ("write_file", {"path": "numguess/expert.py", "content": FIXED_EXPERT}),
                        turn=6,
                    )
                    if "expert_solves" in self.seen[6]
                    else {"role": "assistant", "content": "I cannot tell what failed."}
                ),
                lambda: _calls(("run_check", {}), turn=7),
                lambda: _calls(
                    ("finish", {"summary": "Find a secret number by bisection."}), turn=8
                ),
            ]
        else:
            script += [lambda: _calls(("finish", {"summary": "done"}), turn=6)]
        if turn < len(script):
            return script[turn]()
        return {"role": "assistant", "content": "Done."}
