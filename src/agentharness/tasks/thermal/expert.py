"""The scripted expert: measure the plate's response in the open, solve for the powers, check.

The steady field is linear in the powers (``T = T_amb + G p``), so each heater alone at
1 W, the others off, gives column ``j`` of the response. ``probe_heaters`` runs those
simulations in one call and prints every monitor's and heater's rise per watt (v5; v4's
expert made one ``simulate`` call per heater). The expert then computes the powers with a
visible tool call on exactly those numbers:

* as many monitors as heaters or more (the powers are pinned down): ``solve_linear`` with
  ``a`` the monitors' rises per watt and ``b`` their target rises (from the prompt);
* more heaters than monitors (many power vectors hit the targets, and some overheat):
  ``minimize_max`` — the powers in ``[0, max power]`` that keep every monitor within half
  the tolerance of its target while the hottest heater (its rise per watt of every heater
  as ``c``) stays as cool as possible. Also used when ``solve_linear``'s powers fall
  outside ``[0, max power]``.

It simulates the computed powers once and submits them when every target is hit safely:
four turns at every difficulty. If a monitor still misses (the rises are printed to 1 mK per
watt), it solves again with each target lowered by that monitor's error (a Newton
step), at most twice; an unsafe or still missing result submits the best simulation so
far. Every number it sends is one it read in the conversation: the matrices are copied
rises per watt, ``b`` the prompt's target rises, the tolerance half the stated one. It
reads ``instance.hidden`` for nothing.

It decides from the conversation: any simulation that already solves the plate is
submitted, 1 W probes a noisy agent happened to make with ``simulate`` count, and its own
computations are matched to their results by call id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.parsing import answered_calls
from agentharness.tasks.thermal.problem import Public, target_rise
from agentharness.tasks.thermal.tools import PROBE_W

# One heater's column of the response: every monitor's and every heater's rise per watt.
Column = tuple[list[float], list[float]]

# Newton corrections after a check that misses a target.
MAX_REFINEMENTS = 2


@dataclass(frozen=True)
class _Mine:
    """One of the expert's own computations or checks."""

    kind: str  # "solve" or "check"
    b: list[float]  # the target rises the solve aimed at
    solver: str  # "solve_linear" or "minimize_max"
    refinement: bool = False


