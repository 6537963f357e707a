"""The bot: parametrized styles and their decision rule.

A bot reads its hand strength as its equity against a random hand
(:func:`~agentharness.tasks.holdem.cards.strength`) and compares it with thresholds:
it puts chips in preflop from ``play_equity``, calls a bet when its equity clears the
pot odds plus a style margin plus a risk term for big bets (:func:`call_bar`), bets or
raises its value hands (``value_equity``) ``raise_freq`` of the time and bluffs
``bluff_freq`` of the time, sized at ``bet_fraction`` of the pot (:func:`sized`). Its
randomness is one uniform draw per decision, seeded by the session. The rule is also
written as probabilities over that draw (:func:`move_probabilities`): given what the
table shows, the chance of each move for every hand the bot might hold, which is how the
reward averages a showdown over the bot's possible hands.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from agentharness.tasks.holdem.cards import card_ints, combos_without, strength, strength_table

if TYPE_CHECKING:
    from agentharness.tasks.holdem.simulator import Decision


@dataclass(frozen=True)
class BotStyle:
    """Parameters of a bot style. Equities are against a random hand (0..1)."""

    name: str
    play_equity: float  # preflop: least equity to put chips in voluntarily
    call_margin: float  # facing a bet: call when equity >= pot odds + margin (+ risk)
    risk_aversion: float  # extra equity wanted per fraction of its stack a call risks
    value_equity: float  # bet or raise for value from this equity
    raise_freq: float  # how often a value hand bets/raises instead of checking/calling
    bluff_freq: float  # how often a weak hand bets/raises anyway
    bet_fraction: float  # bet size as a fraction of the pot
    describe: str


STYLES: dict[str, BotStyle] = {
    "passive": BotStyle(
        name="passive",
        play_equity=0.25,
        call_margin=0.0,
        risk_aversion=0.12,
        value_equity=0.74,
        raise_freq=0.35,
        bluff_freq=0.03,
        bet_fraction=0.5,
        describe="calls a lot, rarely bets or raises and almost never bluffs",
    ),
    "loose": BotStyle(
        name="loose",
        play_equity=0.33,
        call_margin=-0.08,
        risk_aversion=0.10,
        value_equity=0.64,
        raise_freq=0.55,
        bluff_freq=0.12,
        bet_fraction=0.7,
        describe="plays many hands and calls light, bets its good hands and bluffs sometimes",
    ),
    "tight": BotStyle(
        name="tight",
        play_equity=0.54,
        call_margin=0.08,
        risk_aversion=0.15,
        value_equity=0.68,
        raise_freq=0.7,
        bluff_freq=0.04,
        bet_fraction=0.66,
        describe="plays few hands and folds to pressure, but bets strongly when it plays",
    ),
    "aggressive": BotStyle(
        name="aggressive",
        play_equity=0.42,
        call_margin=0.0,
        risk_aversion=0.10,
        value_equity=0.60,
        raise_freq=0.85,
        bluff_freq=0.25,
        bet_fraction=0.9,
        describe="bets and raises often with big sizes and bluffs a lot",
    ),
}


def call_bar(style: BotStyle, street: str, to_call: int, pot: int, stack: int) -> float:
    """The least equity with which the bot calls ``to_call`` into ``pot``.

    Pot odds plus the style's margin, plus its risk aversion times the share of its
    remaining ``stack`` the call costs (every bot gets careful against big bets);
    preflop never below its ``play_equity``.
    """
    need = to_call / (pot + to_call) + style.call_margin
    need += style.risk_aversion * min(1.0, to_call / max(1, stack))
    if street == "preflop":
        need = max(need, style.play_equity)
    return need


def sized(d: Decision, fraction: float) -> tuple[str, int] | None:
    """A bet/raise to about ``fraction`` of the pot after calling; shove when close."""
    rng_ = d.legal.bet or d.legal.raise_
    if rng_ is None:
        return None
    lo, hi = rng_
    target = d.max_bet + round(fraction * (d.pot + d.to_call))
    target = max(lo, min(hi, target))
    if target >= 0.7 * hi:
        target = hi
    return ("bet" if d.legal.bet else "raise"), target


@dataclass(frozen=True)
class BotSpot:
    """What the bot's rule depends on at a decision, besides its hand strength."""

    facing: bool  # there is a bet to call
    need: float  # the call bar (:func:`call_bar`) when facing a bet
    can_raise: bool  # a bet or raise is legal


