"""Layer 4: re-check the submitted forecast and score it."""

from __future__ import annotations

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.core.tools import World
from agentharness.tasks.finance.simulator import evaluate, normalize_forecast
from agentharness.tasks.finance.tools import FinanceWorld


def efficiency(checks: int, free_checks: int) -> float:
    """1 up to ``free_checks`` calculate_metrics calls, then falling linearly to 0 at twice that."""
    if checks <= free_checks:
        return 1.0
    return max(0.0, 1.0 - (checks - free_checks) / free_checks)


def reward(instance: Instance, world: World, trajectory: Trajectory) -> Reward:
    """Fraction of conditions met (x0.9) plus an efficiency bonus scaled by it (x0.1).

    Gated to zero when no forecast was submitted or an identity or bound is violated.
    The submitted forecast is re-evaluated here; nothing the agent claimed is trusted.
    """
    answer = world.final_answer
    if answer is None or not isinstance(answer.get("forecast"), dict):
        return Reward.zero("no forecast submitted")
    try:
        forecast, _ = normalize_forecast(answer["forecast"])
    except (ValueError, TypeError) as e:
        return Reward.zero(f"submitted forecast unreadable: {e}")
    report = evaluate(instance.public, forecast)
    n = len(report.results)
    checks = world.checks if isinstance(world, FinanceWorld) else 0
    free = int(instance.config.get("free_checks", 8))
    eff = efficiency(checks, free)
    broken = [i.item for i, _, _ in report.identity_errors] + [
        r.name for r, _, _ in report.rule_errors
    ]
    failing = [c.ratio for c, _, ok, _ in report.results if not ok]
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
            name="conditions",
            value=report.fraction,
            weight=0.9,
            detail=f"{report.met}/{n} met"
            + (f"; failing: {', '.join(failing)}" if failing else ""),
        ),
        RewardComponent(
            name="efficiency",
            value=eff * report.fraction,
            weight=0.1,
            detail=f"{checks} calculate_metrics calls ({free} free), scaled by the conditions met",
        ),
    ]
    success = report.valid and report.met == n
    if report.valid:
        explanation = f"valid forecast meeting {report.met}/{n} conditions"
    else:
        explanation = f"invalid forecast (violated: {', '.join(broken[:6])}): score 0"
    return Reward.from_components(
        components, success=success, explanation=explanation, gate=1.0 if report.valid else 0.0
    )