class ThermalExpert:
    """Identifies the response with unit probes, computes the powers with a tool, checks."""

    def __init__(self, instance: Instance) -> None:
        pub = instance.public_as(Public)
        ambient = pub.plate.ambient_c
        self.target_rises = [target_rise(m.target_c, ambient) for m in pub.monitors]
        self.n = len(pub.heaters)
        self.m = len(pub.monitors)
        self.p_max = pub.max_power_w
        self.budget = pub.max_simulations
        self.tol = pub.tolerance_k
        self.probe_w = min(PROBE_W, self.p_max)
        self.turn = 0
        # My computations and checks, by call id.
        self.mine: dict[str, _Mine] = {}
        # solve_linear's powers clipped to the range: the answer when nothing else is left.
        self.fallback: list[float] | None = None

    # -- reading the conversation ----------------------------------------------------

    def _probe_of(self, powers: list[float]) -> int | None:
        """The heater a simulation probed alone at the probe power, if it did."""
        on = [j for j, p in enumerate(powers) if p != 0.0]
        if len(on) == 1 and powers[on[0]] == self.probe_w:
            return on[0]
        return None

    def _column(self, rep: dict[str, Any]) -> Column:
        """A 1 W probe simulation's rises, per watt."""
        return (
            [self._per_watt(float(mo["rise_k"])) for mo in rep["monitors"]],
            [self._per_watt(float(h["rise_k"])) for h in rep["heaters"]],
        )

    def next_turn(self, messages: list[Message]) -> Message:
        self.turn += 1
        simulations: list[dict[str, Any]] = []
        columns: dict[int, Column] = {}
        last: tuple[_Mine, Any] | None = None  # my latest computation or check, and its result
        left = self.budget  # simulations left, as the latest simulation's reply says
        for call, message in answered_calls(messages):
            outcome = message.outcome
            data = outcome.data if outcome is not None and not outcome.is_error else None
            if call.name in ("simulate", "probe_heaters") and data is not None:
                left = int(data["simulations_left"])
            if call.name == "simulate" and data is not None:
                simulations.append(data)
                j = self._probe_of(list(data["powers_w"]))
                if j is not None:
                    columns.setdefault(j, self._column(data))
            if call.name == "probe_heaters" and data is not None:
                for j in range(self.n):
                    columns.setdefault(
                        j,
                        ([row[j] for row in data["monitors"]], [row[j] for row in data["heaters"]]),
                    )
            if call.id in self.mine:
                last = (self.mine[call.id], data)

        for rep in simulations:
            if rep["safe"] and rep["targets_hit"] == rep["targets_total"]:
                return self._submit(
                    rep["powers_w"], "Every target is hit within tolerance, safely: I submit."
                )
        if len(columns) < self.n:
            if left < self.n:
                # Too few simulations left for probe_heaters: probe the missing heaters one by one.
                j = min(set(range(self.n)) - set(columns))
                powers = [self.probe_w if i == j else 0.0 for i in range(self.n)]
                return self._call(
                    "simulate", {"powers": powers}, f"H{j + 1} alone at {self.probe_w:g} W."
                )
            return self._call(
                "probe_heaters",
                {},
                "Rises add up and scale with power, so I first measure each heater's rise per watt.",
            )
        response = [columns[j] for j in range(self.n)]
        if last is None:
            return self._solve(response, self._target_rises(), refinement=False)
        mine, result = last
        b, solver = mine.b, mine.solver
        if mine.kind == "solve":
            if result is None:
                if solver == "solve_linear":
                    return self._solve(response, b, refinement=False, solver="minimize_max")
                return self._submit_best(simulations, "The linear program found no powers")
            powers = [float(x) for x in result["x"]]
            if solver == "solve_linear" and any(p < 0.0 or p > self.p_max for p in powers):
                self.fallback = [min(max(p, 0.0), self.p_max) for p in powers]
                return self._solve(response, b, refinement=False, solver="minimize_max")
            if left == 0:
                # (a max_simulations knob below n_heaters + 1) nothing left to check them with
                clipped = [min(max(p, 0.0), self.p_max) for p in powers]
                return self._submit(clipped, "No simulations are left to check them: I submit.")
            return self._check(powers, b, solver)
        # kind == "check": the simulation of computed powers (a successful one was submitted).
        refinements = sum(1 for x in self.mine.values() if x.kind == "solve" and x.refinement)
        if result is None or not result["safe"]:
            if result is not None and solver == "solve_linear" and self.n > 1:
                return self._solve(response, b, refinement=False, solver="minimize_max")
            return self._submit_best(simulations, "The computed powers overheat the plate")
        if refinements < MAX_REFINEMENTS:
            errors = [mo["error_k"] for mo in result["monitors"]]
            return self._solve(
                response, [t - e for t, e in zip(b, errors, strict=True)], True, solver
            )
        return self._submit_best(simulations, "The corrections did not bring every monitor in")

    # -- the numbers of a solve ------------------------------------------------------

    def _per_watt(self, rise: float) -> float:
        return rise if self.probe_w == PROBE_W else rise / self.probe_w

    def _target_rises(self) -> list[float]:
        """``b`` of the first solve: the target rises the prompt states."""
        return list(self.target_rises)

    # -- turns -----------------------------------------------------------------------

    def _solve(
        self,
        response: list[Column],
        b: list[float],
        refinement: bool,
        solver: str | None = None,
    ) -> Message:
        solver = solver or ("solve_linear" if self.n <= self.m else "minimize_max")
        # Rows: one per monitor (or heater); columns: the rise per watt of each heater.
        g = [[col[0][i] for col in response] for i in range(self.m)]
        if refinement:
            lead = (
                "A monitor still misses; I solve again with each target rise lowered by its error."
            )
        else:
            lead = ""
        if solver == "solve_linear":
            text = lead or "I solve rise per watt x powers = target rise for the powers."
            args: dict[str, Any] = {"a": g, "b": b}
        else:
            why = (
                "More heaters than monitors: many powers hit the targets, some overheat"
                if self.n > self.m
                else "Those powers are outside the allowed range"
            )
            text = (
                f"{lead or why + '.'} I ask for powers in [0, {self.p_max:g}] W within "
                f"±{self.tol / 2:g} K (half the tolerance) of every target rise that keep the "
                "hottest heater as cool as possible."
            )
            args = {
                "c": [[col[1][i] for col in response] for i in range(self.n)],
                "a": g,
                "b": b,
                "tolerance": self.tol / 2,
                "upper": self.p_max,
            }
        return self._call(solver, args, text, _Mine("solve", b, solver, refinement))

    def _check(self, powers: list[float], b: list[float], solver: str) -> Message:
        clipped = [min(max(p, 0.0), self.p_max) for p in powers]
        return self._call(
            "simulate",
            {"powers": clipped},
            "I simulate these powers to check the targets and the safety limit.",
            _Mine("check", b, solver),
        )

    def _submit(self, powers: list[float], text: str) -> Message:
        return self._call("submit_powers", {"powers": list(powers)}, text)

    def _submit_best(self, simulations: list[dict[str, Any]], why: str) -> Message:
        safe = [r for r in simulations if r["safe"]] or simulations
        if not safe:
            if self.fallback is not None:
                return self._submit(
                    self.fallback,
                    f"{why}; I submit the direct solve's powers, clipped to the range.",
                )
            return assistant(f"{why}, and I have no powers to submit; I stop here.")
        best = max(safe, key=lambda r: (r["targets_hit"], -float(r["rms_error_k"])))
        return self._submit(
            best["powers_w"],
            f"{why}, so I submit my best simulation ({best['verdict']}).",
        )

    def _call(
        self,
        name: str,
        args: dict[str, Any],
        text: str,
        mine: _Mine | None = None,
    ) -> Message:
        call_id = f"thermal_{self.turn}_{name}"
        if mine is not None:
            self.mine[call_id] = mine
        return assistant(text, tool_calls=[ToolCall.make(call_id, name, args)])
