"""The holdem task: engine, bot, tools, reward (and its resistance to lazy play), expert."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import io
import json
import random
import re

import numpy as np
import pytest
from PIL import Image

from agentharness.agents.scripted import ExpertAgent, NoisyAgent
from agentharness.core.episode import Episode
from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, ToolOutcome, assistant
from agentharness.core.registry import episode_for, get_task
from agentharness.core.task import TaskConfigError
from agentharness.rollout.runner import run_one
from agentharness.tasks.holdem import cards as C
from agentharness.tasks.holdem import policies as P
from agentharness.tasks.holdem import simulator as S
from agentharness.tasks.holdem.blind import HoldemBlind, legal_from_data
from agentharness.tasks.holdem.problem import Hidden, Public
from agentharness.tasks.holdem.reward import edge_score
from agentharness.tasks.holdem.tools import HoldemWorld, call_limit

SPEC = get_task("holdem")
CARD = re.compile(r"\b[2-9TJQKA][cdhs]\b")


def _instance(seed: int = 0, difficulty: str = "easy", **knobs: object) -> Instance:
    return SPEC.instance(seed, difficulty, **knobs)


def _act(action: str, amount: int | None = None, n: int = 1) -> Message:
    args: dict[str, object] = {"action": action}
    if amount is not None:
        args["amount"] = amount
    return assistant(tool_calls=[ToolCall.make(f"t{n}", "act", args)])


def _world(ep: Episode) -> HoldemWorld:
    assert isinstance(ep.world, HoldemWorld)
    return ep.world


def _last_tool(ep: Episode) -> ToolOutcome:
    outcome = [m for m in ep.messages if m.role == "tool"][-1].outcome
    assert outcome is not None
    return outcome


def _deck(agent: str, bot: str, board: str, seed: int = 0) -> tuple[str, ...]:
    """A 12-card hand stack with the given hole cards and board (burns filled in)."""
    fixed = [agent[:2], agent[2:], bot[:2], bot[2:]]
    board_cards = [board[i : i + 2] for i in range(0, len(board), 2)]
    rest = [c for c in C.FULL_DECK if c not in fixed + board_cards]
    random.Random(seed).shuffle(rest)
    board_cards += rest[3 : 3 + 5 - len(board_cards)]
    return (*fixed, *rest[:3], *board_cards)


def _spec(
    decks: list[tuple[str, ...]], style: str = "loose", stack: int = 200, button: bool = True
) -> S.SessionSpec:
    return S.SessionSpec(
        n_hands=len(decks),
        stack=stack,
        small_blind=1,
        big_blind=2,
        style=style,
        seed=7,
        decks=tuple(decks),
        agent_button_first=button,
    )


# -- generation ---------------------------------------------------------------------


def test_same_seed_same_instance_and_prompt() -> None:
    a, b = _instance(3, "medium"), _instance(3, "medium")
    assert a == b
    pa = [m.model_dump() for m in SPEC.generator.prompt(a)]
    pb = [m.model_dump() for m in SPEC.generator.prompt(b)]
    assert pa == pb
    assert _instance(4, "medium").hidden_as(Hidden).session != a.hidden_as(Hidden).session


def test_session_is_deterministic_and_ignores_global_random_state() -> None:
    spec = _instance(1, "easy").hidden_as(Hidden).session
    random.seed(1)
    s1, a1 = P.run_reference(spec)
    random.seed(99)
    for _ in range(7):
        random.random()
    s2, a2 = P.run_reference(spec)
    assert a1 == a2
    assert [h.actions for h in s1.hands] == [h.actions for h in s2.hands]
    assert s1.net == s2.net and s1.adjusted_net == s2.adjusted_net


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_hidden_solution_verifies(difficulty: str) -> None:
    inst = _instance(2, difficulty)
    cfg = SPEC.config_of(inst)
    spec = inst.hidden_as(Hidden).session
    session = S.Session(spec)
    for action, amount in inst.hidden_as(Hidden).solution:
        assert not session.over
        session.act(action, amount)
    assert session.over
    assert session.adjusted_net == pytest.approx(inst.hidden_as(Hidden).reference_net)
    assert session.net == inst.hidden_as(Hidden).reference_net_dealt
    decks = inst.hidden_as(Hidden).session.decks
    assert len(decks) == cfg.n_hands  # type: ignore[attr-defined]
    assert all(len(set(d)) == C.CARDS_PER_HAND for d in decks)
    # the stored baselines are what the lazy policies make on these deals
    for name, policy in P.LAZY_POLICIES.items():
        lazy = P.play_session(spec, policy)[0].adjusted_net
        assert lazy == pytest.approx(inst.hidden_as(Hidden).lazy_nets[name])
    assert inst.hidden_as(Hidden).lazy_best == max(inst.hidden_as(Hidden).lazy_nets.values())


def test_config_knobs_and_validation() -> None:
    cfg = SPEC.make_config("hard", n_hands=3, bot_style="tight", big_blind=10)
    assert cfg.n_hands == 3 and cfg.bot_style == "tight"  # type: ignore[attr-defined]
    with pytest.raises(TaskConfigError):
        SPEC.make_config("easy", bot_style="maniac")
    with pytest.raises(TaskConfigError):
        SPEC.make_config("easy", big_blind=5)
    with pytest.raises(TaskConfigError):
        SPEC.make_config("easy", n_hands=0)
    with pytest.raises(
        TaskConfigError, match="for holdem-v2: min_edge_bb=300 can never be reached"
    ):
        SPEC.make_config("easy", n_hands=2, stack_bb=100, min_edge_bb=300)
    inst = _instance(0, "easy", n_hands=2, bot_style="tight", big_blind=10, min_edge_bb=5)
    assert inst.hidden_as(Hidden).session.big_blind == 10
    assert inst.hidden_as(Hidden).session.stack == 1000


# -- evaluation ---------------------------------------------------------------------


def test_evaluator_orders_hands_like_pokerkit() -> None:
    from pokerkit import StandardHighHand

    rng = random.Random(5)
    hands = [rng.sample(C.FULL_DECK, rng.choice((5, 6, 7))) for _ in range(300)]
    # flush- and straight-heavy hands too
    for _ in range(300):
        suit = rng.choice(C.SUITS)
        suited = rng.sample([r + suit for r in C.RANKS], rng.choice((4, 5, 6)))
        hands.append(
            suited + rng.sample([c for c in C.FULL_DECK if c not in suited], 7 - len(suited))
        )
    kit = [StandardHighHand.from_game("".join(h)) for h in hands]
    ours = [C.hand_value(h) for h in hands]
    for i in range(len(hands) - 1):
        for j in (i + 1, (i * 7 + 3) % len(hands)):
            assert (kit[i] > kit[j]) == (ours[i] > ours[j]), (hands[i], hands[j])
            assert (kit[i] == kit[j]) == (ours[i] == ours[j]), (hands[i], hands[j])
    for h, k in zip(hands[:100], kit[:100], strict=True):
        assert C.describe_hand(h[:2], h[2:]) == str(k.entry.label.value)
    # flushes, straights and the wheel
    assert C.hand_value(["Ah", "2h", "3h", "4h", "5h", "Kd", "Kc"]) > C.hand_value(
        ["Kh", "Kd", "Kc", "Ks", "2d", "3c", "4s"]
    )
    wheel = C.hand_value(["Ad", "2c", "3h", "4s", "5d", "9c", "Jh"])
    assert C.hand_value(["6d", "2c", "3h", "4s", "5d", "9c", "Jh"]) > wheel


def _vs(hole: tuple[str, ...], other: tuple[str, ...], board: tuple[str, ...]) -> float:
    return float(C.outcomes_against_all(hole, board)[C.combo_index(other)])


def test_board_values_and_strength() -> None:
    rng = random.Random(3)
    for _ in range(20):
        board = rng.sample(range(52), 5)
        values = C.board_values(board)
        for i in rng.sample(range(C.N_COMBOS), 40):
            hand = [*map(int, C.COMBOS[i]), *board]
            expect = -1 if len(set(hand)) < 7 else C.hand_value([C.FULL_DECK[c] for c in hand])
            assert values[i] == expect
    assert C.strength(("Ah", "As"), ()) > 0.8
    assert C.strength(("7d", "2c"), ()) < 0.4
    # the nuts on the river beats every hand; strength is the rank among all hands
    assert C.strength(("Ah", "Kh"), ("Qh", "Jh", "Th", "2c", "3d")) == 1.0
    assert _vs(("Ah", "As"), ("Kd", "Kc"), ()) == pytest.approx(0.82, abs=0.05)
    board = ("2c", "7d", "9h", "Jc", "3s")
    assert _vs(("Ah", "As"), ("Kd", "Kc"), board) == 1.0
    assert _vs(("Ah", "Kd"), ("Ac", "Kh"), board) == 0.5
    # exact on the turn: 44 rivers, 2 of which (the kings) save KK
    assert _vs(("Kd", "Kc"), ("Ah", "As"), board[:4]) == pytest.approx(2 / 44)
    assert C.outcomes_against_all(("Kd", "Kc"), board)[C.combo_index(("Kd", "2h"))] == 0.0


def test_move_probabilities_are_the_bots_rule() -> None:
    """The reward weighs the bot's possible hands by these probabilities: they must be
    exactly the chance of each move of the bot's rule over its uniform draw."""
    from agentharness.tasks.holdem.bots import BotSpot, choose, move_probabilities

    draws = [(k + 0.5) / 2000 for k in range(2000)]
    for style in S.STYLES.values():
        for spot in (
            BotSpot(True, 0.45, True),
            BotSpot(True, 0.7, False),
            BotSpot(False, 0.0, True),
            BotSpot(False, 0.0, False),
        ):
            for e in (0.1, 0.44, 0.46, 0.62, 0.7, 0.8, 0.97):
                probs = move_probabilities(style, np.array([e]), spot)
                for move in ("fold", "check", "call", "raise"):
                    share = sum(choose(style, e, spot, r) == move for r in draws) / len(draws)
                    assert probs[move][0] == pytest.approx(share, abs=1e-3), (style, spot, e)


