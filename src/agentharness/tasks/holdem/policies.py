"""The players' policies on a :class:`~agentharness.tasks.holdem.simulator.Decision`.

* :func:`reference_decision` — the reference policy (the expert's strategy);
* the lazy baselines, which never look at the cards: :func:`check_fold`,
  :func:`check_call`, :func:`shove` and :func:`call_or_shove` (:data:`LAZY_POLICIES`);
  the reward pays only for beating the best of them on the same deals;
* :func:`random_decision` — a uniformly random legal action;
* :func:`play_session` — a whole session with one policy.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from agentharness.tasks.holdem.bots import (
    STYLES,
    BotSpot,
    call_bar,
    hand_weights,
    move_probabilities,
    sized,
)
from agentharness.tasks.holdem.cards import outcomes_against_all, stable_seed, strength_table
from agentharness.tasks.holdem.simulator import AGENT, Decision, Legal, Session, SessionSpec

Move = tuple[str, int | None]
Policy = Callable[[Decision, random.Random], Move]


# -- the reference policy -------------------------------------------------------------------


def _bet_sizes(d: Decision) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for fraction in (0.5, 0.8, 1.2):
        bet = sized(d, fraction)
        if bet is not None and bet not in out:
            out.append(bet)
    return out


# A small tax on chips put in keeps marginal bets honest (later streets are not modelled).
BET_TAX = 0.04


def reference_decision(d: Decision) -> Move:
    """The reference policy (the expert's strategy): the best option against the bot's
    range, one street ahead.

    The bot's possible hands are weighted by how likely its known rule makes its moves
    so far with each (:func:`bots.hand_weights`: an exact posterior). Each option is
    scored by its expected chips: folding 0; checking or calling, the chance to win
    against that range (averaged over the rest of the board) times the pot; betting or
    raising half, 0.8 or 1.2 pots, the bot's chance to fold, call or re-raise with each
    hand it might hold at that size (a re-raise is met by an all-in call or a fold,
    whichever is worth more). It uses only what the table image and the prompt show,
    and the bot's rule.
    """
    style = STYLES[d.style]
    weight = hand_weights(style, [*d.hole, *d.board], d.opp_moves)
    total = weight.sum()
    weight = weight / total if total > 0 else weight
    share = outcomes_against_all(d.hole, d.board)
    win = float((weight * share).sum())
    pot, to_call = d.pot, d.to_call
    mine, theirs = d.my_bet, d.max_bet
    matched = min(mine + d.stack, theirs + d.opp_stack)  # this round's total if all-in
    options: list[tuple[float, Move]] = []
    if to_call > 0:
        options.append((0.0, ("fold", None)))
        options.append((win * (pot + to_call) - to_call, ("call", None)))
    else:
        options.append((win * pot, ("check", None)))
    strengths = strength_table(d.board)
    for action, target in _bet_sizes(d):
        put = target - mine  # chips we add now
        bot_add = target - theirs  # what the bot must add to call
        need = call_bar(style, d.street, bot_add, pot + put, d.opp_stack)
        can_raise = target < mine + d.stack and d.opp_stack > bot_add
        moves = move_probabilities(style, strengths, BotSpot(True, need, can_raise))
        called = share * (pot + put + bot_add) - put
        raised = weight * moves["raise"]
        after_raise = -float(put)
        if raised.sum() > 0:
            win_raised = float((raised * share).sum() / raised.sum())
            all_in = win_raised * (pot + 2 * matched - mine - theirs) - (matched - mine)
            after_raise = max(after_raise, all_in)
        ev = float(
            (
                weight
                * (moves["fold"] * pot + moves["call"] * called + moves["raise"] * after_raise)
            ).sum()
        )
        options.append((ev - BET_TAX * put, (action, target)))
    options.sort(key=lambda o: o[0], reverse=True)
    return options[0][1]


def random_decision(d: Decision, rng: random.Random) -> tuple[str, int | None]:
    """A uniformly random legal action (random amount for bets and raises): the baseline."""
    action = rng.choice(d.legal.names())
    rng_ = d.legal.bet if action == "bet" else d.legal.raise_ if action == "raise" else None
    if rng_ is None:
        return action, None
    return action, rng.randint(*rng_)


# -- lazy baselines: they never look at the cards ------------------------------------------


def check_fold(d: Decision, rng: random.Random | None = None) -> tuple[str, int | None]:
    """Check when it is free, fold to any bet."""
    return ("check", None) if d.legal.check else ("fold", None)


def check_call(d: Decision, rng: random.Random | None = None) -> tuple[str, int | None]:
    """Check when it is free, call any bet."""
    return ("check", None) if d.legal.check else ("call", None)


def shove(d: Decision, rng: random.Random | None = None) -> tuple[str, int | None]:
    """All-in every time."""
    return "all_in", None


def call_or_shove(d: Decision, rng: random.Random | None = None) -> tuple[str, int | None]:
    """Call any bet; all-in when there is nothing to call."""
    return ("call", None) if d.legal.call is not None else ("all_in", None)


LAZY_POLICIES: dict[str, Policy] = {
    "check_fold": check_fold,
    "check_call": check_call,
    "shove": shove,
    "call_or_shove": call_or_shove,
}


# -- blind play: what can be done from the tool texts alone ---------------------------------
#
# The texts give the street, the chips to call and the bet/raise ranges, never the cards
# or the pot. Each rule below uses only those; :func:`blind_decision` plays, per bot style,
# the one with the best mean reward on held-out deals (seeds 100-139 of each preset, among
# eight such rules: check/fold or call small bets, call preflop, min-bet, min-raise,
# steal, random min-bets), none above about 0.05 mean: without the cards there is
# nothing to win.


def _blind_steal(street: str, legal: Legal, bb: int, rng: random.Random) -> Move:
    """Raise to 3 big blinds from the small blind, bet twice the minimum when nobody has
    bet after the flop, call up to a big blind, else check or fold."""
    if street == "preflop" and legal.raise_ is not None and (legal.call or 0) <= bb // 2:
        lo, hi = legal.raise_
        return "raise", min(hi, max(lo, 3 * bb))
    if legal.check:
        if legal.bet is not None and street != "preflop":
            lo, hi = legal.bet
            return "bet", 2 * lo if 2 * lo <= hi else lo
        return "check", None
    if legal.call is not None and legal.call <= bb:
        return "call", None
    return "fold", None


def _blind_min_raise(street: str, legal: Legal, bb: int, rng: random.Random) -> Move:
    """Bet the minimum when nobody has bet, min-raise small bets, else check or fold."""
    if legal.bet is not None:
        return "bet", legal.bet[0]
    if legal.raise_ is not None and legal.call is not None and legal.call <= 2 * bb:
        return "raise", legal.raise_[0]
    return ("check", None) if legal.check else ("fold", None)


def _blind_min_bet(street: str, legal: Legal, bb: int, rng: random.Random) -> Move:
    """Bet the minimum when nobody has bet, call up to 2 big blinds, else fold."""
    if legal.bet is not None:
        return "bet", legal.bet[0]
    if legal.check:
        return "check", None
    if legal.call is not None and legal.call <= 2 * bb:
        return "call", None
    return "fold", None


BLIND_RULES: dict[str, Callable[[str, Legal, int, random.Random], Move]] = {
    "passive": _blind_steal,
    "loose": _blind_min_bet,
    "tight": _blind_min_raise,
    "aggressive": _blind_min_bet,
}


def blind_decision(
    style: str, street: str, legal: Legal, big_blind: int, rng: random.Random
) -> Move:
    """The card-blind policy's move from what the tool texts show."""
    return BLIND_RULES[style](street, legal, big_blind, rng)


def blind_rng(seed: int, style: str) -> random.Random:
    """The blind policy's randomness for the instance of ``seed``."""
    return random.Random(stable_seed("blind", seed, style))


def blind(d: Decision, rng: random.Random) -> Move:
    """:func:`blind_decision` on a decision (it reads no cards)."""
    return blind_decision(d.style, d.street, d.legal, d.big_blind, rng)


def reference(d: Decision, rng: random.Random | None = None) -> tuple[str, int | None]:
    return reference_decision(d)


def play_session(
    spec: SessionSpec, policy: Policy, salt: object = 0, rng: random.Random | None = None
) -> tuple[Session, list[tuple[str, int | None]]]:
    """Play a whole session with ``policy`` (its randomness from ``rng``, else seeded by
    ``salt``)."""
    rng = rng or random.Random(stable_seed("policy", spec.seed, salt))
    session = Session(spec)
    actions: list[tuple[str, int | None]] = []
    while not session.over:
        action, amount = policy(session.decision(AGENT), rng)
        session.act(action, amount)
        actions.append((action, amount))
    return session, actions


def run_reference(spec: SessionSpec) -> tuple[Session, list[tuple[str, int | None]]]:
    """Play a whole session with :func:`reference_decision`; returns it and the actions."""
    return play_session(spec, reference)


def run_random(spec: SessionSpec, salt: int) -> Session:
    """Play a whole session with :func:`random_decision` (seeded by ``salt``)."""
    return play_session(spec, random_decision, ("baseline", salt))[0]


def baselines(spec: SessionSpec) -> dict[str, float]:
    """The adjusted net chips of every lazy baseline on ``spec``'s deals."""
    return {
        name: play_session(spec, policy)[0].adjusted_net for name, policy in LAZY_POLICIES.items()
    }
