"""Layer 2: the flange world — analyze, cost and the final submit_design tool.

``analyze`` and ``cost`` are a calculator: they run the plate and cost models on the
dimensions and load the agent read from the drawing and passes in, never on the
drawing's own numbers. A tool that computed with the hidden geometry would give it away:
v2's error messages quoted the radial span, the bolt circle, the rim and the load, its
``bolt_stress_mpa`` was the load over a known area, and a few displacements fit the
documented model's four unknowns. ``submit_design`` checks only the rules that do not
depend on the drawing; the reward verifies the rest against the drawing itself.

``analyze`` and ``cost`` return dicts, so their results are data too (the text is that
dict as JSON); ``submit_design`` gives the design it accepted. A rejected design is an
error (``ToolResult.is_error``). Scripted policies read these, not the text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from agentharness.core.instance import Instance
from agentharness.core.tools import ToolError, ToolResult, World, tool
from agentharness.tasks.flange.generator import design_of
from agentharness.tasks.flange.simulator import (
    Analysis,
    Cost,
    Design,
    DesignError,
    Geometry,
    check_parts,
)
from agentharness.tasks.flange.simulator import analyze as run_analysis
from agentharness.tasks.flange.simulator import cost as run_cost

# Spelled out so the tool schema carries an enum; the tests check it equals MATERIALS.
MaterialName = Literal[
    "steel_A36",
    "stainless_304",
    "aluminium_6061",
    "ductile_iron",
    "steel_4140",
    "bronze_C954",
    "titanium_Ti6Al4V",
]
BoltSize = Literal[10, 12, 16, 20, 24, 30, 36]
Thickness = Annotated[float, Field(gt=0, le=500)]
BoltCount = Annotated[int, Field(ge=4, le=32)]
Diameter = Annotated[float, Field(gt=0, le=5000)]
LoadKn = Annotated[float, Field(gt=0, le=100_000)]


def _stiffness_hint(result: Analysis) -> str:
    """Which change reduces this design's displacement most: its largest contribution."""
    parts = {
        "plate bending": (result.bending, "a thicker plate or a stiffer material"),
        "transverse shear": (result.shear, "a thicker plate"),
        "bolt stretch": (result.bolt_stretch, "more or larger bolts"),
    }
    total = sum(value for value, _ in parts.values()) or 1.0
    name, (value, remedy) = max(parts.items(), key=lambda kv: kv[1][0])
    stress = (
        "The plate stress is within the allowable."
        if result.stress_ok
        else "The plate stress exceeds the allowable: a thicker plate or a stronger material."
    )
    return (
        f"Compare the displacement with the drawing's limit (note 4). {name.capitalize()} is "
        f"{100 * value / total:.0f}% of it: {remedy} reduces it most; more or larger bolts also "
        f"stiffen the rim restraint. {stress}"
    )


@dataclass(frozen=True)
class Checked:
    """One analyze (``displacement``) or cost (``cost``) call that returned a result."""

    design: Design
    displacement: float | None = None
    cost: float | None = None


