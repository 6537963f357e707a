"""Heads-up no-limit hold'em sessions on the pokerkit engine.

Pure domain code (no agent or message types). The cards, hand evaluation and equity are
in :mod:`.cards`, the bot in :mod:`.bots`, the reference and lazy policies in
:mod:`.policies`; this module is the game:

* every hand of a session is dealt from its own pre-shuffled 12-card stack (hole cards,
  burns and board), so the cards of hand *k* never depend on how earlier hands went;
* :class:`Session` runs the hands on pokerkit's ``NoLimitTexasHoldem`` state (legal
  actions, minimum raises, all-ins, side cases and showdowns are pokerkit's), gives
  both players a full stack at the start of every hand (so hands are independent and
  nobody busts), alternates the button and lets the bot act automatically;
* a hand that reaches a showdown is also scored without the luck of the cards
  (:attr:`HandRecord.adjusted_net`): by the agent's average result against every hand
  the bot could hold, each weighted by the chance that the bot's known strategy plays
  it the way the bot played (:func:`bots.move_probabilities`), over the rest of the
  board when the betting ended before the river. Given what happened at the table
  this is the expected result, so over deals it has the same mean as the chips for
  any player, with far less luck. A hand that ends in a fold counts as it fell.

Everything is deterministic: bot randomness is seeded from (session seed, hand, action
number), so a session is a function of its spec and the agent's actions.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from agentharness.tasks.holdem.bots import (
    STREET_CARDS,
    STYLES,
    BotMove,
    BotSpot,
    BotStyle,
    bot_decision,
    hand_weights,
    move_probabilities,
)
from agentharness.tasks.holdem.cards import (
    describe_hand,
    outcomes_against_all,
    stable_seed,
    strength_table,
)

if TYPE_CHECKING:
    from pokerkit import State

STREETS = ("preflop", "flop", "turn", "river")

Action = Literal["fold", "check", "call", "bet", "raise", "all_in"]
ACTIONS: tuple[str, ...] = ("fold", "check", "call", "bet", "raise", "all_in")

AGENT, BOT = "You", "Bot"


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
    spot: BotSpot | None = None  # the bot's decision spot (for the showdown average)
    to_call: int = 0  # chips the actor had to add to call
    behind: int = 0  # the actor's chips behind before acting
    agent_in: int = 0  # chips each player had put in this hand before the action
    bot_in: int = 0


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
    betting_board: int = 0  # board cards out when the last bet or call was made
    adjusted: float | None = None  # the showdown average (None: the hand ended in a fold)

    @property
    def adjusted_net(self) -> float:
        """The result without the cards' luck: the showdown average, or as it fell."""
        return float(self.agent_net) if self.adjusted is None else self.adjusted

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
    opp_moves: tuple[BotMove, ...]  # the bot's moves this hand (for the agent; public)


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
    def adjusted_net(self) -> float:
        """:attr:`net` with every finished showdown scored by its average (see the module).

        An unfinished hand counts as folded (its chips in the pot are lost)."""
        return self.net + sum(h.adjusted_net - h.agent_net for h in self.hands if h.over)

    @property
    def net(self) -> int:
        """The agent's chips won so far; chips already in an unfinished pot count as lost."""
        done = sum(h.agent_net for h in self.hands if h.over)
        if self.over or self.state is None or self.hand.over:
            return done
        return done + int(self.state.stacks[self.agent_index]) - self.hand.start_agent

    def hand_nets(self) -> list[float]:
        """The adjusted result of every finished hand, in order."""
        return [h.adjusted_net for h in self.hands if h.over]

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
        if st is None or self.over or self.hand.over:
            h = self.hand
            return {AGENT: h.end_agent or 0, BOT: h.end_bot or 0}
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
            opp_moves=bot_moves(self.hand) if who == AGENT else (),
        )

    def _net_through(self, number: int) -> int:
        """The agent's chips won in hands 1..``number`` (all finished)."""
        return sum(h.agent_net for h in self.hands[:number] if h.over)

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
            session_net=self._net_through(h.number - 1),  # before this hand
        )

    def hand_view(self, h: HandRecord, final: bool = False) -> TableView:
        """The final table of a finished hand, with the result and shown cards."""
        assert h.end_agent is not None and h.end_bot is not None
        footer = ""
        if final and self.over:
            net = self.net
            footer = f"Session over ({self.end_note}). Your net result: {net:+d} chips"
            adjusted = self.adjusted_net
            if round(adjusted, 1) != net:
                footer += f" ({adjusted:+.1f} with the showdowns' luck taken out)"
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
            session_net=self._net_through(h.number),
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

    def _apply(
        self, who: str, action: str, amount: int | None, spot: BotSpot | None = None
    ) -> None:
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
            ActionLog(
                self._street_name_for_log(),
                who,
                text,
                action,
                to_call > 0,
                spot,
                to_call,
                stack,
                self.hand.committed_agent,
                self.hand.committed_bot,
            )
        )
        self.last_action = text
        self.hand.betting_board = len(self.hand.board)
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
        from pokerkit import Automation

        k = len(self.hands)
        deck = self.spec.decks[k]
        agent_button = (k % 2 == 0) == self.spec.agent_button_first
        record = HandRecord(
            number=k + 1,
            agent_button=agent_button,
            agent_hole=list(deck[0:2]),
            bot_hole=list(deck[2:4]),
            start_agent=self.spec.stack,
            start_bot=self.spec.stack,
        )
        self.hands.append(record)
        agent_i = 1 if agent_button else 0
        starting = (self.spec.stack, self.spec.stack)
        automations = tuple(getattr(Automation, n) for n in _AUTOMATIONS_NAMES)
        st = _holdem().create_state(
            automations,
            True,
            0,
            (self.spec.small_blind, self.spec.big_blind),
            self.spec.big_blind,
            starting,
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
        before = f"Hand {k}: {self.hands[-2].result}. " if k else ""
        self.last_action = f"{before}Hand {k + 1} dealt"

    def _advance(self) -> None:
        while not self.over:
            st = self.state
            assert st is not None
            if not st.status:
                self._finish_hand()
                continue
            deck = self.spec.decks[len(self.hands) - 1]
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
                (action, amount), spot = bot_decision(
                    self.decision(BOT),
                    random.Random(
                        stable_seed("bot", self.spec.seed, self.hand.number, len(self.hand.actions))
                    ),
                    self.style,
                )
                self._apply(BOT, action, amount, spot)
            else:  # pragma: no cover - pokerkit always has a next operation pending
                raise RuntimeError("the poker engine stalled")

    def _finish_hand(self) -> None:
        st = self.state
        assert st is not None
        h = self.hand
        a = self.agent_index
        h.over = True
        h.end_agent, h.end_bot = int(st.stacks[a]), int(st.stacks[1 - a])
        folded = [x.who for x in h.actions if x.text.endswith(("fold", "folds"))]
        h.showdown = not folded
        h.adjusted = hand_average(h, self.style)
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
        if len(self.hands) >= self.spec.n_hands:
            self.over = True
            self.end_note = f"all {self.spec.n_hands} hands were played"
        else:
            self._start_hand()


def bot_moves(h: HandRecord, upto: int | None = None) -> tuple[BotMove, ...]:
    """The bot's moves in ``h`` (in its first ``upto`` actions) with the board it saw and
    its spot."""
    return tuple(
        (tuple(h.board[: STREET_CARDS[a.street]]), a.verb, a.spot)
        for a in h.actions[:upto]
        if a.who == BOT and a.spot is not None
    )


def bot_hand_weights(h: HandRecord, style: BotStyle) -> np.ndarray:
    """:func:`bots.hand_weights` at the end of the betting of ``h``: the agent's cards and
    the board dealt by then are dead."""
    return hand_weights(style, [*h.agent_hole, *h.board[: h.betting_board]], bot_moves(h))


def _normalised(weight: np.ndarray, hand: int) -> np.ndarray:
    total = weight.sum()
    if total <= 0:  # pragma: no cover - the bot's own hand always has weight
        raise RuntimeError(f"hand {hand}: no hand of the bot fits its moves")
    return weight / total


def showdown_average(h: HandRecord, style: BotStyle) -> float:
    """The agent's expected result of a finished showdown over the bot's possible hands
    (:func:`bot_hand_weights`): its share of the contested pot against each, over the rest
    of the board when the betting ended before the river. Uncalled chips go back."""
    weight = _normalised(bot_hand_weights(h, style), h.number)
    share = outcomes_against_all(tuple(h.agent_hole), tuple(h.board[: h.betting_board]))
    pot = h.contested_pot
    refund = h.committed_agent - pot // 2
    return refund + pot * float((weight * share).sum()) - h.committed_agent


def hand_average(h: HandRecord, style: BotStyle) -> float | None:
    """The agent's expected result of a finished hand given the table up to its last
    decision, when what followed was the bot's luck; ``None`` to count it as it fell.

    * The agent folded, or never had to act: as it fell (the latter is the same for
      every player of the deal).
    * The bot answered the agent's last action by ending the hand — folding, calling
      when the call leads straight to a showdown (the river, or an all-in), or checking
      behind on the river — : the average over every hand the bot could hold (weighted
      by its moves before) of the bot's chance of each such ending with that hand times
      what the agent gets then (the pot, or its share of it against that hand over the
      rest of the board). A re-raise, which would have asked the agent to act again,
      is left out of the average (the average is conditioned on no re-raise).
    * The agent's own action closed the betting before a showdown:
      :func:`showdown_average`.

    Each is the expected result given what the table showed (the bot's strategy is
    known), so over deals it has the mean of the chips for any player.
    """
    last_agent = max((i for i, a in enumerate(h.actions) if a.who == AGENT), default=None)
    if last_agent is None or h.actions[last_agent].verb == "fold":
        return None
    after = [i for i in range(last_agent + 1, len(h.actions)) if h.actions[i].who == BOT]
    if not after:
        return showdown_average(h, style) if h.showdown else None
    move = h.actions[after[0]]
    spot = move.spot
    if len(after) > 1 or spot is None:  # pragma: no cover - the agent acts in between
        return None
    seen = tuple(h.board[: STREET_CARDS[move.street]])
    call_adds = min(move.to_call, move.behind)
    agent_all_in = h.committed_agent >= h.start_agent
    call_ends = move.street == "river" or agent_all_in or call_adds == move.behind
    endings = ["fold", "call"] if spot.facing and call_ends else ["fold"] if spot.facing else []
    if not spot.facing and move.street == "river":
        endings = ["check"]
    if move.verb not in endings:  # pragma: no cover - the hand would have gone on
        return None
    prior = hand_weights(style, [*h.agent_hole, *seen], bot_moves(h, upto=after[0]))
    chances = move_probabilities(style, strength_table(seen), spot)
    share = outcomes_against_all(tuple(h.agent_hole), seen)
    agent_in = h.committed_agent
    value = np.zeros_like(share)
    mass = np.zeros_like(share)
    for ending in endings:
        if ending == "fold":
            result = np.full_like(share, float(move.bot_in))
        else:
            bot_in = move.bot_in + (call_adds if ending == "call" else 0)
            pot = 2 * min(agent_in, bot_in)
            result = (agent_in - pot // 2) + pot * share - agent_in
        value += chances[ending] * result
        mass += chances[ending]
    weight = _normalised(prior * mass, h.number)
    return float((weight * np.where(mass > 0, value / np.maximum(mass, 1e-300), 0.0)).sum())


@lru_cache(maxsize=4096)
def _pokerkit_hand(hole: str, board: str) -> Any:
    from pokerkit import StandardHighHand

    return StandardHighHand.from_game(hole, board)


@lru_cache(maxsize=1)
def _holdem() -> Any:
    """pokerkit's no-limit hold'em whose hand evaluation is memoised: a showdown asks
    pokerkit for the same two hands many times (who can win, who shows, who is paid)."""
    from pokerkit import Card, NoLimitTexasHoldem, StandardHighHand

    class MemoHighHand(StandardHighHand):
        @classmethod
        def from_game(cls, hole_cards: Any, board_cards: Any = ()) -> Any:
            hole = "".join(map(repr, Card.clean(hole_cards)))
            return _pokerkit_hand(hole, "".join(map(repr, Card.clean(board_cards))))

    class MemoHoldem(NoLimitTexasHoldem):
        hand_types = (MemoHighHand,)

    return MemoHoldem


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
