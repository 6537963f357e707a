"""The blind policy: the strongest play we know that never reads the table image.

It sees what a screen reader would: the prompt and the tool results without their
images, which give the bot's style, the hand number, the street and the legal actions
with their amounts (so the chips to call and the bet and raise ranges), never the cards,
the board or the pot. It reads the latest tool result's turn data (the same facts as its
"Legal actions" line) and plays :func:`policies.blind_decision` for the bot's style,
through the ``act`` tool; before any tool result it asks for the table with ``view_table``.

The adversarial check plays it with ``instance.hidden`` emptied and every image blanked;
it must earn next to nothing, or the images would not be needed.
"""

from __future__ import annotations

from typing import Any

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.tasks.holdem.policies import blind_decision, blind_rng
from agentharness.tasks.holdem.problem import Public
from agentharness.tasks.holdem.simulator import Legal


def legal_from_data(data: Any) -> tuple[str, Legal] | None:
    """The street and legal actions in a tool result's turn data (``tools.turn_data``)."""
    if not isinstance(data, dict) or not isinstance(data.get("legal"), dict):
        return None
    legal = data["legal"]

    def span(key: str) -> tuple[int, int] | None:
        value = legal.get(key)
        return None if value is None else (int(value[0]), int(value[1]))

    return str(data["street"]), Legal(
        fold=bool(legal["fold"]),
        check=bool(legal["check"]),
        call=None if legal["call"] is None else int(legal["call"]),
        bet=span("bet"),
        raise_=span("raise"),
        all_in=int(legal["all_in"]),
    )


class HoldemBlind:
    """Card-blind player: acts from the tool results' turn data only (no image, no hidden data)."""

    def __init__(self, instance: Instance) -> None:
        public = instance.public_as(Public)
        self.style: str = public.bot_style
        self.big_blind = public.big_blind
        self.rng = blind_rng(instance.seed, self.style)
        self._n = 0

    def next_turn(self, messages: list[Message]) -> Message:
        self._n += 1
        call_id = f"blind_{self._n}"
        turn = None
        for message in reversed(messages):
            if message.role == "tool" and message.outcome is not None:
                turn = legal_from_data(message.outcome.data)
                break
        if turn is None:
            return assistant(
                "Let me look at the table.", [ToolCall.make(call_id, "view_table", {})]
            )
        street, legal = turn
        action, amount = blind_decision(self.style, street, legal, self.big_blind, self.rng)
        args: dict[str, object] = {"action": action}
        if amount is not None:
            args["amount"] = amount
        return assistant(f"Without the cards: {action}.", [ToolCall.make(call_id, "act", args)])
