"""Heads-up no-limit hold'em sessions on the pokerkit engine, bots and equity.

Pure domain code (no agent or message types):

* cards are two-character strings (``"Ah"``, ``"Td"``); every hand of a session is dealt
  from its own pre-shuffled 12-card stack (hole cards, burns and board), so the cards of
  hand *k* never depend on how earlier hands were played;
* :class:`Session` runs the hands on pokerkit's ``NoLimitTexasHoldem`` state (legal actions,
  minimum raises, all-ins, side cases and showdown evaluation are pokerkit's), carries the
  stacks from hand to hand, alternates the button and lets the bot act automatically;
* :func:`equity` is a seeded Monte Carlo estimate of a hand's chance to beat a random hand,
  scored with a fast 7-card evaluator whose hand ranks are read from pokerkit's own
  ``StandardHighHand`` lookup table (so it agrees with pokerkit's evaluator);
* :func:`bot_decision` is the parametrized bot (equity thresholds, bluff frequency and bet
  sizing per style) and :func:`reference_decision` the equity-based reference policy.

Everything is deterministic: bot randomness is seeded from (session seed, hand, action
number) and Monte Carlo samples from the cards themselves, so a session is a function of
its spec and the agent's actions.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pokerkit import State

RANKS = "23456789TJQKA"
SUITS = "cdhs"
FULL_DECK: tuple[str, ...] = tuple(r + s for r in RANKS for s in SUITS)
CARDS_PER_HAND = 12  # 2 + 2 hole cards, 3 burns, 5 board cards
STREETS = ("preflop", "flop", "turn", "river")

Action = Literal["fold", "check", "call", "bet", "raise", "all_in"]
ACTIONS: tuple[str, ...] = ("fold", "check", "call", "bet", "raise", "all_in")
Style = Literal["passive", "loose", "tight", "aggressive"]

AGENT, BOT = "You", "Bot"


def stable_seed(*parts: object) -> int:
    """A process-independent integer seed (``hash()`` of a str is salted per process)."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def shuffled_hand_cards(rng: random.Random) -> list[str]:
    """The 12 cards one hand needs, from a freshly shuffled deck."""
    deck = list(FULL_DECK)
    rng.shuffle(deck)
    return deck[:CARDS_PER_HAND]


# -- hand evaluation --------------------------------------------------------------------

_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
_CARD_INDEX = {c: i for i, c in enumerate(FULL_DECK)}  # rank * 4 + suit


@lru_cache(maxsize=1)
def _five_card_tables() -> tuple[dict[int, int], dict[int, int]]:
    """Hand strength of every 5-card rank multiset, read from pokerkit's lookup.

    Keys are products of rank primes; the first table is for unsuited hands, the second
    for five cards of one suit. Values are pokerkit's entry indices (higher = stronger).
    """
    from pokerkit import Card, StandardHighHand

    lookup = StandardHighHand.lookup
    # Parsed Card objects make the lookups ~4x faster than strings.
    parsed = {c: next(iter(Card.parse(c))) for c in FULL_DECK}
    plain: dict[int, int] = {}
    suited: dict[int, int] = {}
    for ranks in itertools.combinations_with_replacement(range(13), 5):
        if max(ranks.count(r) for r in ranks) > 4:
            continue
        key = 1
        for r in ranks:
            key *= _PRIMES[r]
        # Suits cycle so repeated ranks differ and five distinct ranks are not one suit.
        cards = tuple(parsed[RANKS[r] + SUITS[i % 4]] for i, r in enumerate(ranks))
        plain[key] = lookup.get_entry(cards).index
        if len(set(ranks)) == 5:
            same = tuple(parsed[RANKS[r] + "s"] for r in ranks)
            suited[key] = lookup.get_entry(same).index
    return plain, suited


_BEST_PLAIN: dict[int, int] = {}
_BEST_SUITED: dict[int, int] = {}


