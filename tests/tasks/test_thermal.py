"""Edge cases of the thermal task: generator, simulator, tools, reward, expert."""

from __future__ import annotations

import functools
import json
import math
import re
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from agentharness.agents.textformat import tools_system_prompt
from agentharness.core.calculator import CalculatorWorld
from agentharness.core.episode import Episode
from agentharness.core.instance import Instance
from agentharness.core.messages import assistant
from agentharness.core.registry import episode_for
from agentharness.core.reward import Reward
from agentharness.core.task import TaskConfigError
from agentharness.imitability import imitability_check, unsourced_numbers
from agentharness.tasks.thermal import TASK
from agentharness.tasks.thermal.config import ThermalConfig
from agentharness.tasks.thermal.expert import ThermalExpert
from agentharness.tasks.thermal.generator import SYSTEM_PROMPT, lucky_hit_rate
from agentharness.tasks.thermal.problem import Hidden, Public
from agentharness.tasks.thermal.reward import (
    PARTIAL_CAP,
    W_TARGETS,
    partial_credit,
    progress,
)
from agentharness.tasks.thermal.simulator import (
    PlateModel,
    PlateSpec,
    SimulationError,
    get_model,
    response_matrices,
    rms_excess,
    spec_from_public,
    uniform_baseline,
)
from agentharness.tasks.thermal.tools import ThermalWorld, minimize_max, report_text
from agentharness.testing.tasks import call, run_expert, step_call

DIFFS = ("easy", "medium", "hard")


def public(inst: Instance) -> Public:
    return inst.public_as(Public)


def hidden(inst: Instance) -> Hidden:
    return inst.hidden_as(Hidden)


def world(ep: Episode) -> ThermalWorld:
    w = ep.world
    assert isinstance(w, ThermalWorld)
    return w


def config(difficulty: str) -> ThermalConfig:
    c = TASK.make_config(difficulty)
    assert isinstance(c, ThermalConfig)
    return c


def submit(inst: Instance, powers: list[float], sims: int = 0) -> Episode:
    ep = episode_for(inst)
    n = len(public(inst).heaters)
    for i in range(sims):
        ep.step(call("simulate", {"powers": [0.0] * n}, f"s{i}"))
    ep.step(call("submit_powers", {"powers": powers}, "final"))
    assert ep.done and ep.end_reason == "answered"
    return ep


# -- generator ---------------------------------------------------------------------------


@pytest.mark.parametrize("difficulty", DIFFS)
def test_deterministic_and_seed_dependent(difficulty: str) -> None:
    a, b = TASK.instance(5, difficulty), TASK.instance(5, difficulty)
    assert a == b
    assert [m.model_dump() for m in TASK.generator.prompt(a)] == [
        m.model_dump() for m in TASK.generator.prompt(b)
    ]
    assert TASK.instance(6, difficulty).public != a.public


@pytest.mark.parametrize("difficulty", DIFFS)
def test_hidden_solution_verifies(difficulty: str) -> None:
    for seed in range(6):
        inst = TASK.instance(seed, difficulty)
        pub = public(inst)
        sol = list(hidden(inst).solution)
        assert len(sol) == len(pub.heaters)
        assert all(0 <= p <= pub.max_power_w for p in sol)
        r = get_model(spec_from_public(pub)).solve(sol)
        for mon, t in zip(pub.monitors, r.monitor_c, strict=True):
            assert abs(t - mon.target_c) <= pub.tolerance_k
        assert r.hottest_c <= pub.safety_limit_c
        ep = submit(inst, sol)
        rew = ep.reward()
        assert rew.success and rew.total == pytest.approx(1.0)


@pytest.mark.parametrize("difficulty", DIFFS)
def test_typed_views_are_exactly_the_stored_data(difficulty: str) -> None:
    inst = TASK.instance(0, difficulty)
    # Same values and the same key order: the generator stores these models' dumps.
    assert json.dumps(public(inst).model_dump(mode="json")) == json.dumps(inst.public)
    assert json.dumps(hidden(inst).model_dump(mode="json")) == json.dumps(inst.hidden)


def test_presets_scale_difficulty() -> None:
    e, h = public(TASK.instance(0, "easy")), public(TASK.instance(0, "hard"))
    assert len(h.heaters) > len(e.heaters)
    assert h.tolerance_k < e.tolerance_k
    assert e.plate.kx_w_mk == e.plate.ky_w_mk
    assert any(
        (plate := public(TASK.instance(s, "hard")).plate).kx_w_mk != plate.ky_w_mk for s in range(3)
    )


def test_prompt_states_goal_tools_and_format() -> None:
    inst = TASK.instance(1, "medium")
    text = "\n".join(m.text for m in TASK.generator.prompt(inst))
    for needle in (
        "submit_powers",
        "calculate",
        "solve_linear",
        "minimize_max",
        "know nothing about the plate",
        "rise above ambient",
        "Safety limit",
        "Tolerance",
        "H3",
        "M4",
        "watts",
    ):
        assert needle in text
    ambient = public(inst).plate.ambient_c
    for mon in public(inst).monitors:
        # the target rise solve_linear needs as b is printed, not left to mental arithmetic
        rise = round(mon.target_c - ambient, 4)
        assert f"target {mon.target_c:.1f} °C, rise {rise:g} K" in text
    assert str(hidden(inst).solution[0]) not in text


