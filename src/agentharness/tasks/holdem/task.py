"""The ``holdem`` task spec."""

from __future__ import annotations

from agentharness.core.task import TaskSpec
from agentharness.tasks.holdem.blind import HoldemBlind
from agentharness.tasks.holdem.config import DIFFICULTIES, HoldemConfig
from agentharness.tasks.holdem.expert import HoldemExpert
from agentharness.tasks.holdem.generator import HoldemGenerator
from agentharness.tasks.holdem.interaction import HoldemInteraction
from agentharness.tasks.holdem.reward import reward
from agentharness.tasks.holdem.tools import HoldemWorld

TASK = TaskSpec(
    name="holdem",
    version=2,
    modality="vision",
    description=(
        "Heads-up no-limit Texas hold'em against a bot of a given style over a session of "
        "hands, on the pokerkit engine; the table is seen only as images. Reward: the "
        "luck-adjusted chips won beyond the best card-blind play on the same deals, as a "
        "share of the reference policy's margin."
    ),
    config_model=HoldemConfig,
    difficulties=DIFFICULTIES,
    generator=HoldemGenerator(),
    world=HoldemWorld,
    interaction=HoldemInteraction(),
    reward=reward,
    expert=HoldemExpert,
    solved_threshold=0.7,
    blind_policy=HoldemBlind,
    tags=("vision", "game", "poker", "multi-turn", "stochastic"),
)
