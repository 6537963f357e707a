"""Edge cases of the battery task: generator, tools, reward and expert (real PyBaMM runs)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from agentharness.agents.scripted import NothingAgent, RandomAgent
from agentharness.core.episode import Episode
from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, ToolOutcome, assistant, tool_message
from agentharness.core.registry import episode_for, get_task
from agentharness.core.task import TaskConfigError
from agentharness.imitability import imitability_check, unsourced_numbers
from agentharness.tasks.battery import simulator as sim
from agentharness.tasks.battery.config import BatteryConfig
from agentharness.tasks.battery.expert import BatteryExpert
from agentharness.tasks.battery.generator import iso_temperature
from agentharness.tasks.battery.problem import Hidden, Public
from agentharness.tasks.battery.reward import FREE_SIMULATIONS, WEIGHTS
from agentharness.tasks.battery.tools import BatteryWorld, run_design
from agentharness.testing.tasks import call, episode, run_expert, scores, step_call

SPEC = get_task("battery")
DIFFS = ("easy", "medium", "hard")


def _episode(difficulty: str = "easy", seed: int = 0, **knobs: Any) -> Episode:
    return episode("battery", seed, difficulty, **knobs)


def public(inst: Instance) -> Public:
    return inst.public_as(Public)


def hidden(inst: Instance) -> Hidden:
    return inst.hidden_as(Hidden)


def world(ep: Episode) -> BatteryWorld:
    w = ep.world
    assert isinstance(w, BatteryWorld)
    return w


def config(difficulty: str) -> BatteryConfig:
    c = SPEC.make_config(difficulty)
    assert isinstance(c, BatteryConfig)
    return c


def data(msg: Message) -> Any:
    """The structured result of a tool message (its text says the same)."""
    assert msg.outcome is not None
    return msg.outcome.data


def _solution_args(inst: Instance) -> dict[str, Any]:
    sol = hidden(inst).solution
    args: dict[str, Any] = {"thickness_um": sol.thickness_um, "porosity": sol.porosity}
    if sol.heat_transfer_coefficient is not None:
        args["heat_transfer_coefficient"] = sol.heat_transfer_coefficient
    return args


# ---- simulator -------------------------------------------------------------------------------
def test_mass_model_matches_the_reference_cell() -> None:
    mass = sim.cell_mass(sim.REF_THICKNESS_UM, sim.REF_POROSITY)
    assert 60.0 < mass.total < 75.0  # a real LG M50 weighs about 69 g
    assert mass.cooling == 0.0
    assert math.isclose(sim.negative_thickness_um(75.6, 0.335), 85.2)
    heavier = sim.cell_mass(100.0, 0.335)
    assert heavier.positive_electrode > mass.positive_electrode
    assert heavier.negative_electrode > mass.negative_electrode  # N/P balance kept
    assert sim.cell_mass(75.6, 0.335, cooling_h_extra=20.0).cooling == pytest.approx(
        20.0 * sim.COOLING_G_PER_H
    )


def test_reference_cell_simulates_realistically() -> None:
    r = sim.simulate(sim.CellDesign(75.6, 0.335, 0.5, 10.0, 25.0))
    assert r.end_reason == sim.END_CUTOFF
    assert 4.5 < r.capacity_ah < 5.2
    assert 240.0 < r.specific_energy_wh_kg < 290.0
    assert 25.0 < r.peak_temperature_c < 40.0


def test_trade_off_thicker_stores_more_but_runs_hotter() -> None:
    thin = sim.simulate(sim.CellDesign(50.0, 0.4, 1.0, 10.0, 25.0))
    thick = sim.simulate(sim.CellDesign(90.0, 0.4, 1.0, 10.0, 25.0))
    assert thick.specific_energy_wh_kg > thin.specific_energy_wh_kg
    assert thick.peak_temperature_c > thin.peak_temperature_c


def test_transport_limited_design_ends_by_depletion() -> None:
    r = sim.simulate(sim.CellDesign(140.0, 0.2, 2.0, 10.0, 25.0))
    assert r.end_reason == sim.END_DEPLETION
    assert r.utilization < 0.5


@pytest.mark.parametrize(
    "design",
    [
        sim.CellDesign(float("nan"), 0.3, 1.0, 10.0, 25.0),
        sim.CellDesign(80.0, float("inf"), 1.0, 10.0, 25.0),
        sim.CellDesign(10.0, 0.3, 1.0, 10.0, 25.0),
        sim.CellDesign(80.0, 0.9, 1.0, 10.0, 25.0),
        sim.CellDesign(80.0, 0.3, 50.0, 10.0, 25.0),
    ],
)
def test_simulator_rejects_bad_designs(design: sim.CellDesign) -> None:
    with pytest.raises(sim.DesignError):
        sim.simulate(design)


# ---- generator -------------------------------------------------------------------------------
@pytest.mark.parametrize("difficulty", DIFFS)
def test_generator_is_deterministic(difficulty: str) -> None:
    a, b = SPEC.instance(5, difficulty), SPEC.instance(5, difficulty)
    assert a == b
    assert [m.model_dump() for m in SPEC.generator.prompt(a)] == [
        m.model_dump() for m in SPEC.generator.prompt(b)
    ]
    assert SPEC.instance(6, difficulty) != a


@pytest.mark.parametrize("difficulty", DIFFS)
def test_typed_views_are_exactly_the_stored_data(difficulty: str) -> None:
    inst = SPEC.instance(0, difficulty)
    # Same values and the same key order: the generator stores these models' dumps.
    assert json.dumps(public(inst).dump()) == json.dumps(inst.public)
    assert json.dumps(hidden(inst).model_dump(mode="json")) == json.dumps(inst.hidden)
    assert ("cooling_options_w_m2k" in inst.public) == (difficulty == "hard")


@pytest.mark.parametrize("difficulty", DIFFS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hidden_solution_is_feasible(difficulty: str, seed: int) -> None:
    inst = SPEC.instance(seed, difficulty)
    sol = hidden(inst).solution
    r, v = run_design(inst, sol.thickness_um, sol.porosity, sol.heat_transfer_coefficient)
    assert v.feasible
    frac = config(difficulty).temperature_margin
    rise = r.peak_temperature_c - public(inst).ambient_c
    assert v.energy_margin >= 0.0 and v.thermal_margin >= frac * rise - 1e-6
    assert v.thermal_margin <= frac * rise + 0.011  # the limit is rounded up to 0.01 K only
    assert rise >= 4.0  # the temperature limit matters
    if difficulty == "hard":
        assert public(inst).choose_cooling and sol.heat_transfer_coefficient is not None


@pytest.mark.parametrize("difficulty", ["easy", "hard"])
def test_feasible_band_is_a_thin_sliver_under_the_limit(difficulty: str) -> None:
    """A few percent thinner misses the energy; a few percent thicker runs too hot."""
    for seed in (0, 1):
        inst = SPEC.instance(seed, difficulty)
        sol = hidden(inst).solution
        t, eps, h = sol.thickness_um, sol.porosity, sol.heat_transfer_coefficient
        _, thin = run_design(inst, round(t * 0.97, 1), eps, h)
        _, thick = run_design(inst, round(t * 1.03, 1), eps, h)
        assert not thin.energy_ok and thin.thermal_ok
        assert not thick.thermal_ok


def test_hidden_design_is_about_the_best_at_its_temperature() -> None:
    """At the limit, other porosities do not beat the target by more than a sliver."""
    from agentharness.tasks.battery.generator import Conditions

    inst = SPEC.instance(2, "medium")
    pub = public(inst)
    cond = Conditions(pub.c_rate, pub.ambient_c, pub.heat_transfer_w_m2k, None, 0.9)
    limit, target = pub.peak_temperature_limit_c, pub.specific_energy_target_wh_kg
    best = []
    for eps in (0.2, 0.26, 0.34, 0.42):
        sol_t = hidden(inst).solution.thickness_um
        pts = iso_temperature(cond, eps, limit - 0.05, sol_t * (1 - 0.3) / (1 - eps))
        best += [p.specific_energy for p in pts if p.peak <= limit]
    assert best and max(best) <= target * 1.004


def test_difficulty_narrows_the_band() -> None:
    fracs = [config(d).temperature_margin for d in DIFFS]
    assert fracs[0] > fracs[1] > fracs[2]
    for seed in (0, 1):
        bands = []
        for d in DIFFS:
            inst = SPEC.instance(seed, d)
            peak = hidden(inst).solution_peak_temperature_c
            pub = public(inst)
            bands.append((pub.peak_temperature_limit_c - peak) / (peak - pub.ambient_c))
        assert bands[0] > bands[1] > bands[2]


def test_prompt_states_targets_and_answer_format() -> None:
    inst = SPEC.instance(0, "hard")
    text = "\n".join(m.text for m in SPEC.generator.prompt(inst))
    pub = public(inst)
    assert f"{pub.specific_energy_target_wh_kg:g} Wh/kg" in text
    assert f"{pub.peak_temperature_limit_c:g} °C" in text
    assert "submit_design(thickness_um=..., porosity=..., heat_transfer_coefficient=...)" in text
    assert "solution" not in inst.public


def test_knobs_override_and_are_validated() -> None:
    inst = SPEC.instance(0, "easy", c_rate=(2.0, 2.0), energy_margin=0.1)
    assert public(inst).c_rate == 2.0
    with pytest.raises(TaskConfigError):
        SPEC.instance(0, "easy", thickness_um=(10.0, 50.0))
    with pytest.raises(TaskConfigError):
        SPEC.instance(0, "easy", no_such_knob=1)


# ---- tools -----------------------------------------------------------------------------------
def test_simulate_reports_margins_and_directions() -> None:
    ep = _episode("easy", 0)
    hot = data(step_call(ep, "simulate_cell", {"thickness_um": 140, "porosity": 0.5}))
    assert hot["constraints"]["peak_temperature"]["satisfied"] is False
    assert hot["constraints"]["peak_temperature"]["margin_k"] < 0
    assert "EXCEEDS" in hot["feedback"] and "thinner" in hot["feedback"]
    lean = data(step_call(ep, "simulate_cell", {"thickness_um": 35, "porosity": 0.55}))
    assert lean["constraints"]["specific_energy"]["satisfied"] is False
    assert "BELOW" in lean["feedback"] and "thicker" in lean["feedback"]
    dense = data(step_call(ep, "simulate_cell", {"thickness_um": 150, "porosity": 0.15}))
    assert "transport-limited" in dense["feedback"]
    assert dense["simulations_used"] == 3
    assert world(ep).simulations == 3 and not ep.done


def test_tool_results_carry_the_report_as_data() -> None:
    ep = _episode("easy", 0)
    msg = step_call(ep, "simulate_cell", {"thickness_um": 60, "porosity": 0.4})
    assert msg.outcome is not None and not msg.outcome.is_error
    # The text is the report as JSON, byte for byte; the data is the same report.
    assert msg.text == json.dumps(msg.outcome.data, ensure_ascii=False)
    assert json.loads(msg.text) == msg.outcome.data
    assert msg.outcome.data["design"] == {
        "thickness_um": 60.0,
        "porosity": 0.4,
        "heat_transfer_coefficient_w_m2k": public(ep.instance).heat_transfer_w_m2k,
    }
    sub = step_call(ep, "submit_design", {"thickness_um": 60, "porosity": 0.4}, "c2")
    assert ep.done and sub.outcome is not None and not sub.outcome.is_error
    assert sub.text.startswith("Submitted thickness 60 um, porosity 0.4")
    assert sub.outcome.data["feasible"] is False
    assert sub.outcome.data["results"] == msg.outcome.data["results"]
    bad = step_call(_episode("easy", 0), "simulate_cell", {"thickness_um": 80})
    assert bad.outcome is not None and bad.outcome.is_error


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"thickness_um": 80},
        {"thickness_um": "thick", "porosity": 0.3},
        {"thickness_um": 80, "porosity": 0.3, "colour": "red"},
        {"thickness_um": 500, "porosity": 0.3},
        {"thickness_um": 80, "porosity": -0.1},
        {"thickness_um": float("nan"), "porosity": 0.3},
        {"thickness_um": 80, "porosity": float("inf")},
        {"thickness_um": [80] * 1000, "porosity": 0.3},
        '{"thickness_um": NaN, "porosity": 0.3}',
        "not json",
    ],
)
def test_bad_arguments_are_errors_and_the_episode_continues(args: Any) -> None:
    ep = _episode("easy", 0)
    for name in ("simulate_cell", "submit_design"):
        result = ep.world.execute(name, args)
        assert result.is_error and result.text.startswith("Error:")
        # Through the episode: an error message (a tool error, or a format error for
        # arguments that are not JSON), never a crash.
        msg = ep.step(call(name, args)).messages[0]
        assert "rror" in msg.text
        assert msg.role != "tool" or (msg.outcome is not None and msg.outcome.is_error)
        assert not ep.done
    assert world(ep).simulations == 0
    assert ep.world.final_answer is None


def _is_error(msg: Message) -> bool:
    return msg.outcome is not None and msg.outcome.is_error


def test_cooling_argument_rules() -> None:
    easy = _episode("easy", 0)
    h = public(easy.instance).heat_transfer_w_m2k
    msg = step_call(
        easy,
        "simulate_cell",
        {"thickness_um": 60, "porosity": 0.4, "heat_transfer_coefficient": h + 20},
    )
    assert "fixed" in msg.text and _is_error(msg)
    ok = step_call(
        easy, "simulate_cell", {"thickness_um": 60, "porosity": 0.4, "heat_transfer_coefficient": h}
    )
    assert not _is_error(ok)

    hard = _episode("hard", 0)
    pub = public(hard.instance)
    offered = list(pub.cooling_options_w_m2k or ())
    assert len(offered) == 3 and hidden(hard.instance).solution.heat_transfer_coefficient in [
        pub.heat_transfer_w_m2k,
        *offered,
    ]
    top = max(offered)
    for off_menu in (top + 10, (offered[0] + offered[1]) / 2, 0.5, 200.0):
        msg = step_call(
            hard,
            "simulate_cell",
            {"thickness_um": 60, "porosity": 0.4, "heat_transfer_coefficient": off_menu},
        )
        assert _is_error(msg) and "not on offer" in msg.text
        assert f"{top:g}" in msg.text  # the error lists what is on offer
    cooled = data(
        step_call(
            hard,
            "simulate_cell",
            {"thickness_um": 60, "porosity": 0.4, "heat_transfer_coefficient": top},
        )
    )
    natural = data(step_call(hard, "simulate_cell", {"thickness_um": 60, "porosity": 0.4}))
    assert cooled["results"]["mass_breakdown_g"]["cooling"] > 0
    assert natural["results"]["mass_breakdown_g"]["cooling"] == 0
    assert cooled["results"]["peak_temperature_c"] < natural["results"]["peak_temperature_c"]


def test_solver_failure_is_a_tool_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentharness.tasks.battery.tools as tools

    def boom(*a: Any, **k: Any) -> Any:
        raise sim.SimulationError("PyBaMM did not converge (SolverError: test)")

    monkeypatch.setattr(tools, "simulate", boom)
    ep = _episode("easy", 0)
    msg = step_call(ep, "simulate_cell", {"thickness_um": 80, "porosity": 0.3})
    assert _is_error(msg) and "did not converge" in msg.text
    msg = step_call(ep, "submit_design", {"thickness_um": 80, "porosity": 0.3}, "c2")
    assert _is_error(msg) and not ep.done
    assert ep.world.final_answer is None


def test_simulation_budget_is_enforced() -> None:
    ep = _episode("easy", 0, max_simulations=2)
    for i in range(2):
        msg = step_call(ep, "simulate_cell", {"thickness_um": 60 + i, "porosity": 0.4}, f"c{i}")
        assert not _is_error(msg)
    msg = step_call(ep, "simulate_cell", {"thickness_um": 70, "porosity": 0.4}, "c9")
    assert _is_error(msg) and "budget" in msg.text
    assert not ep.done


# ---- interaction -------------------------------------------------------------------------------
def test_nudges_carry_the_search_state() -> None:
    ep = _episode("easy", 0)
    first = ep.step("Let me think.").messages[0].text
    assert "simulate_cell" in first and "Wh/kg" in first
    step_call(ep, "simulate_cell", {"thickness_um": 60, "porosity": 0.4})
    second = ep.step("Hmm.").messages[0].text
    assert "best design so far: 60 um" in second
    ep.step("Still thinking.")
    assert ep.done and ep.end_reason == "no_answer"
    assert ep.reward().total == 0.0


# ---- reward ------------------------------------------------------------------------------------
def _submit(inst: Instance, args: dict[str, Any], sims: int = 0) -> Any:
    ep = episode_for(inst)
    world(ep).simulations = sims
    step_call(ep, "submit_design", args)
    if not ep.done:  # the submission was refused (e.g. cooling outside the allowed range)
        ep.finish("no_answer")
    return ep.reward()


def test_reward_full_for_the_hidden_design() -> None:
    inst = SPEC.instance(1, "medium")
    good = _submit(inst, _solution_args(inst))
    assert good.success and good.total == pytest.approx(1.0)
    assert good.component("feasible") == 1.0 and good.component("progress") == 1.0


def test_reward_zero_when_too_hot_even_with_the_energy_met() -> None:
    inst = SPEC.instance(1, "medium")
    sol = _solution_args(inst)
    for extra in (2.0, 4.0):  # thicker than the hidden design: more energy, too hot
        r = _submit(inst, {**sol, "thickness_um": sol["thickness_um"] + extra})
        _, v = run_design(inst, sol["thickness_um"] + extra, sol["porosity"], None)
        assert v.energy_ok and not v.thermal_ok
        assert r.total == 0.0 and not r.success and "too hot" in r.explanation


def test_reward_nothing_for_a_cool_but_lean_design() -> None:
    inst = SPEC.instance(1, "medium")
    for t_um, eps in ((35, 0.55), (30, 0.15), (75.6, 0.335)):
        _, v = run_design(inst, t_um, eps, None)
        r = _submit(inst, {"thickness_um": t_um, "porosity": eps})
        if v.thermal_ok:
            short = -v.energy_margin / v.target_wh_kg
            assert short > public(inst).progress_window  # far outside the window
        assert r.total == 0.0 and not r.success


def test_reward_progress_within_the_window_only() -> None:
    """Slightly thinner than the hidden design: cool, a little short, partial credit."""
    inst = SPEC.instance(1, "medium")
    sol = _solution_args(inst)
    window = public(inst).progress_window
    totals = []
    for frac in (0.99, 0.97):
        t_um = round(sol["thickness_um"] * frac, 1)
        _, v = run_design(inst, t_um, sol["porosity"], None)
        r = _submit(inst, {**sol, "thickness_um": t_um})
        short = -v.energy_margin / v.target_wh_kg
        assert v.thermal_ok and not v.energy_ok and short < window
        expected = max(0.0, 1.0 - short / window)
        assert r.component("progress") == pytest.approx(expected)
        assert r.component("efficiency") == 0.0 and not r.success
        assert r.total == pytest.approx(WEIGHTS["progress"] * expected)
        totals.append(r.total)
    assert totals[0] > totals[1] > 0.0  # closer earns more, and never more than 0.25
    assert max(totals) <= WEIGHTS["progress"]
    assert episode_for(inst).reward().total == 0.0  # nothing submitted


def test_efficiency_falls_with_many_simulations_and_only_pays_a_solution() -> None:
    inst = SPEC.instance(2, "easy")
    sol = _solution_args(inst)
    few, many = _submit(inst, sol, FREE_SIMULATIONS), _submit(inst, sol, 25)
    assert few.component("efficiency") == 1.0
    assert many.component("efficiency") < 0.5
    assert few.total > many.total and many.success
    short = _submit(inst, {**sol, "thickness_um": round(sol["thickness_um"] * 0.99, 1)}, 0)
    assert not short.success and short.component("efficiency") == 0.0


def test_reward_re_simulates_rather_than_trusting_the_record() -> None:
    ep = _episode("easy", 0)
    step_call(ep, "submit_design", {"thickness_um": 35, "porosity": 0.55})
    ep.world.final_answer = {"thickness_um": 35, "porosity": 0.55, "feasible": True}
    assert not ep.reward().success


# ---- expert ------------------------------------------------------------------------------------
def _sims(ep: Episode) -> list[dict[str, Any]]:
    return [c.data for c in ep.tool_calls if c.name == "simulate_cell" and not c.is_error]


@pytest.mark.parametrize("difficulty", DIFFS)
def test_expert_solves_by_its_own_search(difficulty: str) -> None:
    for seed in range(3):
        inst = SPEC.instance(seed, difficulty)
        ep = run_expert(inst)
        r = ep.reward()
        assert ep.end_reason == "answered" and r.success and r.total >= SPEC.solved_threshold
        assert all(not c.is_error for c in ep.tool_calls)
        assert ep.turns <= SPEC.interaction.budgets.max_turns
        assert world(ep).simulations <= 20
        # It submits a design it simulated and saw feasible (there is no hidden fallback).
        submitted = ep.world.final_answer
        assert submitted is not None
        seen = [
            d["design"]
            for d in _sims(ep)
            if d["feasible"]
            and d["design"]["thickness_um"] == submitted["thickness_um"]
            and d["design"]["porosity"] == submitted["porosity"]
        ]
        assert seen


@pytest.mark.parametrize("difficulty", DIFFS)
def test_expert_is_imitable(difficulty: str) -> None:
    # Every number in every expert action was visible before it was sent: the reference
    # cell of the prompt, calculate and solve_linear results, midpoints of visible values.
    for seed in range(3):
        ep = run_expert(SPEC.instance(seed, difficulty))
        assert list(unsourced_numbers(ep.messages, ep.tools)) == []


def test_imitability_check_passes() -> None:
    assert SPEC.imitable
    report = imitability_check(SPEC, seeds=1)
    assert report.actions >= 6 and not report.flagged, report.summary()


@pytest.mark.parametrize("difficulty", DIFFS)
def test_expert_reads_nothing_hidden(difficulty: str) -> None:
    # With the hidden data removed the expert plays exactly the same game (the reward
    # re-simulates from the public data alone).
    inst = SPEC.instance(1, difficulty)
    blind = inst.model_copy(update={"hidden": {}})
    ep, ref = run_expert(blind), run_expert(inst)
    assert [(c.name, c.arguments) for c in ep.tool_calls] == [
        (c.name, c.arguments) for c in ref.tool_calls
    ]
    assert ep.reward().success


def test_expert_starts_at_the_reference_cell_and_computes_in_the_open() -> None:
    inst = SPEC.instance(8, "hard")  # a problem that needs the parabola over porosity
    ep = run_expert(inst)
    assert ep.reward().success
    first = ep.tool_calls[0]
    assert first.name == "simulate_cell"
    assert (first.arguments["thickness_um"], first.arguments["porosity"]) == (75.6, 0.335)
    names = [c.name for c in ep.tool_calls]
    assert "calculate" in names and "solve_linear" in names
    # The parabola through three (porosity, specific energy) points: rows [p^2, p, 1].
    fit = next(c for c in ep.tool_calls if c.name == "solve_linear")
    for row in fit.arguments["a"]:
        assert row[0] == pytest.approx(row[1] ** 2) and row[2] == 1.0
    # Every simulated thickness after the first came from a calculate result or is the
    # midpoint of two thicknesses seen before.
    results = [c.data["value"] for c in ep.tool_calls if c.name == "calculate"]
    seen: list[float] = [30.0, 150.0]
    for c in ep.tool_calls:
        if c.name != "simulate_cell":
            continue
        t = c.arguments["thickness_um"]
        assert (
            c is first or t in results or any(abs(2 * t - a - b) < 1e-6 for a in seen for b in seen)
        ), t
        seen.append(c.data["design"]["thickness_um"])


def test_expert_compares_the_cooling_systems_on_hard() -> None:
    inst = SPEC.instance(9, "hard")
    pub = public(inst)
    ep = run_expert(inst)
    assert ep.reward().success
    tried = {d["design"]["heat_transfer_coefficient_w_m2k"] for d in _sims(ep)}
    on_offer = {pub.heat_transfer_w_m2k, *(pub.cooling_options_w_m2k or ())}
    assert len(tried) >= 3 and tried <= on_offer


def test_computation_tools_are_offered_and_cost_no_simulation() -> None:
    assert {"calculate", "solve_linear"} <= set(BatteryWorld.tool_specs())
    ep = _episode("easy", 0)
    msg = step_call(ep, "calculate", {"expression": "floor(10 * 75.6 * 1.05) / 10"})
    assert data(msg) == {"value": 79.3}
    msg = step_call(ep, "solve_linear", {"a": [[1.0, 1.0], [1.0, -1.0]], "b": [3.0, 1.0]}, "c2")
    assert data(msg)["x"] == pytest.approx([2.0, 1.0])
    assert world(ep).simulations == 0 and not ep.done
    text = "\n".join(m.text for m in SPEC.generator.prompt(ep.instance))
    assert "calculate(expression)" in text and "solve_linear(a, b)" in text


def test_budgets_leave_room_for_a_search_in_the_open() -> None:
    budgets = SPEC.interaction.budgets
    assert budgets.max_turns == 60 and budgets.max_tool_calls == 80


def test_expert_ignores_foreign_calls_and_takes_foreign_successes() -> None:
    inst = SPEC.instance(2, "medium")
    ep = episode_for(inst)
    expert = BatteryExpert(inst)
    # Foreign calls (an infeasible probe, a computation) do not disturb the search: it
    # starts from the reference cell as it would have.
    step_call(ep, "simulate_cell", {"thickness_um": 35, "porosity": 0.55}, "rnd_1")
    step_call(ep, "calculate", {"expression": "1 + 1"}, "rnd_2")
    turn = expert.next_turn(ep.messages)
    assert turn.tool_calls and turn.tool_calls[0].function.name == "simulate_cell"
    assert json.loads(turn.tool_calls[0].function.arguments) == {
        "thickness_um": 75.6,
        "porosity": 0.335,
    }
    ep.step(turn)
    step_call(ep, "simulate_cell", {"thickness_um": 60, "porosity": 0.4}, "rnd_3")
    while not ep.done:
        ep.step(expert.next_turn(ep.messages))
    assert ep.reward().success
    assert list(unsourced_numbers(ep.messages, ep.tools)) == []
    # A foreign feasible report is submitted straight away.
    ep = episode_for(inst)
    expert = BatteryExpert(inst)
    feasible_report = data(step_call(ep, "simulate_cell", _solution_args(inst), "rnd_4"))
    assert feasible_report["feasible"]
    turn = expert.next_turn(ep.messages)
    assert turn.tool_calls and turn.tool_calls[0].function.name == "submit_design"
    # Error messages in the history are skipped.
    msgs = [*ep.messages, assistant(tool_calls=[ToolCall.make("x", "simulate_cell", "{}")])]
    msgs.append(tool_message("x", "simulate_cell", "Error: bad", ToolOutcome(is_error=True)))
    assert expert.next_turn(msgs).tool_calls


def test_expert_submits_its_best_design_when_the_budget_runs_low() -> None:
    # With only 4 simulations the search cannot finish: it submits the design within the
    # limit with the most specific energy it saw.
    ep = episode("battery", 4, "easy", max_simulations=4)
    expert = SPEC.expert(ep.instance)
    while not ep.done:
        ep.step(expert.next_turn(ep.messages))
    assert ep.end_reason == "answered"
    cool = [d for d in _sims(ep) if d["constraints"]["peak_temperature"]["satisfied"]]
    best = max(cool, key=lambda d: d["results"]["specific_energy_wh_kg"])
    assert ep.world.final_answer is not None
    assert ep.world.final_answer["thickness_um"] == best["design"]["thickness_um"]
    assert world(ep).simulations <= 4


def test_expert_reads_results_as_data_not_text() -> None:
    # With every tool message's text blanked, the expert decides from the outcomes alone.
    inst = SPEC.instance(0, "easy")
    ep = episode_for(inst)
    expert = SPEC.expert(inst)
    while not ep.done:
        blank = [
            m.model_copy(update={"content": ""}) if m.role == "tool" else m for m in ep.messages
        ]
        ep.step(expert.next_turn(blank))
    assert ep.reward().success
    assert [c.arguments for c in ep.tool_calls] == [
        c.arguments for c in run_expert(inst).tool_calls
    ]


# ---- reward integrity (issue 10): what lazy answers earn over 30 seeds ----------------------------
# battery-v1 paid one fixed design 0.55 on medium (14 of 36 seeds solved) and the reference
# cell 0.31/0.25/0.08. v2 (and v3, with the same instances and rewards) must keep every
# answer that ignores the instance at or below 0.2 mean reward and 5 % success.
N_SEEDS = 30
LAZY_MEAN, LAZY_SUCCESS = 0.2, 0.05
FIXED_DESIGNS: list[dict[str, Any]] = [
    {"thickness_um": 75.6, "porosity": 0.335},  # the reference cell printed in the prompt
    {"thickness_um": 30.0, "porosity": 0.15},  # schema minimum
    {"thickness_um": 150.0, "porosity": 0.6},  # schema maximum
    {"thickness_um": 90.0, "porosity": 0.375},  # schema midpoint
    # The best fixed designs a grid search found over v2 instances (in-sample).
    {"thickness_um": 47.5, "porosity": 0.26},
    {"thickness_um": 67.0, "porosity": 0.26},
]
# On hard the best fixed designs also come with a fixed cooling choice (the strongest on offer).


@pytest.fixture(scope="module")
def instances() -> Any:
    made: dict[str, list[Instance]] = {}

    def get(difficulty: str) -> list[Instance]:
        if difficulty not in made:
            made[difficulty] = [SPEC.instance(s, difficulty) for s in range(N_SEEDS)]
        return made[difficulty]

    return get


def _with_cooling(inst: Instance, args: dict[str, Any]) -> dict[str, Any]:
    """``args``, with ``cooling: strongest`` replaced by the strongest system on offer."""
    if args.get("cooling") != "strongest":
        return args
    rest = {k: v for k, v in args.items() if k != "cooling"}
    return {**rest, "heat_transfer_coefficient": max(public(inst).cooling_options_w_m2k or ())}


def _lazy(insts: list[Instance], args: dict[str, Any]) -> tuple[float, float]:
    """Mean reward and success rate of submitting ``args`` at once on every instance."""
    rewards = [_submit(inst, _with_cooling(inst, args)) for inst in insts]
    return (
        sum(r.total for r in rewards) / len(rewards),
        sum(r.success for r in rewards) / len(rewards),
    )


def _designs(difficulty: str) -> list[dict[str, Any]]:
    if difficulty != "hard":
        return FIXED_DESIGNS
    return FIXED_DESIGNS[:4] + [{**d, "cooling": "strongest"} for d in FIXED_DESIGNS[3:]]


@pytest.mark.slow
@pytest.mark.parametrize("difficulty", DIFFS)
def test_no_fixed_design_earns_reward(difficulty: str, instances: Any) -> None:
    insts = instances(difficulty)
    for args in _designs(difficulty):
        mean, success = _lazy(insts, args)
        assert mean <= LAZY_MEAN and success <= LAZY_SUCCESS, (difficulty, args, mean, success)


@pytest.mark.slow
@pytest.mark.parametrize("difficulty", DIFFS)
def test_best_constant_answer_fitted_on_other_seeds(difficulty: str, instances: Any) -> None:
    """The best of other seeds' solutions, chosen on those seeds, fails on fresh ones."""
    train = [SPEC.instance(s, difficulty) for s in range(1000, 1006)]
    candidates = [_solution_args(inst) for inst in train]
    best = max(candidates, key=lambda a: _lazy(train, a)[0])
    mean, success = _lazy(instances(difficulty), best)
    assert mean <= LAZY_MEAN and success <= LAZY_SUCCESS, (difficulty, best, mean, success)


@pytest.mark.slow
@pytest.mark.parametrize("difficulty", DIFFS)
def test_random_and_do_nothing_agents_earn_little(difficulty: str, instances: Any) -> None:
    for agent in (RandomAgent(), NothingAgent()):
        mean, success = scores(agent, instances(difficulty))
        assert mean <= LAZY_MEAN and success <= LAZY_SUCCESS, (agent.name, difficulty, mean)
