"""Edge cases of the escape_room task: generator, simulator, tools, reward, expert."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest

from agentharness.core.episode import Episode
from agentharness.core.instance import Instance
from agentharness.core.messages import Message, assistant
from agentharness.core.registry import episode_for
from agentharness.core.task import TaskConfigError, UnsatisfiableKnobsError
from agentharness.tasks.escape_room import TASK
from agentharness.tasks.escape_room.config import EscapeRoomConfig
from agentharness.tasks.escape_room.generator import EscapeRoomGenerator
from agentharness.tasks.escape_room.problem import Action, Hidden, Public
from agentharness.tasks.escape_room.reward import efficiency
from agentharness.tasks.escape_room.simulator import (
    EscapeRoom,
    SimError,
    plan_next,
    solve,
    verify_solution,
)
from agentharness.tasks.escape_room.tools import EscapeRoomWorld
from agentharness.testing.tasks import call, run_expert, step_call

DIFFS = ("easy", "medium", "hard")


def public(inst: Instance) -> Public:
    return inst.public_as(Public)


def hidden(inst: Instance) -> Hidden:
    return inst.hidden_as(Hidden)


def world(ep: Episode) -> EscapeRoomWorld:
    w = ep.world
    assert isinstance(w, EscapeRoomWorld)
    return w


def play(ep: Episode, actions: tuple[Action, ...]) -> None:
    for n, a in enumerate(actions):
        if ep.done:
            break
        ep.step(call(a.tool, a.args, f"s{n}"))


# -- generator ---------------------------------------------------------------------------
def test_generation_is_deterministic_and_seed_dependent() -> None:
    for d in DIFFS:
        a, b = TASK.instance(5, d), TASK.instance(5, d)
        assert a == b
        assert [m.model_dump() for m in TASK.generator.prompt(a)] == [
            m.model_dump() for m in TASK.generator.prompt(b)
        ]
        assert TASK.instance(6, d).hidden != a.hidden


@pytest.mark.parametrize("difficulty", DIFFS)
def test_hidden_solution_verifies_and_is_par(difficulty: str) -> None:
    for seed in range(15):
        inst = TASK.instance(seed, difficulty)
        h = hidden(inst)
        assert verify_solution(h.world, h.solution) is None
        assert len(h.solution) == h.par == public(inst).par
        # The planner from the start reproduces the stored solution.
        assert solve(h.world, h.goals) == list(h.solution)
        prompt = " ".join(m.text for m in TASK.generator.prompt(inst))
        assert h.exit_code not in prompt
        assert str(public(inst).max_actions) in prompt and str(h.par) in prompt


@pytest.mark.parametrize("difficulty", DIFFS)
def test_typed_views_are_exactly_the_stored_data(difficulty: str) -> None:
    inst = TASK.instance(0, difficulty)
    # Same values and the same key order: the generator stores these models' dumps.
    assert json.dumps(public(inst).model_dump(mode="json")) == json.dumps(inst.public)
    assert json.dumps(hidden(inst).model_dump(mode="json")) == json.dumps(inst.hidden)


def test_difficulty_scales_the_house() -> None:
    def mean_par(d: str) -> float:
        return sum(hidden(TASK.instance(s, d)).par for s in range(8)) / 8

    assert mean_par("easy") < mean_par("medium") < mean_par("hard")
    hard = hidden(TASK.instance(0, "hard")).world
    assert len(hard.rooms) == 8 and len(hard.exit_code) == 6
    assert sum(d.key is not None for d in hard.doors) == 3


@pytest.mark.parametrize(
    "knobs",
    [
        {"n_rooms": 2, "chain_length": 1, "code_length": 3, "locked_doors": 0, "n_distractors": 0},
        {
            "n_rooms": 12,
            "chain_length": 8,
            "code_length": 3,
            "locked_doors": 11,
            "n_distractors": 12,
        },
        {
            "n_rooms": 12,
            "chain_length": 8,
            "code_length": 8,
            "locked_doors": 6,
            "n_distractors": 12,
        },
    ],
)
def test_extreme_knobs_still_solvable(knobs: dict[str, Any]) -> None:
    for seed in range(4):
        inst = TASK.instance(seed, "medium", **knobs)
        h = hidden(inst)
        assert verify_solution(h.world, h.solution) is None
        assert run_expert(inst).reward().total == 1.0


def test_bad_knobs_are_rejected() -> None:
    with pytest.raises(TaskConfigError, match="locked_doors"):
        TASK.make_config("easy", n_rooms=3, locked_doors=3)
    with pytest.raises(TaskConfigError):
        TASK.make_config("easy", code_length=2)
    with pytest.raises(TaskConfigError):
        TASK.make_config("easy", no_such_knob=1)


def test_every_clue_digit_is_needed() -> None:
    inst = TASK.instance(3, "hard")
    h = hidden(inst)
    facts = [f for i in h.world.items for f in i.facts]
    facts += [f for x in h.world.fixtures for f in x.facts]
    digits = {f[1] for f in facts if f[0] == "digit"}
    assert digits == set(range(1, len(h.exit_code) + 1))
    # Skipping the last clue read leaves the code incomplete: verification refuses it.
    sol = h.solution
    last_read = max(i for i, a in enumerate(sol) if a.tool in ("read", "inspect"))
    assert verify_solution(h.world, sol[:last_read] + sol[last_read + 1 :]) is not None


def test_verification_rejects_a_broken_world() -> None:
    inst = TASK.instance(1, "medium")
    h = hidden(inst)
    # The clues now disagree with the lock.
    broken = h.world.model_copy(update={"exit_code": "0" * len(h.exit_code)})
    assert verify_solution(broken, h.solution) is not None


def test_generator_redraws_and_fails_loudly() -> None:
    class Never(EscapeRoomGenerator):
        max_attempts = 0

    with pytest.raises(UnsatisfiableKnobsError, match="could not build"):
        Never().generate(EscapeRoomConfig(), 0)


# -- simulator and tool feedback -----------------------------------------------------------
def test_locked_door_wrong_key_and_unlock() -> None:
    inst = TASK.instance(4, "hard")
    w = EscapeRoomWorld(inst)
    assert "locked" in w.execute("go", {"direction": "east"}).text
    assert not w.execute("take", {"item": "tiny key"}).is_error
    r = w.execute("use", {"item": "tiny key", "target": "east door"})
    assert not r.is_error and "does not fit" in r.text
    r = w.execute("use", {"item": "seashell", "target": "east door"})
    assert r.is_error and "take it first" in r.text
    w.execute("go", {"direction": "north"})
    w.execute("take", {"item": "glass key"})
    w.execute("go", {"direction": "south"})
    assert "unlock" in w.execute("use", {"item": "glass key", "target": "east door"}).text
    assert "Gallery" in w.execute("go", {"direction": "east"}).text


def test_hidden_items_and_writing_are_revealed_by_inspect() -> None:
    inst = TASK.instance(4, "hard")
    sim = EscapeRoom(hidden(inst).world)
    assert "(something is written on it)" in sim.look()
    text = sim.inspect("piano")
    assert "1st digit of the exit code is 4" in text
    assert ("digit", 1, "4") in sim.known
    assert "(something is written on it)" not in sim.look()
    # The pantry tapestry hides a key that only inspecting reveals.
    for step in ("north",):
        sim.go(step)
    sim.take("glass key")
    sim.go("south")
    sim.use("glass key", "east door")
    sim.go("east")
    sim.go("east")
    with pytest.raises(SimError):
        sim.take("crystal key")
    assert "crystal key" in sim.inspect("tapestry")
    assert sim.take("crystal key") == "You take the crystal key."


def test_keypad_feedback() -> None:
    inst = TASK.instance(4, "hard")
    sim = EscapeRoom(hidden(inst).world)
    with pytest.raises(SimError, match="no exit door"):
        sim.enter_code("416683")
    sim.go("north")
    sim.take("glass key")
    sim.go("south")
    sim.use("glass key", "east door")
    sim.go("east")
    sim.go("east")
    with pytest.raises(SimError, match="exactly 6 digits"):
        sim.enter_code("123")
    with pytest.raises(SimError, match="digits only"):
        sim.enter_code("12a456")
    assert "wrong code" in sim.enter_code("000000")
    assert "wrong code" in sim.enter_code("999", "bronze safe")
    assert "matchbook" in sim.enter_code("7-3-0", "bronze safe")
    assert "keypad, not a keyhole" in sim.use("glass key", "bronze safe")
    assert not sim.escaped
    assert "escaped" in sim.enter_code("4166 83")
    assert sim.escaped


def test_numeric_code_argument_is_accepted_and_replayed() -> None:
    inst = TASK.instance(4, "hard")
    ep = episode_for(inst)
    play(ep, hidden(inst).solution[:-1])
    ep.step(call("enter_code", {"code": int(hidden(inst).exit_code)}, "num"))
    assert ep.end_reason == "answered" and ep.reward().total == 1.0
    assert (
        TASK.world.tool_schemas()[0]["function"]["parameters"]["properties"]["code"]["type"]
        == "string"
    )


def test_ambiguous_and_unknown_names() -> None:
    inst = TASK.instance(4, "hard")
    sim = EscapeRoom(hidden(inst).world)
    sim.go("north")
    sim.take("key")  # the only key in view here
    sim.go("south")
    with pytest.raises(SimError, match="could mean several"):
        sim.inspect("key")  # tiny key on the floor and the glass key carried
    with pytest.raises(SimError, match="you see no 'sofa'"):
        sim.inspect("sofa")
    with pytest.raises(SimError, match="going up"):
        sim.go("up")
    assert "fixed in place" in sim.take("the Piano")


def test_failed_actions_do_not_change_state() -> None:
    inst = TASK.instance(2, "medium")
    sim = EscapeRoom(hidden(inst).world)

    def snapshot() -> tuple[Any, ...]:
        return (sim.room, dict(sim.location), dict(sim.door_locked), dict(sim.fixture_locked),
                set(sim.examined), set(sim.known), sim.escaped)  # fmt: skip

    rng = random.Random(0)
    failures = 0
    for _ in range(400):
        tool = rng.choice(["take", "read", "inspect", "use", "enter_code", "go"])
        word = rng.choice(["zzz", "", "up", "123", "door", "exit", "north", "key", "copper key"])
        args = {
            "take": {"item": word},
            "read": {"item": word},
            "inspect": {"target": word},
            "use": {"item": rng.choice(["copper key", "nothing"]), "target": word},
            "enter_code": {"code": word},
            "go": {"direction": rng.choice(["sideways", "north", "south", "up"])},
        }[tool]
        before = snapshot()
        try:
            sim.apply(tool, args)
        except SimError:
            failures += 1
            assert snapshot() == before, (tool, args)
    assert failures > 100


# -- tools, episode, budgets ------------------------------------------------------------
def test_bad_inputs_are_errors_and_the_episode_continues() -> None:
    inst = TASK.instance(0, "easy")
    ep = episode_for(inst)
    bad: list[tuple[str, dict[str, Any] | str]] = [
        ("take", {}),
        ("take", {"item": 7}),
        ("take", {"item": "x" * 500}),
        ("go", {"direction": "northwest"}),
        ("enter_code", {"code": float("nan")}),
        ("enter_code", {"code": "1" * 40}),
        ("enter_code", {"code": "12", "extra": 1}),
        ("use", {"item": "key"}),
        ("look", "not json"),
        ("inspect", {"target": ""}),
    ]
    for i, (name, args) in enumerate(bad):
        obs = ep.step(call(name, args, f"b{i}"))
        assert not obs.done
        text = obs.messages[0].text
        assert text.startswith(("Error:", "Format error:")), (name, text)
    obs = ep.step(call("look", {}, "ok"))
    assert "==" in obs.messages[0].text and not obs.done


def test_every_action_reports_where_the_player_stands_as_data() -> None:
    inst = TASK.instance(0, "easy")
    pub = public(inst)
    ep = episode_for(inst)
    reply = step_call(ep, "look")
    assert reply.outcome is not None and not reply.outcome.is_error
    assert reply.outcome.data == {
        "room": pub.start_room,
        "escaped": False,
        "actions_used": 1,
        "actions_left": pub.max_actions - 1,
    }
    bad = step_call(ep, "take", {"item": "zzz"}, "c2")
    assert bad.outcome is not None and bad.outcome.is_error and bad.text.startswith("Error:")
    assert bad.outcome.data["actions_used"] == 2  # a failed action counts too
    play(ep, hidden(inst).solution)
    assert ep.end_reason == "answered" and ep.tool_calls[-1].data["escaped"] is True
    json.dumps([r.data for r in ep.tool_calls])  # plain JSON values, as logged


def test_wrong_exit_code_keeps_playing_and_right_one_ends() -> None:
    inst = TASK.instance(0, "easy")
    ep = episode_for(inst)
    sol = hidden(inst).solution
    play(ep, sol[:-1])
    obs = ep.step(call("enter_code", {"code": "0" * len(hidden(inst).exit_code)}, "w"))
    assert "wrong code" in obs.messages[0].text and not obs.done
    obs = ep.step(call(sol[-1].tool, sol[-1].args, "r"))
    assert obs.done and ep.end_reason == "answered"
    assert ep.world.final_answer is not None


def test_action_limit_ends_the_episode() -> None:
    inst = TASK.instance(0, "easy", action_limit_factor=1.5)
    limit = public(inst).max_actions
    ep = episode_for(inst)
    for i in range(limit):
        obs = ep.step(call("look", {}, f"l{i}"))
    assert obs.done and ep.end_reason == "max_tool_calls"
    assert "Time is up" in obs.messages[0].text
    assert ep.reward().total == 0.0


def test_nudge_reports_progress() -> None:
    inst = TASK.instance(0, "medium")
    ep = episode_for(inst)
    obs = ep.step(assistant("I think the code is 1234."))
    text = obs.messages[0].text
    assert "did not call a tool" in text and "enter_code" in text
    assert public(inst).start_room in text


# -- reward ------------------------------------------------------------------------------
def test_efficiency_curve() -> None:
    assert efficiency(10, 10) == 1.0
    assert efficiency(5, 10) == 1.0
    assert efficiency(20, 10) == pytest.approx(0.5)
    assert efficiency(30, 10) == 0.0
    assert efficiency(100, 10) == 0.0


def test_reward_par_partial_and_zero() -> None:
    inst = TASK.instance(2, "medium")
    par = hidden(inst).par
    ep = episode_for(inst)
    play(ep, hidden(inst).solution)
    r = ep.reward()
    assert r.success and r.total == 1.0 and r.component("efficiency") == 1.0

    ep = episode_for(inst)
    for i in range(par // 2):
        ep.step(call("look", {}, f"x{i}"))
    play(ep, hidden(inst).solution)
    r = ep.reward()
    assert r.success and 0.6 < r.total < 1.0
    assert r.component("efficiency") == pytest.approx(efficiency(par + par // 2, par))

    ep = episode_for(inst)
    play(ep, hidden(inst).solution[:-1])
    r = ep.reward()
    assert not r.success and r.total == 0.0
    assert r.component("progress") == 1.0  # every digit was read, the code never entered


def test_reward_replays_instead_of_trusting_the_world() -> None:
    inst = TASK.instance(2, "medium")
    ep = episode_for(inst)
    ep.step(call("look", {}, "a"))
    world(ep).sim.escaped = True  # a tampered flag is not an escape
    world(ep).final_answer = {"escaped": True}
    assert ep.reward().total == 0.0


# -- reward integrity audit (issue 10) ---------------------------------------------------
# escape_room-v1 passes: the reward is gated on escaping, and escaping needs the code.
# Over 30 seeds per difficulty, constant codes, passive loops and wandering never escape,
# and brute force cannot fit in the action budget.

AUDIT_SEEDS = 30


def _exit_room(sim: EscapeRoom) -> str:
    return next(f.room for f in sim.fixtures.values() if f.kind == "exit")


def _constant_code(difficulty: str) -> str:
    """The expert's code on another seed: the best constant answer a lazy agent could learn."""
    return hidden(TASK.instance(10_000, difficulty)).exit_code


