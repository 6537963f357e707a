"""Edge cases of the flange task: model, generation, drawing, tools, reward and expert."""

from __future__ import annotations

import functools
import io
import itertools
import json
import math
import re
import statistics
import typing

import pytest
from PIL import Image

from agentharness.agents.scripted import ExpertAgent, NoisyAgent
from agentharness.core.episode import Episode
from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolOutcome, assistant
from agentharness.core.registry import episode_for, get_task
from agentharness.core.task import TaskConfigError
from agentharness.tasks.flange import simulator as sim
from agentharness.tasks.flange.expert import reading_args
from agentharness.tasks.flange.generator import design_of, geometry_of
from agentharness.tasks.flange.problem import Hidden, Public
from agentharness.tasks.flange.render import render_drawing
from agentharness.tasks.flange.reward import economy, efficiency
from agentharness.tasks.flange.tools import BoltSize, FlangeWorld, MaterialName
from agentharness.testing.tasks import call, episode, run_agent, step_call

SPEC = get_task("flange")
DIFFICULTIES = ("easy", "medium", "hard")


def _world(ep: Episode) -> FlangeWorld:
    assert isinstance(ep.world, FlangeWorld)
    return ep.world


def _solution(inst: Instance) -> dict[str, typing.Any]:
    return inst.hidden_as(Hidden).solution.model_dump()


def _with_hidden(inst: Instance, hidden: dict[str, typing.Any]) -> Instance:
    """``inst`` with other hidden data, built afresh: ``model_copy`` would share the
    cached typed views of the original."""
    return Instance.model_validate({**inst.model_dump(), "hidden": hidden})


def _read(inst: Instance) -> dict[str, typing.Any]:
    """The drawing's dimensions and load, as an agent that read them passes them to tools."""
    return reading_args(geometry_of(inst))


def _checked(inst: Instance) -> dict[str, typing.Any]:
    """The reference design with the drawing data: arguments for analyze and cost."""
    return {**_solution(inst), **_read(inst)}


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


def test_stress_falls_with_thickness_and_min_thickness_stress_is_the_threshold() -> None:
    geom = sim.Geometry(outer_d=330, bore_d=150, bcd=260, load_n=400e3)
    stresses = [
        sim.analyze(geom, sim.Design(t, "steel_A36", 8, 24)).plate_stress for t in (5, 10, 20, 40)
    ]
    assert all(x > y for x, y in itertools.pairwise(stresses))
    t = sim.min_thickness_stress(geom, "steel_A36", 8, 24)
    assert t is not None
    allowable = sim.MATERIALS["steel_A36"].yield_mpa / sim.STRESS_SAFETY_FACTOR
    assert sim.analyze(geom, sim.Design(t, "steel_A36", 8, 24)).plate_stress <= allowable
    low = sim.analyze(geom, sim.Design(t - 0.01, "steel_A36", 8, 24))
    assert low.plate_stress > allowable and not low.stress_ok
    assert low.allowable_stress == pytest.approx(allowable)


def test_every_material_has_a_yield_stress() -> None:
    for m in sim.MATERIALS.values():
        assert 150 <= m.yield_mpa <= 1000
        assert m.allowable_mpa == pytest.approx(m.yield_mpa / 1.5)


# -- generation and prompt ----------------------------------------------------------


