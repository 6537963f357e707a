"""Layer 2: the per-episode plate world and its two tools."""

from __future__ import annotations

import json
import math
from typing import Annotated, Any

from pydantic import Field

from agentharness.core.instance import Instance
from agentharness.core.tools import ToolError, ToolResult, World, tool
from agentharness.tasks.thermal.problem import Public
from agentharness.tasks.thermal.simulator import (
    PlateModel,
    SimResult,
    SimulationError,
    get_model,
    spec_from_public,
)

# Schema-level bounds; the instance's own maximum power is checked in the tool.
MAX_POWERS = 32
ABS_MAX_POWER_W = 1000.0

Powers = Annotated[
    list[Annotated[float, Field(ge=0.0, le=ABS_MAX_POWER_W)]],
    Field(min_length=1, max_length=MAX_POWERS),
]


def check_powers(public: Public, powers: list[float]) -> list[float]:
    """Instance-level validation with messages that say how to fix the call."""
    n = len(public.heaters)
    ids = ", ".join(h.id for h in public.heaters)
    if len(powers) != n:
        raise ToolError(
            f"expected exactly {n} powers (one per heater, in order {ids}), got {len(powers)}."
        )
    p_max = public.max_power_w
    bad = []
    for h, p in zip(public.heaters, powers, strict=True):
        if not isinstance(p, int | float) or not math.isfinite(p):
            bad.append(f"{h.id}={p!r} is not a finite number")
        elif p < 0:
            bad.append(f"{h.id}={p:g} W is negative")
        elif p > p_max:
            bad.append(f"{h.id}={p:g} W exceeds the maximum {p_max:g} W")
    if bad:
        raise ToolError(
            f"invalid powers: {'; '.join(bad)}. Each power must be in [0, {p_max:g}] W."
        )
    return [float(p) for p in powers]


def report(public: Public, model: PlateModel, r: SimResult) -> dict[str, Any]:
    """The feedback of one simulation: per-monitor errors and the safety verdict."""
    tol = public.tolerance_k
    limit = public.safety_limit_c
    monitors = []
    hits = 0
    sq = 0.0
    for mon, t in zip(public.monitors, r.monitor_c, strict=True):
        err = t - mon.target_c
        ok = abs(err) <= tol
        hits += ok
        sq += err * err
        if ok:
            status = "within tolerance"
        else:
            status = f"too {'hot' if err > 0 else 'cold'} by {abs(err):.3f} K"
        monitors.append(
            {
                "id": mon.id,
                "temperature_c": round(t, 3),
                "target_c": mon.target_c,
                "error_k": round(err, 3),
                "within_tolerance": ok,
                "status": status,
            }
        )
    hx, hy = model.spec.node_xy_m(r.hottest_node)
    safe = r.hottest_c <= limit
    n_mon = len(monitors)
    verdict = f"{hits}/{n_mon} targets within ±{tol:g} K; " + (
        f"safe (hottest {r.hottest_c:.2f} °C, {limit - r.hottest_c:.2f} K below the limit)"
        if safe
        else f"UNSAFE: hottest {r.hottest_c:.2f} °C exceeds the {limit:g} °C limit "
        f"by {r.hottest_c - limit:.2f} K"
    )
    return {
        "powers_w": [round(p, 6) for p in r.powers],
        "monitors": monitors,
        "heaters": [
            {"id": h.id, "power_w": round(p, 6), "temperature_c": round(t, 3)}
            for h, p, t in zip(public.heaters, r.powers, r.heater_c, strict=True)
        ],
        "hottest": {
            "temperature_c": round(r.hottest_c, 3),
            "x_mm": round(hx * 1000, 2),
            "y_mm": round(hy * 1000, 2),
        },
        "safety_limit_c": limit,
        "safe": safe,
        "targets_hit": hits,
        "targets_total": n_mon,
        "rms_error_k": round(math.sqrt(sq / n_mon), 4),
        "verdict": verdict,
    }


class ThermalWorld(World):
    """One episode on one plate: counts simulations, keeps the latest report."""

    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        self.public = instance.public_as(Public)
        self.model = get_model(spec_from_public(self.public))
        self.simulations = 0
        self.last_report: dict[str, Any] | None = None
        self.best_report: dict[str, Any] | None = None

    def run(self, powers: list[float]) -> tuple[SimResult, dict[str, Any]]:
        """Validate and solve; simulator failures become ToolErrors."""
        checked = check_powers(self.public, powers)
        try:
            result = self.model.solve(checked)
        except SimulationError as e:
            raise ToolError(f"the simulation failed: {e}. Check the powers and try again.") from e
        return result, report(self.public, self.model, result)

    @tool
    def simulate(self, powers: Powers) -> ToolResult:
        """Solve the steady heat equation for the given heater powers and report the temperatures.

        Args:
            powers: heater powers in watts, one per heater in order H1, H2, ...; each between 0 and
                the maximum power stated in the task.
        """
        budget = self.public.max_simulations
        if self.simulations >= budget:
            raise ToolError(
                f"the simulation budget ({budget} calls) is used up; call submit_powers with your "
                "best powers."
            )
        _, rep = self.run(powers)
        self.simulations += 1
        rep["simulations_used"] = self.simulations
        rep["simulations_left"] = budget - self.simulations
        self.last_report = rep
        if self.best_report is None or _score(rep) > _score(self.best_report):
            self.best_report = rep
        return ToolResult(text=json.dumps(rep, ensure_ascii=False), data=rep)

    @tool(final=True)
    def submit_powers(self, powers: Powers) -> ToolResult:
        """Submit the final heater powers; this ends the episode.

        Args:
            powers: heater powers in watts, one per heater in order H1, H2, ...; each between 0 and
                the maximum power stated in the task.
        """
        _, rep = self.run(powers)
        return ToolResult(text=f"Submitted powers {rep['powers_w']} W. {rep['verdict']}.", data=rep)


def _score(rep: dict[str, Any]) -> tuple[bool, int, float]:
    return (bool(rep["safe"]), int(rep["targets_hit"]), -float(rep["rms_error_k"]))
