"""Kinematics and collision geometry of a serial arm of revolute joints.

Pure domain code (numpy only). Everything is computed in 3-D by chaining homogeneous
transforms; a planar arm is the special case where every joint turns about ``z``, and
its positions are reported as ``[x, y]``.

Conventions (stated to the agent in the prompt):

* the base sits at the origin; joint ``i`` turns by ``q_i`` degrees (right-handed) about
  its local ``z`` axis ("yaw") or its local ``y`` axis ("pitch"), then link ``i``
  extends ``L_i`` along the new local ``x`` axis:
  ``T = Rot(axis_1, q_1) Trans(L_1, 0, 0) Rot(axis_2, q_2) Trans(L_2, 0, 0) ...``;
* every link is a capsule of radius ``link_radius`` around the segment joining its two
  joints; obstacles are circles (planar) or spheres (spatial);
* a link collides with an obstacle when the segment-to-centre distance is below
  ``link_radius + obstacle radius``; with self-collision on, two non-adjacent links
  collide when their segments are closer than ``2 * link_radius``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agentharness.tasks.robot_reach.problem import Public

Array = NDArray[np.float64]

AXES = ("z", "y")
# Inputs larger than this are rejected before any arithmetic.
MAX_JOINTS = 7
# Weight of clearance shortfalls against the target offset in the expert's IK.
PENALTY_WEIGHT = 3.0


class ArmInputError(ValueError):
    """Joint angles the arm cannot take; the message says how to fix them."""


@dataclass(frozen=True)
class Obstacle:
    """A circle (planar arm) or sphere (spatial arm)."""

    center: tuple[float, float, float]
    radius: float


@dataclass(frozen=True)
class Arm:
    """A serial arm: link lengths, joint axes, joint limits (degrees) and thickness."""

    link_lengths: tuple[float, ...]
    axes: tuple[str, ...]
    lower_deg: tuple[float, ...]
    upper_deg: tuple[float, ...]
    link_radius: float
    spatial: bool

    def __post_init__(self) -> None:
        n = len(self.link_lengths)
        if not 1 <= n <= MAX_JOINTS:
            raise ValueError(f"an arm has 1..{MAX_JOINTS} links, got {n}")
        if not (len(self.axes) == len(self.lower_deg) == len(self.upper_deg) == n):
            raise ValueError("axes, limits and link lengths must have one entry per joint")
        if any(a not in AXES for a in self.axes):
            raise ValueError(f"joint axes must be one of {AXES}")
        if not self.spatial and any(a != "z" for a in self.axes):
            raise ValueError("a planar arm turns about z only")

    @property
    def n_joints(self) -> int:
        return len(self.link_lengths)

    @property
    def dims(self) -> int:
        return 3 if self.spatial else 2

    @property
    def reach(self) -> float:
        return float(sum(self.link_lengths))

    def validate(self, angles: Sequence[Any]) -> Array:
        """Angles as a float array, or :class:`ArmInputError` saying what is wrong."""
        n = self.n_joints
        if len(angles) != n:
            raise ArmInputError(
                f"this arm has {n} joints, so joint_angles must hold exactly {n} angles in degrees "
                f"(base to tip); you sent {len(angles)}."
            )
        try:
            q = np.asarray([float(a) for a in angles], dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise ArmInputError(f"joint angles must be numbers in degrees ({e}).") from e
        bad = [i + 1 for i in range(n) if not math.isfinite(q[i])]
        if bad:
            raise ArmInputError(f"joint angle(s) {bad} are not finite numbers; send degrees.")
        problems = []
        for i in range(n):
            lo, hi = self.lower_deg[i], self.upper_deg[i]
            if q[i] < lo - 1e-9:
                problems.append(
                    f"joint {i + 1} = {q[i]:g} deg is {lo - q[i]:.3g} deg below its lower limit {lo:g}"
                )
            elif q[i] > hi + 1e-9:
                problems.append(
                    f"joint {i + 1} = {q[i]:g} deg is {q[i] - hi:.3g} deg above its upper limit {hi:g}"
                )
        if problems:
            raise ArmInputError(
                "angles outside the joint limits: "
                + "; ".join(problems)
                + ". Keep every angle within "
                "its [lower, upper] range."
            )
        return q

    def clamp(self, q_deg: Array) -> Array:
        return np.clip(q_deg, np.asarray(self.lower_deg), np.asarray(self.upper_deg))

    def frames(self, q_deg: Array) -> tuple[Array, Array]:
        """Joint positions ``(n+1, 3)`` (base ... end effector) and the tip rotation ``(3, 3)``.

        Chains the homogeneous transforms ``Rot(axis_i, q_i) Trans(L_i, 0, 0)``; the
        rotation and translation parts are kept apart because that is cheaper than 4x4
        products and gives the same result.
        """
        points, R, _ = self.frames_and_axes(q_deg)
        return points, R

    def frames_and_axes(self, q_deg: Array) -> tuple[Array, Array, Array]:
        """:meth:`frames` plus each joint's rotation axis in world coordinates ``(n, 3)``."""
        R = np.eye(3)
        points = np.zeros((self.n_joints + 1, 3))
        axes = np.zeros((self.n_joints, 3))
        for i, (length, axis) in enumerate(zip(self.link_lengths, self.axes, strict=True)):
            axes[i] = R[:, 2] if axis == "z" else R[:, 1]
            R = R @ _rotation(axis, math.radians(float(q_deg[i])))
            points[i + 1] = points[i] + length * R[:, 0]
        return points, R, axes

    def transform(self, q_deg: Array) -> Array:
        """The 4x4 homogeneous base-to-tip transform (reference implementation)."""
        T = np.eye(4)
        for i, (length, axis) in enumerate(zip(self.link_lengths, self.axes, strict=True)):
            H = np.eye(4)
            H[:3, :3] = _rotation(axis, math.radians(float(q_deg[i])))
            L = np.eye(4)
            L[0, 3] = length
            T = T @ H @ L
        return T


