"""The players' policies on a :class:`~agentharness.tasks.holdem.simulator.Decision`.

* :func:`reference_decision` — the equity-based reference policy (the expert's strategy);
* the lazy baselines, which never look at the cards: :func:`check_fold`,
  :func:`check_call`, :func:`shove` and :func:`call_or_shove` (:data:`LAZY_POLICIES`);
  the reward pays only for beating the best of them on the same deals;
* :func:`random_decision` — a uniformly random legal action;
* :func:`play_session` — a whole session with one policy.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from agentharness.tasks.holdem.bots import STYLES, BotStyle, call_bar, sized
from agentharness.tasks.holdem.cards import EXPERT_SAMPLES, equity, stable_seed
from agentharness.tasks.holdem.simulator import AGENT, Decision, Legal, Session, SessionSpec

Move = tuple[str, int | None]
Policy = Callable[[Decision, random.Random], Move]


# -- the reference policy -------------------------------------------------------------------


# Chance that a hand behind at this street still wins by the river (and that one ahead
# gets outdrawn): the percentile model below is exact only on the river.
_RESIDUAL = {"preflop": 0.3, "flop": 0.2, "turn": 0.1, "river": 0.0}

Range = list[tuple[float, float, float]]  # (weight, low, high): uniform in equity-percentile


def bot_range(
    style: BotStyle, opp_actions: Sequence[tuple[str, str, bool]], street_now: str
) -> Range:
    """The bot's holding after its actions this hand, as weighted percentile bands.

    Equity against a random hand works like a percentile of hand strength. The bot bets
    or raises with value hands (from ``value_equity`` up, ``raise_freq`` of the time) and
    bluffs with the rest (``bluff_freq``); it calls with hands above a calling bar and
    checks the rest. Three bands — weak, calling, value — start with mass equal to their
    widths and are re-weighted by the likelihood of each action (Bayes); a new street
    keeps 70 % of what was learned, since strengths shift as cards come.
    """
    rf, bf = style.raise_freq, style.bluff_freq
    street = "preflop"
    mass = _prior_mass(style, street)
    for act_street, verb, facing in opp_actions:
        if act_street != street:
            street = act_street
            mass = _carry(mass, style, street)
        # P(action | band), read off bot_decision: facing a bet, value hands raise
        # (raise_freq), hands above the bar call and the rest fold or bluff-raise.
        if verb in ("bet", "raise"):
            like = (bf, 0.0, rf) if facing else (bf, bf, max(rf, bf))
        elif verb == "check":
            like = (1.0 - bf, 1.0 - bf, 1.0 - max(rf, bf))
        elif verb == "call":
            like = (0.0, 1.0, 1.0 - rf)
        else:
            like = (1.0, 1.0, 1.0)
        posterior = [m * x for m, x in zip(mass, like, strict=True)]
        total = sum(posterior)
        mass = [m / total for m in posterior] if total > 0 else _prior_mass(style, street)
    if street_now != street:
        mass = _carry(mass, style, street_now)
    bands = _bands(style, street_now)
    return [(m, lo, hi) for m, (lo, hi) in zip(mass, bands, strict=True)]


def _prior_mass(style: BotStyle, street: str) -> list[float]:
    return [hi - lo for lo, hi in _bands(style, street)]


def _carry(mass: list[float], style: BotStyle, street: str) -> list[float]:
    prior = _prior_mass(style, street)
    return [0.7 * m + 0.3 * p for m, p in zip(mass, prior, strict=True)]


def _bands(style: BotStyle, street: str) -> list[tuple[float, float]]:
    bar = style.play_equity if street == "preflop" else max(0.05, 0.3 + style.call_margin)
    bar = min(bar, style.value_equity)
    return [(0.0, bar), (bar, style.value_equity), (style.value_equity, 1.0)]


def _beats(e: float, lo: float, hi: float) -> float:
    if hi <= lo:
        return 1.0 if e >= hi else 0.0
    return min(1.0, max(0.0, (e - lo) / (hi - lo)))


def win_probability(e: float, rng_: Range, street: str) -> float:
    """Chance to win at showdown against the range, with some room for draws."""
    total = sum(w for w, _, _ in rng_)
    if total <= 0:
        return e
    c = sum(w * _beats(e, lo, hi) for w, lo, hi in rng_) / total
    r = _RESIDUAL[street]
    return c * (1.0 - r) + (1.0 - c) * r


def _continue_split(style: BotStyle, rng_: Range, need: float) -> tuple[float, Range]:
    """How often the bot continues against a bet (calls above ``need``, bluff-raises
    below), and its continuing range."""
    total = sum(w for w, _, _ in rng_) or 1.0
    cont = 0.0
    kept: Range = []
    for w, lo, hi in rng_:
        span = max(hi - lo, 1e-9)
        above = max(0.0, hi - max(lo, need)) / span
        below = 1.0 - above
        cont += w / total * (above + below * style.bluff_freq)
        if above > 0:
            kept.append((w * above, max(lo, need), hi))
        if below > 0:
            kept.append((w * below * style.bluff_freq, lo, min(hi, need)))
    return cont, kept


def _bet_sizes(d: Decision) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for fraction in (0.5, 0.8, 1.2):
        bet = sized(d, fraction)
        if bet is not None and bet not in out:
            out.append(bet)
    return out


def reference_decision(d: Decision) -> tuple[str, int | None]:
    """The equity-based reference policy (the expert's strategy).

    Hand strength is Monte Carlo equity against a random hand (pokerkit's hand ranks);
    the bot's holding is modelled from its style and its last action (:func:`bot_range`).
    Each option is scored by its expected chips for this street — folding, checking or
    calling (the chance to be ahead against the range versus the pot odds), and betting
    or raising half, 0.8 or 1.2 pots (the chance the bot folds, else the chance to win
    against the range that continues) — and the best is played. It uses only what the
    table image and the prompt show.
    """
    style = STYLES[d.style]
    e = equity(d.hole, d.board, EXPERT_SAMPLES)
    street = d.street
    rng_ = bot_range(style, d.opp_actions, street)
    win = win_probability(e, rng_, street)
    pot, to_call = d.pot, d.to_call
    options: list[tuple[float, tuple[str, int | None]]] = []
    if to_call > 0:
        options.append((0.0, ("fold", None)))
        options.append((win * (pot + to_call) - to_call, ("call", None)))
    else:
        options.append((win * pot, ("check", None)))
    for action, target in _bet_sizes(d):
        put = target - d.my_bet  # chips we add now
        bot_add = target - d.max_bet  # what the bot must add to call (its bet is the max)
        need = call_bar(style, street, bot_add, pot + put, d.opp_stack)
        cont, kept = _continue_split(style, rng_, need)
        win_called = win_probability(e, kept, street) if kept else 1.0
        ev = (1.0 - cont) * pot + cont * (win_called * (pot + put + bot_add) - put)
        # Re-raises are not modelled; a small tax keeps marginal bets honest.
        ev -= 0.04 * put
        options.append((ev, (action, target)))
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
# the one that did best against the reward on held-out deals (seeds 100-139, where all of
# them stay below a tenth of the target: without the cards there is nothing to win).


def _blind_call_preflop(street: str, legal: Legal, bb: int, rng: random.Random) -> Move:
    """See the flop cheaply (calls up to 3 big blinds preflop), then check or fold."""
    if legal.check:
        return "check", None
    if street == "preflop" and legal.call is not None and legal.call <= 3 * bb:
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


def _blind_mixed(street: str, legal: Legal, bb: int, rng: random.Random) -> Move:
    """Bet the minimum half the time nobody has bet, call up to one big blind."""
    if legal.check:
        if legal.bet is not None and rng.random() < 0.5:
            return "bet", legal.bet[0]
        return "check", None
    if legal.call is not None and legal.call <= bb:
        return "call", None
    return "fold", None


BLIND_RULES: dict[str, Callable[[str, Legal, int, random.Random], Move]] = {
    "passive": _blind_call_preflop,
    "loose": _blind_mixed,
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
