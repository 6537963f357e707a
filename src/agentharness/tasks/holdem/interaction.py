"""Layer 3: budgets and what the player is told when a turn calls no tool."""

from __future__ import annotations

from agentharness.core.instance import Instance
from agentharness.core.messages import Message
from agentharness.core.task import Budgets, Interaction
from agentharness.tasks.holdem.tools import HoldemWorld, turn_text

# The per-session call limit (12 per hand + 12, stated in the prompt) is enforced by the
# world; these budgets only backstop it for the largest configurations (40 hands).
BUDGETS = Budgets(
    max_turns=500,
    max_tool_calls=500,
)


class HoldemInteraction(Interaction[HoldemWorld]):
    """Reminds a player who stopped acting that the hand is waiting for it."""

    def __init__(self) -> None:
        super().__init__(BUDGETS)

    def on_no_tool_call(
        self, instance: Instance, world: HoldemWorld, message: Message, nudges: int
    ) -> str | None:
        if world.session.over:
            return super().on_no_tool_call(instance, world, message, nudges)
        s = world.session
        left = s.spec.n_hands - s.hands_finished
        return (
            "You did not call a tool, so the game is waiting for you. "
            f"{turn_text(s)} {left} hand(s) are left to play, including this one. "
            'Call act, e.g. act(action="call") or act(action="raise", amount=...), or '
            "view_table() to see the table again. If you stop now the current hand counts "
            "as folded and the score is scaled by the share of hands played."
        )
