"""Edge cases of the flange task: model, generation, drawing, tools, reward and expert."""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import math
import typing

import pytest
from PIL import Image

from agentharness.agents.scripted import ExpertAgent, NoisyAgent
from agentharness.core.episode import Episode
from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.registry import episode_for, get_task
from agentharness.core.task import TaskConfigError
from agentharness.rollout.runner import run_one
from agentharness.tasks.flange import simulator as sim
from agentharness.tasks.flange.generator import design_of, geometry_of
from agentharness.tasks.flange.render import render_drawing
from agentharness.tasks.flange.reward import constraint_score, efficiency
from agentharness.tasks.flange.tools import BoltSize, FlangeWorld, MaterialName

SPEC = get_task("flange")
DIFFICULTIES = ("easy", "medium", "hard")


def _instance(seed: int = 0, difficulty: str = "easy", **knobs: object) -> Instance:
    return SPEC.instance(seed, difficulty, **knobs)


def _episode(seed: int = 0, difficulty: str = "easy", **knobs: object) -> Episode:
    return episode_for(_instance(seed, difficulty, **knobs))


def _call(name: str, args: dict[str, object] | str, n: int = 1) -> Message:
    return assistant(tool_calls=[ToolCall.make(f"t{n}", name, args)])


def _world(ep: Episode) -> FlangeWorld:
    assert isinstance(ep.world, FlangeWorld)
    return ep.world


def _solution(inst: Instance) -> dict[str, typing.Any]:
    return dict(inst.hidden["solution"])


# -- the plate model ----------------------------------------------------------------


def _roark(load: float, a: float, b: float, e: float, nu: float, t: float) -> tuple[float, float]:
    """Roark 7th ed. Table 11.2, cases 1a and 1e with r0 = b (deflection of the inner edge)."""
    d = e * t**3 / (12 * (1 - nu**2))
    w = load / (2 * math.pi * b)
    c1 = (1 + nu) / 2 * b / a * math.log(a / b) + (1 - nu) / 4 * (a / b - b / a)
    c4 = 0.5 * ((1 + nu) * b / a + (1 - nu) * a / b)
    c7 = 0.5 * (1 - nu**2) * (a / b - b / a)
    l3 = b / (4 * a) * (((b / a) ** 2 + 1) * math.log(a / b) + (b / a) ** 2 - 1)
    l6 = b / (4 * a) * ((b / a) ** 2 - 1 + 2 * math.log(a / b))
    l9 = b / a * ((1 + nu) / 2 * math.log(a / b) + (1 - nu) / 4 * (1 - (b / a) ** 2))
    case_1a = w * a**3 / d * (c1 * l9 / c7 - l3)
    case_1e = w * a**3 / d * (c1 * l6 / c4 - l3)
    return case_1a, case_1e


@pytest.mark.parametrize("ratio", [0.2, 0.5, 0.8])
def test_plate_limits_match_roark_cases_1a_and_1e(ratio: float) -> None:
    a, b = 150.0, 150.0 * ratio
    hinged, r0, _ = sim.plate_bending(5e4, a, b, 2e5, 0.3, 12.0, 0.0)
    clamped, r1, _ = sim.plate_bending(5e4, a, b, 2e5, 0.3, 12.0, 1e15)
    roark_1a, roark_1e = _roark(5e4, a, b, 2e5, 0.3, 12.0)
    assert hinged == pytest.approx(roark_1a, rel=1e-9)
    assert clamped == pytest.approx(roark_1e, rel=1e-6)
    assert r0 == pytest.approx(0.0, abs=1e-9) and r1 == pytest.approx(1.0, abs=1e-6)


def test_restraint_stiffens_monotonically() -> None:
    values = [sim.plate_bending(5e4, 100, 50, 2e5, 0.3, 15, k)[0] for k in (0, 1e4, 1e5, 1e6, 1e8)]
    assert all(x > y for x, y in itertools.pairwise(values))


