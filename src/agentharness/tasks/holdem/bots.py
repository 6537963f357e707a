"""The bot: parametrized styles and their decision rule.

A bot reads its hand strength as Monte Carlo equity against a random hand
(:func:`~agentharness.tasks.holdem.cards.equity`) and compares it with thresholds:
it puts chips in preflop from ``play_equity``, calls a bet when its equity clears the
pot odds plus a style margin plus a risk term for big bets (:func:`call_bar`), bets or
raises its value hands (``value_equity``) ``raise_freq`` of the time and bluffs
``bluff_freq`` of the time, sized at ``bet_fraction`` of the pot (:func:`sized`). Its
randomness comes from a generator the session seeds per decision.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentharness.tasks.holdem.cards import BOT_SAMPLES, equity

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
        play_equity=0.40,
        call_margin=0.02,
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


def bot_decision(d: Decision, rng: random.Random, style: BotStyle) -> tuple[str, int | None]:
    """The bot's action: equity thresholds, value raises, bluffs and style sizing."""
    e = equity(d.hole, d.board, BOT_SAMPLES)
    r = rng.random()
    strong = e >= style.value_equity
    if d.to_call > 0:
        need = call_bar(style, d.street, d.to_call, d.pot, d.stack)
        if strong and r < style.raise_freq:
            bet = sized(d, style.bet_fraction)
            if bet is not None:
                return bet
        if e >= need:
            return "call", None
        if r < style.bluff_freq:
            bet = sized(d, style.bet_fraction)
            if bet is not None:
                return bet
        return "fold", None
    if (strong and r < style.raise_freq) or r < style.bluff_freq:
        bet = sized(d, style.bet_fraction)
        if bet is not None:
            return bet
    return "check", None