def _play_until_done(inst: Instance, policy: Any) -> Episode:
    ep = episode_for(inst)
    n = 0
    while not ep.done:
        n += 1
        ep.step(policy(ep, n))
    return ep


@pytest.mark.parametrize("difficulty", DIFFS)
def test_constant_codes_passive_loops_and_wandering_never_escape(difficulty: str) -> None:
    code = _constant_code(difficulty)

    def keypad(ep: Episode, n: int) -> Message:  # the same code every turn, wherever it is
        return call("enter_code", {"code": code}, f"k{n}")

    def look(ep: Episode, n: int) -> Message:
        return call("look", {}, f"l{n}")

    def wander(ep: Episode, n: int) -> Message:
        # Walk through random open doors; in the EXIT room, type the constant code.
        sim = world(ep).sim
        if sim.room == _exit_room(sim) and n % 2 == 0:
            return call("enter_code", {"code": code}, f"w{n}")
        rng = random.Random(f"{ep.instance.seed}:{n}")
        return call("go", {"direction": rng.choice(sorted(sim.exits[sim.room]))}, f"w{n}")

    for name, policy in (("constant code", keypad), ("look loop", look), ("wander", wander)):
        for seed in range(AUDIT_SEEDS):
            inst = TASK.instance(seed, difficulty)
            if name == "constant code" and hidden(inst).exit_code == code:
                continue
            ep = _play_until_done(inst, policy)
            assert ep.reward().total == 0.0, (difficulty, name, seed)
            assert ep.end_reason in ("max_tool_calls", "max_turns"), ep.end_reason