def spot_of(d: Decision, style: BotStyle) -> BotSpot:
    facing = d.to_call > 0
    need = call_bar(style, d.street, d.to_call, d.pot, d.stack) if facing else 0.0
    return BotSpot(facing, need, d.legal.bet is not None or d.legal.raise_ is not None)


def choose(style: BotStyle, e: float, spot: BotSpot, r: float) -> str:
    """The bot's move for hand strength ``e`` and a uniform draw ``r``: fold, check, call
    or raise (a bet when nobody has bet)."""
    strong = e >= style.value_equity
    if spot.facing:
        if strong and spot.can_raise and r < style.raise_freq:
            return "raise"
        if e >= spot.need:
            return "call"
        if spot.can_raise and r < style.bluff_freq:
            return "raise"
        return "fold"
    if spot.can_raise and ((strong and r < style.raise_freq) or r < style.bluff_freq):
        return "raise"
    return "check"


def move_probabilities(style: BotStyle, e: np.ndarray, spot: BotSpot) -> dict[str, np.ndarray]:
    """The chance of each move of :func:`choose` over ``r``, for every strength in ``e``."""
    rf, bf = style.raise_freq, style.bluff_freq
    strong = e >= style.value_equity
    if spot.facing:
        value = strong & spot.can_raise
        start = np.where(value, rf, 0.0)  # draws below this raise for value
        above = e >= spot.need
        bluff = np.where(~above & spot.can_raise, np.maximum(0.0, bf - start), 0.0)
        return {
            "raise": start + bluff,
            "call": np.where(above, 1.0 - start, 0.0),
            "fold": np.where(above, 0.0, 1.0 - start - bluff),
            "check": np.zeros_like(e),
        }
    bet = np.where(strong, max(rf, bf), bf) if spot.can_raise else np.zeros_like(e)
    zero = np.zeros_like(e)
    return {"raise": bet, "check": 1.0 - bet, "call": zero, "fold": zero}


BotMove = tuple[tuple[str, ...], str, BotSpot]  # (board seen, verb, spot) of one bot move

STREET_CARDS = {"preflop": 0, "flop": 3, "turn": 4, "river": 5}


def hand_weights(style: BotStyle, dead: Sequence[str], moves: Sequence[BotMove]) -> np.ndarray:
    """How likely each two-card hand (:data:`cards.COMBOS`) is to be the bot's.

    Hands holding a ``dead`` card (the observer's own, the board) get 0; the others are
    weighted by the chance that the bot's rule makes every one of its ``moves`` with them
    (its strength on the board it saw, the same spot). Unnormalised: an exact posterior
    given what the table shows, since the deal is uniform.
    """
    weight = combos_without(card_ints(dead)).astype(float)
    for board, verb, spot in moves:
        probs = move_probabilities(style, strength_table(board), spot)
        weight = weight * probs["raise" if verb in ("bet", "raise") else verb]
    return weight


def bot_decision(
    d: Decision, rng: random.Random, style: BotStyle
) -> tuple[tuple[str, int | None], BotSpot]:
    """The bot's action (and the spot it decided in): thresholds on its hand strength
    (:func:`cards.strength`, its equity against a random hand), value raises, bluffs and
    style sizing."""
    spot = spot_of(d, style)
    move = choose(style, strength(d.hole, d.board), spot, rng.random())
    if move == "raise":
        bet = sized(d, style.bet_fraction)
        assert bet is not None  # can_raise
        return bet, spot
    return (move, None), spot
