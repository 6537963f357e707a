"""A privileged scripted solver that works through the tools like an analyst would.

1. Check a naive trend forecast (last year's ratios carried forward) to see what fails.
2. Every identity, bound and condition is linear in the line items, so solve the linear
   programme of all of them (public data only) for the forecast closest to the trend,
   and check it.
3. Submit it; if that check unexpectedly failed, submit the generator's hidden solution.

The stage is read from which of its own calls already have results in the conversation,
so random calls interleaved by a ``noisy`` agent do not derail it.
"""

from __future__ import annotations

import re

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
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


def _met(text: str) -> str:
    m = re.search(r"Conditions met: (\d+)/(\d+)", text)
    return f"{m.group(1)}/{m.group(2)}" if m else "?"


class FinanceExpert:
    """Trend check, LP forecast, check, submit."""

    def __init__(self, instance: Instance) -> None:
        public = instance.public
        self.trend = trend_forecast(public)
        plan = solve_forecast_lp(public, conditions(public), EXPERT_MARGIN, baseline=self.trend)
        self.fallback: dict[str, float] = dict(instance.hidden["solution"])
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
        results: dict[str, str] = {}
        for m in messages:
            if m.role == "tool" and m.tool_call_id:
                results[m.tool_call_id.rsplit("_", 1)[0]] = m.text
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
        text = results[PLAN_ID]
        if "Status: VALID" in text and re.search(r"Conditions met: (\d+)/\1\b", text):
            note = f"The forecast is valid and meets {_met(text)} conditions. Submitting it."
            return self._call(note, SUBMIT_ID, "submit_forecast", self.solution)
        note = "The check shows problems; I submit my most reliable forecast instead."
        return self._call(note, SUBMIT_ID, "submit_forecast", self.fallback)
