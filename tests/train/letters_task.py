"""A one-turn toy task for the GRPO test: the reward grows with the letters the reply uses.

Any reply scores in (0, 1), and sampled replies differ, so one GRPO group has reward
variance (a learning signal) even for an untrained model. Only a pangram solves it, which a
short sampled reply about the topic practically never is (on any CPU's sampling), so the
tests can count on a group with varied totals and no success.
"""

from __future__ import annotations

from pydantic import BaseModel

from agentharness.core import (
    Instance,
    Interaction,
    Message,
    Problem,
    Reward,
    RewardComponent,
    TaskSpec,
    World,
    tool,
)
from agentharness.core.episode import Trajectory
from agentharness.core.messages import assistant, system, user
from agentharness.core.task import Budgets


class LettersConfig(BaseModel):
    topic: str = "the sea"


class LettersGenerator:
    def generate(self, config: LettersConfig, seed: int) -> Problem:
        return Problem(public={"topic": config.topic, "seed": seed}, hidden={})

    def prompt(self, instance: Instance) -> list[Message]:
        return [system("Be brief."), user(f"Write one sentence about {instance.public['topic']}.")]


class LettersWorld(World):
    @tool(final=True)
    def done(self) -> str:
        """Say you are finished."""
        return "ok"


def letters_reward(instance: Instance, world: World, trajectory: Trajectory) -> Reward:
    replies = [m.text for m in trajectory.messages if m.role == "assistant"]
    letters = {c for c in (replies[0] if replies else "").lower() if c.isalpha()}
    return Reward.from_components(
        [RewardComponent(name="letters", value=len(letters) / 26, weight=1.0)],
        success=len(letters) == 26,
    )


class LettersExpert:
    def __init__(self, instance: Instance) -> None:
        pass

    def next_turn(self, messages: list[Message]) -> Message:
        return assistant("The quick brown fox jumps over the lazy dog.")


LETTERS = TaskSpec(
    name="letters",
    version=1,
    modality="text",
    description="Use many different letters in one sentence.",
    config_model=LettersConfig,
    difficulties={"easy": {}},
    generator=LettersGenerator(),
    world=LettersWorld,
    interaction=Interaction(Budgets(max_turns=1)),
    reward=letters_reward,
    expert=LettersExpert,
)