def _rotation(axis: str, theta: float) -> Array:
    c, s = math.cos(theta), math.sin(theta)
    if axis == "z":
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    # Right-handed about y: x turns towards -z.
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _point_segment(a: Array, b: Array, c: Array) -> tuple[Array, Array, Array]:
    """Distances ``(n, m)`` from points ``c (m, 3)`` to segments ``a[i]-b[i] (n, 3)``,
    the closest-point parameters ``t (n, m)`` and the vectors closest point -> ``c``."""
    ab = b - a
    denom = np.maximum((ab * ab).sum(axis=1), 1e-18)
    ac = c[None, :, :] - a[:, None, :]
    t = _unit_clip(np.einsum("nmk,nk->nm", ac, ab) / denom[:, None])
    diff = ac - t[:, :, None] * ab[:, None, :]
    return np.sqrt((diff * diff).sum(axis=2)), t, diff


def point_segment_distances(a: Array, b: Array, c: Array) -> Array:
    """Distances ``(n, m)`` from points ``c (m, 3)`` to segments ``a[i]-b[i] (n, 3)``."""
    return _point_segment(a, b, c)[0]


def _unit_clip(x: Array) -> Array:
    return np.minimum(np.maximum(x, 0.0), 1.0)  # cheaper than np.clip on tiny arrays


def _segment_segment(
    p1: Array, q1: Array, p2: Array, q2: Array
) -> tuple[Array, Array, Array, Array]:
    """Closest distances between segment pairs ``p1[k]-q1[k]`` and ``p2[k]-q2[k]``, the
    closest-point parameters ``s``, ``t`` and the vectors between the closest points.

    Vectorised version of Ericson's clamped closest-point computation (Real-Time
    Collision Detection, 5.1.9); all inputs are ``(k, 3)``. Zero-length segments work:
    the general formula already handles a degenerate first segment, and a degenerate
    second one is special-cased below.
    """
    eps = 1e-15
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a = (d1 * d1).sum(axis=1)
    e = (d2 * d2).sum(axis=1)
    f = (d2 * r).sum(axis=1)
    c = (d1 * r).sum(axis=1)
    b = (d1 * d2).sum(axis=1)
    a_safe, e_safe = np.maximum(a, eps), np.maximum(e, eps)
    denom = a * e - b * b
    s = np.where(denom > eps, _unit_clip((b * f - c * e) / np.maximum(denom, eps)), 0.0)
    t = (b * s + f) / e_safe
    s = np.where(
        t < 0.0, _unit_clip(-c / a_safe), np.where(t > 1.0, _unit_clip((b - c) / a_safe), s)
    )
    t = _unit_clip(t)
    point_second = e <= eps
    s = np.where(point_second, _unit_clip(-c / a_safe), s)
    t = np.where(point_second, 0.0, t)
    gap = (p1 + d1 * s[:, None]) - (p2 + d2 * t[:, None])
    return np.sqrt((gap * gap).sum(axis=1)), s, t, gap


