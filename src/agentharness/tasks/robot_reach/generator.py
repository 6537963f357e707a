"""Layer 1: draw an arm, a hidden collision-free pose, its target and obstacles around it.

Each problem is built around a hidden configuration ``q*`` inside the joint limits:
the target is ``q*``'s end-effector position, and every obstacle is placed so that
``q*`` keeps at least ``obstacle_gap`` of free space. Obstacles are of two kinds:

* *side* obstacles hug a link of ``q*`` at 1-2x ``obstacle_gap`` (in flanking groups
  when ``narrow_passages`` is on, so the link threads a narrow passage);
* *shadow* obstacles sit on the mirror pose (``q*`` turned 180 deg about the
  base-target line, which reaches the same target), so the obvious alternative
  elbow-flipped solution is blocked.

All published numbers are rounded first and ``q*`` is verified on the rounded scene;
a draw that fails is redrawn from a sub-seed, so every instance is solvable.
"""

from __future__ import annotations

import json
import math

import numpy as np

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, system, user
from agentharness.core.task import Problem, UnsatisfiableKnobsError
from agentharness.tasks.robot_reach.config import RobotReachConfig
from agentharness.tasks.robot_reach.problem import Hidden, Public, Start
from agentharness.tasks.robot_reach.simulator import Arm, Obstacle, Scene, scene_from_public

MAX_ATTEMPTS = 500
# Random configurations tried for the arm's start before the draw is abandoned.
START_TRIES = 200


class RobotReachGenerator:
    """Deterministic generator of reaching problems."""

    def generate(self, config: RobotReachConfig, seed: int) -> Problem:
        for attempt in range(MAX_ATTEMPTS):
            rng = np.random.default_rng([seed, attempt])
            problem = _draw(config, rng)
            if problem is not None:
                return problem
        raise UnsatisfiableKnobsError(
            f"robot_reach: no verifiable instance after {MAX_ATTEMPTS} draws for seed {seed}; "
            "loosen the knobs (fewer obstacles, a larger obstacle_gap, tolerance or "
            "joint_limit_deg, or a smaller obstacle_radius)."
        )

    def prompt(self, instance: Instance) -> list[Message]:
        return build_prompt(instance.public_as(Public))


def _draw(cfg: RobotReachConfig, rng: np.random.Generator) -> Problem | None:
    n = cfg.n_links
    lengths = tuple(round(float(x), 3) for x in rng.uniform(0.4, 1.2, n))
    axes = tuple(("z" if i % 2 == 0 else "y") if cfg.spatial else "z" for i in range(n))
    lower = tuple(-float(round(cfg.joint_limit_deg * rng.uniform(0.6, 1.0))) for _ in range(n))
    upper = tuple(float(round(cfg.joint_limit_deg * rng.uniform(0.6, 1.0))) for _ in range(n))
    arm = Arm(lengths, axes, lower, upper, cfg.link_radius, cfg.spatial)

    # The hidden pose stays off the limits so small corrections remain possible.
    q = np.round(rng.uniform(np.asarray(lower) * 0.85, np.asarray(upper) * 0.85), 1)
    points, _ = arm.frames(q)
    target = np.round(points[-1], 4)
    if not 0.3 * arm.reach <= float(np.linalg.norm(target)) <= 0.92 * arm.reach:
        return None
    bare = Scene(arm, (), _t3(target), cfg.tolerance, cfg.self_collision)
    if cfg.self_collision and bare.evaluate(q).min_clearance < max(cfg.link_radius, 0.02):
        return None

    obstacles = _place_obstacles(cfg, rng, arm, points, target)
    if obstacles is None:
        return None
    scene = Scene(arm, tuple(obstacles), _t3(target), cfg.tolerance, cfg.self_collision)
    public = _public(cfg, scene)
    # Verify on exactly what the agent sees.
    check = scene_from_public(public)
    ev = check.evaluate(check.arm.validate(q.tolist()))
    if not ev.collision_free or ev.min_clearance < 0.5 * cfg.obstacle_gap:
        return None
    if ev.distance > 0.1 * cfg.tolerance:
        return None
    start = _draw_start(cfg, rng, check)
    if start is None:
        return None
    hidden = Hidden(
        solution=tuple(float(x) for x in q),
        solution_distance=round(ev.distance, 6),
        # None when nothing can collide (no obstacle, no self-collision): JSON has no inf.
        solution_clearance=round(ev.min_clearance, 6) if math.isfinite(ev.min_clearance) else None,
    )
    return Problem(
        public=public.model_copy(update={"start": start}).model_dump(mode="json"),
        hidden=hidden.model_dump(mode="json"),
    )


def _t3(v: np.ndarray) -> tuple[float, float, float]:
    return (float(v[0]), float(v[1]), float(v[2]))


def _clearance_to(arm: Arm, points: np.ndarray, ob: Obstacle) -> float:
    scene = Scene(arm, (ob,), (0.0, 0.0, 0.0), 1.0, False)
    obs, _ = scene.clearances(points)
    return float(obs.min())


