"""Layer 1: draw a flange problem around a cheapest feasible design, and its prompt.

Every instance-specific number — the diameters, the load, the displacement limit, the
cost limit and the permitted materials — lives on the hidden
:class:`~agentharness.tasks.flange.problem.Drawing` and reaches the agent only as the
rendered engineering drawing. The text is the same for every instance but the drawing
number: the catalogue (materials with their yield stress, bolts), the rules, the cost
model and the tools.
"""

from __future__ import annotations

import math
import random
from typing import Any

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, system, user
from agentharness.core.task import Problem, UnsatisfiableKnobsError
from agentharness.tasks.flange.config import FlangeConfig
from agentharness.tasks.flange.problem import Drawing, Hidden, Public, Solution
from agentharness.tasks.flange.simulator import (
    BOLT_ALLOWABLE_MPA,
    BOLTS,
    DRILL_RATE,
    FACE_RATE,
    HOLE_BASE,
    INNER_EDGE_FACTOR,
    MATERIALS,
    MAX_BOLTS,
    MIN_BOLTS,
    MIN_PITCH_FACTOR,
    MIN_THICKNESS_MM,
    OUTER_EDGE_FACTOR,
    SETUP,
    STRESS_SAFETY_FACTOR,
    TURN_RATE,
    Design,
    DesignError,
    Geometry,
    analyze,
    cheapest_design,
    cost,
    valid_patterns,
)

PRESSURES_MPA = (2.5, 4.0, 6.3, 10.0, 16.0)  # PN25 ... PN160
MAX_ATTEMPTS = 200


def _round_to(x: float, step: float) -> float:
    return round(round(x / step) * step, 6)


def _sig3(x: float) -> float:
    """``x`` to three significant figures (what the drawing prints)."""
    return float(f"{x:.3g}")


def geometry_of(instance: Instance) -> Geometry:
    """The drawing's dimensions and exact load of ``instance``."""
    return instance.hidden_as(Hidden).geometry()


def design_of(args: dict[str, Any]) -> Design:
    """A :class:`Design` from tool arguments (``bolt_diameter`` names the bolt size)."""
    return Design(
        thickness=float(args["thickness"]),
        material=str(args["material"]),
        n_bolts=int(args["n_bolts"]),
        bolt_d=int(args["bolt_diameter"]),
    )


def design_args(design: Design) -> Solution:
    """A :class:`Design` in the tools' argument names."""
    return Solution(
        thickness=design.thickness,
        material=design.material,
        n_bolts=design.n_bolts,
        bolt_diameter=design.bolt_d,
    )