def _best_of(ranks: Sequence[int], table: dict[int, int]) -> int:
    best = -1
    for combo in itertools.combinations(ranks, 5):
        key = _PRIMES[combo[0]] * _PRIMES[combo[1]] * _PRIMES[combo[2]]
        key *= _PRIMES[combo[3]] * _PRIMES[combo[4]]
        value = table[key]
        if value > best:
            best = value
    return best


def hand_rank(cards: Sequence[int]) -> int:
    """Strength of the best 5-card hand in 5-7 cards (card ints); higher is stronger."""
    plain, suited = _five_card_tables()
    counts = [0, 0, 0, 0]
    for c in cards:
        counts[c & 3] += 1
    for suit, n in enumerate(counts):
        if n >= 5:
            # With 7 cards a flush excludes a full house or quads, so only the
            # suited cards matter (straight flushes included).
            ranks = sorted(c >> 2 for c in cards if c & 3 == suit)
            key = 1
            for r in ranks:
                key *= _PRIMES[r]
            if key not in _BEST_SUITED:
                _BEST_SUITED[key] = _best_of(ranks, suited)
            return _BEST_SUITED[key]
    key = 1
    for c in cards:
        key *= _PRIMES[c >> 2]
    if key not in _BEST_PLAIN:
        _BEST_PLAIN[key] = _best_of([c >> 2 for c in cards], plain)
    return _BEST_PLAIN[key]


def card_ints(cards: Sequence[str]) -> list[int]:
    return [_CARD_INDEX[c] for c in cards]


def _canonical_preflop(hole: Sequence[str]) -> tuple[str, ...]:
    """Preflop equity only depends on the ranks and whether the two cards are suited."""
    a, b = sorted(hole, key=lambda c: RANKS.index(c[0]), reverse=True)
    return (a[0] + "s", b[0] + ("s" if a[1] == b[1] else "h"))


def equity(hole: Sequence[str], board: Sequence[str], samples: int = 300) -> float:
    """Monte Carlo chance that ``hole`` beats a uniformly random hand (ties count half).

    The sampler is seeded from the cards, so the estimate is reproducible, and results
    are cached: sessions are replayed by the world, the expert and the reward.
    """
    key = _canonical_preflop(hole) if not board else tuple(hole)
    return _equity(key, tuple(sorted(board)), samples)


@lru_cache(maxsize=200_000)
def _equity(hole: tuple[str, ...], board: tuple[str, ...], samples: int) -> float:
    rng = random.Random(stable_seed("equity", *hole, "|", *board, samples))
    mine = card_ints(hole)
    known = card_ints(board)
    rest = [i for i in range(52) if i not in set(mine) | set(known)]
    need = 5 - len(known)
    score = 0.0
    for _ in range(samples):
        drawn = rng.sample(rest, 2 + need)
        full_board = known + drawn[2:]
        ours = hand_rank(mine + full_board)
        theirs = hand_rank(drawn[:2] + full_board)
        score += 1.0 if ours > theirs else 0.5 if ours == theirs else 0.0
    return score / samples


RUNOUT_SAMPLES = 4000


@lru_cache(maxsize=4096)
def showdown_equity(hole: tuple[str, ...], other: tuple[str, ...], board: tuple[str, ...]) -> float:
    """Chance that ``hole`` beats ``other`` (ties half) over the rest of the board.

    Exact enumeration from the flop on; preflop (1.7 million boards) a seeded Monte Carlo
    estimate with :data:`RUNOUT_SAMPLES` runouts.
    """
    mine, theirs, known = card_ints(hole), card_ints(other), card_ints(board)
    used = set(mine) | set(theirs) | set(known)
    rest = [i for i in range(52) if i not in used]
    need = 5 - len(known)
    if need <= 2:
        runouts: list[tuple[int, ...]] | Any = itertools.combinations(rest, need)
    else:
        rng = random.Random(stable_seed("runout", *hole, "|", *other, "|", *board))
        runouts = (tuple(rng.sample(rest, need)) for _ in range(RUNOUT_SAMPLES))
    score = 0.0
    total = 0
    for extra in runouts:
        full = known + list(extra)
        ours, theirs_rank = hand_rank(mine + full), hand_rank(theirs + full)
        score += 1.0 if ours > theirs_rank else 0.5 if ours == theirs_rank else 0.0
        total += 1
    return score / total if total else 0.5


