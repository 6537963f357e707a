"""The privileged expert: follows the hidden goal list, replanning from the true state.

The expert keeps its own simulator and brings it up to date from the conversation each
turn: it pairs every assistant tool call with its tool result and replays the calls that
did not fail. Because every action is monotone (things only get unlocked, revealed, read
or picked up) and the planner in :mod:`.simulator` plans from the current state — walking
by breadth-first search over the doors now open — any actions interleaved by another
policy (a noisy agent's random moves, pickups or reads) never derail it.

Each turn says in one sentence why it acts, from what the conversation shows (the exits'
room names, what a container holds, a locked door, the code a clue gave), so that a model
trained on these turns learns to read the room before it acts rather than only the shape
of the calls.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.parsing import answered_calls
from agentharness.tasks.escape_room.problem import Fixture, Hidden, Item
from agentharness.tasks.escape_room.simulator import EscapeRoom, SimError, plan_next


class EscapeRoomExpert:
    """Scripted solver that acts only through the task's tools."""

    def __init__(self, instance: Instance) -> None:
        hidden = instance.hidden_as(Hidden)
        self.goals = hidden.goals
        self.sim = EscapeRoom(hidden.world)
        self._seen = 0
        self._n = 0

    def _sync(self, messages: list[Message]) -> None:
        for call, message in answered_calls(messages, self._seen):
            if call.name != message.name or message.outcome is None or message.outcome.is_error:
                continue
            try:
                self.sim.apply(call.name, call.arguments)
            except SimError:
                pass
        self._seen = len(messages)

    def next_turn(self, messages: list[Message]) -> Message:
        self._sync(messages)
        self._n += 1
        tool, args = plan_next(self.sim, self.goals) or ("look", {})
        return assistant(
            narrate(self.sim, tool, args),
            tool_calls=[ToolCall.make(f"escape_{self._n}", tool, args)],
        )


def narrate(sim: EscapeRoom, tool: str, args: dict[str, str]) -> str:
    """One sentence on why ``tool(args)`` is the move, from what the player has been shown."""
    if tool == "go":
        door = sim.exits[sim.room][args["direction"]]
        room = sim.rooms[sim.other_side(door, sim.room)].name
        return f"I go {args['direction']} to the {room}."
    if tool == "take":
        item = args["item"]
        where = sim.location[_named(sim.items, item)]
        if where[0] == "in":
            return f"The {sim.fixtures[where[1]].name} holds a {item}; I take it."
        return f"There is a {item} here; I take it."
    if tool == "read":
        return f"Something is written on the {args['item']}; I read it."
    if tool == "inspect":
        fixture = _named(sim.fixtures, args["target"])
        if sim.fixtures[fixture].inscription:
            return f"Something is written on the {args['target']}; I inspect it."
        if ("hidden", fixture) in sim.location.values():
            return f"A clue said something is hidden in the {args['target']}; I inspect it."
        return f"I examine the {args['target']} closely."
    if tool == "use":
        return f"The {args['target']} is locked and I carry the {args['item']}; I unlock it."
    if tool == "enter_code" and args["target"] == "exit door":
        digits = ", ".join(args["code"])
        return f"The clues gave the exit code's digits in order, {digits}; I enter {args['code']}."
    if tool == "enter_code":
        return f"A clue said the {args['target']} opens with the code {args['code']}."
    return "I look around."


def _named(objects: Mapping[str, Item | Fixture], name: str) -> str:
    """The id of the item or fixture the plan called by ``name`` (names are unique in a world)."""
    return next(obj_id for obj_id, spec in objects.items() if spec.name == name)
