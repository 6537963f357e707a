"""The battery task's registration."""

from __future__ import annotations

from agentharness.core.task import TaskSpec
from agentharness.tasks.battery.config import DIFFICULTIES, BatteryConfig
from agentharness.tasks.battery.expert import BatteryExpert
from agentharness.tasks.battery.generator import BatteryGenerator
from agentharness.tasks.battery.interaction import BatteryInteraction
from agentharness.tasks.battery.reward import reward
from agentharness.tasks.battery.tools import BatteryWorld

TASK = TaskSpec(
    name="battery",
    version=3,
    modality="text",
    description=(
        "Design a lithium-ion cell: choose the positive-electrode thickness and porosity (and, "
        "when allowed, forced cooling) so that specific energy meets a target and the peak "
        "temperature stays under a limit during a constant-current discharge. Each design is "
        "simulated with PyBaMM (DFN + lumped thermal, Chen2020) and a documented cell-mass model; "
        "a calculator and a linear solver help to compute the search in the open."
    ),
    config_model=BatteryConfig,
    difficulties=DIFFICULTIES,
    generator=BatteryGenerator(),
    world=BatteryWorld,
    interaction=BatteryInteraction(),
    reward=reward,
    expert=BatteryExpert,
    solved_threshold=0.85,
    tags=("text", "feedback-rich", "physics", "design", "pybamm"),
)