def test_prompt_leaves_the_tools_to_their_signatures() -> None:
    # v6: the system prompt's "Tools:" section repeated the signatures the agent reads anyway
    # (textformat.tools_system_prompt); each tool is described once, in its signature, and
    # the prompt keeps only what a signature cannot say and the Rules.
    system_text = SYSTEM_PROMPT
    assert "Tools:" not in system_text and "Rules:" in system_text
    names = set(ThermalWorld.tool_specs())
    assert not [name for name in names if f"{name}(" in system_text]
    signatures = tools_system_prompt(ThermalWorld.tool_schemas())
    for name in names:
        assert f"- {name}(" in signatures
    for words in ("one simulation per heater", "rise per watt", "error (T - target)"):
        assert words in signatures
    # The calculator's tools keep the calculator's schemas: tasks that share a tool name share
    # its schema (verl keys tools by name across tasks).
    shared = {t["function"]["name"]: t for t in CalculatorWorld.tool_schemas()}
    assert [t for t in ThermalWorld.tool_schemas() if t["function"]["name"] in shared] == [
        shared[name] for name in sorted(shared)
    ]
    # The powers are described once, by the Rules, not again under simulate and submit_powers.
    assert "`powers` is a list of watts, one per heater" in system_text
    assert "\n    powers:" not in signatures
    # The v5 -> v6 cut (SmolLM2 tokens: system 405 -> 205, signatures 656 -> 480; characters
    # 1766 -> 940 and 2194 -> 1548), held in characters so that a longer rewrite shows here.
    assert len(system_text) < 1100 and len(signatures) < 1700


@pytest.mark.parametrize("difficulty", DIFFS)
def test_replies_print_no_more_digits_than_the_tolerance_needs(difficulty: str) -> None:
    # v6: a small model pays a token per digit, in the reply and again in every call that
    # copies a number: rises to 1 mK, errors to 0.01 K, computed powers to 4 significant
    # digits; a simulation's reply repeats neither the powers nor the temperatures.
    inst = TASK.instance(0, difficulty)
    ep = run_expert(inst)
    for record in ep.tool_calls:
        if record.name in ("probe_heaters", "simulate"):
            decimals = [len(d) for d in re.findall(r"\d\.(\d+) K(?!/)", record.result)]
            decimals += [len(d) for d in re.findall(r"\d\.(\d+)(?=,|$)", record.result, re.M)]
            assert decimals and max(decimals) <= 3, record.result
        if record.name == "simulate":
            assert record.result.count("°C") == 1  # the hottest point's, in the verdict
            assert all(str(p) not in record.result for p in record.arguments["powers"])
        if record.name in ("solve_linear", "minimize_max"):
            digits = [f"{abs(x):g}".replace(".", "").lstrip("0") for x in record.data["x"]]
            assert max(len(d) for d in digits) <= 4, record.data
    assert ep.reward().success


def test_knobs_override_and_bad_knobs() -> None:
    inst = TASK.instance(2, "easy", n_heaters=4, n_monitors=6, tolerance_k=0.3)
    assert len(public(inst).heaters) == 4 and len(public(inst).monitors) == 6
    assert public(inst).tolerance_k == 0.3
    with pytest.raises(TaskConfigError):
        TASK.instance(0, "easy", no_such_knob=1)
    with pytest.raises(TaskConfigError):
        TASK.instance(0, "easy", conductivity=(80.0, 10.0))
    with pytest.raises(TaskConfigError):
        TASK.instance(0, "easy", n_heaters=0)


def test_hard_safety_limit_binds() -> None:
    # On hard there are more heaters than monitors: some target-hitting powers overheat.
    assert sum(hidden(TASK.instance(s, "hard")).safety_binding for s in range(5)) >= 3


# -- simulator ---------------------------------------------------------------------------


def _spec(**kw: Any) -> PlateSpec:
    base: dict[str, Any] = {
        "grid_n": 41,
        "size_m": 0.2,
        "thickness_m": 0.003,
        "kx": 50.0,
        "ky": 50.0,
        "h_conv": 15.0,
        "ambient_c": 20.0,
        "heater_sigma_m": 0.008,
        "heaters": ((20, 20), (10, 30)),
        "monitors": ((25, 20), (20, 25), (30, 30)),
    }
    base.update(kw)
    return PlateSpec(**base)


def test_energy_balance() -> None:
    # Power in = conduction into the edges + convection from both faces (discretely exact).
    spec = _spec(kx=60.0, ky=25.0)
    model = PlateModel(spec)
    r = model.solve([12.0, 7.0])
    theta = r.field_c - spec.ambient_c
    dx, t = spec.dx, spec.thickness_m
    conv = 2 * spec.h_conv * theta[1:-1, 1:-1].sum() * dx**2
    edge_x = spec.kx * t * (theta[1:-1, 1].sum() + theta[1:-1, -2].sum())
    edge_y = spec.ky * t * (theta[1, 1:-1].sum() + theta[-2, 1:-1].sum())
    assert conv + edge_x + edge_y == pytest.approx(19.0, rel=1e-9)


def test_superposition_and_zero_power() -> None:
    model = get_model(_spec())
    a, b = model.solve([5.0, 0.0]), model.solve([0.0, 9.0])
    ab = model.solve([5.0, 9.0])
    np.testing.assert_allclose(ab.field_c - 20, (a.field_c - 20) + (b.field_c - 20), atol=1e-9)
    zero = model.solve([0.0, 0.0])
    assert np.allclose(zero.field_c, 20.0) and zero.hottest_c == pytest.approx(20.0)
    g, h = response_matrices(model)
    assert g.shape == (3, 2) and h.shape == (2, 2) and np.all(g > 0)


def test_anisotropy_spreads_heat_along_stiff_axis() -> None:
    spec = _spec(kx=100.0, ky=20.0, heaters=((20, 20),), monitors=((28, 20), (20, 28)))
    r = PlateModel(spec).solve([10.0])
    along_x, along_y = r.monitor_c
    assert along_x > along_y + 1.0
    assert r.hottest_node == (20, 20)


def test_grid_convergence() -> None:
    coarse = PlateModel(_spec(grid_n=41)).solve([10.0, 10.0]).monitor_c
    fine = (
        PlateModel(
            _spec(grid_n=81, heaters=((40, 40), (20, 60)), monitors=((50, 40), (40, 50), (60, 60)))
        )
        .solve([10.0, 10.0])
        .monitor_c
    )
    for c, f in zip(coarse, fine, strict=True):
        assert abs(c - f) < 0.03 * (f - 20.0)


