"""The scripted expert: measure the plate's response in the open, solve for the powers, check.

The steady field is linear in the powers (``T = T_amb + G p``), so one simulation per
heater at 1 W, the others off, reads column ``j`` of the response straight off the report
(every monitor's and heater's ``rise_k``). The expert then computes the powers with a
visible tool call on exactly those numbers:

* as many monitors as heaters or more (the powers are pinned down): ``solve_linear`` with
  ``a`` the monitors' rises per watt and ``b`` their ``target_rise_k``;
* more heaters than monitors (many power vectors hit the targets, and some overheat):
  ``minimize_max`` — the powers in ``[0, max power]`` that keep every monitor within half
  the tolerance of its target while the hottest heater (its rise per watt of every heater
  as ``c``) stays as cool as possible. Also used when ``solve_linear``'s powers fall
  outside ``[0, max power]``.

It simulates the computed powers once and submits them when every target is hit safely.
If a monitor still misses (the rises are printed to 0.1 mK per watt), it solves again
with each target lowered by that monitor's error (a Newton step), at most twice; an
unsafe or still missing result submits the best simulation so far. Every number it sends
is one it read in the conversation: the probes are 1 W (or the maximum power when that is
smaller, and then the rises are divided by it), the matrices are copied rises, the
tolerance is half the stated one. It reads ``instance.hidden`` for nothing.

It decides from the conversation: any simulation that already solves the plate is
submitted, probes a noisy agent happened to make count, and its own computations are
matched to their results by call id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.parsing import answered_calls
from agentharness.tasks.thermal.problem import Public

PROBE_W = 1.0
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
        self.n = len(pub.heaters)
        self.m = len(pub.monitors)
        self.p_max = pub.max_power_w
        self.tol = pub.tolerance_k
        self.probe_w = min(PROBE_W, self.p_max)
        self.turn = 0
        # My computations and checks, by call id.
        self.mine: dict[str, _Mine] = {}

    # -- reading the conversation ----------------------------------------------------

    def _probe_of(self, powers: list[float]) -> int | None:
        """The heater a simulation probed alone at the probe power, if it did."""
        on = [j for j, p in enumerate(powers) if p != 0.0]
        if len(on) == 1 and powers[on[0]] == self.probe_w:
            return on[0]
        return None

    def next_turn(self, messages: list[Message]) -> Message:
        self.turn += 1
        simulations: list[dict[str, Any]] = []
        probes: dict[int, dict[str, Any]] = {}
        last: tuple[_Mine, Any] | None = None  # my latest computation or check, and its result
        for call, message in answered_calls(messages):
            outcome = message.outcome
            ok = outcome is not None and not outcome.is_error
            if call.name == "simulate" and ok and outcome is not None:
                simulations.append(outcome.data)
                j = self._probe_of(list(outcome.data["powers_w"]))
                if j is not None:
                    probes.setdefault(j, outcome.data)
            if call.id in self.mine:
                last = (self.mine[call.id], outcome.data if ok and outcome is not None else None)

        for rep in simulations:
            if rep["safe"] and rep["targets_hit"] == rep["targets_total"]:
                return self._submit(
                    rep["powers_w"],
                    "This simulation puts every monitor within tolerance of its target and keeps "
                    "the whole plate below the safety limit, so I submit these powers.",
                )
        missing = [j for j in range(self.n) if j not in probes]
        if missing:
            return self._probe(missing[0], first=not probes)
        columns = [probes[j] for j in range(self.n)]
        if last is None:
            return self._solve(columns, self._target_rises(columns), refinement=False)
        mine, result = last
        b, solver = mine.b, mine.solver
        if mine.kind == "solve":
            if result is None:
                if solver == "solve_linear":
                    return self._solve(columns, b, refinement=False, solver="minimize_max")
                return self._submit_best(simulations, "The linear program found no powers")
            powers = [float(x) for x in result["x"]]
            if solver == "solve_linear" and any(p < 0.0 or p > self.p_max for p in powers):
                return self._solve(columns, b, refinement=False, solver="minimize_max")
            return self._check(powers, b, solver)
        # kind == "check": the simulation of computed powers (a successful one was submitted).
        refinements = sum(1 for x in self.mine.values() if x.kind == "solve" and x.refinement)
        if result is None or not result["safe"]:
            if result is not None and solver == "solve_linear" and self.n > 1:
                return self._solve(columns, b, refinement=False, solver="minimize_max")
            return self._submit_best(simulations, "The computed powers overheat the plate")
        if refinements < MAX_REFINEMENTS:
            errors = [mo["error_k"] for mo in result["monitors"]]
            return self._solve(
                columns, [t - e for t, e in zip(b, errors, strict=True)], True, solver
            )
        return self._submit_best(simulations, "The corrections did not bring every monitor in")

    # -- the numbers of a solve ------------------------------------------------------

    def _per_watt(self, rise: float) -> float:
        return rise if self.probe_w == PROBE_W else rise / self.probe_w

    def _target_rises(self, columns: list[dict[str, Any]]) -> list[float]:
        return [float(mo["target_rise_k"]) for mo in columns[0]["monitors"]]

    def _response(self, columns: list[dict[str, Any]], part: str) -> list[list[float]]:
        """Rows: one per monitor (or heater); columns: rise per watt of each heater."""
        rows = len(columns[0][part])
        return [
            [self._per_watt(float(col[part][i]["rise_k"])) for col in columns] for i in range(rows)
        ]

    # -- turns -----------------------------------------------------------------------

    def _probe(self, j: int, first: bool) -> Message:
        powers = [0.0] * self.n
        powers[j] = self.probe_w
        if first:
            text = (
                "Steady conduction is linear in the heater powers: temperature rises add up and "
                f"scale with power. I run each heater alone at {self.probe_w:g} W to measure how "
                f"much every monitor and heater warms per watt, starting with H{j + 1}."
            )
        else:
            text = f"Next, heater H{j + 1} alone at {self.probe_w:g} W."
        return self._call("simulate", {"powers": powers}, text)

    def _solve(
        self,
        columns: list[dict[str, Any]],
        b: list[float],
        refinement: bool,
        solver: str | None = None,
    ) -> Message:
        solver = solver or ("solve_linear" if self.n <= self.m else "minimize_max")
        g = self._response(columns, "monitors")
        if refinement:
            lead = (
                "Not every monitor is within tolerance yet. The response is linear, so I solve "
                "again with each monitor's target lowered by its error (a Newton correction)."
            )
        else:
            lead = (
                f"I have every heater's response per watt ({self.m} monitors x {self.n} heaters)."
            )
        if solver == "solve_linear":
            text = (
                f"{lead} With no more heaters than monitors the powers are pinned down: I solve "
                "response x powers = target rise (target minus ambient) by least squares."
            )
            args: dict[str, Any] = {"a": g, "b": b}
        else:
            why = (
                "With more heaters than monitors many power vectors hit the targets, and some "
                "overheat"
                if self.n > self.m
                else "The direct solve gives powers outside the allowed range (or overheats)"
            )
            text = (
                f"{lead} {why}: I ask for the powers between 0 and {self.p_max:g} W that keep "
                f"every monitor within ±{self.tol / 2:g} K (half the tolerance) of its target rise "
                "and make the hottest heater (rows: each heater's rise per watt) as cool as "
                "possible."
            )
            args = {
                "c": self._response(columns, "heaters"),
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
            f"The {solver} result gives the powers {[round(p, 3) for p in clipped]} W. I simulate "
            "them to check every target and the safety limit before submitting.",
            _Mine("check", b, solver),
        )

    def _submit(self, powers: list[float], text: str) -> Message:
        return self._call("submit_powers", {"powers": list(powers)}, text)

    def _submit_best(self, simulations: list[dict[str, Any]], why: str) -> Message:
        safe = [r for r in simulations if r["safe"]] or simulations
        if not safe:
            return assistant(f"{why}, and no simulation succeeded; I stop here.")
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