def test_showdowns_count_by_their_average_over_the_bots_hands() -> None:
    # The agent (on the button) acts last after the flop, so its check or call closes the
    # betting: the showdown counts by its share of the pot against every hand the bot
    # could hold, weighted by how the bot played, not by the bot's actual cards.
    s = S.Session(_spec([_deck("9h9d", "KcKd", "2c7d4hJc3s")], style="passive"))
    while not s.over:
        s.act(*P.check_call(s.decision(S.AGENT)))
    (h,) = s.hands
    assert h.showdown and h.actions[-1].who == S.AGENT and s.net < 0
    average = S.showdown_average(h, S.STYLES["passive"])
    assert h.adjusted == pytest.approx(average) and s.adjusted_net == pytest.approx(average)
    assert s.adjusted_net > s.net  # the kings were bad luck for the nines
    # AA all-in preflop, called by the bot: it counts by the bot's chances to fold or call
    # with each hand it might hold and AA's share of the pot against those that call
    s = S.Session(dataclasses.replace(_spec([_deck("AhAd", "KcKd", "2c7d9hJc3s")]), stack=50))
    s.act("all_in")
    (h,) = s.hands
    assert h.showdown and h.betting_board == 0 and s.net == 50
    assert h.adjusted == pytest.approx(S.hand_average(h, S.STYLES["loose"]))
    assert 0 < s.adjusted_net < 0.9 * 100 - 50
    # a hand that ends in the agent's fold counts as it fell
    s = S.Session(_spec([_deck("7h2c", "AsAc", "")]))
    s.act("fold")
    assert s.hands[0].adjusted is None and s.adjusted_net == s.net == -1


