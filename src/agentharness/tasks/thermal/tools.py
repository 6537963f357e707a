"""Layer 2: the per-episode plate world: simulate, probe, submit, and the computation tools.

``simulate``, ``probe_heaters`` and ``submit_powers`` act on the plate. ``calculate`` and ``solve_linear``
(from :class:`~agentharness.core.calculator.CalculatorWorld`) and ``minimize_max`` (a
small linear program, :func:`minimize_max`) compute on numbers the agent passes in: they
know nothing of the plate, so they only help once simulations have measured it.

v6 prints every number to what the smallest tolerance (0.2 K) needs and no more, because a
small model pays a token per digit in every reply and again in every call that copies it:
rises to 1 mK (rises per watt to 1 mK/W), errors to 0.01 K, computed powers to 4
significant digits. The numbers in a result's ``data`` are rounded the same way, so what a
scripted policy reads is what the model saw.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from agentharness.core.calculator import CalculatorWorld, Matrix, Vector, significant
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
# Printed precision (v6). Rises and rises per watt to 1 mK: a probe's rounding then moves a
# monitor by at most 0.5 mK/W x the total power (0.075 K for 5 heaters at 30 W), well
# inside the smallest tolerance (0.2 K) even after minimize_max's half-tolerance band.
RISE_DECIMALS = 3
# Errors to 0.01 K (a twentieth of the smallest tolerance): enough for a Newton step.
ERROR_DECIMALS = 2
# Computed x (powers, in this task) to 4 significant digits: at most 5 mW off below 100 W,
# a few hundredths of a kelvin at a monitor; the model copies them twice (check, answer).
X_DIGITS = 4
# The other computed values (c @ x, a @ x - b, a residual) are in kelvin here: 1 mK.
KELVIN_DECIMALS = 3


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
            status = f"too {'hot' if err > 0 else 'cold'} by {abs(err):.{ERROR_DECIMALS}f} K"
        monitors.append(
            {
                "id": mon.id,
                "temperature_c": round(t, 3),
                "target_c": mon.target_c,
                "rise_k": round(t - ambient, RISE_DECIMALS),
                "target_rise_k": target_rise(mon.target_c, ambient),
                "error_k": round(err, ERROR_DECIMALS),
                "within_tolerance": ok,
                "status": status,
            }
        )
    hx, hy = model.spec.node_xy_m(r.hottest_node)
    safe = r.hottest_c <= limit
    n_mon = len(monitors)
    # v6: "hit" (the prompt states the tolerance) instead of "within ±0.5 K".
    verdict = f"{hits}/{n_mon} targets hit; " + (
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
                "rise_k": round(t - ambient, RISE_DECIMALS),
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
    heater with the numbers an agent acts on (rise above ambient, and a monitor's error).

    v4: a line per point instead of v3's JSON (about 450 tokens at easy, 670 at medium,
    most of them keys and values the prompt already gives). v6 drops what a line repeated:
    the temperatures (ambient + rise), the heaters' powers (the call's own arguments) and
    digits beyond the tolerance's needs. The full report stays in the result's ``data``;
    every number the expert reads from it is printed here.
    """
    lines = [f"{rep['verdict']}. {rep['simulations_left']} simulations left."]
    for mo in rep["monitors"]:
        err = float(mo["error_k"])
        state = "hit" if mo["within_tolerance"] else ("too hot" if err > 0 else "too cold")
        lines.append(
            f"{mo['id']} rise {float(mo['rise_k'])} K, "
            f"error {'+' if err > 0 else ''}{err} K, {state}"
        )
    lines += [f"{h['id']} rise {float(h['rise_k'])} K" for h in rep["heaters"]]
    return "\n".join(lines)


def probe_text(probe: dict[str, Any], heaters: list[str], monitors: list[str]) -> str:
    """What the model reads of ``probe_heaters``: a row per monitor and per heater with its
    rise per watt of each heater (the rows of ``a`` and ``c`` of a solve, in order)."""
    lines = [
        f"Each heater alone at {probe['probe_w']:g} W; {probe['simulations_left']} simulations "
        f"left. Rise per watt (K/W) of {', '.join(heaters)}:"
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
    if not (math.isfinite(tolerance) and math.isfinite(upper)):
        raise ToolError("tolerance and upper must be finite numbers")
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
    x = np.clip([significant(float(v), X_DIGITS) for v in res.x[:n]], 0.0, upper)
    return {
        "x": [float(v) for v in x],
        "max_value": round(float(np.max(cm @ x)), KELVIN_DECIMALS),
        "a_x_minus_b": [round(float(v), KELVIN_DECIMALS) for v in am @ x - bm],
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

    # v6: the docstrings (the tool signatures a model reads) say what the prompt's "Tools:"
    # section used to, once; the prompt's Rules say what `powers` is.
    @tool
    def simulate(self, powers: Powers) -> ToolResult:
        """One simulation of the plate at these powers: targets hit, safety, each monitor's rise
        above ambient and error (T - target), each heater's rise."""
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
        """Each heater alone at 1 W, the others off (one simulation per heater): every monitor's
        and heater's rise per watt of each heater."""
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
                row.append(round((t - ambient) / probe_w, RISE_DECIMALS))
            for row, t in zip(heaters, result.heater_c, strict=True):
                row.append(round((t - ambient) / probe_w, RISE_DECIMALS))
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
        """Your final answer; ends the episode."""
        _, rep = self.run(powers)
        return ToolResult(text=f"Submitted: {rep['verdict']}.", data=rep)

    @tool(name="minimize_max")
    def minimize_max_tool(
        self,
        c: Matrix,
        a: Matrix,
        b: Vector,
        tolerance: Annotated[float, Field(ge=0.0)],
        upper: Annotated[float, Field(gt=0.0)],
    ) -> dict[str, Any]:
        """Linear program: the x with every entry in [0, upper] that keeps each row of a @ x
        within ±tolerance of b and makes the largest entry of c @ x smallest. a and c are
        lists of rows."""
        return minimize_max(c, a, b, tolerance, upper)

    @tool
    def solve_linear(self, a: Matrix, b: Vector) -> dict[str, Any]:
        out = super().solve_linear(a, b)
        return {
            "x": [significant(v, X_DIGITS) for v in out["x"]],
            "residual": round(out["residual"], KELVIN_DECIMALS),
            "rank": out["rank"],
        }

    # The calculator's x to X_DIGITS like minimize_max's (v6), under the calculator's own
    # description: tasks that share a tool name must share its schema (verl keys tools by
    # name across tasks), so calculate and solve_linear read as in every calculator task.
    solve_linear.__doc__ = CalculatorWorld.solve_linear.__doc__


def _score(rep: dict[str, Any]) -> tuple[bool, int, float]:
    return (bool(rep["safe"]), int(rep["targets_hit"]), -float(rep["rms_error_k"]))
