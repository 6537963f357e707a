"""The four-layer core: messages, instances, tools, interaction, reward, episode, registry."""

from agentharness.core.episode import Episode, Observation, ToolCallRecord, Trajectory, Usage
from agentharness.core.instance import Instance
from agentharness.core.messages import ImagePart, Message, TextPart, ToolCall
from agentharness.core.registry import (
    Env,
    all_tasks,
    episode_for,
    get_task,
    make,
    register,
    resolve_tasks,
)
from agentharness.core.reward import Reward, RewardComponent
from agentharness.core.task import (
    Budgets,
    Generator,
    Interaction,
    Problem,
    RewardFunction,
    TaskSpec,
)
from agentharness.core.tools import ToolError, ToolResult, World, tool

__all__ = [
    "Budgets",
    "Env",
    "Episode",
    "Generator",
    "ImagePart",
    "Instance",
    "Interaction",
    "Message",
    "Observation",
    "Problem",
    "Reward",
    "RewardComponent",
    "RewardFunction",
    "TaskSpec",
    "TextPart",
    "ToolCall",
    "ToolCallRecord",
    "ToolError",
    "ToolResult",
    "Trajectory",
    "Usage",
    "World",
    "all_tasks",
    "episode_for",
    "get_task",
    "make",
    "register",
    "resolve_tasks",
    "tool",
]
