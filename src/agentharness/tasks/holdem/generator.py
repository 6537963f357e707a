"""Layer 1: seeded deals, and what the baselines and the reference make on them."""

from __future__ import annotations

import random
from functools import lru_cache

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, system, user
from agentharness.core.task import Problem
from agentharness.tasks.holdem.bots import STYLES
from agentharness.tasks.holdem.cards import shuffled_hand_cards
from agentharness.tasks.holdem.config import HoldemConfig
from agentharness.tasks.holdem.policies import baselines, run_reference
from agentharness.tasks.holdem.problem import Hidden, Public
from agentharness.tasks.holdem.simulator import Session, SessionSpec
from agentharness.tasks.holdem.tools import call_limit, images_for, turn_text

SYSTEM = (
    "You play heads-up no-limit Texas hold'em against a bot over a session of hands. The "
    "table is shown as an image after every action: read your cards, the board, the pot, "
    "the stacks, the bets and the bot's last action from it. Act only through the tools; "
    "describing a move does nothing."
)


class HoldemGenerator:
    """Deals every hand of a session from a seeded shuffle (one draw per seed: no deal is
    kept or thrown away for how it plays), then plays the same deals against the same
    bot with the lazy baselines and the reference policy. Their results are what the
    reward measures the agent against; the reference's actions, replayed and verified,
    are the stored solution."""

    def generate(self, config: HoldemConfig, seed: int) -> Problem:
        bb = config.big_blind
        rng = random.Random(f"holdem-v2:{config.bot_style}:{config.n_hands}:{seed}")
        spec = SessionSpec(
            n_hands=config.n_hands,
            stack=config.stack_bb * bb,
            small_blind=bb // 2,
            big_blind=bb,
            style=config.bot_style,
            seed=rng.randrange(2**31),
            decks=tuple(tuple(shuffled_hand_cards(rng)) for _ in range(config.n_hands)),
            agent_button_first=rng.random() < 0.5,
        )
        session, actions = run_reference(spec)
        reference_net = session.adjusted_net
        if not _verified(spec, actions, reference_net):  # pragma: no cover - a simulator bug
            raise GenerationError(f"seed {seed}: the reference session does not replay")
        lazy = baselines(spec)
        public = Public(
            n_hands=config.n_hands,
            bot_style=config.bot_style,
            stack_bb=config.stack_bb,
            big_blind=bb,
            small_blind=bb // 2,
            image_width=config.image_width,
            min_edge_bb=config.min_edge_bb,
            max_tool_calls=call_limit(config.n_hands),
        )
        hidden = Hidden(
            session=spec,
            solution=tuple(actions),
            reference_net=reference_net,
            reference_net_dealt=session.net,
            lazy_nets=lazy,
            lazy_best=max(lazy.values()),
        )
        return Problem(public=public.model_dump(mode="json"), hidden=hidden.model_dump(mode="json"))

    def prompt(self, instance: Instance) -> list[Message]:
        return list(_prompt(instance.model_dump_json()))


class GenerationError(RuntimeError):
    """The stored solution did not replay (a simulator bug)."""


def _verified(spec: SessionSpec, actions: list[tuple[str, int | None]], net: float) -> bool:
    """Replaying the stored actions on a fresh session reproduces the session and result."""
    session = Session(spec)
    for action, amount in actions:
        if session.over:
            return False
        session.act(action, amount)
    return session.over and session.adjusted_net == net


@lru_cache(maxsize=64)
def _prompt(instance_json: str) -> tuple[Message, ...]:
    # Episodes ask for the prompt more than once; rendering it is the costly part.
    instance = Instance.model_validate_json(instance_json)
    pub = instance.public_as(Public)
    session = Session(instance.hidden_as(Hidden).session)
    finished = session.take_finished()
    images, caption = images_for(session, finished, pub.image_width)
    style = STYLES[pub.bot_style]
    n = pub.n_hands
    before = ""
    if finished:
        nums = ", ".join(str(h.number) for h in finished)
        before = f"Hand {nums} ended before your first decision. "
    text = (
        f"Session: {n} hands of heads-up no-limit hold'em against a {style.name} bot (it "
        f"{style.describe}; like every bot here it gets more careful when a call would risk "
        f"much of its stack). Both players start every hand with {pub.stack_bb} big "
        "blinds (stacks are topped up between hands, so nobody busts); the button alternates "
        "every hand. The button (marked D) posts the small blind and acts first before the "
        "flop, last after it. The session ends after the last hand.\n\n"
        "Tools:\n"
        "- act(action, amount): your action: fold, check, call, bet, raise or all_in. For bet "
        "and raise, `amount` is the total you will have bet in this betting round (raise TO, "
        "counting what you already put in this round), between the minimum and maximum the "
        "legal actions give. Illegal actions are refused with the list of legal ones. After "
        "your action the bot acts, cards are dealt, and you get the table image(s) back.\n"
        "- view_table(): shows the current table again.\n\n"
        "Everything about the game state (your hole cards, the board, the pot, the stacks, "
        "the bets, who has the button, the bot's last action, this hand's actions and the "
        "results of finished hands) is only in the images; the texts give whose turn it is "
        "and the legal actions with their amounts.\n\n"
        "Score: your net chips over the session, with the luck of the showdowns taken out "
        "(a hand that reaches a showdown counts by your average result against the hands "
        "the bot could hold, given how it played; after an all-in, over the rest of the "
        "board too; a fold counts as it fell), compared with what "
        "players who never look at their cards make on the same deals against the same bot: "
        "checking and folding, checking and calling, going all-in every time, or calling "
        "bets and going all-in otherwise. Doing no better than the best of them scores 0; "
        "beating it by as much as a strong reference player does on these deals (and by "
        f"at least {pub.min_edge_bb:g} big blinds) scores 1, with credit in proportion "
        "in between. If the session is not finished, the current hand counts as folded "
        "and the score is scaled by the share of hands played. You have at most "
        f"{pub.max_tool_calls} tool calls.\n\n"
        f"{before}{turn_text(session)} {caption}"
    )
    return (system(SYSTEM), user(text, images=images))
