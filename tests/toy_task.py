"""A tiny task used by the core tests: find a hidden number with higher/lower hints."""

from __future__ import annotations

import random

from pydantic import BaseModel, Field

from agentharness.core import (
    Instance,
    Interaction,
    Message,
    Problem,
    Reward,
    RewardComponent,
    TaskSpec,
    ToolError,
    ToolResult,
    World,
    tool,
)
from agentharness.core.episode import Trajectory
from agentharness.core.messages import ToolCall, assistant, system, user


class GuessConfig(BaseModel):
    high: int = Field(100, ge=2)


class GuessGenerator:
    def generate(self, config: GuessConfig, seed: int) -> Problem:
        rng = random.Random(seed)
        return Problem(public={"high": config.high}, hidden={"secret": rng.randint(1, config.high)})

    def prompt(self, instance: Instance) -> list[Message]:
        return [
            system("You guess numbers."),
            user(
                f"Find the number between 1 and {instance.public['high']}. Use `probe`, then `answer`."
            ),
        ]


class GuessWorld(World):
    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        self.probes = 0

    @tool
    def probe(self, guess: int) -> str:
        """Compare a guess with the secret.

        Args:
            guess: the number to compare.
        """
        if guess < 1:
            raise ToolError("guess must be >= 1")
        self.probes += 1
        secret = self.instance.hidden["secret"]
        return "correct" if guess == secret else ("higher" if secret > guess else "lower")

    @tool(final=True)
    def answer(self, number: int) -> ToolResult:
        """Submit the final answer.

        Args:
            number: your answer.
        """
        return ToolResult(text="submitted", step_reward=0.0)

    @tool
    def picture(self) -> ToolResult:
        """Return a 1x1 image."""
        from PIL import Image

        from agentharness.core.messages import png_bytes

        return ToolResult(text="here", images=(png_bytes(Image.new("RGB", (1, 1))),))


def guess_reward(instance: Instance, world: World, trajectory: Trajectory) -> Reward:
    assert isinstance(world, GuessWorld)
    ok = (
        world.final_answer is not None and world.final_answer["number"] == instance.hidden["secret"]
    )
    eff = 1.0 / (1 + world.probes / 10)
    return Reward.from_components(
        [
            RewardComponent(name="outcome", value=float(ok), weight=0.9),
            RewardComponent(name="efficiency", value=eff, weight=0.1),
        ],
        success=ok,
        gate=1.0 if ok else 0.0,
    )


class GuessExpert:
    def __init__(self, instance: Instance) -> None:
        self.lo, self.hi = 1, instance.public["high"]
        self.n = 0
        self.last: int | None = None

    def next_turn(self, messages: list[Message]) -> Message:
        last = messages[-1]
        if last.role == "tool" and self.last is not None:
            if last.text == "higher":
                self.lo = self.last + 1
            elif last.text == "lower":
                self.hi = self.last - 1
            elif last.text == "correct":
                self.lo = self.hi = self.last
        self.n += 1
        if self.lo == self.hi:
            return assistant(
                tool_calls=[ToolCall.make(f"e{self.n}", "answer", {"number": self.lo})]
            )
        self.last = (self.lo + self.hi) // 2
        return assistant(tool_calls=[ToolCall.make(f"e{self.n}", "probe", {"guess": self.last})])


GUESS = TaskSpec(
    name="guess",
    version=1,
    modality="text",
    description="Find a hidden number with higher/lower hints.",
    config_model=GuessConfig,
    difficulties={"easy": {"high": 100}, "medium": {"high": 1000}, "hard": {"high": 10000}},
    generator=GuessGenerator(),
    world=GuessWorld,
    interaction=Interaction(),
    reward=guess_reward,
    expert=GuessExpert,
)
