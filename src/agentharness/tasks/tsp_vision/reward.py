"""Layer 4: credit only for a tour close to the optimum, re-computed from the hidden map.

Any tour earns a share of the optimum under a plain ``optimal / length`` ratio: the
labels in their given order earned 0.44-0.77 without a look at the map. Here the
credit falls linearly from 1 at the optimal (or best-known) length to 0 at the
difficulty's ``tolerance`` of excess length, so only a tour planned from the map's
positions earns it; random and blind tours are far beyond the tolerance.
"""

from __future__ import annotations

from typing import Any

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.tasks.tsp_vision import simulator
from agentharness.tasks.tsp_vision.config import TspVisionConfig
from agentharness.tasks.tsp_vision.problem import Hidden, Public
from agentharness.tasks.tsp_vision.tools import TspVisionWorld

# Within 1% of the optimum counts as solved (reading pixels is never exact).
SUCCESS_GAP = 0.01


def closeness(gap: float, tolerance: float) -> float:
    """1 at the optimum (``gap`` = length / optimal - 1 = 0), 0 at ``tolerance`` and beyond."""
    return max(0.0, 1.0 - max(0.0, gap) / tolerance)


def reward(instance: Instance, world: TspVisionWorld, trajectory: Trajectory) -> Reward:
    """Closeness of a valid submitted tour to the optimum; 0 for a missing or invalid one.

    The tour is re-checked and its length re-computed from the hidden coordinates;
    nothing the agent or the tools reported is trusted.
    """
    answer: dict[str, Any] | None = world.final_answer
    if answer is None:
        return _zero(f"no tour submitted (episode ended: {trajectory.end_reason})")
    raw = answer.get("order")
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        return _zero("the submitted order is not a list of labels")
    labels = instance.public_as(Public).labels
    hidden = instance.hidden_as(Hidden)
    order = simulator.normalize_order(raw)
    check = simulator.check_order(order, labels)
    if not check.valid:
        return _zero(f"invalid tour: {check.describe()}")
    tour = simulator.order_to_indices(order, labels)
    length = simulator.tour_length(hidden.cities, tour)
    # A heuristic best-known length can be beaten; the gap is then 0.
    best = min(hidden.optimal_length, length)
    gap = length / best - 1.0 if best > 0 else float("inf")
    tolerance = TspVisionConfig.model_validate(instance.config).tolerance
    value = closeness(gap, tolerance)
    kind = "optimal" if hidden.exact else "best-known"
    detail = (
        f"tour length {length:.2f} vs {kind} {best:.2f}: {100 * gap:.1f}% longer; credit falls "
        f"to 0 at {100 * tolerance:g}% longer"
    )
    return Reward.from_components(
        [
            RewardComponent(
                name="validity", value=1.0, weight=0.0, detail="visits every city once"
            ),
            RewardComponent(name="optimality", value=value, weight=1.0, detail=detail),
        ],
        success=gap <= SUCCESS_GAP,
        explanation=f"valid tour; {detail} (score {value:.3f})",
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