def test_more_bolts_thicker_and_stiffer_deflect_less() -> None:
    geom = sim.Geometry(outer_d=330, bore_d=150, bcd=260, load_n=120e3)
    base = sim.analyze(geom, sim.Design(20, "steel_A36", 8, 16)).max_displacement
    assert sim.analyze(geom, sim.Design(25, "steel_A36", 8, 16)).max_displacement < base
    assert sim.analyze(geom, sim.Design(20, "steel_A36", 16, 16)).max_displacement < base
    assert sim.analyze(geom, sim.Design(20, "aluminium_6061", 8, 16)).max_displacement > base
    res = sim.analyze(geom, sim.Design(20, "steel_A36", 8, 16))
    parts = res.bending + res.shear + res.bolt_stretch
    assert res.max_displacement == pytest.approx(parts)
    assert res.bolt_stress == pytest.approx(120e3 / (8 * 157.0))


def test_cost_breakdown_follows_the_stated_formulas() -> None:
    geom = sim.Geometry(outer_d=300, bore_d=120, bcd=220, load_n=50e3)
    c = sim.cost(geom, sim.Design(20, "ductile_iron", 8, 16))
    mat = sim.MATERIALS["ductile_iron"]
    assert c.material == pytest.approx(math.pi / 4 * 300**2 * 20 * 1e-9 * 7100 * 1.6)
    face = math.pi / 4 * (300**2 - 120**2)
    turning = 20 + mat.machinability * (0.0004 * 2 * face + 0.0015 * math.pi * 420 * 20)
    assert c.machining == pytest.approx(turning)
    assert c.drilling == pytest.approx(8 * 0.9 * (1.5 + 0.002 * 17.5 * 20))
    assert c.bolts == pytest.approx(8 * 2.6)


@pytest.mark.parametrize(
    ("design", "needle"),
    [
        (sim.Design(float("nan"), "steel_A36", 8, 16), "finite"),
        (sim.Design(-2.0, "steel_A36", 8, 16), "below the minimum"),
        (sim.Design(80.0, "steel_A36", 8, 16), "radial span"),
        (sim.Design(20.0, "oak", 8, 16), "unknown material"),
        (sim.Design(20.0, "steel_A36", 6, 16), "multiple of 4"),
        (sim.Design(20.0, "steel_A36", 36, 16), "multiple of 4"),
        (sim.Design(20.0, "steel_A36", 8, 14), "standard size"),
        (sim.Design(20.0, "steel_A36", 32, 24), "overlap"),
        (sim.Design(20.0, "steel_A36", 28, 16), "wrench clearance"),
        (sim.Design(20.0, "steel_A36", 4, 36), "edge distance"),
        (sim.Design(20.0, "steel_A36", 4, 10), "overloaded"),
    ],
)
def test_design_rules_raise_clear_errors(design: sim.Design, needle: str) -> None:
    geom = sim.Geometry(outer_d=300, bore_d=120, bcd=220, load_n=120e3)
    with pytest.raises(sim.DesignError, match=needle):
        sim.analyze(geom, design)
    with pytest.raises(sim.DesignError, match=needle):
        sim.cost(geom, design)


def test_min_thickness_is_the_threshold() -> None:
    geom = sim.Geometry(outer_d=330, bore_d=150, bcd=260, load_n=120e3)
    t = sim.min_thickness(geom, "steel_A36", 8, 16, 0.2)
    assert t is not None
    assert sim.analyze(geom, sim.Design(t, "steel_A36", 8, 16)).max_displacement <= 0.2
    assert sim.analyze(geom, sim.Design(t - 0.01, "steel_A36", 8, 16)).max_displacement > 0.2
    assert sim.min_thickness(geom, "steel_A36", 8, 16, 1e-6) is None  # unreachable limit