def test_simulator_rejects_bad_powers() -> None:
    model = get_model(_spec())
    for bad in ([1.0], [1.0, math.nan], [1.0, -2.0], [math.inf, 0.0]):
        with pytest.raises(SimulationError):
            model.solve(bad)


# -- tools -------------------------------------------------------------------------------


def test_simulate_feedback_content() -> None:
    inst = TASK.instance(3, "medium")
    pub = public(inst)
    w = ThermalWorld(inst)
    n = len(pub.heaters)
    res = w.execute("simulate", {"powers": [5.0] * n})
    assert not res.is_error
    rep = res.data
    # The model reads a line per point (v4); scripted policies read the full report as data,
    # and every number in a line is the data's.
    assert isinstance(rep, dict) and res.text == report_text(rep)
    lines = res.text.splitlines()
    assert lines[0] == f"{rep['verdict']}. {rep['simulations_left']} simulations left."
    assert len(lines) == 1 + len(pub.monitors) + n
    for line, mon in zip(lines[1 : 1 + len(pub.monitors)], rep["monitors"], strict=True):
        assert line.startswith(f"{mon['id']} rise {mon['rise_k']} K, error ")
        assert f"{abs(mon['error_k'])} K, " in line
        assert line.endswith(", hit") == mon["within_tolerance"]
    for line, h in zip(lines[1 + len(pub.monitors) :], rep["heaters"], strict=True):
        assert line == f"{h['id']} rise {h['rise_k']} K"
    assert len(rep["monitors"]) == len(pub.monitors)
    for mon, given in zip(rep["monitors"], pub.monitors, strict=True):
        assert mon["target_c"] == given.target_c
        assert mon["error_k"] == pytest.approx(mon["temperature_c"] - mon["target_c"], abs=6e-3)
        assert mon["within_tolerance"] == (abs(mon["error_k"]) <= pub.tolerance_k)
        assert ("too cold" in mon["status"]) == (not mon["within_tolerance"] and mon["error_k"] < 0)
        ambient = pub.plate.ambient_c
        assert mon["rise_k"] == pytest.approx(mon["temperature_c"] - ambient, abs=1e-3)
        assert mon["target_rise_k"] == pytest.approx(given.target_c - ambient)
    assert len(rep["heaters"]) == n
    for h in rep["heaters"]:
        assert h["rise_k"] == pytest.approx(h["temperature_c"] - pub.plate.ambient_c, abs=1e-3)
    assert rep["hottest"]["temperature_c"] >= max(h["temperature_c"] for h in rep["heaters"])
    assert rep["safe"] is True and "safe" in rep["verdict"]
    assert rep["simulations_used"] == 1 and w.simulations == 1


def test_tool_messages_carry_the_report_as_data() -> None:
    inst = TASK.instance(0, "easy")
    ep = episode_for(inst)
    reply = step_call(ep, "simulate", {"powers": [1.0, 2.0]})
    assert reply.outcome is not None and not reply.outcome.is_error
    assert reply.outcome.data == ep.tool_calls[-1].data
    assert reply.text == report_text(reply.outcome.data)
    bad = step_call(ep, "simulate", {"powers": [1.0]}, "c2")
    assert bad.outcome is not None and bad.outcome.is_error and bad.outcome.data is None
    final = step_call(ep, "submit_powers", {"powers": list(hidden(inst).solution)}, "c3")
    assert final.outcome is not None and not final.outcome.is_error
    assert final.outcome.data["verdict"] in final.text and final.outcome.data["safe"] is True
    json.dumps([r.data for r in ep.tool_calls])  # plain JSON values, as logged


def test_unsafe_verdict_says_by_how_much() -> None:
    inst = TASK.instance(3, "hard")
    w = ThermalWorld(inst)
    n = len(public(inst).heaters)
    rep = w.execute("simulate", {"powers": [public(inst).max_power_w] * n}).data
    assert rep["safe"] is False
    assert "UNSAFE" in rep["verdict"] and "exceeds" in rep["verdict"]


BAD_POWERS: list[tuple[Any, str]] = [
    ({"powers": [1.0]}, "expected exactly"),
    ({"powers": [1.0] * 40}, "at most 32"),
    ({"powers": [-1.0, 1.0]}, "greater than or equal to 0"),
    ({"powers": [1.0, 999.0]}, "exceeds the maximum"),
    ({"powers": ["hot", 1.0]}, "valid number"),
    ({"powers": "abc"}, "valid list"),
    ({"powers": []}, "at least 1"),
    ('{"powers": [1.0, NaN]}', "finite number"),
    ({"powers": [1.0, math.nan]}, "finite number"),
    ({}, "powers"),
    ({"powers": [1.0, 1.0], "extra": 1}, "unexpected argument"),
]


@pytest.mark.parametrize(("args", "needle"), BAD_POWERS)
@pytest.mark.parametrize("tool_name", ["simulate", "submit_powers"])
def test_bad_inputs_are_errors_and_episode_continues(
    args: Any, needle: str, tool_name: str
) -> None:
    inst = TASK.instance(0, "easy")
    assert len(public(inst).heaters) == 2
    ep = episode_for(inst)
    ep.step(call(tool_name, args))
    assert not ep.done
    record = ep.tool_calls[-1]
    assert record.is_error and needle in record.result, record.result
    assert ep.world.final_answer is None
    ep.step(call("simulate", {"powers": [1.0, 1.0]}, "c2"))
    assert not ep.tool_calls[-1].is_error and not ep.done


def test_simulator_failure_becomes_tool_error() -> None:
    inst = TASK.instance(0, "easy")
    w = ThermalWorld(inst)

    class BrokenLU:
        def solve(self, q: np.ndarray) -> np.ndarray:
            return np.full_like(q, np.nan)

    broken = PlateModel(spec_from_public(public(inst)))  # private copy, not the cached one
    broken._lu = BrokenLU()
    w.model = broken
    res = w.execute("simulate", {"powers": [1.0, 1.0]})
    assert res.is_error and "simulation failed" in res.text and "non-finite" in res.text
    assert w.simulations == 0