def test_same_seed_same_instance_and_prompt() -> None:
    a, b = SPEC.instance(4, "medium"), SPEC.instance(4, "medium")
    assert a == b
    pa = [m.model_dump() for m in SPEC.generator.prompt(a)]
    pb = [m.model_dump() for m in SPEC.generator.prompt(b)]
    assert pa == pb
    assert SPEC.instance(5, "medium").hidden["drawing"] != a.hidden["drawing"]


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_typed_views_read_exactly_the_stored_data(difficulty: str) -> None:
    """Public and Hidden describe the instance data field for field, in stored order."""
    for seed in range(3):
        inst = SPEC.instance(seed, difficulty)
        pub, hidden = inst.public_as(Public), inst.hidden_as(Hidden)
        assert json.dumps(pub.model_dump(mode="json")) == json.dumps(inst.public)
        assert json.dumps(hidden.model_dump(mode="json")) == json.dumps(inst.hidden)
        assert inst.hidden_as(Hidden) is hidden  # validated once
        assert hidden.drawing.number == pub.drawing_number == inst.public["drawing_number"]
        assert hidden.geometry() == geometry_of(inst)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_hidden_solution_verifies(difficulty: str) -> None:
    for seed in range(6):
        inst = SPEC.instance(seed, difficulty)
        geom = geometry_of(inst)
        design = design_of(_solution(inst))
        result = sim.analyze(geom, design)
        assert result.max_displacement <= inst.hidden["limit_mm"]
        assert result.stress_ok  # v2: about 1 in 6 references exceeded the yield stress
        assert sim.cost(geom, design).total <= inst.hidden["budget_usd"]
        assert design.material in inst.hidden["permitted"]
        assert len(inst.hidden["permitted"]) == inst.config["n_permitted"]
        assert inst.hidden["drawing"]["budget_usd"] == inst.hidden["budget_usd"]


def test_instance_data_only_in_the_image() -> None:
    def text_of(inst: Instance) -> str:
        text = "\n".join(m.text for m in SPEC.generator.prompt(inst))
        return text.replace(inst.public["drawing_number"], "<DWG>")

    inst, other = SPEC.instance(2, "hard"), SPEC.instance(3, "hard")
    assert inst.hidden["drawing"] != other.hidden["drawing"]
    assert set(inst.public) == {"drawing_number"}
    # Apart from the drawing number the text is the same for every instance: dimensions,
    # load, limit, cost limit and permitted materials are only in the image.
    assert text_of(inst) == text_of(other)
    text = text_of(inst)
    assert f"{inst.hidden['budget_usd']:.2f}" not in text and "budget" not in text
    messages = SPEC.generator.prompt(inst)
    images = [img for m in messages for img in m.images]
    assert len(images) == 1
    png = images[0].png_bytes()
    assert png is not None
    assert Image.open(io.BytesIO(png)).size == (1200, 820)


def test_drawing_number_does_not_name_the_seed() -> None:
    numbers = [SPEC.instance(seed, "easy").public["drawing_number"] for seed in range(8)]
    assert len(set(numbers)) == 8
    assert not any(n.startswith(f"FL-{seed:04d}-") for seed, n in enumerate(numbers))


def test_pressure_knob_and_many_materials_render() -> None:
    inst = SPEC.instance(1, "hard", n_permitted=7)
    assert inst.hidden["drawing"]["load_as_pressure"] is True
    bore = inst.hidden["drawing"]["bore_d"]
    p = inst.hidden["drawing"]["pressure_mpa"]
    assert inst.hidden["load_n"] == pytest.approx(p * math.pi * bore**2 / 4)
    img = render_drawing(inst.hidden_as(Hidden).drawing)
    assert img.size == (1200, 820)


def test_bad_knobs_are_rejected() -> None:
    with pytest.raises(TaskConfigError):
        SPEC.make_config("easy", bore_min_mm=200.0, bore_max_mm=100.0)
    with pytest.raises(TaskConfigError):
        SPEC.make_config("easy", n_permitted=0)


def test_presets_get_harder() -> None:
    cfgs = [SPEC.make_config(d) for d in DIFFICULTIES]
    permitted = [c.n_permitted for c in cfgs]  # type: ignore[attr-defined]
    slack = [c.budget_slack for c in cfgs]  # type: ignore[attr-defined]
    free = [c.free_tool_calls for c in cfgs]  # type: ignore[attr-defined]
    assert permitted == sorted(permitted) and len(set(permitted)) == 3
    assert slack == sorted(slack, reverse=True) and len(set(slack)) == 3
    assert free == sorted(free, reverse=True)
    assert cfgs[-1].load_as_pressure  # type: ignore[attr-defined]


# -- tools --------------------------------------------------------------------------


