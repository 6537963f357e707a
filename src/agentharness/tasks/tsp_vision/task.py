"""The ``tsp_vision`` task spec."""

from __future__ import annotations

from agentharness.core.task import TaskSpec
from agentharness.tasks.tsp_vision.config import DIFFICULTIES, TspVisionConfig
from agentharness.tasks.tsp_vision.expert import TspVisionExpert
from agentharness.tasks.tsp_vision.generator import TspVisionGenerator
from agentharness.tasks.tsp_vision.interaction import TspVisionInteraction
from agentharness.tasks.tsp_vision.reward import reward
from agentharness.tasks.tsp_vision.tools import TspVisionWorld

TASK = TaskSpec(
    name="tsp_vision",
    version=2,
    modality="vision",
    description=(
        "Travelling salesman on a map image: read the labelled cities' positions from the "
        "coordinate grid and submit the shortest closed tour. Reward: optimal length / tour length."
    ),
    config_model=TspVisionConfig,
    difficulties=DIFFICULTIES,
    generator=TspVisionGenerator(),
    world=TspVisionWorld,
    interaction=TspVisionInteraction(),
    reward=reward,
    expert=TspVisionExpert,
    solved_threshold=0.95,
    tags=("vision", "optimization", "routing"),
)
