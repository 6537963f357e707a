"""The privileged expert: follows the hidden goal list, replanning from the true state.

The expert keeps its own simulator and brings it up to date from the conversation each
turn: it pairs every assistant tool call with its tool result and replays the calls that
did not fail. Because every action is monotone (things only get unlocked, revealed, read
or picked up) and the planner in :mod:`.simulator` plans from the current state — walking
by breadth-first search over the doors now open — any actions interleaved by another
policy (a noisy agent's random moves, pickups or reads) never derail it.
"""

from __future__ import annotations

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.parsing import answered_calls
from agentharness.tasks.escape_room.problem import Hidden
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
        step = plan_next(self.sim, self.goals) or ("look", {})
        tool, args = step
        return assistant(tool_calls=[ToolCall.make(f"escape_{self._n}", tool, args)])
