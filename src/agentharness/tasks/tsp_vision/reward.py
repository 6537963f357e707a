"""Layer 4: best-known length over the submitted tour's re-computed length."""

from __future__ import annotations

from typing import Any

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.core.tools import World
from agentharness.tasks.tsp_vision import simulator

# Within 1% of the optimum counts as solved (reading pixels is never exact).
SUCCESS_RATIO = 0.99


def reward(instance: Instance, world: World, trajectory: Trajectory) -> Reward:
    """Optimality ratio of a valid submitted tour; 0 for a missing or invalid one.

    The tour is re-checked and its length re-computed from the hidden coordinates;
    nothing the agent or the tools reported is trusted.
    """
    answer: dict[str, Any] | None = world.final_answer
    if answer is None:
        return _zero(f"no tour submitted (episode ended: {trajectory.end_reason})")
    raw = answer.get("order")
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        return _zero("the submitted order is not a list of labels")
    labels: list[str] = list(instance.public["labels"])
    cities = [(int(x), int(y)) for x, y in instance.hidden["cities"]]
    order = simulator.normalize_order(raw)
    check = simulator.check_order(order, labels)
    if not check.valid:
        return _zero(f"invalid tour: {check.describe()}")
    tour = simulator.order_to_indices(order, labels)
    length = simulator.tour_length(cities, tour)
    # A heuristic best-known length can be beaten; the ratio then caps at 1.
    best = min(float(instance.hidden["optimal_length"]), length)
    ratio = best / length if length > 0 else 0.0
    kind = "optimal" if instance.hidden.get("exact") else "best-known"
    detail = f"tour length {length:.2f} vs {kind} {best:.2f}"
    return Reward.from_components(
        [
            RewardComponent(
                name="validity", value=1.0, weight=0.0, detail="visits every city once"
            ),
            RewardComponent(name="optimality", value=ratio, weight=1.0, detail=detail),
        ],
        success=ratio >= SUCCESS_RATIO,
        explanation=f"valid tour; {detail} (ratio {ratio:.3f})",
    )


def _zero(why: str) -> Reward:
    return Reward.from_components(
        [
            RewardComponent(name="validity", value=0.0, weight=0.0, detail=why),
            RewardComponent(name="optimality", value=0.0, weight=1.0, detail=why),
        ],
        success=False,
        explanation=why,
        gate=0.0,
    )