class FlangeGenerator:
    """Samples the drawing, a displacement limit and a budget with a known feasible design."""

    def generate(self, config: FlangeConfig, seed: int) -> Problem:
        rng = random.Random(f"flange-v3:{seed}")
        for _ in range(MAX_ATTEMPTS):
            problem = self._attempt(config, rng, seed)
            if problem is not None:
                return problem
        raise UnsatisfiableKnobsError(
            f"flange: no solvable instance after {MAX_ATTEMPTS} draws for seed {seed}; loosen "
            "the knobs (a larger budget_slack, a smaller exclude_unconstrained_best, a wider "
            "bore range)"
        )

    def _attempt(self, config: FlangeConfig, rng: random.Random, seed: int) -> Problem | None:
        bore = _round_to(rng.uniform(config.bore_min_mm, config.bore_max_mm), 5.0)
        span = _round_to(rng.uniform(0.2, 0.45) * bore + 22.0, 5.0)
        rim = _round_to(rng.uniform(20.0, 45.0), 2.5)
        bcd = bore + 2 * span
        outer = bcd + 2 * rim
        pressure = rng.choice(PRESSURES_MPA)
        if config.load_as_pressure:
            load_n = pressure * math.pi * bore**2 / 4
        else:
            load_n = _round_to(pressure * math.pi * bore**2 / 4, 100.0)
        geom = Geometry(outer_d=outer, bore_d=bore, bcd=bcd, load_n=load_n)
        patterns = valid_patterns(geom)
        if not patterns:
            return None
        # The limit is what a plain steel flange of moderate thickness achieves.
        ref_n, ref_d = patterns[len(patterns) // 2]
        t_ref = rng.uniform(0.15, 0.35) * span
        try:
            ref = analyze(geom, Design(t_ref, "steel_A36", ref_n, ref_d))
        except DesignError:
            return None
        limit = _sig3(ref.max_displacement)

        # Often the drawing rules out the material that would be cheapest overall (as a
        # corrosion or weight requirement would), so ignoring note 2 does not pay.
        names = list(MATERIALS)
        pool = names
        if rng.random() < config.exclude_unconstrained_best:
            overall = cheapest_design(geom, limit, names)
            if overall is not None:
                pool = [m for m in names if m != overall[0].material]
        if config.n_permitted > len(pool):
            pool = names
        permitted = sorted(rng.sample(pool, config.n_permitted), key=names.index)
        best = cheapest_design(geom, limit, permitted)
        if best is None:
            return None
        solution, best_cost = best
        if not 5.0 <= solution.thickness <= 0.8 * span:
            return None
        budget = float(math.ceil(best_cost * (1.0 + config.budget_slack)))
        check = analyze(geom, solution)  # verify the construction
        check_cost = cost(geom, solution).total
        if check.max_displacement > limit or not check.stress_ok or check_cost > budget:
            return None

        drawing = Drawing(
            # Not derived from the seed: the number must not identify the instance.
            number=f"FL-{rng.randrange(10000):04d}-{rng.randrange(100):02d}",
            outer_d=outer,
            bore_d=bore,
            bcd=bcd,
            load_kn=round(load_n / 1000.0, 1),
            pressure_mpa=pressure,
            load_as_pressure=config.load_as_pressure,
            limit_mm=limit,
            budget_usd=budget,
            permitted=tuple(permitted),
        )
        hidden = Hidden(
            drawing=drawing,
            load_n=load_n,
            limit_mm=limit,
            budget_usd=budget,
            permitted=tuple(permitted),
            solution=design_args(solution),
            solution_displacement_mm=check.max_displacement,
            solution_stress_mpa=check.plate_stress,
            solution_cost_usd=check_cost,
        )
        public = Public(drawing_number=drawing.number)
        return Problem(public=public.model_dump(mode="json"), hidden=hidden.model_dump(mode="json"))

    def prompt(self, instance: Instance) -> list[Message]:
        from agentharness.tasks.flange.render import drawing_png

        png = drawing_png(instance.hidden_as(Hidden).drawing)
        number = instance.public_as(Public).drawing_number
        return [
            system(SYSTEM_PROMPT),
            user(
                f"Design the flange of drawing {number} (attached). The drawing gives the "
                "dimensions, the load, the displacement limit (note 4), the unit cost limit "
                "(note 5) and the permitted materials (note 2).\n\n" + catalogue_text(),
                images=[png],
            ),
        ]


SYSTEM_PROMPT = (
    "You are a mechanical design engineer. You receive an engineering drawing of a flat "
    "bolted flange. The drawing fixes the outer diameter, the bore diameter, the bolt-circle "
    "diameter, the axial load pulling on the bore (or the design pressure acting on the "
    "bore area, F = p * pi * bore^2 / 4), the allowed axial displacement of the bore edge, "
    "the unit cost limit and which materials are permitted. You choose the plate thickness "
    "(mm), the material, the number of bolts and the bolt size so that the maximum "
    "displacement is at or below the drawing's limit, the peak plate bending stress is at "
    "or below the material's allowable stress, and the cost is at or below the drawing's "
    "cost limit.\n\n"
    "Tools (a calculator: they compute with the dimensions and load you read from the "
    "drawing and pass in, and do not see the drawing themselves):\n"
    "- analyze(thickness, material, n_bolts, bolt_diameter, outer_diameter, bore_diameter, "
    "bolt_circle_diameter, load_kn): maximum displacement with a breakdown (plate bending, "
    "transverse shear, bolt stretch), the peak plate bending stress against the material's "
    "allowable, and the bolt stress; compare the displacement with the drawing's limit.\n"
    "- cost(same arguments): cost breakdown and total; compare it with the drawing's cost "
    "limit.\n"
    "- submit_design(thickness, material, n_bolts, bolt_diameter): your final answer; it "
    "ends the episode and is verified against the drawing itself.\n"
    "A design that breaks a design rule is rejected with a message saying which rule. "
    "Scoring: the submitted design earns credit only if it meets every requirement of the "
    "drawing (design rules, displacement, stress, cost limit, a permitted material); then "
    "a cost close to the cheapest feasible design and few analyze/cost calls score "
    "slightly better."
)


def catalogue_text() -> str:
    lines = [
        "Material catalogue (name: E GPa, Poisson, density kg/m3, $/kg, machinability, yield MPa):"
    ]
    for m in MATERIALS.values():
        lines.append(
            f"- {m.name} ({m.label.lower()}): {m.e_gpa:g}, {m.nu:g}, {m.density:g}, "
            f"{m.price_per_kg:.2f}, {m.machinability:g}, {m.yield_mpa:g}"
        )
    lines.append("Bolts, metric grade 8.8 (size: stress area mm2, clearance hole mm, $ per set):")
    lines.append(
        "- "
        + "; ".join(
            f"M{b.d}: {b.stress_area:g}, {b.hole_d:g}, {b.set_price:.2f}" for b in BOLTS.values()
        )
    )
    lines.append(
        "Design rules: n_bolts a multiple of 4 from "
        f"{MIN_BOLTS} to {MAX_BOLTS}; bolt pitch pi*BCD/n >= {MIN_PITCH_FACTOR:g} d; hole "
        f"centre to outer edge >= {OUTER_EDGE_FACTOR:g} x hole; hole centre to bore >= "
        f"{INNER_EDGE_FACTOR:g} x hole; bolt stress F/(n*stress area) <= "
        f"{BOLT_ALLOWABLE_MPA:g} MPa; thickness from {MIN_THICKNESS_MM:g} mm up to the radial "
        "span (BCD - bore)/2."
    )
    lines.append(
        "Strength: the peak plate bending stress (6 M / t^2, the larger of the tangential "
        "moment at the bore and the radial moment at the bolt circle) must not exceed the "
        f"material's yield / {STRESS_SAFETY_FACTOR:g}; a thicker plate lowers it."
    )
    lines.append(
        "Cost model (dollars; m = machinability): material = pi/4*OD^2*t*density*price; "
        f"turning = {SETUP:g} + m*({FACE_RATE:g}*2*face area + {TURN_RATE:g}*pi*(OD+bore)*t); "
        f"drilling = n*m*({HOLE_BASE:g} + {DRILL_RATE:g}*hole*t); bolts = n * set price. "
        "Lengths in mm."
    )
    lines.append(
        "Displacement model: the plate between bore and bolt circle bends under the bore "
        "load (Roark annular plate, inner edge free); the bolts restrain the rim's rotation "
        "(more, larger bolts and a wider rim make it closer to clamped) and stretch; a "
        "transverse-shear term is added. Thicker plates and stiffer materials deflect less."
    )
    lines.append(
        "Answer by calling submit_design with thickness in mm, material by its catalogue "
        "name, n_bolts and bolt_diameter as the bolt size number (e.g. 16 for M16)."
    )
    return "\n".join(lines)