def test_tool_enums_match_the_catalogue() -> None:
    assert list(typing.get_args(MaterialName)) == list(sim.MATERIALS)
    assert list(typing.get_args(BoltSize)) == list(sim.BOLTS)


# -- generation and prompt ----------------------------------------------------------


def test_same_seed_same_instance_and_prompt() -> None:
    a, b = _instance(4, "medium"), _instance(4, "medium")
    assert a == b
    pa = [m.model_dump() for m in SPEC.generator.prompt(a)]
    pb = [m.model_dump() for m in SPEC.generator.prompt(b)]
    assert pa == pb
    assert _instance(5, "medium").hidden["drawing"] != a.hidden["drawing"]


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_hidden_solution_verifies(difficulty: str) -> None:
    for seed in range(4):
        inst = _instance(seed, difficulty)
        geom = geometry_of(inst)
        design = design_of(_solution(inst))
        assert sim.analyze(geom, design).max_displacement <= inst.hidden["limit_mm"]
        assert sim.cost(geom, design).total <= inst.hidden["budget_usd"]
        assert design.material in inst.hidden["permitted"]
        assert len(inst.hidden["permitted"]) == inst.config["n_permitted"]


def test_instance_data_only_in_the_image() -> None:
    def text_of(inst: Instance) -> str:
        text = "\n".join(m.text for m in SPEC.generator.prompt(inst))
        text = text.replace(inst.public["drawing_number"], "<DWG>")
        return text.replace(f"${inst.public['budget_usd']:.2f}", "<BUDGET>")

    inst, other = _instance(2, "hard"), _instance(3, "hard")
    assert inst.hidden["drawing"] != other.hidden["drawing"]
    assert set(inst.public) == {"drawing_number", "budget_usd"}
    # Apart from the drawing number and the budget the text is the same for every
    # instance: dimensions, load, limit and permitted materials are only in the image.
    assert text_of(inst) == text_of(other)
    messages = SPEC.generator.prompt(inst)
    images = [img for m in messages for img in m.images]
    assert len(images) == 1
    png = images[0].png_bytes()
    assert png is not None
    assert Image.open(io.BytesIO(png)).size == (1200, 820)


def test_pressure_knob_and_many_materials_render() -> None:
    inst = _instance(1, "hard", n_permitted=7)
    assert inst.hidden["drawing"]["load_as_pressure"] is True
    bore = inst.hidden["drawing"]["bore_d"]
    p = inst.hidden["drawing"]["pressure_mpa"]
    assert inst.hidden["load_n"] == pytest.approx(p * math.pi * bore**2 / 4)
    img = render_drawing(inst.hidden["drawing"])
    assert img.size == (1200, 820)


def test_bad_knobs_are_rejected() -> None:
    with pytest.raises(TaskConfigError):
        SPEC.make_config("easy", bore_min_mm=200.0, bore_max_mm=100.0)
    with pytest.raises(TaskConfigError):
        SPEC.make_config("easy", n_permitted=0)


# -- tools --------------------------------------------------------------------------


def test_analyze_and_cost_feedback() -> None:
    ep = _episode(0, "medium")
    world = _world(ep)
    sol = _solution(ep.instance)
    limit = ep.instance.hidden["limit_mm"]
    raw = world.execute("analyze", sol).text
    good = json.loads(raw)
    assert good["max_displacement_mm"] <= limit and set(good["breakdown_mm"]) == {
        "plate_bending",
        "transverse_shear",
        "bolt_stretch",
    }
    assert "limit_mm" not in good and f"{limit:g}" not in raw  # the limit is on the drawing
    assert "note 4" in good["feedback"]
    thin = json.loads(world.execute("analyze", {**sol, "thickness": sol["thickness"] * 0.7}).text)
    assert thin["max_displacement_mm"] > limit
    assert any(k in thin["feedback"] for k in ("thicker plate", "more or larger bolts"))
    costly = {**sol, "material": "titanium_Ti6Al4V"}
    over = json.loads(world.execute("cost", costly).text)
    assert over["within_budget"] is False and "over budget" in over["feedback"]
    assert over["budget_usd"] == ep.instance.hidden["budget_usd"]
    ok = json.loads(world.execute("cost", sol).text)
    assert ok["within_budget"] is True and ok["margin_usd"] >= 0
    assert world.checks == 4


