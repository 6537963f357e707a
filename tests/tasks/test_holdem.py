"""Edge cases of the holdem task: engine, bot, tools, reward, rendering and expert."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import random
import re

import pytest
from PIL import Image

from agentharness.agents.scripted import ExpertAgent, NoisyAgent
from agentharness.core.episode import Episode
from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.registry import episode_for, get_task
from agentharness.core.task import TaskConfigError
from agentharness.rollout.runner import run_one
from agentharness.tasks.holdem import simulator as S
from agentharness.tasks.holdem.reward import chip_score
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


def _deck(agent: str, bot: str, board: str, seed: int = 0) -> tuple[str, ...]:
    """A 12-card hand stack with the given hole cards and board (burns filled in)."""
    fixed = [agent[:2], agent[2:], bot[:2], bot[2:]]
    board_cards = [board[i : i + 2] for i in range(0, len(board), 2)]
    rest = [c for c in S.FULL_DECK if c not in fixed + board_cards]
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
    assert _instance(4, "medium").hidden["session"] != a.hidden["session"]


def test_session_is_deterministic_and_ignores_global_random_state() -> None:
    spec = S.SessionSpec.from_dict(_instance(1, "easy").hidden["session"])
    random.seed(1)
    s1, a1 = S.run_reference(spec)
    random.seed(99)
    for _ in range(7):
        random.random()
    s2, a2 = S.run_reference(spec)
    assert a1 == a2
    assert [h.actions for h in s1.hands] == [h.actions for h in s2.hands]
    assert s1.net == s2.net and s1.expected_net == s2.expected_net


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_hidden_solution_verifies(difficulty: str) -> None:
    inst = _instance(2, difficulty)
    cfg = SPEC.config_of(inst)
    session = S.Session(S.SessionSpec.from_dict(inst.hidden["session"]))
    for action, amount in inst.hidden["solution"]:
        assert not session.over
        session.act(action, amount)
    assert session.over
    assert session.expected_net == pytest.approx(inst.hidden["solution_net"])
    assert session.net == inst.hidden["solution_net_dealt"]
    assert session.expected_net >= cfg.min_reference_win_bb * cfg.big_blind  # type: ignore[attr-defined]
    decks = inst.hidden["session"]["decks"]
    assert len(decks) == cfg.n_hands  # type: ignore[attr-defined]
    assert all(len(set(d)) == S.CARDS_PER_HAND for d in decks)


def test_config_knobs_and_validation() -> None:
    cfg = SPEC.make_config("hard", n_hands=3, bot_style="tight", big_blind=10)
    assert cfg.n_hands == 3 and cfg.bot_style == "tight"  # type: ignore[attr-defined]
    with pytest.raises(TaskConfigError):
        SPEC.make_config("easy", bot_style="maniac")
    with pytest.raises(TaskConfigError):
        SPEC.make_config("easy", big_blind=5)
    with pytest.raises(TaskConfigError):
        SPEC.make_config("easy", n_hands=0)
    inst = _instance(0, "easy", n_hands=2, bot_style="tight", big_blind=10, min_reference_win_bb=5)
    assert inst.hidden["session"]["big_blind"] == 10
    assert inst.hidden["session"]["stack"] == 1000


# -- evaluation ---------------------------------------------------------------------


def test_fast_evaluator_agrees_with_pokerkit() -> None:
    from pokerkit import StandardHighHand

    rng = random.Random(5)
    for _ in range(150):
        a, b = rng.sample(S.FULL_DECK, 7), rng.sample(S.FULL_DECK, 7)
        ha = StandardHighHand.from_game("".join(a))
        hb = StandardHighHand.from_game("".join(b))
        ra, rb = S.hand_rank(S.card_ints(a)), S.hand_rank(S.card_ints(b))
        assert (ha > hb) == (ra > rb) and (ha == hb) == (ra == rb)
    # flushes, straights and the wheel
    assert S.hand_rank(S.card_ints(["Ah", "2h", "3h", "4h", "5h", "Kd", "Kc"])) > S.hand_rank(
        S.card_ints(["Kh", "Kd", "Kc", "Ks", "2d", "3c", "4s"])
    )
    wheel = S.hand_rank(S.card_ints(["Ad", "2c", "3h", "4s", "5d", "9c", "Jh"]))
    six_high = S.hand_rank(S.card_ints(["6d", "2c", "3h", "4s", "5d", "9c", "Jh"]))
    assert six_high > wheel


def test_equity_estimates() -> None:
    assert S.equity(("Ah", "As"), ()) > 0.8
    assert S.equity(("7d", "2c"), ()) < 0.4
    # preflop results are shared between suit-isomorphic hands
    assert S.equity(("Kh", "Qh"), ()) == S.equity(("Ks", "Qs"), ())
    assert S.showdown_equity(("Ah", "As"), ("Kd", "Kc"), ()) == pytest.approx(0.82, abs=0.03)
    board = ("2c", "7d", "9h", "Jc", "3s")
    assert S.showdown_equity(("Ah", "As"), ("Kd", "Kc"), board) == 1.0
    assert S.showdown_equity(("Ah", "Kd"), ("Ac", "Kh"), board) == 0.5
    # exact enumeration on the turn: 44 rivers, 2 of which (the kings) save KK
    turn = ("2c", "7d", "9h", "Jc")
    assert S.showdown_equity(("Kd", "Kc"), ("Ah", "As"), turn) == pytest.approx(2 / 44)


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


def test_short_all_in_is_adjusted_by_equity() -> None:
    # 50-chip stacks: the button's all-in is a raise the bot can only call
    s = S.Session(dataclasses.replace(_spec([_deck("AhAd", "KcKd", "")]), stack=50))
    assert s.legal().all_in == 50
    s.act("all_in")
    assert s.over and s.hands[0].showdown
    assert s.hands[0].allin_equity == pytest.approx(0.82, abs=0.03)
    # the dealt result is a win or loss of 50; the all-in adjusted one is its expectation
    assert abs(s.net) == 50
    assert s.expected_net == pytest.approx(0.82 * 100 - 50, abs=3)
    assert "Session over" in s.view().footer


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
            deck = tuple(S.FULL_DECK[i] for i in rng.sample(range(52), 12))
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
        spec = _spec([tuple(S.shuffled_hand_cards(rng)) for _ in range(4)], style=style)
        ref += S.run_reference(spec)[0].expected_net
        rnd += sum(S.run_random(spec, salt).expected_net for salt in range(2)) / 2
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
    assert img.size == (900, int(900 * 0.62))
    text = "\n".join(m.text for m in msgs)
    assert "act(action, amount)" in text and "view_table" in text and "Legal actions" in text
    assert not CARD.search(text)
    for word in ("Stack ", "Pot ", "Bot raises", "Bot calls"):
        assert word not in text
    assert "loose bot" in text and "session" not in inst.public


def test_hand_over_before_the_first_decision_is_shown_in_the_prompt() -> None:
    # a tight bot on the button may fold before the agent acts
    inst = _instance(8, "easy", bot_style="tight", n_hands=3, min_reference_win_bb=0)
    (_, first) = SPEC.generator.prompt(inst)
    assert len(first.images) == 2
    assert "Hand 1 ended before your first decision" in first.text
    assert "Hand 2 of 3" in first.text and "image 2 shows the table now" in first.text
    session = _world(episode_for(inst)).session
    assert session.hands_finished == 1 and session.hand.number == 2


def test_act_returns_images_and_legal_actions_only_in_text() -> None:
    ep = episode_for(_instance(1, "easy"))
    w = _world(ep)
    d = w.session.decision(S.AGENT)
    action, amount = S.reference_decision(d)
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
    inst = _instance(0, "easy", n_hands=1, min_reference_win_bb=0)
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


def test_chip_score_shape() -> None:
    assert chip_score(0, 200, 5.0) == 0.5
    assert chip_score(200, 200, 5.0) > 0.99 and chip_score(-200, 200, 5.0) < 0.01
    assert chip_score(20, 200, 5.0) > chip_score(10, 200, 5.0)


def test_reward_partial_credit_for_an_unfinished_session() -> None:
    inst = _instance(2, "medium")
    ep = episode_for(inst)
    w = _world(ep)
    n = 0
    while w.session.hands_finished < 2 and not ep.done:
        n += 1
        ep.step(_act(*S.reference_decision(w.session.decision(S.AGENT)), n=n))
    ep.finish("no_answer")
    r = ep.reward()
    finished = w.session.hands_finished
    assert r.component("completion") == pytest.approx(finished / 6)
    assert r.component("legality") == 1.0
    assert 0 < r.total < SPEC.solved_threshold
    assert r.total == pytest.approx(
        (0.85 * chip_score(w.session.expected_net, w.spec.stack, 5.0) + 0.15) * finished / 6
    )


def test_folding_everything_scores_below_even() -> None:
    ep = episode_for(_instance(0, "easy"))
    n = 0
    while not ep.done:
        n += 1
        legal = _world(ep).session.legal()
        ep.step(_act("fold" if legal.fold else "check", n=n))
    r = ep.reward()
    assert ep.end_reason == "completed"
    assert r.component("chips") is not None and r.component("chips") < 0.5  # type: ignore[operator]
    assert not r.success


def test_reward_replays_and_ignores_tampering() -> None:
    inst = _instance(1, "easy")
    ep, _ = asyncio.run(run_one(inst, ExpertAgent().policy(inst)))
    honest = ep.reward()
    w = _world(ep)
    w.legal_actions, w.illegal_actions = 0, 99
    w.session.stacks[S.AGENT] = 10**6
    again = SPEC.reward(inst, w, ep.trajectory())
    assert again.total == honest.total
    assert honest.success and honest.total >= SPEC.solved_threshold


def test_illegal_attempts_lower_legality() -> None:
    ep = episode_for(_instance(0, "easy"))
    legal = _world(ep).session.legal()
    ep.step(_act("check" if not legal.check else "call", n=1))
    ep.finish("no_answer")
    r = ep.reward()
    assert r.component("legality") == 0.0


# -- expert -------------------------------------------------------------------------


@pytest.mark.parametrize("difficulty", ["easy", "hard"])
def test_expert_solves(difficulty: str) -> None:
    inst = _instance(4, difficulty)
    ep, _ = asyncio.run(run_one(inst, ExpertAgent().policy(inst)))
    assert ep.end_reason == "completed"
    assert not any(c.is_error for c in ep.tool_calls)
    assert ep.reward().total >= SPEC.solved_threshold
    assert ep.reward().component("chips") == pytest.approx(
        chip_score(inst.hidden["solution_net"], inst.hidden["session"]["stack"], 5.0)
    )


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
