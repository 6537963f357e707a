"""The flange task's registration."""

from __future__ import annotations

from agentharness.core.task import TaskSpec
from agentharness.tasks.flange.config import DIFFICULTIES, FlangeConfig
from agentharness.tasks.flange.expert import FlangeExpert
from agentharness.tasks.flange.generator import FlangeGenerator
from agentharness.tasks.flange.interaction import FlangeInteraction
from agentharness.tasks.flange.reward import reward
from agentharness.tasks.flange.tools import FlangeWorld

TASK = TaskSpec(
    name="flange",
    version=2,
    modality="vision",
    description=(
        "Design a flat bolted flange from an engineering drawing: choose thickness, material and "
        "bolt pattern so that the bore-edge displacement stays within the drawing's limit and the "
        "cost within the budget."
    ),
    config_model=FlangeConfig,
    difficulties=DIFFICULTIES,
    generator=FlangeGenerator(),
    world=FlangeWorld,
    interaction=FlangeInteraction(),
    reward=reward,
    expert=FlangeExpert,
    solved_threshold=0.9,
    tags=("vision", "feedback-rich", "structural", "engineering-drawing"),
)