@pytest.mark.parametrize(
    "args",
    [
        {"thickness": 20, "material": "steel_A36", "n_bolts": 8},  # missing
        {"thickness": "thick", "material": "steel_A36", "n_bolts": 8, "bolt_diameter": 16},
        {"thickness": -5, "material": "steel_A36", "n_bolts": 8, "bolt_diameter": 16},
        {"thickness": 1e9, "material": "steel_A36", "n_bolts": 8, "bolt_diameter": 16},
        {"thickness": 20, "material": "unobtainium", "n_bolts": 8, "bolt_diameter": 16},
        {"thickness": 20, "material": "steel_A36", "n_bolts": 6, "bolt_diameter": 16},
        {"thickness": 20, "material": "steel_A36", "n_bolts": 64, "bolt_diameter": 16},
        {"thickness": 20, "material": "steel_A36", "n_bolts": 8, "bolt_diameter": 15},
        {"thickness": 20, "material": "steel_A36", "n_bolts": 32, "bolt_diameter": 36},
        {"thickness": 300, "material": "steel_A36", "n_bolts": 8, "bolt_diameter": 16},
        {"thickness": 20, "material": "steel_A36", "n_bolts": [8], "bolt_diameter": 16},
        '{"thickness": NaN, "material": "steel_A36", "n_bolts": 8, "bolt_diameter": 16}',
    ],
)
@pytest.mark.parametrize("tool_name", ["analyze", "cost", "submit_design"])
def test_bad_inputs_are_errors_and_the_episode_continues(
    args: dict[str, object] | str, tool_name: str
) -> None:
    ep = _episode(0, "easy")
    obs = ep.step(_call(tool_name, args))
    assert not obs.done
    assert ep.tool_calls[-1].is_error
    assert obs.messages[0].text.startswith("Error")
    assert _world(ep).final_answer is None
    ok = ep.step(_call("analyze", _solution(ep.instance), n=2))
    assert not ep.tool_calls[-1].is_error and not ok.done


def test_nan_thickness_guarded_in_the_simulator() -> None:
    geom = sim.Geometry(outer_d=300, bore_d=120, bcd=220, load_n=50e3)
    for bad in (float("nan"), float("inf")):
        with pytest.raises(sim.DesignError):
            sim.analyze(geom, sim.Design(bad, "steel_A36", 8, 16))
    with pytest.raises(sim.DesignError):
        sim.analyze(sim.Geometry(300, 120, 220, float("nan")), sim.Design(20, "steel_A36", 8, 16))
    with pytest.raises(sim.DesignError):
        sim.check_geometry(sim.Geometry(200, 120, 220, 50e3))


def test_nudges_carry_domain_feedback() -> None:
    ep = _episode(0, "easy")
    first = ep.step(assistant("Let me think about it."))
    assert "note 4" in first.messages[-1].text and not first.done
    ep.step(_call("analyze", {**_solution(ep.instance), "thickness": 5.0}, n=2))
    second = ep.step(assistant("Still thinking."))
    nudge = second.messages[-1].text
    assert "displaces the bore edge by" in nudge and "note 4" in nudge
    assert f"{ep.instance.hidden['limit_mm']:g} mm" not in nudge
    third = ep.step(assistant("Done."))
    assert third.done and ep.end_reason == "no_answer"
    assert ep.reward().total == 0.0


# -- reward -------------------------------------------------------------------------


def _submit(ep: Episode, args: dict[str, object]) -> float:
    obs = ep.step(_call("submit_design", args, n=99))
    assert obs.done and ep.end_reason == "answered"
    return ep.reward().total