def _rounded(center: np.ndarray, radius: float, spatial: bool) -> Obstacle:
    c = np.round(center, 3)
    if not spatial:
        c[2] = 0.0
    return Obstacle(center=_t3(c), radius=round(radius, 3))


def _perpendiculars(
    direction: np.ndarray, count: int, spatial: bool, rng: np.random.Generator
) -> list[np.ndarray]:
    """``count`` unit vectors perpendicular to ``direction``, evenly spread around it."""
    if not spatial:
        normal = np.array([-direction[1], direction[0], 0.0])
        normal /= np.linalg.norm(normal)
        sign = 1.0 if rng.random() < 0.5 else -1.0
        return [sign * normal, -sign * normal][:count]
    helper = rng.normal(size=3)
    u = helper - (helper @ direction) * direction
    u /= np.linalg.norm(u)
    w = np.cross(direction, u)
    angles = (2 * math.pi * k / count for k in range(count))
    return [math.cos(a) * u + math.sin(a) * w for a in angles]


def _pocket(cfg: RobotReachConfig, rng: np.random.Generator, points: np.ndarray) -> list[Obstacle]:
    """Obstacles that close the target in except for the way the last link comes in.

    One sits straight ahead of the tip and a ring (two circles, or four spheres whose gaps
    are narrower than a link) sits beside it, so the tip must enter along a narrow cone.
    """
    tip = points[-1]
    d = (points[-1] - points[-2]) / np.linalg.norm(points[-1] - points[-2])
    ring = _perpendiculars(d, 4 if cfg.spatial else 2, cfg.spatial, rng)
    radius = cfg.obstacle_radius * float(rng.uniform(0.9, 1.1))
    out = []
    for v in [d, *ring]:
        gap = cfg.obstacle_gap * float(rng.uniform(1.0, 1.3))
        out.append(_rounded(tip + v * (cfg.link_radius + gap + radius), radius, cfg.spatial))
    return out


def _place_obstacles(
    cfg: RobotReachConfig,
    rng: np.random.Generator,
    arm: Arm,
    points: np.ndarray,
    target: np.ndarray,
) -> list[Obstacle] | None:
    def clear(batch: list[Obstacle], factor: float) -> bool:
        return all(_clearance_to(arm, points, ob) >= factor * cfg.obstacle_gap for ob in batch)

    placed: list[Obstacle] = []
    if cfg.narrow_passages:
        pocket = _pocket(cfg, rng, points)
        if len(pocket) <= cfg.n_obstacles:
            if not clear(pocket, 0.95):
                return None
            placed.extend(pocket)
    axis = target / np.linalg.norm(target)
    # The mirror pose (turned 180 deg about the base-target line) reaches the same target.
    shadow = 2.0 * (points @ axis)[:, None] * axis[None, :] - points
    group = (3 if cfg.spatial else 2) if cfg.narrow_passages else 1
    tries = 0
    slot = 0
    while len(placed) < cfg.n_obstacles:
        tries += 1
        if tries > 60 * max(1, cfg.n_obstacles):
            return None
        if slot % 3 == 0 and tries % 4 != 0:  # every third slot tries the mirror pose first
            k = int(rng.integers(0, arm.n_joints))
            t = float(rng.uniform(0.3, 1.0))
            center = shadow[k] + t * (shadow[k + 1] - shadow[k])
            radius = cfg.obstacle_radius * float(rng.uniform(0.6, 1.4))
            ob = _rounded(center, radius, cfg.spatial)
            if clear([ob], 1.0):
                placed.append(ob)
                slot += 1
            continue
        k = int(rng.integers(0, arm.n_joints))
        a, b = points[k], points[k + 1]
        direction = (b - a) / np.linalg.norm(b - a)
        p = a + float(rng.uniform(0.2, 0.9)) * (b - a)
        size = min(group, cfg.n_obstacles - len(placed))
        batch = []
        for normal in _perpendiculars(direction, size, cfg.spatial, rng):
            gap = cfg.obstacle_gap * float(rng.uniform(1.0, 1.5 if size > 1 else 2.0))
            radius = cfg.obstacle_radius * float(rng.uniform(0.6, 1.4))
            batch.append(
                _rounded(p + normal * (cfg.link_radius + gap + radius), radius, cfg.spatial)
            )
        if clear(batch, 0.95):
            placed.extend(batch)
            slot += 1
    return placed


def _draw_start(cfg: RobotReachConfig, rng: np.random.Generator, scene: Scene) -> Start | None:
    """The arm's resting configuration: collision-free, inside the limits, far from the target.

    Its end effector sits at least ``start_distance`` (a share of the arm's reach) from the
    target, so echoing it back as the answer earns nothing, and the reward measures
    progress against its distance.
    """
    arm = scene.arm
    lo, hi = np.asarray(arm.lower_deg), np.asarray(arm.upper_deg)
    for _ in range(START_TRIES):
        q = np.round(rng.uniform(0.9 * lo, 0.9 * hi), 1)
        ev = scene.evaluate(q)
        if ev.collision_free and ev.distance >= cfg.start_distance * arm.reach:
            return Start(
                joint_angles=tuple(float(x) for x in q),
                end_effector=tuple(round(float(x), 4) for x in ev.points[-1][: arm.dims]),
                distance_to_target=round(ev.distance, 4),
            )
    return None