def describe_hand(hole: Sequence[str], board: Sequence[str]) -> str:
    """pokerkit's name of the best hand (e.g. 'Two pair'), for result banners."""
    from pokerkit import StandardHighHand

    hand = StandardHighHand.from_game("".join(hole), "".join(board))
    return str(hand.entry.label.value)


# -- the bot ------------------------------------------------------------------------------


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


BOT_SAMPLES = 150
EXPERT_SAMPLES = 300


@dataclass(frozen=True)
class Legal:
    """The legal actions of the player to act; amounts are 'raise to' totals this round."""

    fold: bool
    check: bool
    call: int | None  # chips to add to call (all-in when it is the whole stack)
    bet: tuple[int, int] | None  # (min, max) bet-to, when nobody has bet this round
    raise_: tuple[int, int] | None  # (min, max) raise-to, when facing a bet
    all_in: int  # the all-in amount: a raise to this total, or a call for the rest

    def names(self) -> list[str]:
        out = []
        if self.fold:
            out.append("fold")
        if self.check:
            out.append("check")
        if self.call is not None:
            out.append("call")
        if self.bet is not None:
            out.append("bet")
        if self.raise_ is not None:
            out.append("raise")
        out.append("all_in")
        return out

    def describe(self) -> str:
        parts = []
        if self.fold:
            parts.append("fold")
        if self.check:
            parts.append("check")
        if self.call is not None:
            parts.append(f"call (adds {self.call})")
        if self.bet is not None:
            parts.append(f"bet (amount {self.bet[0]} to {self.bet[1]})")
        if self.raise_ is not None:
            parts.append(f"raise (amount {self.raise_[0]} to {self.raise_[1]})")
        kind = "raise to" if (self.bet or self.raise_) else "call"
        parts.append(f"all_in ({kind} {self.all_in})")
        return ", ".join(parts)


class IllegalAction(ValueError):
    """An action the rules do not allow now; the message names the legal ones."""


@dataclass
class ActionLog:
    street: str
    who: str
    text: str
    verb: str = ""  # fold, check, call, bet, raise ("" for the blinds)
    facing: bool = False  # whether the actor faced a bet (something to call)


@dataclass
class HandRecord:
    """One hand: cards, who had the button, the actions and (when over) the result."""

    number: int  # 1-based
    agent_button: bool
    agent_hole: list[str]
    bot_hole: list[str]
    start_agent: int
    start_bot: int
    board: list[str] = field(default_factory=list)
    actions: list[ActionLog] = field(default_factory=list)
    over: bool = False
    showdown: bool = False
    end_agent: int | None = None
    end_bot: int | None = None
    result: str = ""
    committed_agent: int = 0  # chips put in this hand (uncalled bets included)
    committed_bot: int = 0
    allin_equity: float | None = None  # the agent's equity when all-in before the river

    @property
    def expected_net(self) -> float:
        """All-in adjusted result: the runout's luck is replaced by the equity's expectation.

        For a hand that was all-in before the river the agent gets its equity share of the
        contested pot (and any uncalled chips back); otherwise it is the real result.
        """
        if self.allin_equity is None or not self.over:
            return float(self.agent_net)
        pot = self.contested_pot
        refund = self.committed_agent - pot // 2
        return refund + self.allin_equity * pot - self.committed_agent

    @property
    def contested_pot(self) -> int:
        """The pot that was won: uncalled chips go back to their owner."""
        return 2 * min(self.committed_agent, self.committed_bot)

    @property
    def agent_net(self) -> int:
        return 0 if self.end_agent is None else self.end_agent - self.start_agent


@dataclass(frozen=True)
class TableView:
    """Everything the table image shows (the renderer draws only this)."""

    hand: int
    n_hands: int
    street: str  # Preflop, Flop, Turn, River, or "Hand over"
    small_blind: int
    big_blind: int
    style: str
    agent_hole: tuple[str, ...]
    bot_hole: tuple[str, ...] | None  # None: face down
    board: tuple[str, ...]
    agent_stack: int
    bot_stack: int
    agent_bet: int
    bot_bet: int
    pot: int  # collected pot, bets in front not included
    agent_button: bool
    agent_to_act: bool
    last_action: str
    history: tuple[str, ...]
    session_net: int
    banner: str = ""  # the result of a finished hand
    footer: str = ""  # e.g. that the session is over