# -- engine and rules ---------------------------------------------------------------


def test_illegal_actions_name_legal_ones_and_change_nothing() -> None:
    s = S.Session(_spec([_deck("AhKh", "7c2d", "")]))
    assert s.agent_to_act() and s.street() == "preflop"
    legal = s.legal()
    assert legal.raise_ == (4, 200) and legal.call == 1 and legal.fold and legal.bet is None
    cases = [
        ("check", None, "cannot check"),
        ("bet", 10, "use raise"),
        ("raise", None, "needs an amount"),
        ("raise", 3, "below the minimum 4"),
        ("raise", 201, "at most 200"),
        ("jump", None, "unknown action"),
    ]
    for action, amount, needle in cases:
        with pytest.raises(S.IllegalAction) as err:
            s.act(action, amount)
        msg = str(err.value)
        assert needle in msg and "Legal actions now: fold, call (adds 1), raise" in msg
    assert s.agent_actions == 0 and s.pot() == 3


def test_minimum_reraise_follows_the_last_raise() -> None:
    for seed in range(30):
        spec = dataclasses.replace(
            _spec([_deck("7h2c", "AsAc", "")], style="aggressive"), seed=seed
        )
        s = S.Session(spec)
        s.act("raise", 6)
        if s.agent_to_act() and s.street() == "preflop":
            bot_to = s.bets()[S.BOT]
            lo, hi = s.legal().raise_  # type: ignore[misc]
            assert lo == min(bot_to + (bot_to - 6), hi)
            assert s.legal().call == bot_to - 6
            return
    pytest.fail("the aggressive bot never re-raised AA")