def test_reward_full_partial_and_gated() -> None:
    inst = _instance(1, "medium")
    sol = _solution(inst)
    full = _submit(episode_for(inst), sol)
    assert full == pytest.approx(1.0)

    thin_ep = episode_for(inst)
    thin = _submit(thin_ep, {**sol, "thickness": round(sol["thickness"] * 0.9, 2)})
    r = thin_ep.reward()
    assert not r.success and r.component("displacement") is not None
    assert 0.0 < (r.component("displacement") or 0.0) < 1.0 and r.component("cost") == 1.0
    assert 0.3 < thin < 0.7

    heavy_ep = episode_for(inst)
    _submit(heavy_ep, {**sol, "thickness": round(sol["thickness"] * 1.6, 2)})
    heavy = heavy_ep.reward()
    assert heavy.component("displacement") == 1.0 and (heavy.component("cost") or 0) < 1.0
    assert not heavy.success

    banned = next(m for m in sim.MATERIALS if m not in inst.hidden["permitted"])
    banned_ep = episode_for(inst)
    _submit(banned_ep, {**sol, "material": banned})
    rb = banned_ep.reward()
    assert rb.component("material") == 0.0 and not rb.success and rb.total <= 0.35

    assert episode_for(inst).reward().total == 0.0  # nothing submitted


def test_reward_helpers() -> None:
    assert constraint_score(1.0, 1.0) == 1.0
    assert constraint_score(1.25, 1.0) == pytest.approx(0.25)
    assert constraint_score(2.0, 1.0) == 0.0
    assert efficiency(3, 8) == 1.0 and efficiency(16, 8) == pytest.approx(0.5)
    assert efficiency(100, 8) == 0.0


def test_efficiency_counts_checks() -> None:
    inst = _instance(0, "hard")
    ep = episode_for(inst)
    sol = _solution(inst)
    for k in range(12):
        ep.step(_call("cost", sol, n=k + 10))
    _submit(ep, sol)
    r = ep.reward()
    assert r.success and (r.component("efficiency") or 0) < 1.0 and r.total < 1.0


# -- expert -------------------------------------------------------------------------


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_expert_solves(difficulty: str) -> None:
    inst = _instance(7, difficulty)
    ep, _ = asyncio.run(run_one(inst, ExpertAgent().policy(inst)))
    assert ep.end_reason == "answered"
    assert ep.reward().total >= SPEC.solved_threshold
    assert len(ep.tool_calls) == 3


def test_expert_survives_interleaved_random_calls() -> None:
    inst = _instance(3, "medium")
    expert = SPEC.expert(inst)
    ep = episode_for(inst)
    junk = [
        _call("analyze", {"thickness": 4, "material": "oak"}, n=500),
        _call("cost", {**_solution(inst), "thickness": 3.5}, n=501),
        assistant("random chatter"),
    ]
    k = 0
    while not ep.done:
        if k < len(junk) * 2 and k % 2 == 0:
            ep.step(junk[k // 2])
        else:
            ep.step(expert.next_turn(ep.messages))
        k += 1
    assert ep.end_reason == "answered" and ep.reward().success


def test_noisy_agent_still_scores_well_on_average() -> None:
    scores = []
    for seed in range(3):
        inst = _instance(seed, "easy")
        ep, _ = asyncio.run(run_one(inst, NoisyAgent(0.3).policy(inst)))
        scores.append(ep.reward().total)
    assert sum(scores) / len(scores) >= 0.6


def test_drawing_can_exclude_the_unconstrained_cheapest_material() -> None:
    for seed in range(3):
        inst = _instance(seed, "easy", exclude_unconstrained_best=1.0)
        best = sim.cheapest_design(geometry_of(inst), inst.hidden["limit_mm"], list(sim.MATERIALS))
        assert best is not None
        assert best[0].material not in inst.hidden["permitted"]