def test_analyze_and_cost_feedback() -> None:
    ep = episode("flange", 0, "medium")
    inst = ep.instance
    world = _world(ep)
    args = _checked(inst)
    limit = inst.hidden["limit_mm"]
    result = world.execute("analyze", args)
    raw, good = result.text, result.data
    assert json.loads(raw) == good  # the text is the data, rendered
    assert good["max_displacement_mm"] <= limit
    assert set(good["breakdown_mm"]) == {"plate_bending", "transverse_shear", "bolt_stretch"}
    assert good["max_displacement_mm"] == pytest.approx(
        inst.hidden["solution_displacement_mm"], rel=1e-3
    )
    assert good["plate_stress_ok"] is True
    assert good["peak_plate_stress_mpa"] <= good["allowable_plate_stress_mpa"]
    assert "limit_mm" not in good and f"{limit:g}" not in raw  # the limit is on the drawing
    assert "note 4" in good["feedback"]
    thin = world.execute("analyze", {**args, "thickness": args["thickness"] * 0.7}).data
    assert thin["max_displacement_mm"] > limit or not thin["plate_stress_ok"]
    assert any(k in thin["feedback"] for k in ("thicker plate", "more or larger bolts"))
    ok = world.execute("cost", args).data
    assert ok["total_usd"] == pytest.approx(inst.hidden["solution_cost_usd"], abs=0.01)
    assert "note 5" in ok["feedback"]
    budget = inst.hidden["budget_usd"]
    for text in (raw, json.dumps(ok)):
        assert "budget" not in text and f"{budget:g}" not in text
    assert world.checks == 3


def test_tool_results_carry_what_the_text_says_as_data() -> None:
    ep = episode("flange", 0, "easy")
    args = _checked(ep.instance)
    for name, key in (("analyze", "max_displacement_mm"), ("cost", "total_usd")):
        reply = step_call(ep, name, args, f"c_{name}")
        assert reply.outcome is not None and not reply.outcome.is_error
        assert reply.outcome.data == json.loads(reply.text) and key in reply.outcome.data
        assert ep.tool_calls[-1].data == reply.outcome.data  # the trajectory records it too
    # a broken rule is an error without data
    reply = step_call(ep, "analyze", {**args, "n_bolts": 4, "bolt_diameter": 10}, "c_bad")
    assert reply.outcome is not None and reply.outcome.is_error and reply.outcome.data is None
    assert reply.text.startswith("Error: design rejected")
    reply = step_call(ep, "submit_design", _solution(ep.instance), "c_submit")
    assert reply.outcome is not None and not reply.outcome.is_error
    sol = ep.instance.hidden_as(Hidden).solution
    label = f"t={sol.thickness:g} mm, {sol.material}, {sol.n_bolts} x M{sol.bolt_diameter}"
    assert reply.outcome.data == {"design": label, "submitted": True}
    assert label in reply.text and ep.done and ep.reward().success


def test_the_expert_reads_the_outcome_not_the_text() -> None:
    """Same text, different outcome: the expert re-runs a stage whose call failed."""
    inst = SPEC.instance(0, "easy")
    ep = episode_for(inst)
    expert = SPEC.expert(inst)
    ep.step(expert.next_turn(ep.messages))
    reply = ep.messages[-1]
    assert reply.role == "tool" and reply.outcome is not None
    assert expert.next_turn(ep.messages).tool_calls[0].function.name == "cost"  # type: ignore[index]
    failed = reply.model_copy(update={"outcome": ToolOutcome(is_error=True)})
    messages = [*ep.messages[:-1], failed]
    assert SPEC.expert(inst).next_turn(messages).tool_calls[0].function.name == "analyze"  # type: ignore[index]


def test_tools_compute_on_the_numbers_given_not_the_drawing() -> None:
    """Same arguments, same answer, whatever the drawing: nothing in a tool's reply, its
    errors included, can be traced back to the hidden drawing."""
    a, b = SPEC.instance(0, "hard"), SPEC.instance(1, "hard")
    assert a.hidden["drawing"] != b.hidden["drawing"]
    reading = _read(a)
    probes = [
        ("analyze", _checked(a)),
        ("cost", _checked(a)),
        ("analyze", {**_checked(a), "thickness": 500.0}),
        ("analyze", {**_checked(a), "n_bolts": 32, "bolt_diameter": 36}),
        ("analyze", {**_checked(a), "n_bolts": 4, "bolt_diameter": 10}),
        ("cost", {**_checked(a), "n_bolts": 4, "bolt_diameter": 36}),
        ("analyze", {**_solution(a)}),  # the drawing data left out
        ("submit_design", {**_solution(a), "thickness": 500.0}),
        ("submit_design", {**_solution(a), "n_bolts": 6}),
    ]
    for name, args in probes:
        out_a = episode_for(a).world.execute(name, args)
        out_b = episode_for(b).world.execute(name, args)
        assert out_a.text == out_b.text, name
    assert reading["outer_diameter"] == a.hidden["drawing"]["outer_d"]