@dataclass(frozen=True)
class SessionSpec:
    """Everything that fixes a session: hands, stacks, blinds, bot and the cards."""

    n_hands: int
    stack: int
    small_blind: int
    big_blind: int
    style: str
    seed: int
    decks: tuple[tuple[str, ...], ...]
    agent_button_first: bool

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SessionSpec:
        return cls(
            n_hands=int(d["n_hands"]),
            stack=int(d["stack"]),
            small_blind=int(d["small_blind"]),
            big_blind=int(d["big_blind"]),
            style=str(d["style"]),
            seed=int(d["seed"]),
            decks=tuple(tuple(str(c) for c in deck) for deck in d["decks"]),
            agent_button_first=bool(d["agent_button_first"]),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_hands": self.n_hands,
            "stack": self.stack,
            "small_blind": self.small_blind,
            "big_blind": self.big_blind,
            "style": self.style,
            "seed": self.seed,
            "decks": [list(d) for d in self.decks],
            "agent_button_first": self.agent_button_first,
        }


@dataclass(frozen=True)
class Decision:
    """What a player to act sees: its cards, the board and the betting numbers."""

    street: str
    hole: tuple[str, ...]
    board: tuple[str, ...]
    pot: int  # every chip committed this hand, current bets included
    to_call: int
    my_bet: int  # chips in front of the player this round
    max_bet: int  # the largest bet this round
    stack: int  # chips behind (not yet committed)
    opp_stack: int
    legal: Legal
    big_blind: int
    style: str  # the bot's style (public)
    hand: int
    actions_this_street: int
    opp_actions: tuple[tuple[str, str, bool], ...]  # the opponent's (street, verb, facing a bet)


_AUTOMATIONS_NAMES = (
    "ANTE_POSTING",
    "BET_COLLECTION",
    "BLIND_OR_STRADDLE_POSTING",
    "HOLE_CARDS_SHOWING_OR_MUCKING",
    "HAND_KILLING",
    "CHIPS_PUSHING",
    "CHIPS_PULLING",
)


