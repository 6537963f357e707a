"""Layer 3: budgets and what the player is told when a turn calls no tool."""

from __future__ import annotations

from agentharness.core.instance import Instance
from agentharness.core.messages import Message
from agentharness.core.task import Budgets, Interaction
from agentharness.tasks.escape_room.tools import EscapeRoomWorld

# The per-instance action limit (factor * par + 10, stated in the prompt) is enforced by
# the world; these episode budgets only backstop it for the largest configurations.
BUDGETS = Budgets(
    max_turns=300,
    max_tool_calls=300,
)


class EscapeRoomInteraction(Interaction[EscapeRoomWorld]):
    """Reminds a player who stopped calling tools where it stands and what to do."""

    def __init__(self) -> None:
        super().__init__(BUDGETS)

    def on_no_tool_call(
        self, instance: Instance, world: EscapeRoomWorld, message: Message, nudges: int
    ) -> str | None:
        sim = world.sim
        room = sim.rooms[sim.room].name
        known = sim.digits_known()
        n = len(sim.exit_code)
        return (
            f"You did not call a tool, so nothing happened: you are still locked in the {room} "
            f"({world.actions} of {world.max_actions} actions used; clues read so far give "
            f"{known} of the {n} code digits). Keep playing with the tools: look around, go "
            "through exits, take and use keys, read notes, inspect fixtures, and enter_code on "
            "keypads. To finish, go to the room with the EXIT door and call "
            f"enter_code(code='<{n} digits>')."
        )
