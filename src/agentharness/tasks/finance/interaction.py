"""Layer 3: budgets and what the agent hears when it stops calling tools."""

from __future__ import annotations

from agentharness.core.instance import Instance
from agentharness.core.messages import Message
from agentharness.core.task import Budgets, Interaction
from agentharness.tasks.finance.simulator import ITEMS
from agentharness.tasks.finance.tools import FinanceWorld

BUDGETS = Budgets(
    max_turns=24,
    max_tool_calls=40,
)


class FinanceInteraction(Interaction[FinanceWorld]):
    """Nudges towards a checked, valid forecast and then ``submit_forecast``."""

    def __init__(self, budgets: Budgets | None = None) -> None:
        super().__init__(budgets or BUDGETS)

    def on_no_tool_call(
        self, instance: Instance, world: FinanceWorld, message: Message, nudges: int
    ) -> str | None:
        report = world.last_report
        if report is None:
            return (
                "You did not call a tool. Build a complete forecast (a JSON object with all "
                f"{len(ITEMS)} keys: choose the drivers, derive the rest from the identities, or "
                "write the identities, bounds and conditions as linear constraints and solve them "
                "with linear_program) and call calculate_metrics(forecast) to see which "
                "identities, bounds and conditions fail; then call submit_forecast(forecast)."
            )
        if not report.valid:
            broken = [i.item for i, _, _ in report.identity_errors] + [
                r.name for r, _, _ in report.rule_errors
            ]
            return (
                "You did not call a tool. Your last checked forecast is INVALID and would score 0 "
                f"(violations: {', '.join(broken[:6])}). Fix them, re-check with "
                "calculate_metrics, and finish with submit_forecast(forecast)."
            )
        failing = [c.ratio for c, _, ok, _ in report.results if not ok]
        if failing:
            return (
                f"You did not call a tool. Your last checked forecast is valid and meets "
                f"{report.met}/{len(report.results)} conditions; still failing: "
                f"{', '.join(failing)}. "
                "Adjust the drivers and re-check with calculate_metrics, or call "
                "submit_forecast(forecast) to finish."
            )
        return (
            "You did not call a tool. Your last checked forecast is valid and meets every "
            "condition: call submit_forecast(forecast) with it to finish."
        )
