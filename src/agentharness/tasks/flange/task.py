"""The flange task's registration."""

from __future__ import annotations

from agentharness.core.task import TaskSpec
from agentharness.tasks.flange.config import DIFFICULTIES, FlangeConfig
from agentharness.tasks.flange.expert import FlangeBlind, FlangeExpert
from agentharness.tasks.flange.generator import FlangeGenerator
from agentharness.tasks.flange.interaction import FlangeInteraction
from agentharness.tasks.flange.reward import reward
from agentharness.tasks.flange.tools import FlangeWorld

TASK = TaskSpec(
    name="flange",
    version=3,
    modality="vision",
    description=(
        "Design a flat bolted flange from an engineering drawing: choose thickness, material and "
        "bolt pattern so that the bore-edge displacement, the plate stress and the cost stay "
        "within the drawing's limits. Reward: 0 unless every requirement holds."
    ),
    config_model=FlangeConfig,
    difficulties=DIFFICULTIES,
    generator=FlangeGenerator(),
    world=FlangeWorld,
    interaction=FlangeInteraction(),
    reward=reward,
    expert=FlangeExpert,
    blind_policy=FlangeBlind,
    solved_threshold=0.9,
    tags=("vision", "feedback-rich", "structural", "engineering-drawing"),
)