def segment_segment_distances(p1: Array, q1: Array, p2: Array, q2: Array) -> Array:
    """Closest distances between segment pairs ``p1[k]-q1[k]`` and ``p2[k]-q2[k]``."""
    return _segment_segment(p1, q1, p2, q2)[0]


def segment_segment_distance(p1: Array, q1: Array, p2: Array, q2: Array) -> float:
    """Closest distance between segments ``p1-q1`` and ``p2-q2``."""
    one = segment_segment_distances(p1[None, :], q1[None, :], p2[None, :], q2[None, :])
    return float(one[0])


@dataclass(frozen=True)
class Contact:
    """A link against an obstacle (``obstacle`` >= 1) or another link (``other_link``)."""

    link: int
    clearance: float
    obstacle: int | None = None
    other_link: int | None = None


@dataclass(frozen=True)
class Evaluation:
    """Everything the tools and the reward need about one configuration."""

    points: Array
    rotation: Array
    distance: float
    offset: Array
    contacts: list[Contact]  # every pair, sorted by clearance (most penetrating first)

    @property
    def collisions(self) -> list[Contact]:
        return [c for c in self.contacts if c.clearance < 0.0]

    @property
    def collision_free(self) -> bool:
        return not self.collisions

    @property
    def min_clearance(self) -> float:
        return self.contacts[0].clearance if self.contacts else math.inf


@dataclass(frozen=True)
class NearContact:
    """A link closer than a margin to an obstacle or another link, and how that changes.

    ``gradient`` is d(clearance)/d(joint angle) per radian, one entry per joint.
    """

    link: int
    clearance: float
    gradient: Array
    obstacle: int | None = None
    other_link: int | None = None


@dataclass(frozen=True)
class Linearization:
    """:meth:`Scene.linearize`: where the arm is and how it moves, to first order."""

    points: Array  # joint positions (n+1, 3), base ... end effector
    offset: Array  # target - end effector (3)
    distance: float
    position_jacobian: Array  # (3, n): d(end effector)/d(joint angle) per radian
    near: list[NearContact]  # the pairs closer than the margin
    min_clearance: float  # over every pair (inf without any)


