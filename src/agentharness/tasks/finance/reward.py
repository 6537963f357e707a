"""Layer 4: re-check the submitted forecast and score it (finance-v2).

Gated to zero when no forecast was submitted or an identity or plausibility bound is
violated. Otherwise:

* ``all_conditions`` (0.6): every condition is met;
* ``progress`` (0.3): the fraction of the *credited* conditions met, counted only once
  every uncredited condition is met. A condition is credited when no naive forecast
  (last year's drivers, averages, growth extrapolations, the trend forecast, drivers at
  the optimistic ends of their ranges; see
  :func:`~agentharness.tasks.finance.simulator.naive_forecasts`) already meets it on this
  instance. Each uncredited condition is met by some naive forecast, so meeting them
  is no progress on its own; the gate makes a forecast that trades them away for a
  credited one earn nothing, and no naive forecast can meet every condition (the
  generator keeps at least one credited);
* ``efficiency`` (0.1): few ``calculate_metrics`` calls, paid only when every condition
  is met.

The submitted forecast is re-evaluated here; nothing the agent claimed is trusted.
"""

from __future__ import annotations

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.tasks.finance.config import FinanceConfig
from agentharness.tasks.finance.problem import Public
from agentharness.tasks.finance.simulator import (
    EFFICIENCY_WEIGHT,
    PROGRESS_WEIGHT,
    SUCCESS_WEIGHT,
    evaluate,
    normalize_forecast,
)
from agentharness.tasks.finance.tools import FinanceWorld


def config_of(instance: Instance) -> FinanceConfig:
    """The instance's generator config, typed (validated once per instance)."""
    return instance.derived(
        ("config", FinanceConfig), lambda: FinanceConfig.model_validate(instance.config)
    )


def efficiency(checks: int, free_checks: int) -> float:
    """1 up to ``free_checks`` calculate_metrics calls, then falling linearly to 0 at twice that."""
    if checks <= free_checks:
        return 1.0
    return max(0.0, 1.0 - (checks - free_checks) / free_checks)


def reward(instance: Instance, world: FinanceWorld, trajectory: Trajectory) -> Reward:
    """all conditions 0.6 + credited conditions met 0.3 + efficiency 0.1 (with success)."""
    answer = world.final_answer
    if answer is None or not isinstance(answer.get("forecast"), dict):
        return Reward.zero("no forecast submitted")
    try:
        forecast, _ = normalize_forecast(answer["forecast"])
    except (ValueError, TypeError) as e:
        return Reward.zero(f"submitted forecast unreadable: {e}")
    report = evaluate(instance.public_as(Public), forecast)
    n = len(report.results)
    checks = world.checks
    free = config_of(instance).free_checks
    eff = efficiency(checks, free) if report.all_met else 0.0
    broken = [i.item for i, _, _ in report.identity_errors] + [
        r.name for r, _, _ in report.rule_errors
    ]
    failing = [c.ratio for c, _, ok, _ in report.results if not ok]
    uncredited = [c.ratio for c, _, _, _ in report.results if not c.credited]
    components = [
        RewardComponent(
            name="validity",
            value=float(report.valid),
            weight=0.0,
            detail="all identities and bounds hold"
            if report.valid
            else "violated: " + ", ".join(broken),
        ),
        RewardComponent(
            name="all_conditions",
            value=float(report.all_met),
            weight=SUCCESS_WEIGHT,
            detail=f"{report.met}/{n} met"
            + (f"; failing: {', '.join(failing)}" if failing else ""),
        ),
        RewardComponent(
            name="progress",
            value=report.progress,
            weight=PROGRESS_WEIGHT,
            detail=f"{report.credited_met}/{report.credited} credited conditions met"
            + (
                f"; counted only once all of {', '.join(uncredited)} (which a naive forecast "
                f"meets) are met: {'yes' if report.uncredited_met else 'no'}"
                if uncredited
                else ""
            ),
        ),
        RewardComponent(
            name="efficiency",
            value=eff,
            weight=EFFICIENCY_WEIGHT,
            detail=f"{checks} calculate_metrics calls ({free} free), paid only when every "
            "condition is met",
        ),
    ]
    success = report.valid and report.all_met
    if report.valid:
        explanation = (
            f"valid forecast meeting {report.met}/{n} conditions "
            f"({report.credited_met}/{report.credited} credited)"
        )
    else:
        explanation = f"invalid forecast (violated: {', '.join(broken[:6])}): score 0"
    return Reward.from_components(
        components, success=success, explanation=explanation, gate=1.0 if report.valid else 0.0
    )
