"""A privileged scripted solver that works through the tools like an analyst would.

1. Check a naive trend forecast (last year's ratios carried forward) to see what fails.
2. Every identity, bound and condition is linear in the line items, so solve the linear
   programme of all of them (public data only) for the forecast closest to the trend,
   and check it.
3. Submit it; if that check unexpectedly failed, submit the generator's hidden solution.

The stage is read from which of its own calls already have results in the conversation,
so random calls interleaved by a ``noisy`` agent do not derail it. Results are read as
data (``message.outcome``), never parsed from the text.
"""

from __future__ import annotations

from typing import Any

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.parsing import answered_calls
from agentharness.tasks.finance.problem import Hidden, Public
from agentharness.tasks.finance.simulator import (
    conditions,
    evaluate,
    solve_forecast_lp,
    trend_forecast,
)

TREND_ID = "fin_check_trend"
PLAN_ID = "fin_check_plan"
SUBMIT_ID = "fin_submit"
# Smallest margin the generator ever uses, so the expert's LP is feasible by construction.
EXPERT_MARGIN = 0.001


def _met(data: dict[str, Any] | None) -> str:
    """``met/total`` of a calculate_metrics result ("?" for a failed call)."""
    if data is None:
        return "?"
    return f"{data['conditions_met']}/{data['conditions_total']}"


class FinanceExpert:
    """Trend check, LP forecast, check, submit."""

    def __init__(self, instance: Instance) -> None:
        public = instance.public_as(Public)
        self.trend = trend_forecast(public)
        plan = solve_forecast_lp(public, conditions(public), EXPERT_MARGIN, baseline=self.trend)
        self.fallback: dict[str, float] = dict(instance.hidden_as(Hidden).solution)
        self.solution = self.fallback
        if plan is not None:
            rep = evaluate(public, plan)
            if rep.valid and rep.met == len(rep.results):
                self.solution = plan
        self.n = 0

    def _call(self, text: str, call_id: str, name: str, forecast: dict[str, float]) -> Message:
        self.n += 1
        args = {"forecast": {k: round(v, 2) for k, v in forecast.items()}}
        return assistant(text, tool_calls=[ToolCall.make(f"{call_id}_{self.n}", name, args)])

    def next_turn(self, messages: list[Message]) -> Message:
        # My calls' results by stage (None for a failed call).
        results: dict[str, dict[str, Any] | None] = {}
        for call, m in answered_calls(messages):
            ok = m.outcome is not None and not m.outcome.is_error
            results[call.id.rsplit("_", 1)[0]] = m.outcome.data if ok and m.outcome else None
        if TREND_ID not in results:
            return self._call(
                "I start from a baseline: last year's cost shares and working-capital ratios "
                "carried forward at the average revenue growth, every other item derived from the "
                "identities. Let me check which conditions it misses.",
                TREND_ID,
                "calculate_metrics",
                self.trend,
            )
        if PLAN_ID not in results:
            return self._call(
                f"The baseline meets {_met(results[TREND_ID])} conditions. Every identity, bound "
                "and ratio condition is linear in the line items (num/den >= t is num - t*den >= 0 "
                "with den > 0), so I solve the linear programme of all of them for the forecast "
                "closest to the baseline, derive the dependent items, and check it.",
                PLAN_ID,
                "calculate_metrics",
                self.solution,
            )
        data = results[PLAN_ID]
        if (
            data is not None
            and data["valid"]
            and data["conditions_met"] == data["conditions_total"]
        ):
            note = f"The forecast is valid and meets {_met(data)} conditions. Submitting it."
            return self._call(note, SUBMIT_ID, "submit_forecast", self.solution)
        note = "The check shows problems; I submit my most reliable forecast instead."
        return self._call(note, SUBMIT_ID, "submit_forecast", self.fallback)