def test_simulation_budget() -> None:
    inst = TASK.instance(0, "easy", max_simulations=2)
    ep = episode_for(inst)
    for i in range(3):
        ep.step(call("simulate", {"powers": [1.0, 1.0]}, f"c{i}"))
    assert [r.is_error for r in ep.tool_calls] == [False, False, True]
    assert "budget" in ep.tool_calls[-1].result
    ep.step(call("submit_powers", {"powers": list(hidden(inst).solution)}, "f"))
    assert ep.end_reason == "answered" and ep.reward().success


def test_nudges_give_domain_feedback() -> None:
    inst = TASK.instance(0, "medium")
    ep = episode_for(inst)
    obs = ep.step(assistant("Let me think."))
    assert "simulate" in obs.messages[-1].text and "linear" in obs.messages[-1].text
    ep.step(call("simulate", {"powers": [2.0, 3.0, 4.0]}))
    obs = ep.step(assistant("Hmm."))
    assert "[2.0, 3.0, 4.0]" in obs.messages[-1].text and "submit_powers" in obs.messages[-1].text
    obs = ep.step(assistant("Still thinking."))
    assert obs.done and ep.end_reason == "no_answer"
    assert ep.reward().total == 0.0


# -- reward ------------------------------------------------------------------------------


def test_reward_partial_credit_and_gate() -> None:
    inst = TASK.instance(4, "medium")
    sol = list(hidden(inst).solution)
    full = submit(inst, sol).reward()
    assert full.success and full.total == pytest.approx(1.0)

    nudged = list(sol)
    nudged[0] += 1.0
    part = submit(inst, nudged).reward()
    assert not part.success
    assert 0.0 < part.total <= W_TARGETS * PARTIAL_CAP < TASK.solved_threshold
    # Efficiency is paid only to an answer that hits every target.
    assert part.component("efficiency") == 0.0
    assert part.component("hits") is not None and 0 < part.component("hits") < 1  # type: ignore[operator]

    cold = submit(inst, [0.0] * len(sol)).reward()
    assert cold.component("hits") == 0.0 and cold.component("safety") == 1.0
    assert cold.total == 0.0

    slow = submit(inst, sol, sims=20).reward()
    eff = slow.component("efficiency")
    assert eff is not None and eff < 1.0 and slow.success and slow.total < full.total
    assert slow.total >= W_TARGETS


def test_partial_credit_grows_with_progress_from_the_uniform_baseline() -> None:
    inst = TASK.instance(2, "hard")
    pub = public(inst)
    model = get_model(spec_from_public(pub))
    g, _ = response_matrices(model)
    rise = np.array([m.target_c for m in pub.monitors]) - pub.plate.ambient_c
    c, excess = uniform_baseline(g, rise, pub.tolerance_k, pub.max_power_w)
    assert excess >= pub.tolerance_k * config("hard").lazy_gap
    uniform = np.full(len(pub.heaters), c)
    sol = np.asarray(hidden(inst).solution)
    totals = []
    for t in (0.0, 0.5, 0.8, 0.95):
        powers = ((1 - t) * uniform + t * sol).tolist()
        rew = submit(inst, powers).reward()
        if rew.component("safety") == 1.0:
            totals.append(rew.total)
    assert totals[0] == pytest.approx(0.0, abs=1e-9)  # the best uniform setting earns nothing
    assert totals == sorted(totals) and totals[-1] > 0.2


def test_progress_and_partial_credit_rules() -> None:
    assert progress(0.0, 5.0) == 1.0 and progress(0.0, 0.0) == 1.0
    assert progress(5.0, 5.0) == 0.0 and progress(7.0, 5.0) == 0.0
    assert progress(1.0, 0.0) == 0.0
    assert progress(1.0, 4.0) == pytest.approx(0.75)
    assert partial_credit(1.0, 4.0) == pytest.approx(PARTIAL_CAP * 0.75**2)
    assert partial_credit(2.0, 4.0) < 0.25 * PARTIAL_CAP + 1e-12


def test_uniform_baseline_matches_brute_force() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        g = rng.uniform(0.05, 1.5, (3, 4))
        rise = rng.uniform(3.0, 30.0, 3)
        c, best = uniform_baseline(g, rise, 0.4, 30.0)
        grid = np.linspace(0.0, 30.0, 3001)
        miss = np.maximum(np.abs(np.outer(grid, g.sum(axis=1)) - rise) - 0.4, 0.0)
        brute = float(np.sqrt(np.mean(miss**2, axis=1)).min())
        assert 0.0 <= c <= 30.0
        assert best <= brute + 1e-9
        assert best == pytest.approx(rms_excess(g.sum(axis=1) * c - rise, 0.4))
    assert rms_excess([0.2, -0.3], 0.5) == 0.0
    assert rms_excess([1.5, -0.5], 0.5) == pytest.approx(math.sqrt(0.5))


def test_unsafe_answer_is_gated() -> None:
    from scipy.optimize import linprog

    inst = next(
        TASK.instance(s, "hard")
        for s in range(10)
        if hidden(TASK.instance(s, "hard")).safety_binding
    )
    pub = public(inst)
    model = get_model(spec_from_public(pub))
    g, h = response_matrices(model)
    rise = np.array([m.target_c for m in pub.monitors]) - pub.plate.ambient_c
    band = 0.3 * pub.tolerance_k
    hottest_row = max(
        (
            linprog(
                -row,
                A_ub=np.vstack([g, -g]),
                b_ub=np.concatenate([rise + band, band - rise]),
                bounds=[(0, pub.max_power_w)] * len(row),
                method="highs",
            )
            for row in h
        ),
        key=lambda res: -res.fun,
    )
    rew = submit(inst, [float(p) for p in hottest_row.x]).reward()
    assert rew.component("hits") == 1.0 and rew.component("safety") == 0.0
    assert not rew.success and rew.total == 0.0  # every target hit, but unsafe: nothing