def test_fold_and_call_are_refused_when_checking_is_free() -> None:
    s = S.Session(_spec([_deck("2h3d", "AsAc", "KdQdJh9s8c")], style="passive", button=False))
    assert s.hand.actions[1].who == S.BOT  # the button bot acts first preflop
    s.act("call" if s.legal().call else "check")
    assert s.street() == "flop" and s.agent_to_act()  # the big blind acts first after the flop
    with pytest.raises(S.IllegalAction, match="cannot fold"):
        s.act("fold")
    with pytest.raises(S.IllegalAction, match="no bet to call"):
        s.act("call")
    with pytest.raises(S.IllegalAction, match="use bet"):
        s.act("raise", 10)
    s.act("bet", 2)  # the minimum bet is one big blind
    assert s.hand.actions[-1].text.startswith(("Bot", "You bet 2"))


def test_bot_styles_behave_differently() -> None:
    def first_moves(style: str) -> list[str]:
        moves = []
        rng = random.Random(3)
        for k in range(40):
            deck = tuple(C.FULL_DECK[i] for i in rng.sample(range(52), 12))
            s = S.Session(dataclasses.replace(_spec([deck], style=style, button=False), seed=k))
            moves.append(s.hand.actions[1].verb)
        return moves

    tight, loose = first_moves("tight"), first_moves("loose")
    aggressive, passive = first_moves("aggressive"), first_moves("passive")
    assert tight.count("fold") > loose.count("fold")
    assert aggressive.count("raise") > passive.count("raise")


@pytest.mark.parametrize("style", list(S.STYLES))
def test_reference_policy_beats_random_play_on_the_same_cards(style: str) -> None:
    # Paired on the same card stacks the comparison has little card luck left in it.
    ref = rnd = 0.0
    for seed in range(8):
        rng = random.Random(f"t:{seed}")
        spec = _spec([tuple(C.shuffled_hand_cards(rng)) for _ in range(4)], style=style)
        ref += P.run_reference(spec)[0].adjusted_net
        rnd += sum(P.run_random(spec, salt).adjusted_net for salt in range(2)) / 2
    assert ref > 0 and ref > rnd + 100, (ref, rnd)


# -- tools --------------------------------------------------------------------------


def test_prompt_has_table_image_and_no_cards_in_text() -> None:
    inst = _instance(0, "medium")
    msgs = SPEC.generator.prompt(inst)
    images = [img for m in msgs for img in m.images]
    assert 1 <= len(images) <= 3
    png = images[-1].png_bytes()
    assert png is not None
    img = Image.open(io.BytesIO(png))
    assert img.size == (720, int(720 * 0.62))
    text = "\n".join(m.text for m in msgs)
    assert "act(action, amount)" in text and "view_table" in text and "Legal actions" in text
    assert not CARD.search(text)
    for word in ("Stack ", "Pot ", "Bot raises", "Bot calls"):
        assert word not in text
    assert "loose bot" in text and "session" not in inst.public


def test_hand_over_before_the_first_decision_is_shown_in_the_prompt() -> None:
    # a tight bot on the button may fold before the agent acts
    seeds = (
        s
        for s in range(60)
        if not _instance(s, "easy", bot_style="tight", n_hands=3)
        .hidden_as(Hidden)
        .session.agent_button_first
    )
    for seed in seeds:
        inst = _instance(seed, "easy", bot_style="tight", n_hands=3)
        if _world(episode_for(inst)).session.hands_finished == 1:
            break
    else:
        pytest.fail("the tight bot never folded its first button")
    (_, first) = SPEC.generator.prompt(inst)
    assert len(first.images) == 1  # a fold gets no image of its own
    assert "Hand 1 ended before your first decision" in first.text
    assert "Hand 2 of 3" in first.text and "Image 1 shows the table now" in first.text
    # the fold's result is on the next table, in its last-action line
    assert _world(episode_for(inst)).session.view().last_action.startswith("Hand 1: Bot folds")
    session = _world(episode_for(inst)).session
    assert session.hands_finished == 1 and session.hand.number == 2


