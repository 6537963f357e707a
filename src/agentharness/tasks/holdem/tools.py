"""Layer 2: the per-episode poker session and the ``act`` / ``view_table`` tools.

Observations are table images; the tool texts only say what the image cannot show
plainly: whose turn it is, the legal actions with their amounts, and which image shows
what. Cards, board, pot, stacks, bets and the bot's actions are only in the images.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from agentharness.core.instance import Instance
from agentharness.core.tools import ToolError, ToolResult, World, tool
from agentharness.tasks.holdem import render
from agentharness.tasks.holdem.problem import Hidden, Public
from agentharness.tasks.holdem.simulator import (
    HandRecord,
    IllegalAction,
    Session,
)

ActionName = Literal["fold", "check", "call", "bet", "raise", "all_in"]
Amount = Annotated[int, Field(ge=1, le=1_000_000_000)]


def call_limit(n_hands: int) -> int:
    """Tool calls allowed per session (stated in the prompt; the world enforces it)."""
    return 12 * n_hands + 12


def turn_text(session: Session) -> str:
    """Whose turn it is and the legal actions, without anything the image shows."""
    h = session.hand
    street = session.street()
    legal = session.legal()
    return (
        f"Hand {h.number} of {session.spec.n_hands}, {street}. Your turn. "
        f"Legal actions: {legal.describe()}."
    )


def turn_data(session: Session) -> dict[str, Any]:
    """:func:`turn_text` as a tool result's data: the hand, the street and the legal actions
    (``Legal``'s fields; bet and raise ranges as [min, max])."""
    legal = session.legal()
    return {
        "hand": session.hand.number,
        "street": session.street(),
        "legal": {
            "fold": legal.fold,
            "check": legal.check,
            "call": legal.call,
            "bet": legal.bet,
            "raise": legal.raise_,
            "all_in": legal.all_in,
        },
    }


def images_for(session: Session, finished: list[HandRecord], width: int) -> tuple[list[bytes], str]:
    """PNG images of the showdowns that just happened plus the current table, and a caption.

    A hand that ended with a fold gets no image of its own: the next table's last-action
    line gives its result.
    """
    images: list[bytes] = []
    notes: list[str] = []
    for h in finished:
        if (session.over and h is session.hand) or not h.showdown:
            continue  # the final table below shows it, or a fold (the next table says it)
        images.append(render.table_png(session.hand_view(h), width))
        notes.append(f"image {len(images)} shows the showdown of hand {h.number}")
    images.append(render.table_png(session.view(), width))
    if session.over:
        notes.append(f"image {len(images)} shows the final table and the session result")
    else:
        notes.append(f"image {len(images)} shows the table now")
    return images, "; ".join(notes).capitalize() + "."


class HoldemWorld(World):
    """One session against the bot, with counts of legal and illegal action attempts."""

    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        self.spec = instance.hidden_as(Hidden).session
        self.width = instance.public_as(Public).image_width
        self.session = Session(self.spec)
        self.session.take_finished()  # hands over before the first decision are in the prompt
        self.max_calls = call_limit(self.spec.n_hands)
        self.legal_actions = 0
        self.illegal_actions = 0

    def _limit_reached(self) -> bool:
        return self.tool_calls_made >= self.max_calls and not self.session.over

    def _out_of_calls(self, text: str, is_error: bool = False) -> ToolResult:
        return ToolResult(
            text=f"{text}\nYou have used all {self.max_calls} tool calls; the session stops here "
            "and the current hand counts as folded.",
            is_error=is_error,
            done=True,
            end_reason="max_tool_calls",
        )

    @tool
    def act(self, action: ActionName, amount: Amount | None = None) -> ToolResult:
        """Take your action in the current hand; the bot answers and the next table image comes back.

        Args:
            action: one of fold, check, call, bet, raise, all_in. bet opens the betting on a
                street where nobody has bet; raise raises an existing bet (preflop the big
                blind counts as a bet); all_in puts in all your chips (a raise, or a call when
                you cannot raise).
            amount: for bet and raise only: the total your bet will be for this betting round
                (raise TO this amount, counting chips you already put in this round), within
                the min and max the legal actions list. Leave it out for the other actions.
        """
        s = self.session
        if s.over:
            raise ToolError("The session is over; there is nothing left to play.")
        try:
            s.act(action, amount)
        except IllegalAction as e:
            self.illegal_actions += 1
            msg = f"Illegal action: {e} The hand waits for your action."
            if self._limit_reached():
                return self._out_of_calls(f"Error: {msg}", is_error=True)
            raise ToolError(msg, data=turn_data(s)) from e
        self.legal_actions += 1
        finished = s.take_finished()
        images, caption = images_for(s, finished, self.width)
        parts = [f"{s.last_agent_action}."]
        ended = [h.number for h in finished]
        if ended:
            parts.append(f"Hand{'s' if len(ended) > 1 else ''} {', '.join(map(str, ended))} ended.")
        metrics: dict[str, float] = {"hands_finished": float(s.hands_finished)}
        if s.over:
            parts.append(f"The session is over after {s.hands_finished} hands. {caption}")
            return ToolResult(
                text=" ".join(parts),
                images=tuple(images),
                metrics=metrics,
                done=True,
                end_reason="completed",
            )
        parts.append(turn_text(s))
        parts.append(caption)
        if self._limit_reached():
            return self._out_of_calls(" ".join(parts))
        return ToolResult(
            text=" ".join(parts), images=tuple(images), metrics=metrics, data=turn_data(s)
        )

    @tool
    def view_table(self) -> ToolResult:
        """Show the current table image again, with the legal actions."""
        s = self.session
        if s.over:
            raise ToolError("The session is over.")
        png = render.table_png(s.view(), self.width)
        text = f"{turn_text(s)} The image shows the table now."
        if self._limit_reached():
            return self._out_of_calls(text)
        return ToolResult(text=text, images=(png,), data=turn_data(s))


def act_arguments(arguments: dict[str, Any]) -> tuple[str, int | None] | None:
    """``act`` arguments validated exactly as the executor does; ``None`` if invalid."""
    spec = HoldemWorld.tool_specs()["act"]
    try:
        validated = spec.params_model.model_validate(arguments)
    except Exception:
        return None
    return str(validated.action), validated.amount  # type: ignore[attr-defined]