class FlangeWorld(World):
    """One episode's flange tools and a call log; the drawing is the reward's business."""

    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        self.checks = 0  # analyze + cost calls (the efficiency component counts them)
        self.history: list[Checked] = []

    # -- helpers --------------------------------------------------------------------
    @staticmethod
    def _design(thickness: float, material: str, n_bolts: int, bolt_diameter: int) -> Design:
        return design_of(
            {
                "thickness": thickness,
                "material": material,
                "n_bolts": n_bolts,
                "bolt_diameter": bolt_diameter,
            }
        )

    @staticmethod
    def _reading(outer: float, bore: float, bcd: float, load_kn: float) -> Geometry:
        return Geometry(outer_d=outer, bore_d=bore, bcd=bcd, load_n=load_kn * 1000.0)

    @staticmethod
    def run(geom: Geometry, design: Design) -> tuple[Analysis, Cost]:
        """Both models on ``geom``; a broken rule becomes a ToolError naming it."""
        try:
            return run_analysis(geom, design), run_cost(geom, design)
        except DesignError as e:
            raise ToolError(f"design rejected: {e}") from e

    @staticmethod
    def _label(d: Design) -> str:
        return f"t={d.thickness:g} mm, {d.material}, {d.n_bolts} x M{d.bolt_d}"

    @staticmethod
    def _on(g: Geometry) -> str:
        return (
            f"OD {g.outer_d:g}, bore {g.bore_d:g}, B.C. {g.bcd:g} mm, F {g.load_n / 1000:g} kN "
            "(as you gave them)"
        )

    # -- tools ----------------------------------------------------------------------
    @tool
    def analyze(
        self,
        thickness: Thickness,
        material: MaterialName,
        n_bolts: BoltCount,
        bolt_diameter: BoltSize,
        outer_diameter: Diameter,
        bore_diameter: Diameter,
        bolt_circle_diameter: Diameter,
        load_kn: LoadKn,
    ) -> dict[str, Any]:
        """Displacement of the bore edge and plate stress of a design, on the drawing data you give.

        Args:
            thickness: plate thickness in mm.
            material: catalogue material name, e.g. "steel_A36".
            n_bolts: number of bolts on the bolt circle (a multiple of 4, 4 to 32).
            bolt_diameter: metric bolt size number, e.g. 16 for M16.
            outer_diameter: the drawing's outer diameter, mm.
            bore_diameter: the drawing's bore diameter, mm.
            bolt_circle_diameter: the drawing's bolt-circle diameter (B.C.), mm.
            load_kn: the axial load on the bore in kN (from a design pressure p in MPa:
                p * pi * bore^2 / 4 / 1000).
        """
        design = self._design(thickness, material, n_bolts, bolt_diameter)
        geom = self._reading(outer_diameter, bore_diameter, bolt_circle_diameter, load_kn)
        self.checks += 1
        result, _ = self.run(geom, design)
        disp = result.max_displacement
        self.history.append(Checked(design, displacement=disp))
        # No limit here: it is on the drawing (note 4), and these numbers are the agent's.
        return {
            "design": self._label(design),
            "on": self._on(geom),
            "max_displacement_mm": round(disp, 5),
            "breakdown_mm": {
                "plate_bending": round(result.bending, 5),
                "transverse_shear": round(result.shear, 5),
                "bolt_stretch": round(result.bolt_stretch, 5),
            },
            "rim_restraint_0_hinged_1_clamped": round(result.restraint, 3),
            "peak_plate_stress_mpa": round(result.plate_stress, 1),
            "allowable_plate_stress_mpa": round(result.allowable_stress, 1),
            "plate_stress_ok": result.stress_ok,
            "bolt_stress_mpa": round(result.bolt_stress, 1),
            "feedback": _stiffness_hint(result),
        }

    @tool
    def cost(
        self,
        thickness: Thickness,
        material: MaterialName,
        n_bolts: BoltCount,
        bolt_diameter: BoltSize,
        outer_diameter: Diameter,
        bore_diameter: Diameter,
        bolt_circle_diameter: Diameter,
        load_kn: LoadKn,
    ) -> dict[str, Any]:
        """Cost breakdown of a design in dollars, on the drawing data you give.

        Args:
            thickness: plate thickness in mm.
            material: catalogue material name, e.g. "steel_A36".
            n_bolts: number of bolts on the bolt circle (a multiple of 4, 4 to 32).
            bolt_diameter: metric bolt size number, e.g. 16 for M16.
            outer_diameter: the drawing's outer diameter, mm.
            bore_diameter: the drawing's bore diameter, mm.
            bolt_circle_diameter: the drawing's bolt-circle diameter (B.C.), mm.
            load_kn: the axial load on the bore in kN (the bolt rules need it).
        """
        design = self._design(thickness, material, n_bolts, bolt_diameter)
        geom = self._reading(outer_diameter, bore_diameter, bolt_circle_diameter, load_kn)
        self.checks += 1
        _, c = self.run(geom, design)
        total = c.total
        self.history.append(Checked(design, cost=total))
        return {
            "design": self._label(design),
            "on": self._on(geom),
            "breakdown_usd": {
                "material": round(c.material, 2),
                "turning": round(c.machining, 2),
                "drilling": round(c.drilling, 2),
                "bolts": round(c.bolts, 2),
            },
            "total_usd": round(total, 2),
            "mass_kg": round(c.mass_kg, 3),
            "feedback": "Compare the total with the drawing's unit cost limit (note 5); a "
            "thinner plate, fewer or smaller bolts, or a material with a lower "
            "price/machinability costs less.",
        }

    @tool(final=True)
    def submit_design(
        self,
        thickness: Thickness,
        material: MaterialName,
        n_bolts: BoltCount,
        bolt_diameter: BoltSize,
    ) -> ToolResult:
        """Submit the final design; ends the episode. It is verified against the drawing.

        Args:
            thickness: plate thickness in mm.
            material: catalogue material name, e.g. "steel_A36".
            n_bolts: number of bolts on the bolt circle (a multiple of 4, 4 to 32).
            bolt_diameter: metric bolt size number, e.g. 16 for M16.
        """
        design = self._design(thickness, material, n_bolts, bolt_diameter)
        # Only the drawing-free rules: a rejection naming a rule of the drawing's geometry
        # would let an agent probe the drawing one submission at a time.
        try:
            check_parts(design)
        except DesignError as e:
            raise ToolError(f"design rejected: {e}") from e
        return ToolResult(
            text=f"Design submitted: {self._label(design)}. It will be verified against the "
            "drawing.",
            data={"design": self._label(design), "submitted": True},
        )
