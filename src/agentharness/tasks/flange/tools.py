"""Layer 2: the flange world — analyze, cost and the final submit_design tool."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from agentharness.core.instance import Instance
from agentharness.core.tools import ToolError, ToolResult, World, tool
from agentharness.tasks.flange.generator import design_of, geometry_of
from agentharness.tasks.flange.simulator import Analysis, Cost, Design, DesignError
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


def _pct(x: float) -> str:
    return f"{100 * x:+.1f}%"


def _stiffness_hint(result: Analysis) -> str:
    """Which change reduces this design's displacement most: its largest contribution."""
    parts = {
        "plate bending": (result.bending, "a thicker plate or a stiffer material"),
        "transverse shear": (result.shear, "a thicker plate"),
        "bolt stretch": (result.bolt_stretch, "more or larger bolts"),
    }
    total = sum(value for value, _ in parts.values()) or 1.0
    name, (value, remedy) = max(parts.items(), key=lambda kv: kv[1][0])
    return (
        f"Compare the displacement with the drawing's limit (note 4). {name.capitalize()} is "
        f"{100 * value / total:.0f}% of it: {remedy} reduces it most; more or larger bolts also "
        "stiffen the rim restraint."
    )


class FlangeWorld(World):
    """One episode's flange: the drawing's geometry, the budget, and a call log."""

    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        self.geometry = geometry_of(instance)
        self.budget = float(instance.hidden["budget_usd"])
        self.checks = 0  # analyze + cost calls (the efficiency component counts them)
        self.history: list[dict[str, Any]] = []

    # -- helpers --------------------------------------------------------------------
    def _design(self, thickness: float, material: str, n_bolts: int, bolt_diameter: int) -> Design:
        return design_of(
            {
                "thickness": thickness,
                "material": material,
                "n_bolts": n_bolts,
                "bolt_diameter": bolt_diameter,
            }
        )

    def evaluate(self, design: Design) -> tuple[Analysis, Cost]:
        """Re-run both models (the reward uses this too); DesignError becomes ToolError."""
        try:
            return run_analysis(self.geometry, design), run_cost(self.geometry, design)
        except DesignError as e:
            raise ToolError(f"design rejected: {e}") from e

    @staticmethod
    def _label(d: Design) -> str:
        return f"t={d.thickness:g} mm, {d.material}, {d.n_bolts} x M{d.bolt_d}"

    # -- tools ----------------------------------------------------------------------
    @tool
    def analyze(
        self,
        thickness: Thickness,
        material: MaterialName,
        n_bolts: BoltCount,
        bolt_diameter: BoltSize,
    ) -> dict[str, Any]:
        """Maximum axial displacement of the bore edge for a design (the drawing gives the limit).

        Args:
            thickness: plate thickness in mm.
            material: catalogue material name, e.g. "steel_A36".
            n_bolts: number of bolts on the bolt circle (a multiple of 4, 4 to 32).
            bolt_diameter: metric bolt size number, e.g. 16 for M16.
        """
        design = self._design(thickness, material, n_bolts, bolt_diameter)
        self.checks += 1
        result, _ = self.evaluate(design)
        disp = result.max_displacement
        self.history.append({"design": design, "displacement": disp})
        # The limit is deliberately not repeated here: it is read from the drawing (note 4).
        return {
            "design": self._label(design),
            "max_displacement_mm": round(disp, 5),
            "breakdown_mm": {
                "plate_bending": round(result.bending, 5),
                "transverse_shear": round(result.shear, 5),
                "bolt_stretch": round(result.bolt_stretch, 5),
            },
            "rim_restraint_0_hinged_1_clamped": round(result.restraint, 3),
            "bolt_stress_mpa": round(result.bolt_stress, 1),
            "peak_plate_bending_stress_mpa": round(result.plate_stress, 1),
            "feedback": _stiffness_hint(result),
        }

    @tool
    def cost(
        self,
        thickness: Thickness,
        material: MaterialName,
        n_bolts: BoltCount,
        bolt_diameter: BoltSize,
    ) -> dict[str, Any]:
        """Cost breakdown of a design in dollars, against the budget.

        Args:
            thickness: plate thickness in mm.
            material: catalogue material name, e.g. "steel_A36".
            n_bolts: number of bolts on the bolt circle (a multiple of 4, 4 to 32).
            bolt_diameter: metric bolt size number, e.g. 16 for M16.
        """
        design = self._design(thickness, material, n_bolts, bolt_diameter)
        self.checks += 1
        _, c = self.evaluate(design)
        total = c.total
        ok = total <= self.budget
        self.history.append({"design": design, "cost": total, "within_budget": ok})
        if ok:
            hint = f"within budget with ${self.budget - total:.2f} to spare"
        else:
            hint = (
                f"{_pct(total / self.budget - 1)} over budget: a thinner plate, fewer or smaller "
                "bolts, or a material with a lower price/machinability helps"
            )
        return {
            "design": self._label(design),
            "breakdown_usd": {
                "material": round(c.material, 2),
                "turning": round(c.machining, 2),
                "drilling": round(c.drilling, 2),
                "bolts": round(c.bolts, 2),
            },
            "total_usd": round(total, 2),
            "budget_usd": self.budget,
            "margin_usd": round(self.budget - total, 2),
            "within_budget": ok,
            "mass_kg": round(c.mass_kg, 3),
            "feedback": hint,
        }

    @tool(final=True)
    def submit_design(
        self,
        thickness: Thickness,
        material: MaterialName,
        n_bolts: BoltCount,
        bolt_diameter: BoltSize,
    ) -> ToolResult:
        """Submit the final design; ends the episode. It is re-analyzed and re-costed for scoring.

        Args:
            thickness: plate thickness in mm.
            material: catalogue material name, e.g. "steel_A36".
            n_bolts: number of bolts on the bolt circle (a multiple of 4, 4 to 32).
            bolt_diameter: metric bolt size number, e.g. 16 for M16.
        """
        design = self._design(thickness, material, n_bolts, bolt_diameter)
        self.evaluate(design)  # a design that breaks a rule is an error, not an answer
        return ToolResult(text=f"Design submitted: {self._label(design)}. It will be verified.")
