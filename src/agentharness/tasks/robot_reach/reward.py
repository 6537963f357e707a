"""Layer 4: re-run the kinematics and collision check on the submitted angles."""

from __future__ import annotations

import math

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.core.tools import World
from agentharness.tasks.robot_reach.interaction import BUDGETS, par_tool_calls
from agentharness.tasks.robot_reach.simulator import ArmInputError, scene_from_public

W_REACH, W_SAFE, W_EFFICIENCY = 0.75, 0.15, 0.10
# Partial reach credit halves roughly every 7% of the arm's length beyond the tolerance.
REACH_SCALE = 0.1


def reach_score(distance: float, tolerance: float, arm_length: float) -> float:
    """1 within the tolerance, then exp(-(d - tol) / (0.1 * arm length))."""
    if distance <= tolerance:
        return 1.0
    return math.exp(-(distance - tolerance) / (REACH_SCALE * arm_length))


def reward(instance: Instance, world: World, trajectory: Trajectory) -> Reward:
    """Reach (partial by distance), collision-free gate, and efficiency once reached."""
    answer = world.final_answer
    if answer is None:
        return Reward.from_components(
            [
                RewardComponent(name="reach", value=0.0, weight=W_REACH, detail="no answer"),
                RewardComponent(
                    name="collision_free", value=0.0, weight=W_SAFE, detail="no answer"
                ),
                RewardComponent(
                    name="efficiency", value=0.0, weight=W_EFFICIENCY, detail="no answer"
                ),
            ],
            success=False,
            explanation="No joint angles were submitted (submit_angles was never called successfully).",
        )
    scene = scene_from_public(instance.public)
    try:
        q = scene.arm.validate(list(answer.get("joint_angles", [])))
    except ArmInputError as e:
        return Reward.zero(f"The submitted angles are invalid: {e}")
    ev = scene.evaluate(q)
    tol = scene.tolerance
    reached = ev.distance <= tol
    safe = ev.collision_free
    reach = reach_score(ev.distance, tol, scene.arm.reach)

    calls = len(trajectory.tool_calls)
    par = par_tool_calls(scene.arm.n_joints)
    span = max(1, BUDGETS.max_tool_calls - par)
    efficiency = 1.0 if calls <= par else max(0.0, 1.0 - (calls - par) / span)
    if not reached:
        efficiency = 0.0  # quick give-ups earn no speed bonus

    if safe:
        safety = f"no collision (min clearance {ev.min_clearance:.4f} m)"
    else:
        worst = ev.collisions[0]
        what = (
            f"obstacle {worst.obstacle}"
            if worst.obstacle is not None
            else f"link {worst.other_link}"
        )
        safety = f"{len(ev.collisions)} collision(s), link {worst.link} into {what} by {-worst.clearance:.4f} m"
    components = [
        RewardComponent(
            name="reach",
            value=reach,
            weight=W_REACH,
            detail=f"distance {ev.distance:.4f} m, tolerance {tol:g} m",
        ),
        RewardComponent(name="collision_free", value=float(safe), weight=W_SAFE, detail=safety),
        RewardComponent(
            name="efficiency",
            value=efficiency,
            weight=W_EFFICIENCY,
            detail=f"{calls} tool calls (par {par})",
        ),
    ]
    if reached and safe:
        verdict = "Reached the target without collision."
    elif safe:
        verdict = "Collision-free but outside the tolerance: partial credit by distance."
    else:
        verdict = "The arm collides: the answer scores 0."
    return Reward.from_components(
        components,
        success=reached and safe,
        explanation=f"{verdict} Distance {ev.distance:.4f} m; {safety}.",
        gate=1.0 if safe else 0.0,
    )
