"""Layer 2: the per-episode plate world: simulate, probe, submit, and the computation tools.

``simulate``, ``probe_heaters`` and ``submit_powers`` act on the plate. ``calculate`` and ``solve_linear``
(from :class:`~agentharness.core.calculator.CalculatorWorld`) and ``minimize_max`` (a
small linear program, :func:`minimize_max`) compute on numbers the agent passes in: they
know nothing of the plate, so they only help once simulations have measured it.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from agentharness.core.calculator import CalculatorWorld, Matrix, Vector
from agentharness.core.instance import Instance
from agentharness.core.tools import ToolError, ToolResult, tool
from agentharness.tasks.thermal.problem import Public, target_rise
from agentharness.tasks.thermal.simulator import (
    PlateModel,
    SimResult,
    SimulationError,
    get_model,
    spec_from_public,
)

# Schema-level bounds; the instance's own maximum power is checked in the tool.
MAX_POWERS = 32
# probe_heaters runs each heater alone at this power (or the maximum power, if smaller).
PROBE_W = 1.0
ABS_MAX_POWER_W = 1000.0

Powers = Annotated[
    list[Annotated[float, Field(ge=0.0, le=ABS_MAX_POWER_W)]],
    Field(min_length=1, max_length=MAX_POWERS),
]
# Bounds of minimize_max's scalar arguments.
MAX_LP_BOUND = 1.0e6
# minimize_max reports x to this many decimals (0.1 mW for powers).
LP_DECIMALS = 4


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
    ambient = public.plate.ambient_c
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
                "rise_k": round(t - ambient, 4),
                "target_rise_k": target_rise(mon.target_c, ambient),
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
            {
                "id": h.id,
                "power_w": round(p, 6),
                "temperature_c": round(t, 3),
                "rise_k": round(t - ambient, 4),
            }
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


def report_text(rep: dict[str, Any]) -> str:
    """What the model reads of a simulation: the verdict, then one line per monitor and
    heater with the numbers an agent acts on (temperature, rise above ambient, error).

    v4: a line per point instead of v3's JSON (about 450 tokens at easy, 670 at medium,
    most of them keys and values the prompt already gives). The full report stays in
    the result's ``data``; every number the expert reads from it is printed here.
    """
    lines = [f"{rep['verdict']}. {rep['simulations_left']} simulations left."]
    for mo in rep["monitors"]:
        err = float(mo["error_k"])
        state = "hit" if mo["within_tolerance"] else ("too hot" if err > 0 else "too cold")
        lines.append(
            f"{mo['id']} {float(mo['temperature_c'])} °C, rise {float(mo['rise_k'])} K, "
            f"error {'+' if err > 0 else ''}{err} K ({state})"
        )
    lines += [
        f"{h['id']} {float(h['power_w'])} W: {float(h['temperature_c'])} °C, "
        f"rise {float(h['rise_k'])} K"
        for h in rep["heaters"]
    ]
    return "\n".join(lines)


def probe_text(probe: dict[str, Any], heaters: list[str], monitors: list[str]) -> str:
    """What the model reads of ``probe_heaters``: a row per monitor and per heater with its
    rise per watt of each heater (the rows of ``a`` and ``c`` of a solve, in order)."""
    lines = [
        f"Each heater alone at {probe['probe_w']:g} W: {len(heaters)} simulations, "
        f"{probe['simulations_left']} left. Rise per watt (K/W) of {', '.join(heaters)}:"
    ]
    for part, ids in (("monitors", monitors), ("heaters", heaters)):
        lines += [
            f"{pid}: {', '.join(str(float(v)) for v in row)}"
            for pid, row in zip(ids, probe[part], strict=True)
        ]
    return "\n".join(lines)


def minimize_max(
    c: list[list[float]], a: list[list[float]], b: list[float], tolerance: float, upper: float
) -> dict[str, Any]:
    """The x in [0, upper]^n with |a @ x - b| <= tolerance (row by row) that makes the
    largest entry of c @ x smallest: a linear program in (x, s), minimise s subject to
    c @ x <= s. :class:`ToolError` says what is wrong with the arguments."""
    from scipy.optimize import linprog

    n = len(a[0])
    for name, rows in (("a", a), ("c", c)):
        if any(len(row) != n for row in rows):
            raise ToolError(
                f"every row of {name} must have {n} entries (one per unknown, as the first row "
                "of a has)"
            )
    if len(b) != len(a):
        raise ToolError(f"b has {len(b)} entries but a has {len(a)} rows; they must match")
    am, bm, cm = (np.asarray(v, dtype=np.float64) for v in (a, b, c))
    if not all(np.all(np.isfinite(v)) for v in (am, bm, cm)):
        raise ToolError("every entry of a, b and c must be a finite number")
    k = len(cm)
    zeros = np.zeros((len(am), 1))
    a_ub = np.vstack(
        [np.hstack([am, zeros]), np.hstack([-am, zeros]), np.hstack([cm, -np.ones((k, 1))])]
    )
    b_ub = np.concatenate([bm + tolerance, tolerance - bm, np.zeros(k)])
    objective = np.zeros(n + 1)
    objective[-1] = 1.0
    res = linprog(
        objective,
        A_ub=a_ub,
        b_ub=b_ub,
        bounds=[(0.0, upper)] * n + [(None, None)],
        method="highs",
    )
    if res.status == 2:
        raise ToolError(
            f"no x in [0, {upper:g}] keeps every row of a @ x within ±{tolerance:g} of b; "
            "check a and b, or allow a larger tolerance or upper bound"
        )
    if res.status != 0:
        raise ToolError(f"the linear program did not solve ({res.message})")
    x = np.clip(np.round(res.x[:n], LP_DECIMALS), 0.0, upper)
    return {
        "x": [float(v) for v in x],
        "max_value": round(float(np.max(cm @ x)), 6),
        "a_x_minus_b": [round(float(v), 6) for v in am @ x - bm],
    }


class ThermalWorld(CalculatorWorld):
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
        self._keep(rep)
        return ToolResult(text=report_text(rep), data=rep)

    def _keep(self, rep: dict[str, Any]) -> None:
        """Remember a simulation's report as the latest, and as the best so far if it is."""
        self.last_report = rep
        if self.best_report is None or _score(rep) > _score(self.best_report):
            self.best_report = rep

    @tool
    def probe_heaters(self) -> ToolResult:
        """Simulate each heater alone at 1 W, the others off (one simulation per heater from the
        budget), and report how much every monitor and heater warms per watt of each heater.
        """
        budget = self.public.max_simulations
        n = len(self.public.heaters)
        left = budget - self.simulations
        if left < n:
            raise ToolError(
                f"probing needs {n} simulations (one per heater) and {left} are left; simulate "
                "single heaters instead, or call submit_powers with your best powers."
            )
        # Superposition: the rises of a heater alone scale with its power, so a probe below
        # 1 W (a plate whose maximum power is smaller) still gives the rise per watt.
        probe_w = min(PROBE_W, self.public.max_power_w)
        ambient = self.public.plate.ambient_c
        monitors: list[list[float]] = [[] for _ in self.public.monitors]
        heaters: list[list[float]] = [[] for _ in self.public.heaters]
        for j in range(n):
            powers = [0.0] * n
            powers[j] = probe_w
            result, rep = self.run(powers)
            self.simulations += 1
            self._keep(rep)
            for row, t in zip(monitors, result.monitor_c, strict=True):
                row.append(round((t - ambient) / probe_w, 4))
            for row, t in zip(heaters, result.heater_c, strict=True):
                row.append(round((t - ambient) / probe_w, 4))
        probe = {
            "probe_w": probe_w,
            "monitors": monitors,
            "heaters": heaters,
            "simulations_used": self.simulations,
            "simulations_left": budget - self.simulations,
        }
        text = probe_text(
            probe, [h.id for h in self.public.heaters], [m.id for m in self.public.monitors]
        )
        return ToolResult(text=text, data=probe)

    @tool(final=True)
    def submit_powers(self, powers: Powers) -> ToolResult:
        """Submit the final heater powers; this ends the episode.

        Args:
            powers: heater powers in watts, one per heater in order H1, H2, ...; each between 0 and
                the maximum power stated in the task.
        """
        _, rep = self.run(powers)
        return ToolResult(text=f"Submitted powers {rep['powers_w']} W. {rep['verdict']}.", data=rep)

    @tool(name="minimize_max")
    def minimize_max_tool(
        self,
        c: Matrix,
        a: Matrix,
        b: Vector,
        tolerance: Annotated[float, Field(ge=0.0, le=MAX_LP_BOUND)],
        upper: Annotated[float, Field(gt=0.0, le=MAX_LP_BOUND)],
    ) -> dict[str, Any]:
        """Linear program: find x, each entry between 0 and upper, that keeps every row of
        a @ x within ±tolerance of b and makes the largest entry of c @ x as small as possible.

        Args:
            c: the rows whose largest value c @ x is minimised (one entry per unknown).
            a: the constraint matrix, as a list of rows (one entry per unknown).
            b: the value each row of a @ x must stay near, one per row of a.
            tolerance: how far each row of a @ x may be from b (0 for equality).
            upper: the upper bound of every entry of x (the lower bound is 0).
        """
        return minimize_max(c, a, b, tolerance, upper)


def _score(rep: dict[str, Any]) -> tuple[bool, int, float]:
    return (bool(rep["safe"]), int(rep["targets_hit"]), -float(rep["rms_error_k"]))