def test_no_answer_scores_zero() -> None:
    inst = TASK.instance(0, "easy")
    ep = episode_for(inst)
    ep.step(call("simulate", {"powers": list(hidden(inst).solution)}))
    assert TASK.reward(inst, world(ep), ep.trajectory()).total == 0.0


# -- reward integrity: lazy policies earn nothing (issue 10) ------------------------------
# Over 30 seeds per difficulty, each must stay at or below 0.2 mean reward and 5% success;
# thermal-v1 paid 0.15-0.22 for all heaters off and 0.50 for half power on easy.

LAZY_SEEDS = 30


@functools.cache
def lazy_instances(difficulty: str) -> tuple[Instance, ...]:
    return tuple(TASK.instance(s, difficulty) for s in range(LAZY_SEEDS))


def one_shot(inst: Instance, powers: list[float]) -> Reward:
    """Submit at once, without a simulation (a tool error leaves the episode unanswered)."""
    ep = episode_for(inst)
    ep.step(call("submit_powers", {"powers": powers}))
    ep.finish(ep.end_reason or "no_answer")
    return ep.reward()


def assert_lazy(rewards: list[Reward], what: str) -> None:
    mean = statistics.fmean(r.total for r in rewards)
    success = statistics.fmean(r.success for r in rewards)
    assert mean <= 0.2 and success <= 0.05, f"{what}: mean {mean:.3f}, success {success:.2f}"


def _echo_targets(p: Public) -> list[float]:
    echoed = [min(m.target_c, p.max_power_w) for m in p.monitors][: len(p.heaters)]
    return echoed + [0.0] * max(0, len(p.heaters) - len(p.monitors))


LAZY_POWERS: dict[str, Callable[[Public], list[float]]] = {
    "all off (schema minimum)": lambda p: [0.0] * len(p.heaters),
    "all at max power": lambda p: [p.max_power_w] * len(p.heaters),
    "all at half power": lambda p: [p.max_power_w / 2] * len(p.heaters),
    "far above the maximum": lambda p: [1000.0] * len(p.heaters),
    "targets echoed as powers": _echo_targets,
}


@pytest.mark.parametrize("difficulty", DIFFS)
def test_lazy_answers_earn_nothing(difficulty: str) -> None:
    insts = lazy_instances(difficulty)
    for name, powers in LAZY_POWERS.items():
        assert_lazy([one_shot(i, powers(public(i))) for i in insts], f"{difficulty}, {name}")


@pytest.mark.parametrize("difficulty", DIFFS)
def test_every_uniform_setting_earns_nothing(difficulty: str) -> None:
    # Safe or not, a uniform setting never hits every target and never gains on the best
    # uniform setting, so it earns exactly nothing (v1: 0.44-0.62 on easy).
    insts = lazy_instances(difficulty)
    for frac in np.linspace(0.0, 1.0, 11):
        rewards = [
            one_shot(i, [frac * public(i).max_power_w] * len(public(i).heaters)) for i in insts
        ]
        assert max(r.total for r in rewards) <= 1e-9, f"{difficulty}, uniform at {frac:.1f} x max"
        assert not any(r.success for r in rewards)


@pytest.mark.parametrize("difficulty", DIFFS)
def test_best_constant_answer_earns_little(difficulty: str) -> None:
    # The expert's final answers on other seeds, each submitted blindly on every seed.
    constants = []
    for seed in range(1000, 1008):
        ep = run_expert(TASK.instance(seed, difficulty))
        assert ep.world.final_answer is not None
        constants.append(list(ep.world.final_answer["powers"]))
    insts = lazy_instances(difficulty)
    for k, powers in enumerate(constants):
        assert_lazy([one_shot(i, powers) for i in insts], f"{difficulty}, constant #{k} {powers}")


@pytest.mark.parametrize("difficulty", DIFFS)
def test_random_passive_and_silent_play_earn_nothing(difficulty: str) -> None:
    insts = lazy_instances(difficulty)
    rnd, passive = [], []
    for inst in insts:
        ep = run_expert(inst, noise=1.0, seed=inst.seed)  # every turn a random tool call
        rnd.append(ep.reward())
        ep = episode_for(inst)
        n = len(public(inst).heaters)
        while not ep.done:  # the same cheapest non-final call every turn
            ep.step(call("simulate", {"powers": [0.0] * n}, f"p{ep.turns}"))
        passive.append(ep.reward())
    assert_lazy(rnd, f"{difficulty}, random")
    assert all(r.total == 0.0 for r in passive)


@pytest.mark.parametrize("difficulty", DIFFS)
def test_generator_keeps_uniform_settings_and_blind_guesses_away(difficulty: str) -> None:
    preset = config(difficulty)
    for inst in lazy_instances(difficulty)[:10]:
        pub = public(inst)
        g, _ = response_matrices(get_model(spec_from_public(pub)))
        rise = [m.target_c - pub.plate.ambient_c for m in pub.monitors]
        _, excess = uniform_baseline(g, rise, pub.tolerance_k, pub.max_power_w)
        assert excess >= preset.lazy_gap * pub.tolerance_k
        assert excess == pytest.approx(hidden(inst).uniform_baseline_excess_k, abs=1e-3)
        lucky = lucky_hit_rate(g, rise, pub.tolerance_k, pub.max_power_w)
        assert lucky <= preset.max_lucky_hit


# -- expert ------------------------------------------------------------------------------