def test_the_v2_leaks_are_gone() -> None:
    """v2's errors quoted the radial span, the bolt circle, the rim and the load, and
    bolt_stress_mpa was the load over a known area. None of the drawing's numbers
    appears in any reply to a probe that does not pass them in."""
    for seed in range(4):
        inst = SPEC.instance(seed, "medium")
        d = inst.hidden["drawing"]
        secret = {
            f"{(d['bcd'] - d['bore_d']) / 2:g}",
            f"{d['bcd']:g}",
            f"{d['outer_d']:g}",
            f"{d['bore_d']:g}",
            f"{(d['outer_d'] - d['bcd']) / 2:g}",
            f"{d['load_kn']:g}",
            f"{d['limit_mm']:g}",
            f"{d['budget_usd']:g}",
        }
        ep = episode_for(inst)
        guess = {
            "outer_diameter": 1000.0,
            "bore_diameter": 600.0,
            "bolt_circle_diameter": 900.0,
            "load_kn": 12.345,
        }
        replies: list[tuple[str, str]] = []  # (what the agent sent, what it heard)
        for t, n, b in ((500, 32, 36), (3, 32, 36), (3, 4, 36), (3, 4, 10), (20, 8, 16)):
            design = {"thickness": t, "material": "steel_A36", "n_bolts": n, "bolt_diameter": b}
            for name in ("analyze", "cost"):
                for args in (design, {**design, **guess}):
                    replies.append((json.dumps(args), ep.world.execute(name, args).text))
        ep.step(assistant("thinking"))  # the nudge after no tool call
        replies.append(("", ep.messages[-1].text))

        def numbers(text: str) -> set[str]:
            return {f"{float(x):g}" for x in re.findall(r"\d+(?:\.\d+)?", text)}

        for sent, heard in replies:
            leaked = (numbers(heard) - numbers(sent)) & secret
            assert not leaked, (heard, leaked)


def test_submit_checks_only_the_drawing_free_rules() -> None:
    inst = SPEC.instance(2, "easy")
    ep = episode_for(inst)
    bad = ep.world.execute("submit_design", {**_solution(inst), "n_bolts": 10})
    assert bad.is_error and "multiple of 4" in bad.text and ep.world.final_answer is None
    thin = ep.world.execute("submit_design", {**_solution(inst), "thickness": 2.0})
    assert thin.is_error and "below the minimum" in thin.text
    # Breaking a rule of the drawing's geometry is accepted, and verified by the reward.
    ep.step(call("submit_design", {**_solution(inst), "thickness": 400.0}))
    assert ep.done and ep.end_reason == "answered"
    r = ep.reward()
    assert r.total == 0.0 and not r.success and "radial span" in r.explanation


GEOMETRY_FREE_BAD_ARGS: list[dict[str, object] | str] = [
    {"thickness": 20, "material": "steel_A36", "n_bolts": 8},  # missing
    {"thickness": "thick", "material": "steel_A36", "n_bolts": 8, "bolt_diameter": 16},
    {"thickness": -5, "material": "steel_A36", "n_bolts": 8, "bolt_diameter": 16},
    {"thickness": 1e9, "material": "steel_A36", "n_bolts": 8, "bolt_diameter": 16},
    {"thickness": 2, "material": "steel_A36", "n_bolts": 8, "bolt_diameter": 16},
    {"thickness": 20, "material": "unobtainium", "n_bolts": 8, "bolt_diameter": 16},
    {"thickness": 20, "material": "steel_A36", "n_bolts": 6, "bolt_diameter": 16},
    {"thickness": 20, "material": "steel_A36", "n_bolts": 64, "bolt_diameter": 16},
    {"thickness": 20, "material": "steel_A36", "n_bolts": 8, "bolt_diameter": 15},
    {"thickness": 20, "material": "steel_A36", "n_bolts": [8], "bolt_diameter": 16},
    '{"thickness": NaN, "material": "steel_A36", "n_bolts": 8, "bolt_diameter": 16}',
]
GEOMETRY_BAD_ARGS: list[dict[str, object]] = [
    {"thickness": 20, "material": "steel_A36", "n_bolts": 32, "bolt_diameter": 36},
    {"thickness": 300, "material": "steel_A36", "n_bolts": 8, "bolt_diameter": 16},
    {"thickness": 20, "material": "steel_A36", "n_bolts": 4, "bolt_diameter": 10},
    {"thickness": 20, "material": "steel_A36", "n_bolts": 8, "bolt_diameter": 16, "load_kn": -1},
    {
        "thickness": 20,
        "material": "steel_A36",
        "n_bolts": 8,
        "bolt_diameter": 16,
        "bore_diameter": 0,
    },
    {
        "thickness": 20,
        "material": "steel_A36",
        "n_bolts": 8,
        "bolt_diameter": 16,
        "bore_diameter": 900,
    },
]