@dataclass(frozen=True)
class Scene:
    """An arm, its obstacles, the target and the success tolerance."""

    arm: Arm
    obstacles: tuple[Obstacle, ...]
    target: tuple[float, float, float]
    tolerance: float
    self_collision: bool

    @cached_property
    def _obstacle_arrays(self) -> tuple[Array, Array]:
        centers = np.asarray([o.center for o in self.obstacles], dtype=np.float64).reshape(-1, 3)
        radii = np.asarray([o.radius for o in self.obstacles], dtype=np.float64)
        return centers, radii

    @cached_property
    def _self_pairs(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Link pairs checked for self-collision (none when it is off).

        Adjacent links share a joint, so only pairs two or more apart can collide.
        """
        n = self.arm.n_joints if self.self_collision else 0
        pairs = [(i, j) for i in range(n) for j in range(i + 2, n)]
        return (
            np.asarray([i for i, _ in pairs], dtype=np.int64),
            np.asarray([j for _, j in pairs], dtype=np.int64),
        )

    def end_effector(self, q_deg: Array) -> Array:
        return self.arm.frames(q_deg)[0][-1]

    def clearances(self, points: Array) -> tuple[Array, list[tuple[int, int, float]]]:
        """Link-obstacle clearances ``(n, m)`` and self clearances ``(i, j, c)``."""
        a, b = points[:-1], points[1:]
        r = self.arm.link_radius
        if self.obstacles:
            centers, radii = self._obstacle_arrays
            obs = point_segment_distances(a, b, centers) - radii[None, :] - r
        else:
            obs = np.zeros((len(a), 0))
        ii, jj = self._self_pairs
        if len(ii):
            d = segment_segment_distances(a[ii], b[ii], a[jj], b[jj]) - 2 * r
        else:
            d = np.zeros(0)
        return obs, [(int(i), int(j), float(x)) for i, j, x in zip(ii, jj, d, strict=True)]

    def evaluate(self, q_deg: Array) -> Evaluation:
        points, rotation = self.arm.frames(q_deg)
        if not np.all(np.isfinite(points)):
            raise ArmInputError("the kinematics produced non-finite positions; check the angles.")
        target = np.asarray(self.target, dtype=np.float64)
        offset = target - points[-1]
        obs, selfs = self.clearances(points)
        contacts = [
            Contact(link=i + 1, obstacle=j + 1, clearance=float(obs[i, j]))
            for i in range(obs.shape[0])
            for j in range(obs.shape[1])
        ]
        contacts += [Contact(link=i + 1, other_link=j + 1, clearance=c) for i, j, c in selfs]
        contacts.sort(key=lambda c: c.clearance)
        return Evaluation(
            points=points,
            rotation=rotation,
            distance=float(np.linalg.norm(offset)),
            offset=offset,
            contacts=contacts,
        )

    def linearize(self, q_deg: Array, margin: float) -> Linearization:
        """The end effector's and the near clearances' first-order response to the angles.

        The Jacobian (per radian) uses the revolute-joint rule d(p_i)/d(q_k) = w_k x (p_i -
        p_k) for every point ``i`` beyond joint ``k``; a clearance's gradient moves each
        closest point with its link (the closest-point parameter is stationary). Near
        contacts are the link-obstacle pairs (link-major) and then the link-link pairs
        whose clearance is below ``margin``.
        """
        points, _, axes = self.arm.frames_and_axes(q_deg)
        n = self.arm.n_joints
        lever = points[:, None, :] - points[None, :-1, :]  # p_i - p_k, (n+1, n, 3)
        beyond = (np.arange(n + 1)[:, None] > np.arange(n)[None, :])[:, :, None]
        jac_points = np.cross(np.broadcast_to(axes[None], lever.shape), lever) * beyond
        offset = np.asarray(self.target) - points[-1]
        a, b = points[:-1], points[1:]
        r = self.arm.link_radius
        near: list[NearContact] = []
        min_clear = math.inf
        if self.obstacles:
            centers, radii = self._obstacle_arrays
            dist, t, diff = _point_segment(a, b, centers)
            clear = dist - radii[None, :] - r
            min_clear = float(clear.min())
            links, obs = np.nonzero(clear < margin)
            if len(links):
                u = diff[links, obs] / np.maximum(dist[links, obs], 1e-12)[:, None]
                tt = t[links, obs][:, None, None]
                moving = (1.0 - tt) * jac_points[links] + tt * jac_points[links + 1]
                # clearance falls as the closest point moves towards the centre (along u)
                grads = -np.einsum("knd,kd->kn", moving, u)
                near += [
                    NearContact(int(i) + 1, float(clear[i, j]), g, obstacle=int(j) + 1)
                    for i, j, g in zip(links, obs, grads, strict=True)
                ]
        ii, jj = self._self_pairs
        if len(ii):
            sd, s, t2, gap = _segment_segment(a[ii], b[ii], a[jj], b[jj])
            clear2 = sd - 2 * r
            min_clear = min(min_clear, float(clear2.min()))
            act = np.nonzero(clear2 < margin)[0]
            if len(act):
                u2 = gap[act] / np.maximum(sd[act], 1e-12)[:, None]
                si, ti = s[act][:, None, None], t2[act][:, None, None]
                i0, j0 = ii[act], jj[act]
                dx = (1.0 - si) * jac_points[i0] + si * jac_points[i0 + 1]
                dy = (1.0 - ti) * jac_points[j0] + ti * jac_points[j0 + 1]
                grads = np.einsum("knd,kd->kn", dx - dy, u2)
                near += [
                    NearContact(int(i) + 1, float(clear2[k]), g, other_link=int(j) + 1)
                    for k, i, j, g in zip(act, i0, j0, grads, strict=True)
                ]
        return Linearization(
            points=points,
            offset=offset,
            distance=float(np.linalg.norm(offset)),
            position_jacobian=jac_points[-1].T,
            near=near,
            min_clearance=min_clear,
        )

    def residuals(self, q_deg: Array, margin: float) -> tuple[Array, Array, float, float]:
        """Least-squares residuals of :func:`solve_ik` and their Jacobian (per radian).

        Rows: the end-effector offset (3) and, for every near contact of
        :meth:`linearize` (clearance below ``margin``),
        ``PENALTY_WEIGHT * (margin - clearance)``. Also returns the target distance and
        the minimum clearance.
        """
        lin = self.linearize(q_deg, margin)
        f = np.concatenate(
            [-lin.offset, [PENALTY_WEIGHT * (margin - c.clearance) for c in lin.near]]
        )
        J = (
            np.concatenate(
                [lin.position_jacobian, [-PENALTY_WEIGHT * c.gradient for c in lin.near]], axis=0
            )
            if lin.near
            else lin.position_jacobian
        )
        return f, J, lin.distance, lin.min_clearance


def scene_from_public(public: Public) -> Scene:
    """Rebuild the scene from an instance's public data."""

    def as3(v: Sequence[float]) -> tuple[float, float, float]:
        x = [float(t) for t in v] + [0.0] * (3 - len(v))
        return (x[0], x[1], x[2])

    arm = Arm(
        link_lengths=public.link_lengths,
        axes=public.joint_axes,
        lower_deg=tuple(lo for lo, _ in public.joint_limits_deg),
        upper_deg=tuple(hi for _, hi in public.joint_limits_deg),
        link_radius=public.link_radius,
        spatial=public.spatial,
    )
    obstacles = tuple(Obstacle(center=as3(o.center), radius=o.radius) for o in public.obstacles)
    return Scene(
        arm=arm,
        obstacles=obstacles,
        target=as3(public.target),
        tolerance=public.tolerance,
        self_collision=public.self_collision,
    )


def solve_ik(
    scene: Scene,
    starts: Sequence[Array],
    margin: float = 0.01,
    decimals: int = 3,
    max_iter: int = 150,
) -> Array | None:
    """Collision-aware inverse kinematics by damped least squares (Levenberg-Marquardt).

    From each start, iterates ``dq = -(J^T J + lambda I)^-1 J^T f`` on
    :meth:`Scene.residuals`, clamping to the joint limits, adapting ``lambda`` to accept
    only improving steps. Returns the first solution that, rounded to ``decimals``, lies
    within half the tolerance and collides with nothing; else ``None``. Pure numpy: tiny
    dense solves, no optimizer library.
    """
    arm = scene.arm
    lo = np.radians(np.asarray(arm.lower_deg))
    hi = np.radians(np.asarray(arm.upper_deg))
    eye = np.eye(arm.n_joints)
    for start in starts:
        x = np.clip(np.radians(np.asarray(start, dtype=np.float64)), lo, hi)
        f, J, dist, clear = scene.residuals(np.degrees(x), margin)
        cost = float(f @ f)
        lam = 1e-2
        for _ in range(max_iter):
            if dist <= 0.25 * scene.tolerance and clear > 0.0:
                break
            g = J.T @ f
            step = np.linalg.solve(J.T @ J + lam * eye, -g)
            step *= min(1.0, 0.5 / max(float(np.max(np.abs(step))), 1e-12))  # at most ~30 deg
            x_new = np.clip(x + step, lo, hi)
            f_new, J_new, dist_new, clear_new = scene.residuals(np.degrees(x_new), margin)
            cost_new = float(f_new @ f_new)
            if cost_new < cost:
                x, f, J, dist, clear, cost = x_new, f_new, J_new, dist_new, clear_new, cost_new
                lam = max(lam * 0.3, 1e-7)
            else:
                lam *= 10.0
                if lam > 1e6:  # stuck in a local minimum: next start
                    break
        q = arm.clamp(np.round(np.degrees(x), decimals))
        ev = scene.evaluate(q)
        if ev.distance <= 0.5 * scene.tolerance and ev.collision_free:
            return q
    return None