class Session:
    """A heads-up session of ``n_hands`` hands between the agent and a bot.

    pokerkit's player 0 is the big blind and player 1 the button (small blind), which acts
    first preflop and last afterwards. Cards are dealt explicitly (no automatic dealing),
    burns included, from the hand's pre-shuffled stack.
    """

    def __init__(self, spec: SessionSpec) -> None:
        if spec.style not in STYLES:
            raise ValueError(f"unknown bot style {spec.style!r}; choose one of {', '.join(STYLES)}")
        if len(spec.decks) < spec.n_hands:
            raise ValueError("the spec needs one card stack per hand")
        self.spec = spec
        self.style = STYLES[spec.style]
        self.stacks = {AGENT: spec.stack, BOT: spec.stack}
        self.hands: list[HandRecord] = []
        self.state: State | None = None
        self.over = False
        self.end_note = ""
        self.last_action = ""
        self.last_agent_action = ""
        self.agent_actions = 0
        self._finished_since_mark: list[HandRecord] = []
        self._street_actions = 0
        self._start_hand()
        self._advance()

    # -- public queries ----------------------------------------------------------------
    @property
    def hand(self) -> HandRecord:
        return self.hands[-1]

    @property
    def agent_index(self) -> int:
        return 1 if self.hand.agent_button else 0

    @property
    def hands_finished(self) -> int:
        return sum(h.over for h in self.hands)

    @property
    def expected_net(self) -> float:
        """:attr:`net` with every all-in runout replaced by its expectation (less luck)."""
        luck = sum(h.agent_net - h.expected_net for h in self.hands if h.over)
        return self.net - luck

    @property
    def net(self) -> int:
        """The agent's chips won so far; chips already in an unfinished pot count as lost."""
        if self.over or self.state is None:
            return self.stacks[AGENT] - self.spec.stack
        return int(self.state.stacks[self.agent_index]) - self.spec.stack

    def street(self) -> str:
        st = self.state
        if st is None or st.street_index is None:
            return "showdown"
        return STREETS[min(int(st.street_index), 3)]

    def pot(self) -> int:
        """Chips committed this hand (collected pot plus bets in front)."""
        st = self.state
        if st is None:
            return 0
        return self.hand.start_agent + self.hand.start_bot - sum(int(s) for s in st.stacks)

    def bets(self) -> dict[str, int]:
        st = self.state
        if st is None:
            return {AGENT: 0, BOT: 0}
        a = self.agent_index
        return {AGENT: int(st.bets[a]), BOT: int(st.bets[1 - a])}

    def behind(self) -> dict[str, int]:
        st = self.state
        if st is None or self.over:
            return dict(self.stacks)
        a = self.agent_index
        return {AGENT: int(st.stacks[a]), BOT: int(st.stacks[1 - a])}

    def agent_to_act(self) -> bool:
        st = self.state
        return not self.over and st is not None and st.actor_index == self.agent_index

    def legal(self) -> Legal:
        st = self.state
        if st is None or st.actor_index is None:
            raise IllegalAction("nobody is to act now")
        return _legal(st)

    def decision(self, who: str) -> Decision:
        st = self.state
        assert st is not None and st.actor_index is not None
        i = int(st.actor_index)
        hole = self.hand.agent_hole if who == AGENT else self.hand.bot_hole
        bets = [int(b) for b in st.bets]
        return Decision(
            street=self.street(),
            hole=tuple(hole),
            board=tuple(self.hand.board),
            pot=self.pot(),
            to_call=max(bets) - bets[i],
            my_bet=bets[i],
            max_bet=max(bets),
            stack=int(st.stacks[i]),
            opp_stack=int(st.stacks[1 - i]),
            legal=_legal(st),
            big_blind=self.spec.big_blind,
            style=self.spec.style,
            hand=self.hand.number,
            actions_this_street=self._street_actions,
            opp_actions=tuple(
                (a.street, a.verb, a.facing)
                for a in self.hand.actions
                if a.who not in (who, "dealer")
            ),
        )

    def take_finished(self) -> list[HandRecord]:
        """Hands that ended since the last call (for result images)."""
        out, self._finished_since_mark = self._finished_since_mark, []
        return out

    def view(self) -> TableView:
        """The table as it is now (during a hand, or the final table when the session is over)."""
        if self.over:
            return self.hand_view(self.hand, final=True)
        h = self.hand
        bets = self.bets()
        behind = self.behind()
        return TableView(
            hand=h.number,
            n_hands=self.spec.n_hands,
            street=self.street().capitalize(),
            small_blind=self.spec.small_blind,
            big_blind=self.spec.big_blind,
            style=self.spec.style,
            agent_hole=tuple(h.agent_hole),
            bot_hole=None,
            board=tuple(h.board),
            agent_stack=behind[AGENT],
            bot_stack=behind[BOT],
            agent_bet=bets[AGENT],
            bot_bet=bets[BOT],
            pot=self.pot() - bets[AGENT] - bets[BOT],
            agent_button=h.agent_button,
            agent_to_act=self.agent_to_act(),
            last_action=self.last_action,
            history=_history(h),
            session_net=h.start_agent - self.spec.stack,  # before this hand
        )

    def hand_view(self, h: HandRecord, final: bool = False) -> TableView:
        """The final table of a finished hand, with the result and shown cards."""
        assert h.end_agent is not None and h.end_bot is not None
        footer = ""
        if final and self.over:
            net = h.end_agent - self.spec.stack
            footer = f"Session over ({self.end_note}). Your net result: {net:+d} chips"
            adjusted = self.expected_net
            if adjusted != net:
                footer += f" (all-in adjusted {adjusted:+.1f})"
            footer += "."
        return TableView(
            hand=h.number,
            n_hands=self.spec.n_hands,
            street="Hand over",
            small_blind=self.spec.small_blind,
            big_blind=self.spec.big_blind,
            style=self.spec.style,
            agent_hole=tuple(h.agent_hole),
            bot_hole=tuple(h.bot_hole) if h.showdown else None,
            board=tuple(h.board),
            agent_stack=h.end_agent,
            bot_stack=h.end_bot,
            agent_bet=0,
            bot_bet=0,
            pot=h.contested_pot,
            agent_button=h.agent_button,
            agent_to_act=False,
            last_action=h.actions[-1].text if h.actions else "",
            history=_history(h),
            session_net=h.end_agent - self.spec.stack,
            banner=f"Hand {h.number} over: {h.result}",
            footer=footer,
        )

    # -- acting --------------------------------------------------------------------------
    def act(self, action: str, amount: int | None = None) -> None:
        """Apply the agent's action, then let the bot and the dealer run until the agent
        must act again or the session is over. Raises :class:`IllegalAction`."""
        if self.over:
            raise IllegalAction("the session is over; there is nothing left to play")
        if not self.agent_to_act():
            raise IllegalAction("it is not your turn")
        self._apply(AGENT, action, amount)
        self.agent_actions += 1
        self._advance()

    def _apply(self, who: str, action: str, amount: int | None) -> None:
        st = self.state
        assert st is not None
        legal = _legal(st)
        i = int(st.actor_index)  # type: ignore[arg-type]
        bets = [int(b) for b in st.bets]
        to_call = max(bets) - bets[i]
        stack = int(st.stacks[i])
        added = 0  # chips this action puts in (read before pokerkit may end the hand)
        label = "You" if who == AGENT else "Bot"
        options = f"Legal actions now: {legal.describe()}."
        if action not in ACTIONS:
            raise IllegalAction(f"unknown action {action!r}. {options}")
        if action == "all_in":
            if legal.bet is not None or legal.raise_ is not None:
                action, amount = ("bet" if legal.bet else "raise"), legal.all_in
            else:
                action = "call"
        if action == "fold":
            if not legal.fold:
                raise IllegalAction(
                    f"you cannot fold: there is no bet to call, so checking is free. {options}"
                )
            st.fold()
            text = f"{label} fold{'s' if who == BOT else ''}"
        elif action == "check":
            if not legal.check:
                raise IllegalAction(
                    f"you cannot check: you face a bet of {to_call} more. {options}"
                )
            st.check_or_call()
            text = f"{label} check{'s' if who == BOT else ''}"
        elif action == "call":
            if legal.call is None:
                raise IllegalAction(f"there is no bet to call; check instead. {options}")
            added = legal.call
            st.check_or_call()
            allin = " (all-in)" if added == stack else ""
            text = f"{label} call{'s' if who == BOT else ''} {added}{allin}"
        else:  # bet or raise
            rng_ = legal.bet if action == "bet" else legal.raise_
            if rng_ is None:
                if action == "bet" and legal.raise_ is not None:
                    why = "there already is a bet this round, so use raise"
                elif action == "raise" and legal.bet is not None:
                    why = "nobody has bet this round yet, so use bet"
                else:
                    why = (
                        f"you cannot {action} now (the opponent is all-in or you cannot cover more)"
                    )
                raise IllegalAction(f"{why}. {options}")
            lo, hi = rng_
            if amount is None:
                raise IllegalAction(
                    f"{action} needs an amount: the total you will have in front of you this "
                    f"round, from {lo} to {hi}. {options}"
                )
            if amount < lo:
                raise IllegalAction(
                    f"{action} to {amount} is below the minimum {lo} (a raise must be at least "
                    f"the size of the previous bet or raise). {options}"
                )
            if amount > hi:
                raise IllegalAction(
                    f"{action} to {amount} is more than you have: at most {hi} (all-in). {options}"
                )
            added = amount - bets[i]
            st.complete_bet_or_raise_to(amount)
            allin = " (all-in)" if added == stack else ""
            verb = "bet" if action == "bet" else "raise"
            verb_s = verb + ("s" if who == BOT else "")
            text = f"{label} {verb_s} {'to ' if action == 'raise' else ''}{amount}{allin}"
        self._street_actions += 1
        self.hand.actions.append(
            ActionLog(self._street_name_for_log(), who, text, action, to_call > 0)
        )
        self.last_action = text
        if who == AGENT:
            self.last_agent_action = text
            self.hand.committed_agent += added
        else:
            self.hand.committed_bot += added

    def _street_name_for_log(self) -> str:
        n = len(self.hand.board)
        return {0: "preflop", 3: "flop", 4: "turn"}.get(n, "river")

    # -- the engine loop ---------------------------------------------------------------
    def _start_hand(self) -> None:
        from pokerkit import Automation, NoLimitTexasHoldem

        k = len(self.hands)
        deck = self.spec.decks[k]
        agent_button = (k % 2 == 0) == self.spec.agent_button_first
        record = HandRecord(
            number=k + 1,
            agent_button=agent_button,
            agent_hole=list(deck[0:2]),
            bot_hole=list(deck[2:4]),
            start_agent=self.stacks[AGENT],
            start_bot=self.stacks[BOT],
        )
        self.hands.append(record)
        agent_i = 1 if agent_button else 0
        starting = [0, 0]
        starting[agent_i] = self.stacks[AGENT]
        starting[1 - agent_i] = self.stacks[BOT]
        automations = tuple(getattr(Automation, n) for n in _AUTOMATIONS_NAMES)
        st = NoLimitTexasHoldem.create_state(
            automations,
            True,
            0,
            (self.spec.small_blind, self.spec.big_blind),
            self.spec.big_blind,
            tuple(starting),
            2,
        )
        holes = {agent_i: deck[0:2], 1 - agent_i: deck[2:4]}
        while st.can_deal_hole():
            dealee = st.hole_dealee_index
            assert dealee is not None
            st.deal_hole("".join(holes[int(dealee)]))
        self.state = st
        self._street_actions = 0
        self._burns = 0
        # the blinds (pokerkit posts at most a player's stack)
        record.committed_agent = record.start_agent - int(st.stacks[agent_i])
        record.committed_bot = record.start_bot - int(st.stacks[1 - agent_i])
        blinds = (
            f"You post {self.spec.small_blind if agent_button else self.spec.big_blind}, "
            f"Bot posts {self.spec.big_blind if agent_button else self.spec.small_blind}"
        )
        record.actions.append(ActionLog("preflop", "dealer", blinds))
        self.last_action = f"Hand {k + 1} dealt"

    def _advance(self) -> None:
        while not self.over:
            st = self.state
            assert st is not None
            if not st.status:
                self._finish_hand()
                continue
            deck = self.spec.decks[len(self.hands) - 1]
            if self.hand.allin_equity is None and (st.can_burn_card() or st.can_deal_board()):
                if min(int(x) for x in st.stacks) == 0:
                    # Betting is over with a player all-in: note the equity before the runout.
                    self.hand.allin_equity = showdown_equity(
                        tuple(self.hand.agent_hole),
                        tuple(self.hand.bot_hole),
                        tuple(self.hand.board),
                    )
            if st.can_burn_card():
                st.burn_card(deck[4 + self._burns])
                self._burns += 1
            elif st.can_deal_board():
                n = len(self.hand.board)
                count = 3 if n == 0 else 1
                cards = list(deck[4 + 3 + n : 4 + 3 + n + count])
                st.deal_board("".join(cards))
                self.hand.board.extend(cards)
                self._street_actions = 0
            elif st.actor_index is not None:
                if st.actor_index == self.agent_index:
                    return
                action, amount = bot_decision(
                    self.decision(BOT),
                    random.Random(
                        stable_seed("bot", self.spec.seed, self.hand.number, len(self.hand.actions))
                    ),
                    self.style,
                )
                self._apply(BOT, action, amount)
            else:  # pragma: no cover - pokerkit always has a next operation pending
                raise RuntimeError("the poker engine stalled")

    def _finish_hand(self) -> None:
        st = self.state
        assert st is not None
        h = self.hand
        a = self.agent_index
        self.stacks[AGENT] = int(st.stacks[a])
        self.stacks[BOT] = int(st.stacks[1 - a])
        h.over = True
        h.end_agent, h.end_bot = self.stacks[AGENT], self.stacks[BOT]
        folded = [x.who for x in h.actions if x.text.endswith(("fold", "folds"))]
        h.showdown = not folded
        net = h.agent_net
        if folded:
            h.result = (
                f"Bot folds: you win {h.start_bot - h.end_bot}"
                if folded[0] == BOT
                else f"You fold: Bot wins {h.start_agent - h.end_agent}"
            )
        else:
            mine = describe_hand(h.agent_hole, h.board)
            theirs = describe_hand(h.bot_hole, h.board)
            if net > 0:
                h.result = f"You win {net} with {mine} (Bot: {theirs})"
            elif net < 0:
                h.result = f"Bot wins {-net} with {theirs} (you: {mine})"
            else:
                h.result = f"Split pot: both have {mine}"
        self.last_action = h.result
        self._finished_since_mark.append(h)
        if self.stacks[AGENT] == 0 or self.stacks[BOT] == 0:
            self.over = True
            self.end_note = (
                "you are out of chips" if self.stacks[AGENT] == 0 else "Bot is out of chips"
            )
        elif len(self.hands) >= self.spec.n_hands:
            self.over = True
            self.end_note = f"all {self.spec.n_hands} hands were played"
        else:
            self._start_hand()