def test_response_is_read_off_unit_probes() -> None:
    # Superposition: a heater alone at 1 W reports its rise per watt everywhere, and the
    # rises of several heaters add up.
    inst = TASK.instance(3, "hard")
    w = ThermalWorld(inst)
    n = len(public(inst).heaters)
    g, h = response_matrices(get_model(spec_from_public(public(inst))))
    powers = [2.0, 0.0, 5.0, 0.0, 1.5]
    together = w.execute("simulate", {"powers": powers}).data
    total = np.zeros(len(public(inst).monitors))
    for j in range(n):
        unit = [0.0] * n
        unit[j] = 1.0
        rep = w.execute("simulate", {"powers": unit}).data
        rises = [mo["rise_k"] for mo in rep["monitors"]]
        assert rises == pytest.approx(g[:, j], abs=5e-4)  # printed to 1 mK (v6)
        assert [x["rise_k"] for x in rep["heaters"]] == pytest.approx(h[:, j], abs=5e-4)
        total += powers[j] * np.asarray(rises)
    # Each probe's rounding (0.5 mK) scales with its heater's power.
    assert [mo["rise_k"] for mo in together["monitors"]] == pytest.approx(total, abs=5e-3)


def test_probe_heaters_reports_the_unit_probes_per_watt() -> None:
    # One call, one simulation per heater: the rows are exactly the rises a 1 W simulate of
    # each heater reports, per monitor and per heater, and the text prints every number.
    inst = TASK.instance(3, "hard")
    pub = public(inst)
    n, m = len(pub.heaters), len(pub.monitors)
    ep = episode_for(inst)
    reply = step_call(ep, "probe_heaters", {})
    assert reply.outcome is not None and not reply.outcome.is_error
    probe = reply.outcome.data
    assert world(ep).simulations == n and probe["simulations_left"] == pub.max_simulations - n
    assert len(probe["monitors"]) == m and len(probe["heaters"]) == n
    w = ThermalWorld(inst)
    for j in range(n):
        rep = w.execute("simulate", {"powers": [1.0 if i == j else 0.0 for i in range(n)]}).data
        assert [row[j] for row in probe["monitors"]] == [mo["rise_k"] for mo in rep["monitors"]]
        assert [row[j] for row in probe["heaters"]] == [h["rise_k"] for h in rep["heaters"]]
    text = reply.text
    lines = text.splitlines()[1:]
    assert [line.split(":")[0] for line in lines] == [
        *(x.id for x in pub.monitors),
        *(x.id for x in pub.heaters),
    ]
    for line, row in zip(lines, [*probe["monitors"], *probe["heaters"]], strict=True):
        assert [float(v) for v in line.split(":")[1].split(",")] == row
    # The best simulation so far is a probe now (what a nudge reports).
    assert world(ep).best_report is not None


def test_probe_heaters_below_one_watt_reports_per_watt() -> None:
    # A plate whose maximum power is under 1 W is probed at that maximum; the rows are
    # still per watt (superposition), so they solve the same system.
    base = TASK.instance(0, "easy")
    small = base.model_copy(update={"public": {**base.public, "max_power_w": 0.5}})
    full = ThermalWorld(base).execute("probe_heaters", {}).data
    half = ThermalWorld(small).execute("probe_heaters", {}).data
    assert full["probe_w"] == 1.0 and half["probe_w"] == 0.5
    for part in ("monitors", "heaters"):
        assert np.asarray(half[part]) == pytest.approx(np.asarray(full[part]), abs=1.1e-3)


def test_probe_heaters_needs_a_simulation_per_heater() -> None:
    inst = TASK.instance(1, "medium")
    pub = public(inst)
    n = len(pub.heaters)
    ep = episode_for(inst)
    for i in range(pub.max_simulations - n + 1):
        step_call(ep, "simulate", {"powers": [1.0] * n}, f"s{i}")
    reply = step_call(ep, "probe_heaters", {}, "p")
    assert reply.outcome is not None and reply.outcome.is_error
    assert f"needs {n} simulations" in reply.text and "simulate single heaters" in reply.text
    assert world(ep).simulations == pub.max_simulations - n + 1 and not ep.done


# -- the computation tools ---------------------------------------------------------------


def test_computation_tools_are_offered_and_cost_no_simulation() -> None:
    inst = TASK.instance(0, "easy")
    names = set(ThermalWorld.tool_specs())
    assert names == {
        "simulate",
        "probe_heaters",
        "submit_powers",
        "calculate",
        "solve_linear",
        "minimize_max",
    }
    ep = episode_for(inst)
    r1 = step_call(ep, "calculate", {"expression": "(63.3 - 20) * 2"})
    r2 = step_call(ep, "solve_linear", {"a": [[2.0, 0.0], [0.0, 4.0]], "b": [1.0, 2.0]}, "c2")
    assert r1.outcome is not None and r1.outcome.data == {"value": pytest.approx(86.6)}
    assert r2.outcome is not None and r2.outcome.data["x"] == pytest.approx([0.5, 0.5])
    assert world(ep).simulations == 0 and not ep.done