def test_act_returns_images_and_legal_actions_only_in_text() -> None:
    ep = episode_for(_instance(1, "easy"))
    w = _world(ep)
    d = w.session.decision(S.AGENT)
    action, amount = P.reference_decision(d)
    obs = ep.step(_act(action, amount))
    tool_msg = obs.messages[0]
    assert not tool_msg.text.startswith("Error")
    assert "Your turn" in tool_msg.text or ep.done
    assert not CARD.search(tool_msg.text)
    images = [im for m in obs.messages for im in m.images]
    assert images and all(im.png_bytes() for im in images)
    res = ep.world.execute("view_table", {})
    assert not res.is_error and len(res.images) == 1 and "Legal actions" in res.text


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"action": "jump"},
        {"action": "raise"},
        {"action": "raise", "amount": 0},
        {"action": "raise", "amount": -5},
        {"action": "raise", "amount": float("nan")},
        {"action": "raise", "amount": "lots"},
        {"action": "raise", "amount": 10**12},
        {"action": "raise", "amount": 10**6},
        {"action": "call", "extra": 1},
        {"action": ["call"]},
    ],
)
def test_bad_arguments_are_errors_and_the_hand_waits(args: dict[str, object]) -> None:
    ep = episode_for(_instance(0, "easy"))
    before = _world(ep).session.pot()
    turn = assistant(tool_calls=[ToolCall.make("b1", "act", json.dumps(args, allow_nan=True))])
    obs = ep.step(turn)
    assert not obs.done
    assert obs.messages[0].text.startswith("Error")
    assert ep.tool_calls[-1].is_error
    assert _world(ep).session.pot() == before and _world(ep).session.agent_to_act()


def test_illegal_action_message_through_the_episode() -> None:
    ep = episode_for(_instance(0, "easy"))
    legal = _world(ep).session.legal()
    wrong = "check" if not legal.check else "call"
    obs = ep.step(_act(wrong))
    text = obs.messages[0].text
    assert text.startswith("Error: Illegal action") and "Legal actions now:" in text
    assert _world(ep).illegal_actions == 1 and not ep.done


def test_call_limit_ends_the_session() -> None:
    inst = _instance(0, "easy", n_hands=1)
    ep = episode_for(inst)
    limit = call_limit(1)
    for n in range(limit):
        if ep.done:
            break
        ep.step(assistant(tool_calls=[ToolCall.make(f"v{n}", "view_table", {})]))
    assert ep.done and ep.end_reason == "max_tool_calls"
    r = ep.reward()
    assert r.component("completion") == 0.0 and r.total == 0.0


def test_nudge_tells_the_agent_what_to_do() -> None:
    ep = episode_for(_instance(0, "easy"))
    obs = ep.step("I think I will wait.")
    assert not obs.done
    text = obs.messages[-1].text
    assert "Call act" in text and "Legal actions" in text and not CARD.search(text)


# -- reward -------------------------------------------------------------------------


def test_edge_score_rule() -> None:
    # 0 for matching the best card-blind play, 1 for the reference's margin over it
    assert edge_score(-10, -10, 90, 20) == 0.0
    assert edge_score(90, -10, 90, 20) == 1.0
    assert edge_score(40, -10, 90, 20) == pytest.approx(0.5)
    assert edge_score(500, -10, 90, 20) == 1.0 and edge_score(-300, -10, 90, 20) == 0.0
    # when the reference does not beat the baselines by the minimum edge, the minimum counts
    assert edge_score(0, -10, -50, 20) == pytest.approx(0.5)
    assert edge_score(-50, -10, -50, 20) == 0.0


def _play(inst: Instance, policy: P.Policy) -> Episode:
    """Play ``policy`` through the tools (it only sees the world's decisions)."""
    ep = episode_for(inst)
    rng = random.Random(0)
    n = 0
    while not ep.done:
        n += 1
        ep.step(_act(*policy(_world(ep).session.decision(S.AGENT), rng), n=n))
    return ep