def _with_reading(args: dict[str, object] | str, inst: Instance, tool_name: str) -> object:
    if tool_name == "submit_design" or not isinstance(args, dict):
        return args
    return {**_read(inst), **args}


@pytest.mark.parametrize("args", GEOMETRY_FREE_BAD_ARGS)
@pytest.mark.parametrize("tool_name", ["analyze", "cost", "submit_design"])
def test_bad_inputs_are_errors_and_the_episode_continues(
    args: dict[str, object] | str, tool_name: str
) -> None:
    ep = episode("flange", 0, "easy")
    obs = ep.step(call(tool_name, _with_reading(args, ep.instance, tool_name)))  # type: ignore[arg-type]
    assert not obs.done
    assert ep.tool_calls[-1].is_error
    assert obs.messages[0].text.startswith("Error")
    assert _world(ep).final_answer is None
    ok = ep.step(call("analyze", _checked(ep.instance), "t2"))
    assert not ep.tool_calls[-1].is_error and not ok.done


@pytest.mark.parametrize("args", GEOMETRY_BAD_ARGS)
@pytest.mark.parametrize("tool_name", ["analyze", "cost"])
def test_rules_on_the_given_geometry_are_errors(args: dict[str, object], tool_name: str) -> None:
    ep = episode("flange", 0, "easy")
    obs = ep.step(call(tool_name, {**_read(ep.instance), **args}))
    assert not obs.done and ep.tool_calls[-1].is_error
    assert obs.messages[0].text.startswith("Error")


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
    ep = episode("flange", 0, "easy")
    first = ep.step(assistant("Let me think about it."))
    assert "note 4" in first.messages[-1].text and "note 5" in first.messages[-1].text
    assert not first.done
    ep.step(call("analyze", {**_checked(ep.instance), "thickness": 5.0}, "t2"))
    ep.step(call("cost", {**_checked(ep.instance), "thickness": 5.0}, "t3"))
    second = ep.step(assistant("Still thinking."))
    nudge = second.messages[-1].text
    assert "displaces the bore edge by" in nudge and "note 4" in nudge and "costs $" in nudge
    assert f"{ep.instance.hidden['limit_mm']:g} mm" not in nudge
    assert f"{ep.instance.hidden['budget_usd']:.2f}" not in nudge
    third = ep.step(assistant("Done."))
    assert third.done and ep.end_reason == "no_answer"
    assert ep.reward().total == 0.0


# -- reward -------------------------------------------------------------------------


def _submit(ep: Episode, args: dict[str, object]) -> float:
    obs = ep.step(call("submit_design", args, "t99"))
    assert obs.done and ep.end_reason == "answered"
    return ep.reward().total


