"""The escape_room task spec."""

from __future__ import annotations

from agentharness.core.task import TaskSpec
from agentharness.tasks.escape_room.config import DIFFICULTIES, EscapeRoomConfig
from agentharness.tasks.escape_room.expert import EscapeRoomExpert
from agentharness.tasks.escape_room.generator import EscapeRoomGenerator
from agentharness.tasks.escape_room.interaction import EscapeRoomInteraction
from agentharness.tasks.escape_room.reward import reward
from agentharness.tasks.escape_room.tools import EscapeRoomWorld

TASK = TaskSpec(
    name="escape_room",
    version=1,
    modality="text",
    description=(
        "Text adventure: explore rooms, find keys, open locked boxes and follow a chain of "
        "clues to the exit code; enter it at the EXIT door. Sparse reward, efficiency vs par."
    ),
    config_model=EscapeRoomConfig,
    difficulties=DIFFICULTIES,
    generator=EscapeRoomGenerator(),
    world=EscapeRoomWorld,
    interaction=EscapeRoomInteraction(),
    reward=reward,
    expert=EscapeRoomExpert,
    solved_threshold=0.9,
    tags=("text", "sparse", "planning", "exploration"),
)
