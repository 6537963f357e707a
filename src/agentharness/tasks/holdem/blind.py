"""The blind policy: the strongest play we know that never reads the table image.

It sees what a screen reader would: the prompt and the tool texts, which give the bot's
style, the hand number, the street and the legal actions with their amounts (so the
chips to call and the bet and raise ranges), never the cards, the board or the pot. It
parses the latest "Legal actions" line into a :class:`Legal` and plays
:func:`policies.blind_decision` for the bot's style, through the ``act`` tool.

The adversarial check plays it with ``instance.hidden`` emptied and every image blanked;
it must earn next to nothing, or the images would not be needed.
"""

from __future__ import annotations

import re

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.tasks.holdem.policies import blind_decision, blind_rng
from agentharness.tasks.holdem.problem import Public
from agentharness.tasks.holdem.simulator import Legal

_TURN = re.compile(
    r"Hand (\d+) of (\d+), (preflop|flop|turn|river)\. Your turn\. Legal actions: ([^\n]*?)\.(?:\s|$)"
)
_RANGE = re.compile(r"(bet|raise) \(amount (\d+) to (\d+)\)")
_CALL = re.compile(r"call \(adds (\d+)\)")
_ALL_IN = re.compile(r"all_in \((?:raise to|call) (\d+)\)")


def parse_turn(text: str) -> tuple[str, Legal] | None:
    """The street and legal actions of the last "Your turn" line in ``text``."""
    found = _TURN.findall(text)
    if not found:
        return None
    _, _, street, actions = found[-1]
    names = {a.strip().split(" ")[0] for a in actions.split(",")}
    ranges = {kind: (int(lo), int(hi)) for kind, lo, hi in _RANGE.findall(actions)}
    call = _CALL.search(actions)
    all_in = _ALL_IN.search(actions)
    legal = Legal(
        fold="fold" in names,
        check="check" in names,
        call=int(call.group(1)) if call else None,
        bet=ranges.get("bet"),
        raise_=ranges.get("raise"),
        all_in=int(all_in.group(1)) if all_in else 0,
    )
    return street, legal


class HoldemBlind:
    """Card-blind player: acts from the tool texts only (no image, no hidden data)."""

    def __init__(self, instance: Instance) -> None:
        public = instance.public_as(Public)
        self.style: str = public.bot_style
        self.big_blind = public.big_blind
        self.rng = blind_rng(instance.seed, self.style)
        self._n = 0

    def next_turn(self, messages: list[Message]) -> Message:
        self._n += 1
        call_id = f"blind_{self._n}"
        for message in reversed(messages):
            turn = parse_turn(message.text) if message.role in ("user", "tool") else None
            if turn is not None:
                break
        else:
            return assistant(
                "Let me look at the table.", [ToolCall.make(call_id, "view_table", {})]
            )
        street, legal = turn
        action, amount = blind_decision(self.style, street, legal, self.big_blind, self.rng)
        args: dict[str, object] = {"action": action}
        if amount is not None:
            args["amount"] = amount
        return assistant(f"Without the cards: {action}.", [ToolCall.make(call_id, "act", args)])
