"""Layer 1: seeded card sequences, verified winnable by the reference policy."""

from __future__ import annotations

import random
from functools import lru_cache

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, system, user
from agentharness.core.task import Problem
from agentharness.tasks.holdem.config import HoldemConfig
from agentharness.tasks.holdem.simulator import (
    STYLES,
    Session,
    SessionSpec,
    run_reference,
    shuffled_hand_cards,
)
from agentharness.tasks.holdem.tools import call_limit, images_for, turn_text

MAX_DRAWS = 80

SYSTEM = (
    "You play heads-up no-limit Texas hold'em against a bot over a session of hands. The "
    "table is shown as an image after every action: read your cards, the board, the pot, "
    "the stacks, the bets and the bot's last action from it. Act only through the tools; "
    "describing a move does nothing."
)


class GenerationError(RuntimeError):
    """No verified session could be drawn (should not happen for sane configs)."""


class HoldemGenerator:
    """Draws each hand's cards from a seeded shuffle and keeps a session only when the
    equity-based reference policy, played through the simulator, wins at least
    ``min_reference_win_bb`` big blinds (all-in adjusted) against the bot; its actions
    are the stored solution. Redraws use independent seeded streams."""

    def generate(self, config: HoldemConfig, seed: int) -> Problem:
        bb = config.big_blind
        stack = config.stack_bb * bb
        best: tuple[SessionSpec, Session, list[tuple[str, int | None]]] | None = None
        for draw in range(MAX_DRAWS):
            # An independent stream per draw keeps redraws deterministic.
            rng = random.Random(f"holdem:{seed}:{draw}")
            spec = SessionSpec(
                n_hands=config.n_hands,
                stack=stack,
                small_blind=bb // 2,
                big_blind=bb,
                style=config.bot_style,
                seed=rng.randrange(2**31),
                decks=tuple(tuple(shuffled_hand_cards(rng)) for _ in range(config.n_hands)),
                agent_button_first=rng.random() < 0.5,
            )
            session, actions = run_reference(spec)
            won = session.expected_net
            if won >= config.min_reference_win_bb * bb and _verified(spec, actions, won):
                best = (spec, session, actions)
                break
        if best is None:
            raise GenerationError(
                f"no session in {MAX_DRAWS} draws lets the reference policy win "
                f"{config.min_reference_win_bb} big blinds; lower min_reference_win_bb"
            )
        spec, session, actions = best
        public = {
            "n_hands": config.n_hands,
            "bot_style": config.bot_style,
            "stack_bb": config.stack_bb,
            "big_blind": bb,
            "small_blind": bb // 2,
            "image_width": config.image_width,
            "chip_scale": config.chip_scale,
            "max_tool_calls": call_limit(config.n_hands),
        }
        hidden = {
            "session": spec.to_dict(),
            "solution": [[a, n] for a, n in actions],
            "solution_net": session.expected_net,
            "solution_net_dealt": session.net,
            "draws": draw + 1,
        }
        return Problem(public=public, hidden=hidden)

    def prompt(self, instance: Instance) -> list[Message]:
        return list(_prompt(instance.model_dump_json()))


def _verified(spec: SessionSpec, actions: list[tuple[str, int | None]], net: float) -> bool:
    """Replaying the stored actions on a fresh session reproduces the session and result."""
    session = Session(spec)
    for action, amount in actions:
        if session.over:
            return False
        session.act(action, amount)
    return session.over and session.expected_net == net


@lru_cache(maxsize=64)
def _prompt(instance_json: str) -> tuple[Message, ...]:
    # Episodes ask for the prompt more than once; rendering it is the costly part.
    instance = Instance.model_validate_json(instance_json)
    pub = instance.public
    spec = SessionSpec.from_dict(instance.hidden["session"])
    session = Session(spec)
    finished = session.take_finished()
    images, caption = images_for(session, finished, int(pub["image_width"]))
    style = STYLES[pub["bot_style"]]
    n = pub["n_hands"]
    before = ""
    if finished:
        nums = ", ".join(str(h.number) for h in finished)
        before = f"Hand {nums} ended before your first decision. "
    text = (
        f"Session: {n} hands of heads-up no-limit hold'em against a {style.name} bot (it "
        f"{style.describe}; like every bot here it gets more careful when a call would risk "
        f"much of its stack). Both players start with {pub['stack_bb']} big blinds; the button "
        "alternates every hand. The button (marked D) posts the small blind and acts first "
        "before the flop, last after it. Stacks carry over from hand to hand; the session "
        "ends after the last hand or when a player has no chips left.\n\n"
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
        f"Score: sigmoid({pub['chip_scale']:g} x net chips won / starting stack) for the "
        "chips (0.5 for breaking even), with a small part for acting legally. A hand that is "
        "all-in before the river counts by your equity at that moment (your share of the pot "
        "on average over the remaining cards), not by the cards that fall. If the session "
        "is not finished, the current hand counts as folded and the score is scaled by the "
        "share of hands played. You have at most "
        f"{pub['max_tool_calls']} tool calls.\n\n"
        f"{before}{turn_text(session)} {caption}"
    )
    return (system(SYSTEM), user(text, images=images))
