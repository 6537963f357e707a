"""Layer 2: the escape-room world and its seven tools."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from agentharness.core.instance import Instance
from agentharness.core.tools import ToolResult, World, tool
from agentharness.tasks.escape_room.problem import Hidden, Public
from agentharness.tasks.escape_room.simulator import EscapeRoom, SimError

Name = Annotated[str, Field(min_length=1, max_length=80)]
Direction = Literal["north", "south", "east", "west", "up", "down"]


def _int_to_str(value: Any) -> Any:
    # Models often send a code as a JSON number; accept it (leading zeros are then lost).
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


Code = Annotated[str, BeforeValidator(_int_to_str), Field(min_length=1, max_length=16)]

# Show the remaining action budget once it gets this low.
WARN_REMAINING = 10


class EscapeRoomWorld(World):
    """One play-through: the simulator state plus the per-instance action limit.

    ``enter_code`` with the right exit code in the EXIT room ends the episode
    (``answered``); running out of actions ends it too (``max_tool_calls``).
    """

    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        self.sim = EscapeRoom(instance.hidden_as(Hidden).world)
        self.max_actions = instance.public_as(Public).max_actions
        self.actions = 0

    def _act(self, fn: Callable[[], str]) -> ToolResult:
        """Run one action (every call counts, a failed one too) and report it."""
        self.actions += 1
        try:
            text, is_error = fn(), False
        except SimError as e:
            text, is_error = f"Error: {e}", True
        data = self._state()
        if self.sim.escaped:
            self.final_answer = {"escaped": True, "actions": self.actions}
            return ToolResult(
                text=text, data=data, done=True, end_reason="answered", metrics={"escaped": 1.0}
            )
        left = self.max_actions - self.actions
        if left <= 0:
            text += f"\n\nTime is up: you used all {self.max_actions} actions without escaping."
            return ToolResult(
                text=text, data=data, is_error=is_error, done=True, end_reason="max_tool_calls"
            )
        if left <= WARN_REMAINING:
            text += f"\n[{left} action(s) left]"
        return ToolResult(text=text, data=data, is_error=is_error)

    def _state(self) -> dict[str, Any]:
        """Where the player stands after an action: the result as data (the text tells it)."""
        return {
            "room": self.sim.rooms[self.sim.room].name,
            "escaped": self.sim.escaped,
            "actions_used": self.actions,
            "actions_left": max(0, self.max_actions - self.actions),
        }

    @tool
    def look(self) -> ToolResult:
        """Describe the room you are in: objects, items on the floor, exits and what you carry."""
        return self._act(self.sim.look)

    @tool
    def go(self, direction: Direction) -> ToolResult:
        """Walk through the exit in a direction; a locked door stops you.

        Args:
            direction: one of north, south, east, west, up, down.
        """
        return self._act(lambda: self.sim.go(direction))

    @tool
    def take(self, item: Name) -> ToolResult:
        """Pick up a portable item you can see (on the floor or in an open container).

        Args:
            item: the item's name as shown by look, e.g. 'brass key'.
        """
        return self._act(lambda: self.sim.take(item))

    @tool
    def read(self, item: Name) -> ToolResult:
        """Read a note you carry or can see; on a fixture with writing it works like inspect.

        Args:
            item: the note's name, e.g. 'torn note'.
        """
        return self._act(lambda: self.sim.read(item))

    @tool
    def inspect(self, target: Name) -> ToolResult:
        """Examine an item, fixture or door closely; may reveal hidden things and writing.

        Args:
            target: the name of something in the room or carried, or a door like 'north door'.
        """
        return self._act(lambda: self.sim.inspect(target))

    @tool
    def use(self, item: Name, target: Name) -> ToolResult:
        """Use a carried item (a key) on a locked door or container in this room.

        Args:
            item: the carried item, e.g. 'brass key'.
            target: a door by direction ('north door') or a container's name ('oak chest').
        """
        return self._act(lambda: self.sim.use(item, target))

    @tool
    def enter_code(self, code: Code, target: Name = "exit door") -> ToolResult:
        """Type a numeric code into a keypad in this room; the right exit code escapes.

        Args:
            code: the digits, e.g. '0427'.
            target: the keypad's owner: 'exit door' (default) or a keypad-locked box's name.
        """
        return self._act(lambda: self.sim.enter_code(code, target))