@pytest.mark.parametrize("difficulty", DIFFS)
def test_brute_force_cannot_fit_in_the_action_budget(difficulty: str) -> None:
    # Even walking straight to the EXIT room as if no door were locked, the actions left
    # try too few codes: the chance to escape without reading the clues stays under 5%.
    chances = []
    for seed in range(AUDIT_SEEDS):
        inst = TASK.instance(seed, difficulty)
        sim = EscapeRoom(hidden(inst).world)
        sim.door_locked = dict.fromkeys(sim.door_locked, False)
        walk = sim.path(sim.room, _exit_room(sim))
        assert walk is not None
        attempts = public(inst).max_actions - len(walk)
        chances.append(min(1.0, attempts / 10 ** len(hidden(inst).exit_code)))
    assert sum(chances) / len(chances) <= 0.05, chances


# -- expert ------------------------------------------------------------------------------
@pytest.mark.parametrize("difficulty", DIFFS)
def test_expert_solves_at_par(difficulty: str) -> None:
    for seed in range(3):
        inst = TASK.instance(seed, difficulty)
        ep = run_expert(inst)
        r = ep.reward()
        assert ep.end_reason == "answered"
        assert r.total >= TASK.solved_threshold
        assert len(ep.tool_calls) == hidden(inst).par


