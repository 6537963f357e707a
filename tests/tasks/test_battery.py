"""Edge cases of the battery task: generator, tools, reward and expert (real PyBaMM runs)."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest

from agentharness import make
from agentharness.agents.scripted import ExpertAgent
from agentharness.core.episode import Episode
from agentharness.core.messages import Message, ToolCall, assistant, tool_message
from agentharness.core.registry import get_task
from agentharness.core.task import TaskConfigError
from agentharness.rollout.runner import run_one
from agentharness.tasks.battery import simulator as sim
from agentharness.tasks.battery.expert import BatteryExpert
from agentharness.tasks.battery.reward import FREE_SIMULATIONS
from agentharness.tasks.battery.tools import BatteryWorld, run_design

SPEC = get_task("battery")


def _episode(difficulty: str = "easy", seed: int = 0, **knobs: Any) -> Episode:
    return make("battery", difficulty=difficulty, **knobs).reset(seed=seed)


def _call(ep: Episode, name: str, args: dict[str, Any] | str, cid: str = "c1") -> Message:
    obs = ep.step(assistant(tool_calls=[ToolCall.make(cid, name, args)]))
    return obs.messages[0]


def _solution_args(ep: Episode) -> dict[str, Any]:
    sol = ep.instance.hidden["solution"]
    args = {"thickness_um": sol["thickness_um"], "porosity": sol["porosity"]}
    if sol["heat_transfer_coefficient"] is not None:
        args["heat_transfer_coefficient"] = sol["heat_transfer_coefficient"]
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
@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_generator_is_deterministic(difficulty: str) -> None:
    a, b = SPEC.instance(5, difficulty), SPEC.instance(5, difficulty)
    assert a == b
    assert [m.model_dump() for m in SPEC.generator.prompt(a)] == [
        m.model_dump() for m in SPEC.generator.prompt(b)
    ]
    assert SPEC.instance(6, difficulty) != a


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hidden_solution_is_feasible(difficulty: str, seed: int) -> None:
    inst = SPEC.instance(seed, difficulty)
    sol = inst.hidden["solution"]
    _, v = run_design(inst, sol["thickness_um"], sol["porosity"], sol["heat_transfer_coefficient"])
    assert v.feasible
    margin_k = SPEC.config_of(inst).temperature_margin_k  # type: ignore[attr-defined]
    assert v.energy_margin >= 0.0 and v.thermal_margin >= margin_k - 1e-6
    if difficulty == "hard":
        assert inst.public["choose_cooling"] and sol["heat_transfer_coefficient"] is not None


def test_prompt_states_targets_and_answer_format() -> None:
    inst = SPEC.instance(0, "hard")
    text = "\n".join(m.text for m in SPEC.generator.prompt(inst))
    assert f"{inst.public['specific_energy_target_wh_kg']:g} Wh/kg" in text
    assert f"{inst.public['peak_temperature_limit_c']:g} °C" in text
    assert "submit_design(thickness_um=..., porosity=..., heat_transfer_coefficient=...)" in text
    assert "thickness_um" not in str(inst.public.get("solution", ""))


def test_knobs_override_and_are_validated() -> None:
    inst = SPEC.instance(0, "easy", c_rates=(2.0,), energy_margin=0.1)
    assert inst.public["c_rate"] == 2.0
    with pytest.raises(TaskConfigError):
        SPEC.instance(0, "easy", thickness_um=(10.0, 50.0))
    with pytest.raises(TaskConfigError):
        SPEC.instance(0, "easy", no_such_knob=1)


# ---- tools -----------------------------------------------------------------------------------
def test_simulate_reports_margins_and_directions() -> None:
    ep = _episode("easy", 0)
    hot = json.loads(_call(ep, "simulate_cell", {"thickness_um": 140, "porosity": 0.5}).text)
    assert hot["constraints"]["peak_temperature"]["satisfied"] is False
    assert hot["constraints"]["peak_temperature"]["margin_k"] < 0
    assert "EXCEEDS" in hot["feedback"] and "thinner" in hot["feedback"]
    lean = json.loads(_call(ep, "simulate_cell", {"thickness_um": 35, "porosity": 0.55}).text)
    assert lean["constraints"]["specific_energy"]["satisfied"] is False
    assert "BELOW" in lean["feedback"] and "thicker" in lean["feedback"]
    dense = json.loads(_call(ep, "simulate_cell", {"thickness_um": 150, "porosity": 0.15}).text)
    assert "transport-limited" in dense["feedback"]
    assert dense["simulations_used"] == 3 and isinstance(ep.world, BatteryWorld)
    assert ep.world.simulations == 3 and not ep.done


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
        msg = _call(ep, name, args)  # through the episode: an error message, never a crash
        assert "rror" in msg.text
        assert not ep.done
    assert ep.world.simulations == 0  # type: ignore[attr-defined]
    assert ep.world.final_answer is None


def test_cooling_argument_rules() -> None:
    easy = _episode("easy", 0)
    h = easy.instance.public["heat_transfer_w_m2k"]
    msg = _call(
        easy,
        "simulate_cell",
        {"thickness_um": 60, "porosity": 0.4, "heat_transfer_coefficient": h + 20},
    )
    assert "fixed" in msg.text and msg.text.startswith("Error:")
    ok = _call(
        easy, "simulate_cell", {"thickness_um": 60, "porosity": 0.4, "heat_transfer_coefficient": h}
    )
    assert not ok.text.startswith("Error:")

    hard = _episode("hard", 0)
    top = hard.instance.public["cooling_max_w_m2k"]
    msg = _call(
        hard,
        "simulate_cell",
        {"thickness_um": 60, "porosity": 0.4, "heat_transfer_coefficient": top + 10},
    )
    assert msg.text.startswith("Error:") and "outside the allowed range" in msg.text
    cooled = json.loads(
        _call(
            hard,
            "simulate_cell",
            {"thickness_um": 60, "porosity": 0.4, "heat_transfer_coefficient": top},
        ).text
    )
    natural = json.loads(_call(hard, "simulate_cell", {"thickness_um": 60, "porosity": 0.4}).text)
    assert cooled["results"]["mass_breakdown_g"]["cooling"] > 0
    assert natural["results"]["mass_breakdown_g"]["cooling"] == 0
    assert cooled["results"]["peak_temperature_c"] < natural["results"]["peak_temperature_c"]


def test_solver_failure_is_a_tool_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentharness.tasks.battery.tools as tools

    def boom(*a: Any, **k: Any) -> Any:
        raise sim.SimulationError("PyBaMM did not converge (SolverError: test)")

    monkeypatch.setattr(tools, "simulate", boom)
    ep = _episode("easy", 0)
    msg = _call(ep, "simulate_cell", {"thickness_um": 80, "porosity": 0.3})
    assert msg.text.startswith("Error:") and "did not converge" in msg.text
    msg = _call(ep, "submit_design", {"thickness_um": 80, "porosity": 0.3}, cid="c2")
    assert msg.text.startswith("Error:") and not ep.done
    assert ep.world.final_answer is None


def test_simulation_budget_is_enforced() -> None:
    ep = _episode("easy", 0, max_simulations=2)
    for i in range(2):
        assert not _call(
            ep, "simulate_cell", {"thickness_um": 60 + i, "porosity": 0.4}, f"c{i}"
        ).text.startswith("Error")
    msg = _call(ep, "simulate_cell", {"thickness_um": 70, "porosity": 0.4}, "c9")
    assert msg.text.startswith("Error:") and "budget" in msg.text
    assert not ep.done


# ---- interaction -------------------------------------------------------------------------------
def test_nudges_carry_the_search_state() -> None:
    ep = _episode("easy", 0)
    first = ep.step("Let me think.").messages[0].text
    assert "simulate_cell" in first and "Wh/kg" in first
    _call(ep, "simulate_cell", {"thickness_um": 60, "porosity": 0.4})
    second = ep.step("Hmm.").messages[0].text
    assert "best design so far: 60 um" in second
    ep.step("Still thinking.")
    assert ep.done and ep.end_reason == "no_answer"
    assert ep.reward().total == 0.0


# ---- reward ------------------------------------------------------------------------------------
def test_reward_full_partial_and_zero() -> None:
    ep = _episode("medium", 1)
    _call(ep, "submit_design", _solution_args(ep))
    good = ep.reward()
    assert ep.done and good.success and good.total >= SPEC.solved_threshold

    ep = _episode("medium", 1)
    _call(ep, "submit_design", {"thickness_um": 35, "porosity": 0.55})  # cool but lean
    lean = ep.reward()
    assert not lean.success
    assert lean.component("peak_temperature") == 1.0
    assert lean.component("feasible") == 0.0 and lean.component("efficiency") == 0.0
    assert 0.0 < lean.total < good.total

    totals = []
    for extra in (10.0, 25.0):  # thicker than the hidden design: too hot, by more and more
        ep = _episode("medium", 1)
        sol = _solution_args(ep)
        _call(ep, "submit_design", {**sol, "thickness_um": sol["thickness_um"] + extra})
        hot = ep.reward()
        assert not hot.success and hot.component("specific_energy") == 1.0
        totals.append(hot.total)
    assert totals[0] > totals[1] > 0.0  # a near miss scores above a far one

    assert _episode("medium", 1).reward().total == 0.0  # nothing submitted


def test_efficiency_falls_with_many_simulations() -> None:
    scores = []
    for sims in (FREE_SIMULATIONS, 25):
        ep = _episode("easy", 2)
        ep.world.simulations = sims  # type: ignore[attr-defined]
        _call(ep, "submit_design", _solution_args(ep))
        scores.append(ep.reward())
    assert scores[0].component("efficiency") == 1.0
    assert scores[1].component("efficiency") < 0.5
    assert scores[0].total > scores[1].total and scores[1].success


def test_reward_re_simulates_rather_than_trusting_the_record() -> None:
    ep = _episode("easy", 0)
    _call(ep, "submit_design", {"thickness_um": 35, "porosity": 0.55})
    ep.world.final_answer = {"thickness_um": 35, "porosity": 0.55, "feasible": True}
    assert not ep.reward().success


# ---- expert ------------------------------------------------------------------------------------
@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_expert_solves_within_budget(difficulty: str) -> None:
    inst = SPEC.instance(3, difficulty)
    ep, _ = asyncio.run(run_one(inst, ExpertAgent().policy(inst)))
    assert ep.end_reason == "answered"
    assert ep.reward().total >= SPEC.solved_threshold
    assert ep.turns <= SPEC.interaction.budgets.max_turns // 4
    # The bisection itself found the submitted design (not the hidden-design fallback).
    sims = [json.loads(c.result) for c in ep.tool_calls if c.name == "simulate_cell"]
    assert sims and sims[-1]["feasible"]
    submitted = ep.world.final_answer
    assert submitted is not None and submitted["thickness_um"] == sims[-1]["design"]["thickness_um"]


def test_expert_ignores_foreign_failures_and_takes_foreign_successes() -> None:
    ep = _episode("medium", 2)
    expert = BatteryExpert(ep.instance)
    # A foreign infeasible probe does not disturb the bisection.
    _call(ep, "simulate_cell", {"thickness_um": 35, "porosity": 0.55}, "rnd_1")
    turn = expert.next_turn(ep.messages)
    assert turn.tool_calls and turn.tool_calls[0].function.name == "simulate_cell"
    args = json.loads(turn.tool_calls[0].function.arguments)
    assert args["porosity"] == ep.instance.hidden["solution"]["porosity"]
    # A foreign feasible report is submitted straight away.
    feasible_report = json.loads(_call(ep, "simulate_cell", _solution_args(ep), "rnd_2").text)
    assert feasible_report["feasible"]
    turn = expert.next_turn(ep.messages)
    assert turn.tool_calls and turn.tool_calls[0].function.name == "submit_design"
    # Error messages in the history are skipped.
    msgs = [*ep.messages, assistant(tool_calls=[ToolCall.make("x", "simulate_cell", "{}")])]
    msgs.append(tool_message("x", "simulate_cell", "Error: bad"))
    assert expert.next_turn(msgs).tool_calls