def test_reward_is_the_share_of_the_reference_margin() -> None:
    inst = _instance(2, "medium")
    h = inst.hidden_as(Hidden)
    bb = h.session.big_blind
    target = max(h.reference_net - h.lazy_best, inst.public_as(Public).min_edge_bb * bb)
    ep = _play(inst, P.reference)
    assert ep.end_reason == "completed"
    assert ep.reward().total == pytest.approx(min(1.0, (h.reference_net - h.lazy_best) / target))
    for name, policy in P.LAZY_POLICIES.items():
        ep = _play(inst, policy)
        r = ep.reward()
        assert r.total == 0.0 and not r.success, name
        assert _world(ep).session.adjusted_net == pytest.approx(h.lazy_nets[name])


def test_reward_partial_credit_for_an_unfinished_session() -> None:
    inst = _instance(2, "medium")
    ep = episode_for(inst)
    w = _world(ep)
    n = 0
    while w.session.hands_finished < 6 and not ep.done:
        n += 1
        ep.step(_act(*P.reference_decision(w.session.decision(S.AGENT)), n=n))
    ep.finish("no_answer")
    r = ep.reward()
    finished = w.session.hands_finished
    h = inst.hidden_as(Hidden)
    bb = h.session.big_blind
    assert r.component("completion") == pytest.approx(finished / 24)
    score = edge_score(w.session.adjusted_net, h.lazy_best, h.reference_net, 10 * bb)
    assert r.total == pytest.approx(score * finished / 24)
    assert r.total <= finished / 24 and not r.success


def test_reward_replays_and_ignores_tampering() -> None:
    inst = _instance(1, "easy")
    ep, _ = asyncio.run(run_one(inst, ExpertAgent().policy(inst)))
    honest = ep.reward()
    w = _world(ep)
    w.legal_actions, w.illegal_actions = 0, 99
    w.session.hands[0].end_agent = 10**6
    again = SPEC.reward(inst, w, ep.trajectory())
    assert again.total == honest.total


def test_legal_actions_alone_earn_nothing() -> None:
    # v1 paid for legal actions and for breaking even; a session of folds and checks
    # is now worth exactly nothing
    ep = _play(_instance(0, "easy"), P.check_fold)
    r = ep.reward()
    assert ep.end_reason == "completed" and r.total == 0.0 and not r.success
    assert all(not c.is_error for c in ep.tool_calls)


# -- expert -------------------------------------------------------------------------


@pytest.mark.parametrize("difficulty", ["easy", "hard"])
def test_expert_solves(difficulty: str) -> None:
    # a deal where the reference beats card-blind play (most of them; see below)
    inst = next(
        i
        for i in (_instance(seed, difficulty) for seed in range(10))
        if i.hidden_as(Hidden).reference_net - i.hidden_as(Hidden).lazy_best
        >= 10 * i.hidden_as(Hidden).session.big_blind
    )
    ep, _ = asyncio.run(run_one(inst, ExpertAgent().policy(inst)))
    assert ep.end_reason == "completed"
    assert not any(c.is_error for c in ep.tool_calls)
    h = inst.hidden_as(Hidden)
    assert _world(ep).session.adjusted_net == pytest.approx(h.reference_net)
    assert ep.reward().total >= SPEC.solved_threshold and ep.reward().success


def test_expert_survives_noise() -> None:
    for seed in range(3):
        inst = _instance(seed, "easy")
        ep, _ = asyncio.run(run_one(inst, NoisyAgent(0.4, seed=seed).policy(inst)))
        assert ep.end_reason in ("completed", "max_tool_calls")
        assert ep.error is None
        assert 0.0 <= ep.reward().total <= 1.0


def test_render_shows_showdown_result() -> None:
    from agentharness.tasks.holdem import render

    s = S.Session(_spec([_deck("AhAd", "KcKd", "2c7d9hJc3s")], stack=50))
    s.act("all_in")
    (h,) = s.take_finished()
    view = s.hand_view(h, final=True)
    assert view.bot_hole == ("Kc", "Kd") and "over" in view.banner
    assert "Session over" in view.footer
    img = Image.open(io.BytesIO(render.table_png(view, 700)))
    assert img.size == (700, int(700 * 0.62))


# -- reward integrity: no reward without playing the cards --------------------------

N_SEEDS = 30


@functools.lru_cache(maxsize=3)
def _instances(difficulty: str) -> tuple[Instance, ...]:
    return tuple(_instance(seed, difficulty) for seed in range(N_SEEDS))