@pytest.mark.parametrize("difficulty", DIFFS)
def test_expert_survives_random_interleaved_actions(difficulty: str) -> None:
    for seed in range(4):
        ep = run_expert(TASK.instance(seed, difficulty), noise=0.3, seed=seed)
        assert ep.end_reason == "answered", ep.end_reason
        assert ep.reward().success


def test_expert_replans_after_being_moved() -> None:
    inst = TASK.instance(4, "hard")
    sim = EscapeRoom(hidden(inst).world)
    goals = hidden(inst).goals
    sim.go("west")  # a detour the plan did not ask for
    step = plan_next(sim, goals)
    assert step is not None and step == ("go", {"direction": "east"})


def test_expert_reads_text_written_tool_calls() -> None:
    inst = TASK.instance(1, "easy")
    ep = episode_for(inst)
    expert = TASK.expert(inst)
    first = hidden(inst).solution[0]
    payload = json.dumps({"name": first.tool, "arguments": first.args})
    ep.step(f"Let me start.\n<tool_call>{payload}</tool_call>")
    assert not ep.messages[-1].text.startswith("Error")
    while not ep.done:
        ep.step(expert.next_turn(ep.messages))
    assert ep.reward().total == 1.0


def test_expert_reads_results_as_data_not_text() -> None:
    # With every tool message's text blanked, the expert still escapes at par: it tells a
    # failed action from a successful one by the outcome alone.
    inst = TASK.instance(2, "medium")
    ep = episode_for(inst)
    expert = TASK.expert(inst)
    while not ep.done:
        blank = [
            m.model_copy(update={"content": ""}) if m.role == "tool" else m for m in ep.messages
        ]
        ep.step(expert.next_turn(blank))
    assert ep.reward().total == 1.0 and len(ep.tool_calls) == hidden(inst).par


@pytest.mark.parametrize("difficulty", DIFFS)
def test_expert_says_why_from_what_the_conversation_shows(difficulty: str) -> None:
    # Every turn has a sentence, and every thing it names (a room, a container, a door, a code)
    # was shown earlier in the conversation: a model imitating it learns to read the room.
    for seed in range(3):
        ep = run_expert(TASK.instance(seed, difficulty))
        for i, message in enumerate(ep.messages):
            if message.role != "assistant":
                continue
            assert message.text, f"turn {i} has no sentence"
            shown = " ".join(m.text for m in ep.messages[:i]).lower()
            named = re.findall(
                r"(?:the|a) ([a-z][a-z ]*?)(?=[;:.]| holds| is | here| opens| closely)",
                message.text,
            )
            args = (
                json.loads(message.tool_calls[0].function.arguments) if message.tool_calls else {}
            )
            exit_code = args.get("code") if "exit code" in message.text else None
            named += [n for n in re.findall(r"\d+", message.text) if n != exit_code]
            for thing in named:
                assert thing.lower() in shown, (seed, message.text, thing)