def test_minimize_max_solves_the_linear_program() -> None:
    # x1 + x2 = 10 (within 0.5); minimise max(x1, 3 x2): the optimum is x1 = 3 x2 on the
    # lower edge of the band, x = (7.125, 2.375).
    out = minimize_max([[1.0, 0.0], [0.0, 3.0]], [[1.0, 1.0]], [10.0], 0.5, 100.0)
    assert out["x"] == pytest.approx([7.125, 2.375])
    assert out["max_value"] == pytest.approx(7.125)
    assert out["a_x_minus_b"] == pytest.approx([-0.5])
    # The upper bound binds: x1 <= 7 forces x2 up to 2.5.
    capped = minimize_max([[1.0, 0.0], [0.0, 3.0]], [[1.0, 1.0]], [10.0], 0.5, 7.0)
    assert capped["x"] == pytest.approx([7.0, 2.5]) and capped["max_value"] == pytest.approx(7.5)
    # Equality (tolerance 0) and x rounded to 4 significant digits.
    exact = minimize_max([[1.0, 1.0]], [[3.0, 1.0], [1.0, 2.0]], [1.0, 1.0], 0.0, 1.0)
    assert exact["x"] == [0.2, 0.4]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            {"c": [[1.0]], "a": [[1.0, 1.0]], "b": [1.0], "tolerance": 0, "upper": 5},
            "every row of c",
        ),
        (
            {
                "c": [[1.0, 1.0]],
                "a": [[1.0, 1.0], [1.0]],
                "b": [1.0, 1.0],
                "tolerance": 0,
                "upper": 5,
            },
            "every row of a",
        ),
        (
            {"c": [[1.0, 1.0]], "a": [[1.0, 1.0]], "b": [1.0, 2.0], "tolerance": 0, "upper": 5},
            "b has 2 entries",
        ),
        (
            {"c": [[1.0, 1.0]], "a": [[1.0, 1.0]], "b": [100.0], "tolerance": 0.1, "upper": 5},
            "no x in [0, 5]",
        ),
        (
            {"c": [[1.0, 1.0]], "a": [[1.0, 1.0]], "b": [1.0], "tolerance": -1, "upper": 5},
            "greater than or equal to 0",
        ),
        (
            {"c": [[1.0, 1.0]], "a": [[1.0, 1.0]], "b": [1.0], "tolerance": 0, "upper": 0},
            "greater than 0",
        ),
        ({"c": [], "a": [[1.0]], "b": [1.0], "tolerance": 0, "upper": 5}, "at least 1"),
        ({"a": [[1.0]], "b": [1.0], "tolerance": 0, "upper": 5}, "c"),
        ('{"c": [[1.0]], "a": [[NaN]], "b": [1.0], "tolerance": 0, "upper": 5}', "finite"),
        ('{"c": [[1.0]], "a": [[1.0]], "b": [1.0], "tolerance": 1e999, "upper": 5}', "finite"),
        ('{"c": [[1.0]], "a": [[1.0]], "b": [1.0], "tolerance": 0, "upper": Infinity}', "finite"),
    ],
)
def test_minimize_max_errors_are_messages(args: Any, needle: str) -> None:
    inst = TASK.instance(0, "easy")
    ep = episode_for(inst)
    reply = step_call(ep, "minimize_max", args)
    assert reply.outcome is not None and reply.outcome.is_error, reply.text
    assert needle in reply.text, reply.text
    assert not ep.done and world(ep).simulations == 0


# -- expert ------------------------------------------------------------------------------


@pytest.mark.parametrize("difficulty", DIFFS)
def test_expert_solves(difficulty: str) -> None:
    for seed in range(3):
        inst = TASK.instance(seed, difficulty)
        ep = run_expert(inst)
        rew = ep.reward()
        assert ep.end_reason == "answered" and rew.success and rew.total >= TASK.solved_threshold
        n = len(public(inst).heaters)
        assert world(ep).simulations == n + 1
        assert all(not r.is_error for r in ep.tool_calls)
        # The 1 W probes in one call, one computation, one check, the answer: four turns.
        solver = "solve_linear" if n <= len(public(inst).monitors) else "minimize_max"
        names = ["probe_heaters", solver, "simulate", "submit_powers"]
        assert [r.name for r in ep.tool_calls] == names and ep.turns == 4
        # The solve's matrix is the probe's rows, copied.
        assert ep.tool_calls[1].arguments["a"] == ep.tool_calls[0].data["monitors"]
        # It submits what the tool computed, not the reference solution.
        final = ep.tool_calls[-1].arguments["powers"]
        assert final == pytest.approx(ep.tool_calls[-2].arguments["powers"], abs=1e-6)
        assert final == pytest.approx(ep.tool_calls[1].data["x"])
        assert final != list(hidden(inst).solution)


def test_hard_needs_the_linear_program() -> None:
    # With more heaters than monitors, the least-squares (minimum-norm) powers overheat some
    # plates that minimize_max keeps safe.
    unsafe = 0
    for seed in range(12):
        inst = TASK.instance(seed, "hard")
        pub = public(inst)
        g, _ = response_matrices(get_model(spec_from_public(pub)))
        rise = np.array([m.target_c for m in pub.monitors]) - pub.plate.ambient_c
        p = np.linalg.lstsq(g, rise, rcond=None)[0]
        ep = episode_for(inst)
        rep = step_call(ep, "simulate", {"powers": np.clip(p, 0, pub.max_power_w).tolist()})
        unsafe += rep.outcome is not None and not rep.outcome.data["safe"]
        assert run_expert(inst).reward().success
    assert unsafe >= 2


@pytest.mark.parametrize("difficulty", DIFFS)
def test_expert_is_imitable(difficulty: str) -> None:
    # Every number in every expert action was visible before it was sent: the probes are
    # 1 W, the matrices are copied rises, the powers are copied tool results.
    for seed in range(3):
        ep = run_expert(TASK.instance(seed, difficulty))
        assert list(unsourced_numbers(ep.messages, ep.tools)) == []


def test_imitability_check_passes() -> None:
    assert TASK.imitable
    report = imitability_check(TASK, seeds=2)
    assert report.actions >= 2 * 3 * 3 and not report.flagged, report.summary()


@pytest.mark.parametrize("difficulty", DIFFS)
def test_expert_robust_to_noise(difficulty: str) -> None:
    for seed in range(3):
        ep = run_expert(TASK.instance(seed, difficulty), noise=0.4, seed=seed)
        assert ep.end_reason == "answered" and ep.reward().success


def test_expert_reuses_foreign_unit_probes_and_ignores_other_calls() -> None:
    # A noisy agent's 1 W probes of every heater count (no probe_heaters call); its other
    # simulations and computations do not disturb the expert.
    inst = TASK.instance(1, "medium")
    ep = episode_for(inst)
    ep.step(call("simulate", {"powers": [3.0, 4.0, 5.0]}, "x1"))
    for j in range(3):
        ep.step(call("simulate", {"powers": [1.0 if i == j else 0.0 for i in range(3)]}, f"u{j}"))
    ep.step(call("solve_linear", {"a": [[1.0, 2.0]], "b": [7.0]}, "x3"))
    expert = TASK.expert(inst)
    while not ep.done:
        ep.step(expert.next_turn(list(ep.messages)))
    assert ep.reward().success
    assert [r.name for r in ep.tool_calls[5:]] == ["solve_linear", "simulate", "submit_powers"]
    assert world(ep).simulations == 1 + 3 + 1
    assert list(unsourced_numbers(ep.messages, ep.tools)) == []


