"""Layer 4: re-run the kinematics and collision check on the submitted angles.

The reward (since robot_reach-v2) pays for reaching, not for avoiding obstacles:

* **gate** — an answer that is invalid (wrong length, outside the joint limits) or
  collides scores 0. Being collision-free earns nothing by itself.
* **reach** (weight 0.9) — 1 within the tolerance. Otherwise partial credit only inside
  a *shaped radius* around the target, ``R = min(SHAPE_FRAC * reach, START_FRAC * d0)``
  with ``d0`` the start configuration's distance (v6: or the nearest collision-free simple
  pose's, whichever is closer): ``PARTIAL_CAP * s ** 2`` with
  ``s = 1 - (d - tol) / (R - tol)``. An answer must therefore halve the start's distance
  and that of every simple pose and come within a quarter of the arm's length before any
  partial credit is paid, so echoing the start, the straight or limit poses, a pose
  ``start_poses`` listed or any collision-free pose elsewhere earns nothing. The partial
  total is at most 0.45, well below the solved threshold.
* **efficiency** (weight 0.1) — only for a reached target: 1 up to par tool calls, then
  falling to 0 at the tool-call budget.
"""

from __future__ import annotations

import math

import numpy as np

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.tasks.robot_reach.interaction import BUDGETS, par_tool_calls
from agentharness.tasks.robot_reach.problem import Public
from agentharness.tasks.robot_reach.simulator import ArmInputError, Scene, scene_from_public
from agentharness.tasks.robot_reach.tools import RobotReachWorld, nearest_simple_poses

W_REACH, W_EFFICIENCY = 0.9, 0.1
# Partial credit (outside the tolerance) is at most this share of the reach component.
PARTIAL_CAP = 0.5
# The shaped radius: at most this share of the arm's reach ...
SHAPE_FRAC = 0.25
# ... and at most this share of the start configuration's distance to the target.
START_FRAC = 0.5


def start_angles(public: Public, scene: Scene) -> list[float]:
    """The arm's start configuration (the straight pose, clamped, when none is given)."""
    if public.start is not None:
        return list(public.start.joint_angles)
    return [float(x) for x in scene.arm.clamp(np.zeros(scene.arm.n_joints))]


def shaped_radius(scene: Scene, start_distance: float) -> float:
    """Partial credit is paid only closer to the target than this (metres): a quarter of
    the arm's reach, half the start's distance and (v6) half the distance of the nearest
    collision-free simple pose, the best answer ``start_poses`` could hand out unsolved."""
    _, near, nearest = nearest_simple_poses(scene, 1)
    lookup = float(near[nearest[0]]) if nearest else math.inf
    return min(SHAPE_FRAC * scene.arm.reach, START_FRAC * start_distance, START_FRAC * lookup)


def reach_score(distance: float, tolerance: float, radius: float) -> float:
    """1 within the tolerance; ``PARTIAL_CAP * s**2`` inside ``radius``; 0 beyond it."""
    if distance <= tolerance:
        return 1.0
    if radius <= tolerance or distance >= radius:
        return 0.0
    s = 1.0 - (distance - tolerance) / (radius - tolerance)
    return PARTIAL_CAP * s * s


def reward(instance: Instance, world: RobotReachWorld, trajectory: Trajectory) -> Reward:
    """Reach (gated on no collision; partial only near the target), efficiency once reached."""
    answer = world.final_answer
    if answer is None:
        return Reward.from_components(
            [
                RewardComponent(name="reach", value=0.0, weight=W_REACH, detail="no answer"),
                RewardComponent(
                    name="efficiency", value=0.0, weight=W_EFFICIENCY, detail="no answer"
                ),
            ],
            success=False,
            explanation="No joint angles were submitted (submit_angles was never called successfully).",
        )
    public = instance.public_as(Public)
    scene = scene_from_public(public)
    try:
        q = scene.arm.validate(list(answer.get("joint_angles", [])))
        start = scene.evaluate(scene.arm.clamp(np.asarray(start_angles(public, scene))))
    except ArmInputError as e:
        return Reward.zero(f"The submitted angles are invalid: {e}")
    ev = scene.evaluate(q)
    tol = scene.tolerance
    reached = ev.distance <= tol
    safe = ev.collision_free
    radius = shaped_radius(scene, start.distance)
    reach = reach_score(ev.distance, tol, radius)

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
            detail=(
                f"distance {ev.distance:.4f} m, tolerance {tol:g} m, partial credit inside "
                f"{radius:.4f} m (start {start.distance:.4f} m)"
            ),
        ),
        RewardComponent(
            name="efficiency",
            value=efficiency,
            weight=W_EFFICIENCY,
            detail=f"{calls} tool calls (par {par})"
            + ("" if reached else "; paid only when the target is reached"),
        ),
        RewardComponent(name="collision_free", value=float(safe), weight=0.0, detail=safety),
    ]
    if reached and safe:
        verdict = "Reached the target without collision."
    elif not safe:
        verdict = "The arm collides: the answer scores 0."
    elif reach > 0.0:
        verdict = "Collision-free, near the target but outside the tolerance: partial credit."
    else:
        verdict = (
            f"Collision-free but not within {radius:.4f} m of the target: no credit for "
            "merely avoiding the obstacles."
        )
    return Reward.from_components(
        components,
        success=reached and safe,
        explanation=f"{verdict} Distance {ev.distance:.4f} m; {safety}.",
        gate=1.0 if safe else 0.0,
    )