def test_reward_pays_only_a_conforming_design() -> None:
    inst = SPEC.instance(1, "medium")
    sol = _solution(inst)
    full_ep = episode_for(inst)
    assert _submit(full_ep, sol) == pytest.approx(1.0)
    r = full_ep.reward()
    assert r.success and r.component("conforming") == 1.0 and r.component("economy") == 1.0

    # Each requirement missed alone: nothing, however well the others are met.
    thin_ep = episode_for(inst)
    assert _submit(thin_ep, {**sol, "thickness": round(sol["thickness"] * 0.9, 2)}) == 0.0
    r = thin_ep.reward()
    assert not r.success and "missed" in r.explanation
    assert r.component("displacement") == 0.0 or r.component("stress") == 0.0
    assert r.component("cost") == 1.0 and r.component("material") == 1.0

    heavy_ep = episode_for(inst)
    assert _submit(heavy_ep, {**sol, "thickness": round(sol["thickness"] * 1.3, 2)}) == 0.0
    heavy = heavy_ep.reward()
    assert heavy.component("displacement") == 1.0 and heavy.component("cost") == 0.0

    banned = next(m for m in sim.MATERIALS if m not in inst.hidden["permitted"])
    banned_ep = episode_for(inst)
    assert _submit(banned_ep, {**sol, "material": banned}) == 0.0
    assert banned_ep.reward().component("material") == 0.0

    assert episode_for(inst).reward().total == 0.0  # nothing submitted


def test_reward_gates_on_the_stress_allowable() -> None:
    """A design stiff enough and within the cost limit, but overstressed, earns 0."""
    found = 0
    for seed in range(40):
        inst = SPEC.instance(seed, "easy")
        geom = geometry_of(inst)
        permitted = inst.hidden["permitted"]
        for n, d in sim.valid_patterns(geom):
            for m in permitted:
                t_disp = sim.min_thickness(geom, m, n, d, inst.hidden["limit_mm"])
                t_stress = sim.min_thickness_stress(geom, m, n, d)
                if t_disp is None or t_stress is None or t_stress <= t_disp + 0.2:
                    continue
                t = math.ceil(t_disp * 10) / 10
                design = {"thickness": t, "material": m, "n_bolts": n, "bolt_diameter": d}
                if sim.cost(geom, design_of(design)).total > inst.hidden["budget_usd"]:
                    continue
                ep = episode_for(inst)
                assert _submit(ep, design) == 0.0
                r = ep.reward()
                assert r.component("stress") == 0.0 and r.component("displacement") == 1.0
                assert r.component("cost") == 1.0 and "stress" in r.explanation
                found += 1
                break
            if found:
                break
        if found >= 2:
            return
    assert found, "no overstressed but otherwise conforming design found"


def test_reward_economy_and_efficiency() -> None:
    inst = SPEC.instance(0, "easy")
    sol = _solution(inst)
    geom = geometry_of(inst)
    # a slightly thicker plate: still conforming, dearer, so less economy credit
    thicker = {**sol, "thickness": round(sol["thickness"] + 0.5, 2)}
    total = sim.cost(geom, design_of(thicker)).total
    assert total <= inst.hidden["budget_usd"]
    ep = episode_for(inst)
    value = _submit(ep, thicker)
    r = ep.reward()
    assert r.success and 0.8 < value < 1.0
    econ = economy(total, inst.hidden["solution_cost_usd"], inst.hidden["budget_usd"])
    assert r.component("economy") == pytest.approx(econ) and 0 < econ < 1
    assert value == pytest.approx(0.8 + 0.1 * econ + 0.1)


def test_reward_helpers() -> None:
    assert economy(90.0, 100.0, 110.0) == 1.0
    assert economy(105.0, 100.0, 110.0) == pytest.approx(0.5)
    assert economy(110.0, 100.0, 110.0) == 0.0
    assert efficiency(3, 8) == 1.0 and efficiency(16, 8) == pytest.approx(0.5)
    assert efficiency(100, 8) == 0.0


def test_efficiency_counts_checks() -> None:
    inst = SPEC.instance(0, "hard")
    ep = episode_for(inst)
    for k in range(12):
        ep.step(call("cost", _checked(inst), f"t{k + 10}"))
    _submit(ep, _solution(inst))
    r = ep.reward()
    assert r.success and (r.component("efficiency") or 0) < 1.0 and 0.8 <= r.total < 1.0


# -- expert -------------------------------------------------------------------------


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_expert_solves(difficulty: str) -> None:
    inst = SPEC.instance(7, difficulty)
    ep = run_agent(ExpertAgent(), inst)
    assert ep.end_reason == "answered"
    assert ep.reward().total >= SPEC.solved_threshold
    assert [c.name for c in ep.tool_calls] == ["analyze", "cost", "submit_design"]
    assert not any(c.is_error for c in ep.tool_calls)


