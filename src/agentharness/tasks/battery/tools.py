"""Layer 2: the per-episode cell-design world: simulate, submit, and the calculator.

``simulate_cell`` and ``submit_design`` act on the cell; both return their report as data
too (``ToolResult.data``, the same dict the text of ``simulate_cell`` prints as JSON), so
scripted policies read results without parsing. ``calculate`` and ``solve_linear`` (from
:class:`~agentharness.core.calculator.CalculatorWorld`) compute on numbers the agent passes
in: they know nothing of the cell and cost no simulation.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field

from agentharness.core.calculator import CalculatorWorld
from agentharness.core.instance import Instance
from agentharness.core.tools import ToolError, ToolResult, tool
from agentharness.tasks.battery.problem import Public
from agentharness.tasks.battery.simulator import (
    END_DEPLETION,
    H_RANGE,
    POROSITY_RANGE,
    THICKNESS_RANGE_UM,
    CellDesign,
    CellResult,
    DesignError,
    SimulationError,
    Verdict,
    judge,
    negative_thickness_um,
    simulate,
)

Thickness = Annotated[float, Field(ge=THICKNESS_RANGE_UM[0], le=THICKNESS_RANGE_UM[1])]
Porosity = Annotated[float, Field(ge=POROSITY_RANGE[0], le=POROSITY_RANGE[1])]
Cooling = Annotated[float, Field(ge=H_RANGE[0], le=H_RANGE[1])] | None

# The first call in a process imports PyBaMM and builds the model (5-15 s on a busy
# machine); later calls take a few hundredths of a second.
COLD_START_TIMEOUT_S = 120.0


def make_design(
    instance: Instance, thickness_um: float, porosity: float, heat_transfer: float | None
) -> tuple[CellDesign, float | None]:
    """The design under the instance's conditions, and the cooling baseline if cooling is free.

    Raises :class:`ToolError` when the cooling argument does not fit the instance.
    """
    pub = instance.public_as(Public)
    natural = pub.heat_transfer_w_m2k
    baseline: float | None = None
    if pub.choose_cooling:
        allowed = [natural, *(pub.cooling_options_w_m2k or ())]
        h = natural if heat_transfer is None else float(heat_transfer)
        if not any(abs(h - a) < 1e-6 for a in allowed):
            raise ToolError(
                f"heat_transfer_coefficient={h:g} is not on offer: pass one of "
                f"{', '.join(f'{a:g}' for a in allowed[1:])} W/m²K (a forced-cooling system), "
                f"or omit it (or pass {natural:g}) for natural convection."
            )
        baseline = natural
    else:
        if heat_transfer is not None and abs(float(heat_transfer) - natural) > 1e-9:
            raise ToolError(
                f"cooling is fixed in this problem (h = {natural:g} W/m²K); omit "
                "heat_transfer_coefficient or pass exactly that value."
            )
        h = natural
    design = CellDesign(
        thickness_um=float(thickness_um),
        porosity=float(porosity),
        c_rate=pub.c_rate,
        heat_transfer=h,
        ambient_c=pub.ambient_c,
    )
    return design, baseline


def run_design(
    instance: Instance, thickness_um: float, porosity: float, heat_transfer: float | None
) -> tuple[CellResult, Verdict]:
    """Simulate and judge; bad inputs and solver failures become :class:`ToolError`."""
    design, baseline = make_design(instance, thickness_um, porosity, heat_transfer)
    try:
        result = simulate(design, baseline_h=baseline)
    except DesignError as e:
        raise ToolError(f"invalid design: {e}. Choose values inside the stated ranges.") from e
    except SimulationError as e:
        raise ToolError(
            f"the PyBaMM simulation failed for this design ({e}). Try a less extreme design "
            "(e.g. thinner or more porous)."
        ) from e
    pub = instance.public_as(Public)
    verdict = judge(result, pub.specific_energy_target_wh_kg, pub.peak_temperature_limit_c)
    return result, verdict


def feedback(instance: Instance, r: CellResult, v: Verdict) -> str:
    """Plain-language verdict: what fails, by how much, and which way to move."""
    cooling = instance.public_as(Public).choose_cooling
    parts: list[str] = []
    if v.energy_ok:
        parts.append(
            f"Specific energy {v.specific_energy_wh_kg:.1f} Wh/kg meets the target "
            f"({v.energy_margin:.1f} Wh/kg to spare)."
        )
    else:
        short = -v.energy_margin
        msg = (
            f"Specific energy {v.specific_energy_wh_kg:.1f} Wh/kg is {short:.1f} Wh/kg "
            f"({100 * short / v.target_wh_kg:.1f} %) BELOW the target {v.target_wh_kg:g} Wh/kg."
        )
        if r.end_reason == END_DEPLETION or r.utilization < 0.85:
            msg += (
                f" The discharge was transport-limited ({r.end_reason}; only "
                f"{100 * r.utilization:.0f} % of the nominal capacity delivered): the electrode is "
                "too thick or too dense for this C-rate; make it thinner or more porous."
            )
        else:
            msg += (
                " More active material per unit mass raises it: a thicker and/or denser "
                "(lower-porosity) positive electrode, which also runs hotter."
            )
            if cooling and r.mass.cooling > 0:
                msg += " Less forced cooling also saves mass."
        parts.append(msg)
    if v.thermal_ok:
        parts.append(
            f"Peak temperature {v.peak_temperature_c:.2f} °C is within the limit "
            f"({v.thermal_margin:.2f} K below {v.limit_c:g} °C)."
        )
    else:
        over = -v.thermal_margin
        msg = (
            f"Peak temperature {v.peak_temperature_c:.2f} °C EXCEEDS the limit {v.limit_c:g} °C "
            f"by {over:.2f} K. A thinner and/or more porous electrode generates less heat"
        )
        msg += "; a stronger forced-cooling system (costs mass) removes more." if cooling else "."
        parts.append(msg)
    parts.append("FEASIBLE: both constraints hold." if v.feasible else "NOT feasible yet.")
    return " ".join(parts)


def report(instance: Instance, r: CellResult, v: Verdict) -> dict[str, Any]:
    """The full feedback of one simulation."""
    d = r.design
    return {
        "design": {
            "thickness_um": d.thickness_um,
            "porosity": d.porosity,
            "heat_transfer_coefficient_w_m2k": d.heat_transfer,
        },
        "conditions": {"c_rate": d.c_rate, "ambient_c": d.ambient_c},
        "derived": {
            "negative_thickness_um": round(negative_thickness_um(d.thickness_um, d.porosity), 1),
            "nominal_capacity_ah": round(r.nominal_capacity_ah, 3),
            "discharge_current_a": round(d.c_rate * r.nominal_capacity_ah, 3),
        },
        "results": {
            "energy_wh": round(r.energy_wh, 3),
            "capacity_ah": round(r.capacity_ah, 3),
            "utilization": round(r.utilization, 3),
            "average_voltage_v": round(r.average_voltage, 3),
            "discharge_time_min": round(r.duration_min, 1),
            "end_of_discharge": r.end_reason,
            "cell_mass_g": round(r.mass.total, 2),
            "mass_breakdown_g": r.mass.as_dict(),
            "specific_energy_wh_kg": round(r.specific_energy_wh_kg, 2),
            "peak_temperature_c": round(r.peak_temperature_c, 2),
            "temperature_rise_k": round(r.peak_temperature_c - d.ambient_c, 2),
        },
        "constraints": {
            "specific_energy": {
                "value_wh_kg": round(v.specific_energy_wh_kg, 2),
                "target_wh_kg": v.target_wh_kg,
                "margin_wh_kg": round(v.energy_margin, 2),
                "satisfied": v.energy_ok,
            },
            "peak_temperature": {
                "value_c": round(v.peak_temperature_c, 2),
                "limit_c": v.limit_c,
                "margin_k": round(v.thermal_margin, 2),
                "satisfied": v.thermal_ok,
            },
        },
        "feasible": v.feasible,
        "feedback": feedback(instance, r, v),
    }


def slack(v: Verdict) -> float:
    """A scale-free score of a design: the worse of the two relative margins."""
    return min(v.energy_margin / max(v.target_wh_kg, 1.0), v.thermal_margin / 10.0)


class BatteryWorld(CalculatorWorld):
    """One episode: counts simulations and remembers the best design seen."""

    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        self.public = instance.public_as(Public)
        self.simulations = 0
        self.best: dict[str, Any] | None = None
        self._best_slack = float("-inf")

    @tool(timeout_s=COLD_START_TIMEOUT_S)
    def simulate_cell(
        self,
        thickness_um: Thickness,
        porosity: Porosity,
        heat_transfer_coefficient: Cooling = None,
    ) -> ToolResult:
        """Simulate a constant-current discharge of a cell design (PyBaMM DFN + lumped thermal).

        Reports energy, capacity, cell mass, specific energy, peak temperature and how far the
        design is from the specific-energy target and the temperature limit.

        Args:
            thickness_um: positive-electrode thickness in micrometres (30 to 150).
            porosity: positive-electrode porosity, the electrolyte volume fraction (0.15 to 0.6).
            heat_transfer_coefficient: only when the problem offers forced cooling: the total
                heat-transfer coefficient in W/m²K of one of the cooling systems on offer (omit it
                for natural convection). Omit it when cooling is fixed.
        """
        budget = self.public.max_simulations
        if self.simulations >= budget:
            raise ToolError(
                f"the simulation budget ({budget} calls) is used up; call submit_design with "
                "your best design."
            )
        make_design(self.instance, thickness_um, porosity, heat_transfer_coefficient)
        self.simulations += 1  # counted once the input is valid, even if the solver then fails
        result, verdict = run_design(
            self.instance, thickness_um, porosity, heat_transfer_coefficient
        )
        rep = report(self.instance, result, verdict)
        rep["simulations_used"] = self.simulations
        rep["simulations_left"] = budget - self.simulations
        if slack(verdict) > self._best_slack:
            self._best_slack = slack(verdict)
            self.best = rep
        return ToolResult(text=json.dumps(rep, ensure_ascii=False), data=rep)

    @tool(final=True, timeout_s=COLD_START_TIMEOUT_S)
    def submit_design(
        self,
        thickness_um: Thickness,
        porosity: Porosity,
        heat_transfer_coefficient: Cooling = None,
    ) -> ToolResult:
        """Submit the final cell design; this ends the episode and the design is re-simulated.

        Args:
            thickness_um: positive-electrode thickness in micrometres (30 to 150).
            porosity: positive-electrode porosity (0.15 to 0.6).
            heat_transfer_coefficient: only when the problem offers forced cooling: the total
                heat-transfer coefficient in W/m²K of the chosen cooling system (omit it for
                natural convection or when cooling is fixed).
        """
        result, verdict = run_design(
            self.instance, thickness_um, porosity, heat_transfer_coefficient
        )
        d = result.design
        return ToolResult(
            text=(
                f"Submitted thickness {d.thickness_um:g} um, porosity {d.porosity:g}, "
                f"h = {d.heat_transfer:g} W/m²K. {feedback(self.instance, result, verdict)}"
            ),
            data=report(self.instance, result, verdict),
        )