def _score(inst: Instance, net: float, over: bool = True) -> tuple[float, bool]:
    h = inst.hidden_as(Hidden)
    bb = h.session.big_blind
    target = max(h.reference_net - h.lazy_best, inst.public_as(Public).min_edge_bb * bb)
    score = edge_score(net, h.lazy_best, h.reference_net, inst.public_as(Public).min_edge_bb * bb)
    return score, over and net - h.lazy_best >= 0.75 * target


def _stats(scores: list[tuple[float, bool]]) -> tuple[float, float]:
    return sum(s for s, _ in scores) / len(scores), sum(w for _, w in scores) / len(scores)


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_lazy_and_blind_play_earn_nothing(difficulty: str) -> None:
    """v1 paid 0.56-0.59 for check-else-fold or always-call and 0.3-0.5 for random play.

    Over 30 seeds: every card-blind baseline (check/fold, check/call, all-in, call or
    all-in) scores 0 by construction, random legal play and the blind policy stay far
    below 0.2 with at most 5% successes, and the expert still solves every difficulty.
    """
    insts = _instances(difficulty)
    for name in P.LAZY_POLICIES:
        mean, wins = _stats([_score(i, i.hidden_as(Hidden).lazy_nets[name]) for i in insts])
        assert mean == 0.0 and wins == 0.0, name
    for name, play in (
        ("random", lambda i, spec: P.run_random(spec, i.seed)),
        (
            "blind",
            lambda i, spec: P.play_session(spec, P.blind, rng=P.blind_rng(i.seed, spec.style))[0],
        ),
    ):
        scores = []
        for inst in insts:
            session = play(inst, inst.hidden_as(Hidden).session)
            scores.append(_score(inst, session.adjusted_net))
        mean, wins = _stats(scores)
        assert mean <= 0.2 and wins <= 0.05, (name, mean, wins)
    expert, wins = _stats([_score(i, i.hidden_as(Hidden).reference_net) for i in insts])
    assert expert >= SPEC.solved_threshold and wins >= 0.7


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_random_agent_earns_nothing(difficulty: str) -> None:
    from agentharness.agents.scripted import RandomAgent

    async def go() -> list[tuple[float, bool]]:
        out = []
        for inst in _instances(difficulty):
            ep, _ = await run_one(inst, RandomAgent().policy(inst))
            out.append((ep.reward().total, ep.reward().success))
        return out

    mean, wins = _stats(asyncio.run(go()))
    assert mean <= 0.2 and wins <= 0.05


class _Cycle:
    """The check's passive player: the same first action every turn, falling back to the
    next one of the enum (fold, check, call, bet, raise, all_in) after an error."""

    ORDER = ("fold", "check", "call", "bet", "raise", "all_in")

    def __init__(self, first: str) -> None:
        self.first = self.ORDER.index(first)
        self.cur = self.first
        self.n = 0

    def next_turn(self, messages: list[Message]) -> Message:
        tool = [m for m in messages if m.role == "tool"]
        if tool:
            failed = tool[-1].text.startswith("Error")
            self.cur = (self.cur + 1) % len(self.ORDER) if failed else self.first
        self.n += 1
        return _act(self.ORDER[self.cur], n=self.n)


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_passive_and_blind_agents_through_the_tools(difficulty: str) -> None:
    """Through real episodes: check-else-fold and always-call score exactly what their
    baselines make (nothing), and the blind policy, given the instance without its hidden
    data, earns what the same rule earns in the simulator."""
    for inst in _instances(difficulty)[:3]:
        spec = inst.hidden_as(Hidden).session
        for first, lazy in (("fold", "check_fold"), ("check", "check_call")):
            ep = episode_for(inst)
            agent = _Cycle(first)
            while not ep.done:
                ep.step(agent.next_turn(ep.messages))
            assert ep.end_reason == "completed"
            assert _world(ep).session.adjusted_net == pytest.approx(
                inst.hidden_as(Hidden).lazy_nets[lazy]
            )
            assert ep.reward().total == 0.0
        blind = HoldemBlind(inst.model_copy(update={"hidden": {}}))
        ep = episode_for(inst)
        while not ep.done:
            ep.step(blind.next_turn(ep.messages))
        assert ep.end_reason == "completed" and not any(c.is_error for c in ep.tool_calls)
        alone = P.play_session(spec, P.blind, rng=P.blind_rng(inst.seed, spec.style))[0]
        assert _world(ep).session.adjusted_net == pytest.approx(alone.adjusted_net)
        assert ep.reward().total == pytest.approx(_score(inst, alone.adjusted_net)[0])


