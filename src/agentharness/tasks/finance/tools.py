"""Layer 2: the forecasting world: check, submit, and the computation tools.

``calculate_metrics`` and ``submit_forecast`` judge a forecast; both return their verdict
as data too (``ToolResult.data``: :func:`report_data`), so scripted policies read results
without parsing the text. ``linear_program`` (:mod:`.lp`), ``calculate`` and
``solve_linear`` (from :class:`~agentharness.core.calculator.CalculatorWorld`) compute on
what the agent writes: they know nothing of the company and are not checks.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import Field

from agentharness.core.calculator import CalculatorWorld
from agentharness.core.instance import Instance
from agentharness.core.tools import ToolError, ToolResult, tool
from agentharness.tasks.finance import lp
from agentharness.tasks.finance.problem import Public
from agentharness.tasks.finance.simulator import (
    ITEMS,
    RATIO_NAMES,
    Report,
    evaluate,
    normalize_forecast,
)

Forecast = Annotated[dict[str, float], Field(min_length=1, max_length=2 * len(ITEMS))]
Expression = Annotated[str, Field(min_length=1, max_length=lp.MAX_EXPRESSION_CHARS)]
Constraints = Annotated[list[Expression], Field(min_length=1, max_length=lp.MAX_CONSTRAINTS)]


def _g(v: float) -> str:
    return f"{v:.2f}" if abs(v) >= 100 else f"{v:.4g}"


def format_report(public: Public, report: Report, check_no: int, notes: list[str]) -> str:
    """The text the agent reads: what breaks, by how much, and every ratio."""
    lines = [f"Check {check_no}: forecast for {public.forecast_year}"]
    if notes:
        lines.append("Note: " + "; ".join(notes) + ".")
    n_id, n_rule = report.n_identities, report.n_rules
    if report.valid:
        lines.append(
            f"Status: VALID ({n_id}/{n_id} identities hold within ±{public.tolerance:g}; "
            f"{n_rule}/{n_rule} bounds hold)"
        )
    else:
        lines.append(
            f"Status: INVALID, a submission would score 0 ({len(report.identity_errors)} of {n_id} "
            f"identities violated, {len(report.rule_errors)} of {n_rule} bounds violated)"
        )
    if report.identity_errors:
        lines.append("Identity violations (the implied value uses your other items):")
        for ident, expected, diff in report.identity_errors:
            lines.append(
                f"- {ident.text}: your {ident.item} = {_g(expected + diff)}, "
                f"implied {_g(expected)} (off by {diff:+.2f})"
            )
    if report.rule_errors:
        lines.append("Bound violations:")
        for rule, value, why in report.rule_errors:
            shown = "undefined" if value is None else _g(value)
            lines.append(f"- {rule.text}: yours {shown} ({why})")
    lines.append(
        f"Conditions met: {report.met}/{len(report.results)} "
        f"(credited: {report.credited_met}/{report.credited})"
    )
    for cond, value, ok, gap in report.results:
        op = ">=" if cond.higher else "<="
        tag = "" if cond.credited else " [no partial credit]"
        if value is None or gap is None:
            lines.append(
                f"- FAIL {cond.ratio} undefined (denominator <= 0), needs {op} "
                f"{cond.target:.4f}{tag}"
            )
            continue
        how = (
            f"beats by {gap:.4g}"
            if ok and gap > 0
            else ("matches" if ok else f"misses by {-gap:.4g}")
        )
        lines.append(
            f"- {'PASS' if ok else 'FAIL'} {cond.ratio} {value:.4f} {op} {cond.target:.4f} "
            f"({how}){tag}"
        )
    values = {n: report.ratio_values.get(n) for n in RATIO_NAMES if n in report.ratio_values}
    ratio_text = " | ".join(
        f"{n} {'n/a' if v is None else format(v, '.4f')}" for n, v in values.items()
    )
    lines.append("All ratios: " + ratio_text)
    lines.append(f"Score if submitted now: {report.score():.3f} (with the full efficiency bonus)")
    return "\n".join(lines)


def report_data(report: Report, check_no: int | None, notes: list[str]) -> dict[str, Any]:
    """What :func:`format_report` says, as data: the verdict, each violation and condition."""
    return {
        "check": check_no,
        "notes": list(notes),
        "valid": report.valid,
        "identities_total": report.n_identities,
        "bounds_total": report.n_rules,
        "identity_violations": [
            {
                "identity": ident.name,
                "item": ident.item,
                "value": expected + diff,
                "implied": expected,
                "off_by": diff,
            }
            for ident, expected, diff in report.identity_errors
        ],
        "bound_violations": [
            {"bound": rule.name, "value": value, "why": why}
            for rule, value, why in report.rule_errors
        ],
        "conditions_met": report.met,
        "conditions_total": len(report.results),
        "credited_met": report.credited_met,
        "credited_total": report.credited,
        "conditions": [
            {
                "ratio": cond.ratio,
                "direction": "at_least" if cond.higher else "at_most",
                "target": cond.target,
                "value": value,
                "met": ok,
                "gap": gap,
                "credited": cond.credited,
            }
            for cond, value, ok, gap in report.results
        ],
        "ratios": {n: report.ratio_values.get(n) for n in RATIO_NAMES if n in report.ratio_values},
        "score_if_submitted": report.score(),
    }


class FinanceWorld(CalculatorWorld):
    """One forecasting episode: the company's history and the agent's checks so far."""

    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        self.public = instance.public_as(Public)
        self.checks = 0
        self.last_report: Report | None = None

    def _evaluate(self, forecast: dict[str, float]) -> tuple[Report, list[str]]:
        try:
            clean, notes = normalize_forecast(forecast)
            return evaluate(self.public, clean), notes
        except ValueError as e:
            raise ToolError(str(e)) from e

    @tool
    def calculate_metrics(self, forecast: Forecast) -> ToolResult:
        """Check a complete draft forecast: identities, bounds, every ratio and each condition.

        Reports each violated identity with the value your other items imply, each violated
        bound with its distance, every ratio, each condition's pass/fail and gap, and the
        score the draft would get if submitted.

        Args:
            forecast: line item key -> amount in USD thousands, one number for each of the 28 keys
                listed in the task (revenue, cogs, gross_profit, ..., net_change_in_cash).
        """
        self.checks += 1
        report, notes = self._evaluate(forecast)
        self.last_report = report
        return ToolResult(
            text=format_report(self.public, report, self.checks, notes),
            data=report_data(report, self.checks, notes),
        )

    @tool
    def linear_program(
        self,
        constraints: Constraints,
        objective: Expression = "0",
        goal: Literal["minimize", "maximize"] = "minimize",
    ) -> ToolResult:
        """Solve a linear program over named variables: values satisfying every constraint that
        make the objective as small (or large) as possible.

        Args:
            constraints: linear equations and inequalities as text, one per entry, e.g.
                "gross_profit = revenue - cogs", "30000 <= revenue <= 36000",
                "gross_profit >= 0.41 * revenue". Variables are any names and are otherwise
                free; each side must be linear (numbers, names, + -, a number times an
                expression, division by a number).
            objective: the linear expression to optimise, e.g. "net_income" ("0" for any
                values that satisfy the constraints).
            goal: "minimize" or "maximize" the objective.
        """
        result = lp.solve(goal, objective, list(constraints))
        return ToolResult(text=json.dumps(result), data=result)

    @tool(final=True)
    def submit_forecast(self, forecast: Forecast) -> ToolResult:
        """Submit the final forecast and end the episode.

        Args:
            forecast: line item key -> amount in USD thousands, one number for each of the 28 keys
                listed in the task.
        """
        report, notes = self._evaluate(forecast)
        status = "valid" if report.valid else "INVALID (identity or bound violated)"
        return ToolResult(
            text=(
                f"Forecast submitted: {status}; {report.met}/{len(report.results)} conditions "
                f"met; score {report.score():.3f} with the full efficiency bonus."
            ),
            data=report_data(report, None, notes),
        )