def test_expert_says_only_what_the_drawing_shows() -> None:
    inst = SPEC.instance(3, "hard")
    first = SPEC.expert(inst).next_turn(SPEC.generator.prompt(inst))
    d = inst.hidden["drawing"]
    for shown in (
        f"{d['outer_d']:g}",
        f"{d['bcd']:g}",
        f"{d['limit_mm']:g}",
        f"{d['budget_usd']:.2f}",
    ):
        assert shown in first.text
    args = json.loads(first.tool_calls[0].function.arguments)  # type: ignore[index]
    assert args["outer_diameter"] == d["outer_d"] and args["bore_diameter"] == d["bore_d"]


def test_expert_survives_interleaved_random_calls() -> None:
    inst = SPEC.instance(3, "medium")
    expert = SPEC.expert(inst)
    ep = episode_for(inst)
    junk = [
        call("analyze", {"thickness": 4, "material": "oak"}, "t500"),
        call("cost", {**_checked(inst), "thickness": 3.5}, "t501"),
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
        inst = SPEC.instance(seed, "easy")
        ep = run_agent(NoisyAgent(0.3), inst)
        scores.append(ep.reward().total)
    assert sum(scores) / len(scores) >= 0.6


def test_drawing_can_exclude_the_unconstrained_cheapest_material() -> None:
    for seed in range(3):
        inst = SPEC.instance(seed, "easy", exclude_unconstrained_best=1.0)
        best = sim.cheapest_design(geometry_of(inst), inst.hidden["limit_mm"], list(sim.MATERIALS))
        assert best is not None
        assert best[0].material not in inst.hidden["permitted"]


# -- reward integrity: issue 10's exploit and the blind policy on >= 30 seeds ---------

SEEDS = range(30)
LAZY_LIMIT = 0.2


@functools.cache
def _seeded(difficulty: str) -> tuple[Instance, ...]:
    return tuple(SPEC.instance(seed, difficulty) for seed in SEEDS)


def _design(t: float, m: str, n: int, d: int) -> dict[str, typing.Any]:
    return {"thickness": t, "material": m, "n_bolts": n, "bolt_diameter": d}


class ProbeThenStiffest:
    """v2's attack: read the radial span, the bolt circle, the rim and the load out of the
    tools' error messages and ``bolt_stress_mpa``, then submit the stiffest design of one
    material within the budget the text gave. Whatever it cannot read it guesses (a
    typical drawing and cost limit): on v3 the tools only echo its own numbers."""

    GUESS: typing.ClassVar[dict[str, float]] = {
        "outer_d": 350.0,
        "bore_d": 150.0,
        "bcd": 290.0,
        "load_kn": 120.0,
        "budget": 150.0,
    }

    def __init__(self, instance: Instance, material: str = "steel_A36") -> None:
        self.material = material
        self.n = 0
        self.probes = [
            _design(500, material, 32, 36),
            _design(3, material, 32, 36),
            _design(3, material, 4, 36),
            _design(3, material, 4, 10),
        ]

    def _guessed(self) -> dict[str, float]:
        g = self.GUESS
        return {
            "outer_diameter": g["outer_d"],
            "bore_diameter": g["bore_d"],
            "bolt_circle_diameter": g["bcd"],
            "load_kn": g["load_kn"],
        }

    def next_turn(self, messages: list[Message]) -> Message:
        self.n += 1
        if self.n <= len(self.probes):  # v2 took the design alone; v3 needs the drawing data
            return call("analyze", {**self.probes[self.n - 1], **self._guessed()}, f"t{self.n}")
        replies = [m.text for m in messages if m.role == "tool"]
        prompt = "\n".join(m.text for m in messages if m.role == "user")

        def find(pattern: str, texts: list[str]) -> float | None:
            for text in texts:
                found = re.search(pattern, text)
                if found:
                    return float(found.group(1))
            return None

        g = dict(self.GUESS)
        span = find(r"radial span \(bolt circle - bore\)/2 = ([\d.]+) mm", replies)
        bcd = find(r"on the ([\d.]+) mm bolt circle", replies)
        pitch = find(r"bolt pitch ([\d.]+) mm", replies)
        rim = find(r"edge distance ([\d.]+) mm", replies)
        load = find(r"overloaded: ([\d.]+) kN", replies)
        stress = find(r'"bolt_stress_mpa": ([\d.]+)', replies[3:4])
        budget = find(r"budget is \$([\d.]+)", [prompt])
        if bcd is None and pitch is not None:
            bcd = pitch * 32 / math.pi
        if bcd is not None:
            g["bcd"] = bcd
            if span is not None:
                g["bore_d"] = bcd - 2 * span
            if rim is not None:
                g["outer_d"] = bcd + 2 * rim
        if load is not None:
            g["load_kn"] = load
        elif stress is not None:
            g["load_kn"] = stress * 4 * sim.BOLTS[10].stress_area / 1000
        if budget is not None:
            g["budget"] = budget
        geom = sim.Geometry(g["outer_d"], g["bore_d"], g["bcd"], g["load_kn"] * 1000)
        best: tuple[float, sim.Design] | None = None
        try:
            patterns = sim.valid_patterns(geom)
        except sim.DesignError:
            patterns = []
        for n, d in patterns:
            lo, hi = sim.MIN_THICKNESS_MM, geom.a - geom.b
            if sim.cost(geom, sim.Design(lo, self.material, n, d)).total > g["budget"]:
                continue
            for _ in range(30):
                mid = (lo + hi) / 2
                if sim.cost(geom, sim.Design(mid, self.material, n, d)).total <= g["budget"]:
                    lo = mid
                else:
                    hi = mid
            design = sim.Design(math.floor(lo * 10) / 10, self.material, n, d)
            disp = sim.analyze(geom, design).max_displacement
            if best is None or disp < best[0]:
                best = (disp, design)
        des = best[1] if best else sim.Design(20.0, self.material, 8, 16)
        return call(
            "submit_design", _design(des.thickness, des.material, des.n_bolts, des.bolt_d), "t99"
        )


def _blind(instance: Instance) -> typing.Any:
    """The task's blind policy, given the instance as the adversarial check does (the
    hidden data emptied)."""
    assert SPEC.blind_policy is not None
    return SPEC.blind_policy(_with_hidden(instance, {}))


def _play(factory: typing.Callable[[Instance], typing.Any], difficulty: str) -> tuple[float, float]:
    totals, wins = [], []
    for inst in _seeded(difficulty):
        policy = factory(inst)
        ep = episode_for(inst)
        while not ep.done:
            ep.step(policy.next_turn(ep.messages))
        totals.append(ep.reward().total)
        wins.append(ep.reward().success)
    return statistics.fmean(totals), statistics.fmean(wins)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
@pytest.mark.parametrize("material", ["steel_A36", "aluminium_6061", "ductile_iron"])
def test_probe_then_stiffest_affordable_earns_nothing(material: str, difficulty: str) -> None:
    """v2: 0.44/0.58/0.74 (steel A36), 0.51/0.59/0.69 (aluminium) on easy/medium/hard."""
    mean, success = _play(lambda inst: ProbeThenStiffest(inst, material), difficulty)
    assert mean <= LAZY_LIMIT and success <= 0.05, (mean, success)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_blind_policy_earns_nothing(difficulty: str) -> None:
    mean, success = _play(_blind, difficulty)
    assert mean <= LAZY_LIMIT and success <= 0.05, (mean, success)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_expert_solves_every_seed(difficulty: str) -> None:
    mean, success = _play(SPEC.expert, difficulty)
    assert mean >= SPEC.solved_threshold and success == 1.0


def test_blind_policy_is_the_best_constant_over_the_prior() -> None:
    inst = SPEC.instance(0, "easy")
    policy = _blind(inst)
    ep = episode_for(inst)
    while not ep.done:
        ep.step(policy.next_turn(ep.messages))
    assert [c.name for c in ep.tool_calls] == ["analyze", "cost", "submit_design"]
    # the same design on every drawing: there is nothing instance-specific to read
    other = _blind(SPEC.instance(5, "easy"))
    assert other.design == policy.design
    assert 0.0 < policy.share < 0.2
