"""The robot_reach task spec."""

from __future__ import annotations

from agentharness.core.task import TaskSpec
from agentharness.tasks.robot_reach.config import DIFFICULTIES, RobotReachConfig
from agentharness.tasks.robot_reach.expert import RobotReachExpert
from agentharness.tasks.robot_reach.generator import RobotReachGenerator
from agentharness.tasks.robot_reach.interaction import RobotReachInteraction
from agentharness.tasks.robot_reach.reward import reward
from agentharness.tasks.robot_reach.tools import RobotReachWorld

TASK = TaskSpec(
    name="robot_reach",
    version=7,
    modality="text",
    description=(
        "Move an articulated arm's end effector onto a target: planar or spatial arms of 2-7 "
        "revolute links with joint limits, obstacles and narrow passages; tools for forward "
        "kinematics and collision checks; answer with joint angles."
    ),
    config_model=RobotReachConfig,
    difficulties=DIFFICULTIES,
    generator=RobotReachGenerator(),
    world=RobotReachWorld,
    interaction=RobotReachInteraction(),
    reward=reward,
    expert=RobotReachExpert,
    solved_threshold=0.85,
    tags=("robotics", "kinematics", "geometry", "feedback-rich"),
)