def test_blind_policy_reads_the_legal_actions_from_the_turn_data() -> None:
    ep = episode_for(_instance(3, "easy"))
    ep.step(assistant(tool_calls=[ToolCall.make("v", "view_table", {})]))
    data = _last_tool(ep).data
    assert not CARD.search(json.dumps(data))  # the cards stay in the image
    street, legal = legal_from_data(data)  # type: ignore[misc]
    assert street == data["street"] and legal == _world(ep).session.legal()
    assert legal_from_data({"text": "no turn here"}) is None
    # an illegal action's error carries the turn too, so a blind player can go on
    ep.step(_act("bet", 10**6, n=2))
    assert _last_tool(ep).is_error and legal_from_data(_last_tool(ep).data) is not None


def test_deals_are_not_selected() -> None:
    """v1 kept a deal only when the reference won 20 big blinds with it, which favoured
    the agent's cards. v2 draws one deal per seed and keeps it whatever happens."""
    insts = _instances("medium")
    for inst in insts[:5]:
        cfg = SPEC.config_of(inst)
        rng = random.Random(f"holdem-v2:{cfg.bot_style}:{cfg.n_hands}:{inst.seed}")  # type: ignore[attr-defined]
        rng.randrange(2**31)
        decks = tuple(tuple(C.shuffled_hand_cards(rng)) for _ in range(cfg.n_hands))  # type: ignore[attr-defined]
        assert inst.hidden_as(Hidden).session.decks == decks
    # the agent's cards are no better than the bot's ...
    equities = [
        _vs(tuple(d[0:2]), tuple(d[2:4]), ())
        for inst in insts
        for d in inst.hidden_as(Hidden).session.decks
    ]
    assert sum(equities) / len(equities) == pytest.approx(0.5, abs=0.02)
    # ... and the card-blind baselines are no better off than chance would have them
    lazy = [i.hidden_as(Hidden).lazy_nets["check_call"] for i in insts]
    assert min(lazy) < 0 < max(lazy) or sum(lazy) < 0


@pytest.mark.parametrize("policy", ["check_call", "shove", "reference"])
def test_hand_averages_are_unbiased(policy: str) -> None:
    """Over many deals the hand averages have the mean of the chips as they fell (whatever
    the player does), and the bot's actual hand always fits its moves (the weights are
    its exact strategy)."""
    play = {**P.LAZY_POLICIES, "reference": P.reference}[policy]
    diffs = []
    for inst in _instances("medium")[:20]:
        session, _ = P.play_session(inst.hidden_as(Hidden).session, play)
        for h in session.hands:
            if h.showdown:
                weights = S.bot_hand_weights(h, S.STYLES["loose"])
                assert weights[C.combo_index(h.bot_hole)] > 0
            diffs.append(h.adjusted_net - h.agent_net)
    mean = sum(diffs) / len(diffs)
    sd = (sum((d - mean) ** 2 for d in diffs) / len(diffs)) ** 0.5
    assert abs(mean) < 3.5 * sd / len(diffs) ** 0.5, (mean, sd)


def test_a_fold_to_an_all_in_counts_by_the_bots_chances() -> None:
    # The bot folds or calls an all-in depending on its hand: the hand counts by the
    # average over the hands it could hold, not by whether it happened to fold.
    s = S.Session(_spec([_deck("7h2c", "5d3s", "")], style="passive"))
    s.act("all_in")
    (h,) = s.hands
    assert h.actions[-1].verb == "fold" and s.net == 2  # the bot folded its big blind
    average = S.hand_average(h, S.STYLES["passive"])
    assert average is not None and average == s.adjusted_net
    assert average < 0  # 72o shoving into hands that call a shove loses on average


def test_margin_over_lazy_play_does_not_shrink_with_difficulty() -> None:
    def margin(difficulty: str) -> float:
        insts = _instances(difficulty)
        expert = _stats([_score(i, i.hidden_as(Hidden).reference_net) for i in insts])[0]
        blind = _stats(
            [
                _score(
                    i,
                    P.play_session(
                        i.hidden_as(Hidden).session,
                        P.blind,
                        rng=P.blind_rng(i.seed, i.hidden_as(Hidden).session.style),
                    )[0].adjusted_net,
                )
                for i in insts
            ]
        )[0]
        return expert - blind

    assert margin("hard") >= margin("easy") - 0.05
