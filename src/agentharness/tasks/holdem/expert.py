"""The privileged expert: the reference policy, played through ``act``.

The expert keeps its own copy of the session (built from the hidden card stacks) and
brings it up to date from the conversation each turn: it pairs every assistant tool call
with its tool result and replays the ``act`` calls that succeeded. Because the bot is
seeded and the cards are fixed, that copy is exactly the world's session, so random
actions interleaved by a noisy agent never derail it: the next action is always decided
from the current state. The policy itself (:func:`policies.reference_decision`) uses
what the table image shows (its own cards, the board, pot, bets, stacks and the bot's
moves), the bot's style from the prompt, and that style's exact parameters, which the
prompt only describes in words.
"""

from __future__ import annotations

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.parsing import answered_calls
from agentharness.tasks.holdem.cards import strength
from agentharness.tasks.holdem.policies import reference_decision
from agentharness.tasks.holdem.problem import Hidden
from agentharness.tasks.holdem.simulator import AGENT, IllegalAction, Session
from agentharness.tasks.holdem.tools import act_arguments


class HoldemExpert:
    """Scripted reference player that acts only through the task's tools."""

    def __init__(self, instance: Instance) -> None:
        self.session = Session(instance.hidden_as(Hidden).session)
        self._seen = 0
        self._n = 0

    def _sync(self, messages: list[Message]) -> None:
        for call, message in answered_calls(messages, self._seen):
            if call.name != "act" or message.name != "act":
                continue
            if message.outcome is None or message.outcome.is_error:
                continue
            args = act_arguments(call.arguments)
            if args is None or self.session.over:
                continue
            try:
                self.session.act(*args)
            except IllegalAction:
                pass
        self._seen = len(messages)

    def next_turn(self, messages: list[Message]) -> Message:
        self._sync(messages)
        self._n += 1
        call_id = f"holdem_{self._n}"
        s = self.session
        if s.over or not s.agent_to_act():
            return assistant("The session is over.", [ToolCall.make(call_id, "view_table", {})])
        d = s.decision(AGENT)
        action, amount = reference_decision(d)
        e = strength(d.hole, d.board)
        args: dict[str, object] = {"action": action}
        if amount is not None:
            args["amount"] = amount
        board = " ".join(d.board) or "no board yet"
        say = f" to {amount}" if amount is not None else ""
        text = (
            f"I hold {' '.join(d.hole)} ({board}), about {e:.0%} equity against a random "
            f"hand; pot {d.pot}, {d.to_call} to call. I {action.replace('_', ' ')}{say}."
        )
        return assistant(text, [ToolCall.make(call_id, "act", args)])
