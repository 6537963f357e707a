"""The thermal task's registration."""

from __future__ import annotations

from agentharness.core.task import TaskSpec
from agentharness.tasks.thermal.config import DIFFICULTIES, ThermalConfig
from agentharness.tasks.thermal.expert import ThermalExpert
from agentharness.tasks.thermal.generator import ThermalGenerator
from agentharness.tasks.thermal.interaction import ThermalInteraction
from agentharness.tasks.thermal.reward import reward
from agentharness.tasks.thermal.tools import ThermalWorld

TASK = TaskSpec(
    name="thermal",
    version=6,
    modality="text",
    description=(
        "Steady-state heat control on a 2-D plate: set heater powers so monitor points reach "
        "their target temperatures within tolerance while the hottest point stays below a "
        "safety limit. Finite-difference steady heat equation on scipy.sparse."
    ),
    config_model=ThermalConfig,
    difficulties=DIFFICULTIES,
    generator=ThermalGenerator(),
    world=ThermalWorld,
    interaction=ThermalInteraction(),
    reward=reward,
    expert=ThermalExpert,
    solved_threshold=0.9,
    tags=("text", "feedback-rich", "physics", "control"),
)