def test_expert_probes_every_heater_when_some_are_missing() -> None:
    inst = TASK.instance(1, "medium")
    ep = episode_for(inst)
    ep.step(call("simulate", {"powers": [0.0, 1.0, 0.0]}, "x2"))
    expert = TASK.expert(inst)
    while not ep.done:
        ep.step(expert.next_turn(list(ep.messages)))
    assert ep.reward().success
    assert [r.name for r in ep.tool_calls[1:]][:2] == ["probe_heaters", "solve_linear"]
    assert list(unsourced_numbers(ep.messages, ep.tools)) == []


def test_expert_corrects_a_miss_with_a_newton_step(monkeypatch: pytest.MonkeyPatch) -> None:
    # Aim the first solve 1 K too high: the check misses, and the expert solves again with
    # each target lowered by its monitor's error, which lands within tolerance.
    real = ThermalExpert._target_rises
    monkeypatch.setattr(ThermalExpert, "_target_rises", lambda self: [t + 1.0 for t in real(self)])
    for difficulty in ("easy", "hard"):
        inst = TASK.instance(0, difficulty)
        ep = run_expert(inst)
        names = [r.name for r in ep.tool_calls]
        solver = names[1]
        assert names[1:] == [solver, "simulate", solver, "simulate", "submit_powers"]
        missed = ep.tool_calls[2].data
        assert missed["targets_hit"] < missed["targets_total"]
        first, second = ep.tool_calls[1].arguments["b"], ep.tool_calls[3].arguments["b"]
        errors = [mo["error_k"] for mo in missed["monitors"]]
        assert second == pytest.approx([b - e for b, e in zip(first, errors, strict=True)])
        assert ep.reward().success


def test_expert_probes_single_heaters_when_the_budget_is_short() -> None:
    # A noisy agent left fewer simulations than heaters: probe_heaters would fail, so the
    # expert probes the missing heaters one simulate call at a time.
    inst = TASK.instance(1, "medium")
    pub = public(inst)
    n = len(pub.heaters)
    ep = episode_for(inst)
    for i in range(pub.max_simulations - n):
        ep.step(call("simulate", {"powers": [2.0] * n}, f"s{i}"))
    ep.step(call("simulate", {"powers": [0.0, 1.0, 0.0]}, "u1"))  # n - 1 left
    expert = TASK.expert(inst)
    while not ep.done:
        ep.step(expert.next_turn(list(ep.messages)))
    mine = ep.tool_calls[pub.max_simulations - n + 1 :]
    assert [r.name for r in mine[:3]] == ["simulate", "simulate", "solve_linear"]
    assert [r.arguments["powers"] for r in mine[:2]] == [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    assert "probe_heaters" not in [r.name for r in mine] and not any(r.is_error for r in mine[:3])
    # The budget is spent before a check: the expert submits the solved powers unchecked.
    assert ep.end_reason == "answered" and ep.tool_calls[-1].name == "submit_powers"
    solved = [min(max(p, 0.0), pub.max_power_w) for p in ep.tool_calls[-2].data["x"]]
    assert ep.tool_calls[-1].arguments["powers"] == solved
    assert ep.reward().success


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_a_simulation_per_heater_is_enough_for_the_expert(difficulty: str) -> None:
    # max_simulations == n_heaters: probe each heater once, solve, submit without a check.
    n = ThermalConfig.model_validate(TASK.difficulties[difficulty]).n_heaters
    for seed in range(2):
        ep = run_expert(TASK.instance(seed, difficulty, max_simulations=n))
        assert ep.reward().success, ep.reward().explanation
        assert sum(c.name == "simulate" for c in ep.tool_calls) == 0


def test_knobs_that_leave_a_plate_unsolvable_are_rejected() -> None:
    # One heater is a uniform setting, one monitor is hit by a uniform setting: the
    # generator could never draw them, so the config says so at once.
    for knobs in ({"n_heaters": 1}, {"n_monitors": 1}):
        with pytest.raises(TaskConfigError, match="greater than or equal to 2"):
            TASK.make_config("easy", **knobs)
    with pytest.raises(TaskConfigError, match=r"cannot measure 5 heaters.*>= 5"):
        TASK.make_config("hard", max_simulations=4)
    assert TASK.make_config("hard", max_simulations=5)


def test_expert_falls_back_to_the_linear_program_then_its_best(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Unreachable targets: solve_linear's powers exceed the maximum, so the expert asks the
    # linear program, which finds nothing feasible; with no simulation of its own to fall
    # back on it submits the direct solve's powers clipped to the range.
    monkeypatch.setattr(ThermalExpert, "_target_rises", lambda self: [500.0] * self.m)
    inst = TASK.instance(0, "medium")
    ep = run_expert(inst)
    p_max = public(inst).max_power_w
    assert [r.name for r in ep.tool_calls] == [
        "probe_heaters",
        "solve_linear",
        "minimize_max",
        "submit_powers",
    ]
    assert ep.tool_calls[2].is_error and "no x in" in ep.tool_calls[2].result
    assert ep.end_reason == "answered" and not ep.reward().success
    x = ep.tool_calls[1].data["x"]
    submitted = ep.tool_calls[-1].arguments["powers"]
    assert submitted == [min(max(v, 0.0), p_max) for v in x]
    assert list(unsourced_numbers(ep.messages, ep.tools)) == []


def test_expert_reads_results_as_data_not_text() -> None:
    # With every tool message's text blanked, the expert decides from the outcomes alone.
    inst = TASK.instance(2, "medium")
    ep = episode_for(inst)
    expert = TASK.expert(inst)
    while not ep.done:
        blank = [
            m.model_copy(update={"content": ""}) if m.role == "tool" else m for m in ep.messages
        ]
        ep.step(expert.next_turn(blank))
    assert ep.reward().success
    assert world(ep).simulations == len(public(inst).heaters) + 1