def _public(cfg: RobotReachConfig, scene: Scene) -> Public:
    """What the prompt states about ``scene`` (the start is added once it is drawn)."""
    d = 3 if cfg.spatial else 2
    arm = scene.arm
    return Public.model_validate(
        {
            "dims": d,
            "spatial": cfg.spatial,
            "n_joints": arm.n_joints,
            "link_lengths": arm.link_lengths,
            "joint_axes": arm.axes,
            "joint_limits_deg": tuple(zip(arm.lower_deg, arm.upper_deg, strict=True)),
            "link_radius": arm.link_radius,
            "obstacles": [{"center": o.center[:d], "radius": o.radius} for o in scene.obstacles],
            "target": [round(x, 4) for x in scene.target[:d]],
            "tolerance": scene.tolerance,
            "self_collision": scene.self_collision,
        }
    )


SYSTEM = (
    "You control a robot arm. Use the tools to test joint configurations, then submit the joint "
    "angles that put the end effector on the target without any collision. Think about the "
    "geometry, use the feedback (positions, offset to the target, clearances), and keep the "
    "number of tool calls reasonable."
)


def build_prompt(public: Public) -> list[Message]:
    n, d = public.n_joints, public.dims
    coords = "[x, y]" if d == 2 else "[x, y, z]"
    if public.spatial:
        kin = (
            "The arm is spatial (3-D). Joint i turns by q_i degrees (right-handed) about its local "
            "axis listed below - 'z' (yaw) or 'y' (pitch; a positive angle tilts the link from +x "
            "towards -z) - and then link i extends L_i along its new local x axis:\n"
            "T = Rot(axis_1, q_1) Trans(L_1,0,0) Rot(axis_2, q_2) Trans(L_2,0,0) ...\n"
            "With all angles 0 the arm lies straight along +x. Obstacles are spheres."
        )
    else:
        kin = (
            "The arm is planar (2-D). Joint i turns by q_i degrees counter-clockwise relative to the "
            "previous link, so link i points at the absolute angle theta_i = q_1 + ... + q_i and "
            "joint i+1 = joint i + L_i (cos theta_i, sin theta_i). With all angles 0 the arm lies "
            "straight along +x. Obstacles are circles."
        )
    joints = "\n".join(
        f"  joint {i + 1}: axis {ax}, limits [{lo:g}, {hi:g}] deg, link length {length:g} m"
        for i, (ax, (lo, hi), length) in enumerate(
            zip(
                public.joint_axes,
                public.joint_limits_deg,
                public.link_lengths,
                strict=True,
            )
        )
    )
    obstacles = (
        "\n".join(
            f"  obstacle {j + 1}: center {json.dumps(o.center)}, radius {o.radius:g} m"
            for j, o in enumerate(public.obstacles)
        )
        or "  (none)"
    )
    self_rule = (
        " Links may not touch each other either (self-collision between non-adjacent links counts)."
        if public.self_collision
        else ""
    )
    start = public.start
    start_text = ""
    if start is not None:
        start_text = (
            f"The arm rests at joint angles {json.dumps(start.joint_angles)} (degrees, base "
            "to tip; collision-free)"
        )
        if start.end_effector is not None and start.distance_to_target is not None:
            start_text += (
                f", with its end effector at {json.dumps(start.end_effector)}, "
                f"{start.distance_to_target:g} m from the target"
            )
        start_text += ".\n\n"
    text = (
        f"Move the end effector of a {n}-joint arm onto the target {json.dumps(public.target)} "
        f"(coordinates {coords} in metres), within {public.tolerance:g} m.\n\n"
        f"{start_text}"
        f"Kinematics: the base is fixed at the origin. {kin}\n\nJoints (base to tip):\n{joints}\n\n"
        f"Each link is a capsule of radius {public.link_radius:g} m around the segment between "
        f"its two joints. A link collides with an obstacle when the segment comes closer to the "
        f"obstacle's centre than link radius + obstacle radius.{self_rule}\n\n"
        f"Obstacles:\n{obstacles}\n\n"
        f"Every joint_angles argument is a list of exactly {n} angles in degrees, base to tip, "
        "each within its limits.\n\n"
        "Scoring: full credit when the end effector is within the tolerance of the target and "
        "nothing collides, and then fewer tool calls score a little higher. An answer that "
        "collides or breaks a joint limit scores 0. A collision-free answer outside the tolerance "
        "earns a little partial credit only when its end effector is close to the target (within "
        "a quarter of the arm's total length and half of the start's distance), more the closer "
        "it is; anywhere else it earns nothing."
    )
    return [system(SYSTEM), user(text)]