def _history(h: HandRecord) -> tuple[str, ...]:
    return tuple(f"{a.street.capitalize()}: {a.text}" for a in h.actions)


def _legal(st: State) -> Legal:
    i = int(st.actor_index)  # type: ignore[arg-type]
    bets = [int(b) for b in st.bets]
    to_call = max(bets) - bets[i]
    stack = int(st.stacks[i])
    can_raise = bool(st.can_complete_bet_or_raise_to())
    bet_range: tuple[int, int] | None = None
    raise_range: tuple[int, int] | None = None
    if can_raise:
        lo = int(st.min_completion_betting_or_raising_to_amount or 0)
        hi = int(st.max_completion_betting_or_raising_to_amount or 0)
        if max(bets) == 0:
            bet_range = (lo, hi)
        else:
            raise_range = (lo, hi)
    all_in = stack + bets[i] if can_raise else min(stack, to_call)
    return Legal(
        fold=to_call > 0,
        check=to_call == 0,
        call=min(stack, to_call) if to_call > 0 else None,
        bet=bet_range,
        raise_=raise_range,
        all_in=all_in,
    )


# -- policies ---------------------------------------------------------------------------


def _sized(d: Decision, fraction: float) -> tuple[str, int] | None:
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
            sized = _sized(d, style.bet_fraction)
            if sized is not None:
                return sized
        if e >= need:
            return "call", None
        if r < style.bluff_freq:
            sized = _sized(d, style.bet_fraction)
            if sized is not None:
                return sized
        return "fold", None
    if (strong and r < style.raise_freq) or r < style.bluff_freq:
        sized = _sized(d, style.bet_fraction)
        if sized is not None:
            return sized
    return "check", None


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
        sized = _sized(d, fraction)
        if sized is not None and sized not in out:
            out.append(sized)
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


def run_random(spec: SessionSpec, salt: int) -> Session:
    """Play a whole session with :func:`random_decision` (seeded by ``salt``)."""
    rng = random.Random(stable_seed("baseline", spec.seed, salt))
    session = Session(spec)
    while not session.over:
        session.act(*random_decision(session.decision(AGENT), rng))
    return session


def run_reference(spec: SessionSpec) -> tuple[Session, list[tuple[str, int | None]]]:
    """Play a whole session with :func:`reference_decision`; returns it and the actions."""
    session = Session(spec)
    actions: list[tuple[str, int | None]] = []
    while not session.over:
        action, amount = reference_decision(session.decision(AGENT))
        session.act(action, amount)
        actions.append((action, amount))
    return session, actions
