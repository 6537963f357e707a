"""The ``tsp_vision`` task spec."""

from __future__ import annotations

from agentharness.core.task import TaskSpec
from agentharness.tasks.tsp_vision.config import DIFFICULTIES, TspVisionConfig
from agentharness.tasks.tsp_vision.expert import TspVisionBlind, TspVisionExpert
from agentharness.tasks.tsp_vision.generator import TspVisionGenerator
from agentharness.tasks.tsp_vision.interaction import TspVisionInteraction
from agentharness.tasks.tsp_vision.reward import reward
from agentharness.tasks.tsp_vision.tools import TspVisionWorld

TASK = TaskSpec(
    name="tsp_vision",
    version=3,
    modality="vision",
    description=(
        "Travelling salesman on a map image: read the labelled cities' positions from the "
        "coordinate grid and submit the shortest closed tour. Reward: 1 at the optimal length, "
        "falling to 0 at a few percent longer (tolerance per difficulty)."
    ),
    config_model=TspVisionConfig,
    difficulties=DIFFICULTIES,
    generator=TspVisionGenerator(),
    world=TspVisionWorld,
    interaction=TspVisionInteraction(),
    reward=reward,
    expert=TspVisionExpert,
    blind_policy=TspVisionBlind,
    solved_threshold=0.95,
    tags=("vision", "optimization", "routing"),
)
