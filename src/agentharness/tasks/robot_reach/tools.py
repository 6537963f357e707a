"""Layer 2: the per-episode world and its tools.

``forward_kinematics``, ``check_collision`` and ``jacobian`` evaluate configurations of
the arm; ``submit_angles`` answers. ``calculate`` and ``solve_linear`` (from
:class:`~agentharness.core.calculator.CalculatorWorld`) compute on numbers the agent
passes in, e.g. a damped least-squares step from a ``jacobian`` report. ``dls_step``
(v4) takes that whole step in one call and reports the angles it reaches, so a policy
iterates by copying numbers it was shown rather than by adding them up. ``start_poses``
(v6) lists the collision-free simple poses closest to the target, where to start from.

Since v7 ``dls_step``, ``start_poses`` and ``submit_angles`` reply in short lines of text
(their full reports stay in the results' ``data``): ``dls_step`` opens with its verdict in
the words the expert's narration uses (:func:`step_verdict`), so a policy narrating a step
copies words instead of translating a JSON boolean, which SmolLM2-135M got wrong.
"""

from __future__ import annotations

import copy
import functools
import json
import math
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from agentharness.core.calculator import CalculatorWorld, least_squares, significant
from agentharness.core.instance import Instance
from agentharness.core.tools import ToolError, ToolResult, tool
from agentharness.tasks.robot_reach.problem import Public
from agentharness.tasks.robot_reach.simulator import (
    MAX_JOINTS,
    ArmInputError,
    Evaluation,
    Linearization,
    Scene,
    scene_from_public,
)

# Schema-level bounds: oversized arrays and absurd angles never reach the simulator.
Angle = Annotated[float, Field(ge=-360.0, le=360.0)]
JointAngles = Annotated[list[Angle], Field(min_length=1, max_length=MAX_JOINTS)]
Margin = Annotated[float, Field(ge=0.0, le=1.0)]
# The jacobian tool's default margin: contacts closer than this are reported.
DEFAULT_MARGIN = 0.01
Damping = Annotated[float, Field(gt=0.0, le=1000.0)]
# A damped least-squares step weighs each near contact's clearance row this much.
CLEARANCE_WEIGHT = 3


def _r(x: float, nd: int = 4) -> float:
    return round(float(x), nd)


def _vec(v: np.ndarray, dims: int) -> list[float]:
    return [_r(x) for x in v[:dims]]


def num_text(x: float) -> str:
    """A number as the text replies print it: positional (0.00001, never 1e-05), no
    trailing zeros."""
    return np.format_float_positional(float(x), trim="-")


def angles_text(q: list[float]) -> str:
    """Joint angles exactly as a call's JSON arguments carry them, so copying is verbatim."""
    return json.dumps([float(x) for x in q])


def flags_text(within_tolerance: bool, collision_free: bool) -> str:
    """The two flags in the words the expert says them (v7): what a policy copies."""
    within = "within tolerance" if within_tolerance else "not within tolerance"
    return f"{within}, {'collision-free' if collision_free else 'colliding'}"


def step_verdict(report: dict[str, Any]) -> str:
    """The first line of a ``dls_step`` reply, full stop aside, e.g. "Improved, 0.03038 m
    from the target, not within tolerance, collision-free".

    The expert's narration of a kept step is this line word for word (then its decision),
    and of a dropped one its first words ("Not improved").
    """
    improved = "Improved" if report["improved"] else "Not improved"
    distance = num_text(report["distance_to_target"])
    flags = flags_text(report["within_tolerance"], report["collision_free"])
    return f"{improved}, {distance} m from the target, {flags}"


def dls_step_text(report: dict[str, Any]) -> str:
    """What a model reads of a ``dls_step`` report: the verdict, the angles to copy, then
    the other numbers (v7; v4-v6 replied with the report's JSON, ten keys on one line)."""
    numbers = (
        f"cost {num_text(report['cost_before'])} -> {num_text(report['cost_after'])}, "
        f"largest step {num_text(report['largest_step_deg'])} degrees"
    )
    if report["held_at_limit"]:
        numbers += " (held at a limit)"
    if report["min_clearance"] is not None:  # None: nothing the arm could hit
        numbers += f", min clearance {num_text(report['min_clearance'])} m"
    return "\n".join(
        [
            f"{step_verdict(report)}.",
            f"joint_angles: {angles_text(report['joint_angles'])}",
            numbers,
        ]
    )


def jacobian_report(
    scene: Scene, q: np.ndarray, margin: float, dims: int
) -> tuple[Linearization, dict[str, Any]]:
    """What the ``jacobian`` tool reports for angles ``q`` (degrees): derivatives per degree."""
    lin = scene.linearize(q, margin)
    per_degree = math.pi / 180.0
    near: list[dict[str, Any]] = []
    for c in sorted(lin.near, key=lambda c: c.clearance):
        entry: dict[str, Any] = {"link": c.link}
        if c.obstacle is not None:
            entry["obstacle"] = c.obstacle
        else:
            entry["other_link"] = c.other_link
        entry["clearance"] = _r(c.clearance, 5)
        entry["shortfall"] = _r(margin - c.clearance, 5)
        entry["gradient"] = [_r(g * per_degree, 6) for g in c.gradient]
        near.append(entry)
    tol = scene.tolerance
    out = {
        "end_effector": _vec(lin.points[-1], dims),
        "offset_to_target": _vec(lin.offset, dims),
        "distance_to_target": _r(lin.distance, 5),
        "tolerance": tol,
        "within_tolerance": lin.distance <= tol,
        "jacobian": [[_r(x * per_degree, 6) for x in row] for row in lin.position_jacobian[:dims]],
        "margin": margin,
        "near_contacts": near,
        "min_clearance": None if math.isinf(lin.min_clearance) else _r(lin.min_clearance, 5),
        "collision_free": lin.min_clearance >= 0.0,
    }
    return lin, out


def reach_cost(report: dict[str, Any]) -> float:
    """What a damped least-squares step lowers: |offset|^2 + sum (3 x shortfall)^2."""
    offset = np.asarray(report["offset_to_target"], dtype=float)
    short = CLEARANCE_WEIGHT * np.asarray(
        [c["shortfall"] for c in report["near_contacts"]], dtype=float
    )
    return float(offset @ offset + short @ short)


def dls_system(report: dict[str, Any], damping: float) -> tuple[list[list[float]], list[float]]:
    """The least-squares system of one damped step from a ``jacobian`` report.

    Rows: the Jacobian (right-hand side the offset to the target), each near contact's
    gradient times :data:`CLEARANCE_WEIGHT` (its shortfall, likewise), and ``damping`` on
    each joint's diagonal (0).
    """
    a = [list(row) for row in report["jacobian"]]
    b = list(report["offset_to_target"])
    for c in report["near_contacts"]:
        a.append([CLEARANCE_WEIGHT * g for g in c["gradient"]])
        b.append(CLEARANCE_WEIGHT * c["shortfall"])
    n = len(a[0])
    for j in range(n):
        a.append([damping if k == j else 0.0 for k in range(n)])
        b.append(0.0)
    return a, b


def dls_step_report(scene: Scene, q: np.ndarray, damping: float, dims: int) -> dict[str, Any]:
    """What the ``dls_step`` tool reports: one damped least-squares step from ``q`` (degrees).

    The new angles are ``q + step`` kept within the joint limits and rounded to 4 decimals
    (as reported; the report at them is of exactly those numbers).
    """
    _, here = jacobian_report(scene, q, DEFAULT_MARGIN, dims)
    step = np.asarray(least_squares(*dls_system(here, damping))["x"], dtype=float)
    arm = scene.arm
    raw = q + step
    new = np.round(np.clip(raw, np.asarray(arm.lower_deg), np.asarray(arm.upper_deg)), 4)
    _, there = jacobian_report(scene, new, DEFAULT_MARGIN, dims)
    before, after = reach_cost(here), reach_cost(there)
    # v5: no echo of the arguments or the step itself; the angles to copy come first.
    return {
        "joint_angles": [float(x) for x in new],
        "improved": after < before,
        "cost_before": significant(before),
        "cost_after": significant(after),
        "largest_step_deg": _r(float(np.max(np.abs(step))), 3),
        "held_at_limit": bool(np.any(raw < arm.lower_deg) or np.any(raw > arm.upper_deg)),
        "distance_to_target": there["distance_to_target"],
        "within_tolerance": there["within_tolerance"],
        "min_clearance": there["min_clearance"],
        "collision_free": there["collision_free"],
    }


# The damped least-squares iteration's bookkeeping (Levenberg-Marquardt), shared by the
# expert and start_poses' look-ahead: a step is kept when it lowers the cost and moves no
# joint more than MAX_STEP_DEG, and the damping then divided by 10, else multiplied by 10.
DAMPING = 0.01  # dls_step's default
MIN_DAMPING = 0.0001
MAX_DAMPING = 100.0
MAX_STEP_DEG = 30.0
START_POSES = 3  # how many poses start_poses lists
CONSIDERED_POSES = 120  # how many of the nearest collision-free simple poses it looks ahead from
LOOK_AHEAD_STEPS = 4  # the damped least-squares steps it takes privately from each


def keeps(step: dict[str, Any], cost: float) -> bool:
    """Whether a ``dls_step`` report is kept by the iteration at the current ``cost``."""
    return step["largest_step_deg"] <= MAX_STEP_DEG and step["cost_after"] < cost


def look_ahead(scene: Scene, q: np.ndarray, steps: int, dims: int) -> float:
    """The closest a collision-free pose gets to the target in ``steps`` damped
    least-squares steps from ``q`` (the start included; it is collision-free)."""
    damping = DAMPING
    target = np.asarray(scene.target, dtype=float)
    closest = float(np.linalg.norm(scene.end_effector(q) - target))
    cost = math.inf
    for k in range(steps):
        step = dls_step_report(scene, q, damping, dims)
        if k == 0:
            cost = float(step["cost_before"])
        if keeps(step, cost):
            q, cost = np.asarray(step["joint_angles"], dtype=float), float(step["cost_after"])
            if step["collision_free"]:
                closest = min(closest, float(step["distance_to_target"]))
            damping = max(damping / 10, MIN_DAMPING)
        else:
            damping *= 10
    return closest


def nearest_simple_poses(scene: Scene, count: int) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """The simple poses (rows of degrees), their end effectors' distances to the target,
    and the indices of the ``count`` collision-free ones nearest the target, nearest first.

    The arrays are read-only: they are cached per scene (the reward and ``start_poses`` ask
    for them on every call, and a six-joint grid takes about half a second).
    """
    grid, near = _simple_poses(scene)
    return grid, near, list(_nearest_collision_free(scene, count))


# Scenes are frozen (hashable) dataclasses, so the caches key on their contents.
@functools.lru_cache(maxsize=64)
def _simple_poses(scene: Scene) -> tuple[np.ndarray, np.ndarray]:
    arm = scene.arm
    levels = [
        sorted({lo, lo / 2, 0.0, hi / 2, hi})
        for lo, hi in zip(arm.lower_deg, arm.upper_deg, strict=True)
    ]
    grid = np.array(np.meshgrid(*levels, indexing="ij")).reshape(len(levels), -1).T
    target = np.asarray(scene.target, dtype=float)
    near = np.array([np.linalg.norm(scene.end_effector(q) - target) for q in grid])
    grid.setflags(write=False)
    near.setflags(write=False)
    return grid, near


@functools.lru_cache(maxsize=256)
def _nearest_collision_free(scene: Scene, count: int) -> tuple[int, ...]:
    grid, near = _simple_poses(scene)
    found: list[int] = []
    for i in np.argsort(near, kind="stable"):
        if scene.evaluate(grid[i]).collision_free:
            found.append(int(i))
            if len(found) == count:
                break
    return tuple(found)


def start_poses_report(scene: Scene, dims: int) -> dict[str, Any]:
    """What the ``start_poses`` tool reports: collision-free simple poses to start from,
    the most promising first.

    A simple pose has every joint at its lower limit, half of it, 0, half its upper limit
    or its upper limit: 5^n of them (15,625 for six joints). The ``CONSIDERED_POSES``
    collision-free ones whose end effectors are nearest the target are each followed for
    ``LOOK_AHEAD_STEPS`` damped least-squares steps, and ranked by the closest a
    collision-free pose on the way gets (ties: the nearer start, then the grid's order). A
    start near the target on the wrong side of an obstacle stalls or collides, so the
    look-ahead is what tells the elbows apart; easy instances take milliseconds, hard ones
    about a second the first time (the report is cached per scene).
    """
    return copy.deepcopy(_start_poses_report(scene, dims))


@functools.lru_cache(maxsize=64)
def _start_poses_report(scene: Scene, dims: int) -> dict[str, Any]:
    grid, near, considered = nearest_simple_poses(scene, CONSIDERED_POSES)
    reached = {i: look_ahead(scene, grid[i], LOOK_AHEAD_STEPS, dims) for i in considered}
    ranked = sorted(considered, key=lambda i: (reached[i], near[i]))[:START_POSES]
    return {
        "poses": [
            {
                "joint_angles": [float(x) for x in grid[i]],
                "distance_to_target": _r(float(near[i]), 5),
                f"distance_after_{LOOK_AHEAD_STEPS}_steps": _r(reached[i], 5),
            }
            for i in ranked
        ]
    }


def start_poses_text(report: dict[str, Any]) -> str:
    """What a model reads of a ``start_poses`` report: one numbered line per pose, its
    distances labelled once (v7; v6 replied with the report's JSON)."""
    lines = [
        "Collision-free simple poses to start from, the most promising first; distance to "
        f"the target now and after {LOOK_AHEAD_STEPS} damped steps:"
    ]
    for k, pose in enumerate(report["poses"], 1):
        lines.append(
            f"{k}. {angles_text(pose['joint_angles'])}: {num_text(pose['distance_to_target'])} m, "
            f"{num_text(pose[f'distance_after_{LOOK_AHEAD_STEPS}_steps'])} m"
        )
    return "\n".join(lines)


class RobotReachWorld(CalculatorWorld):
    """One episode: the scene and a record of the configurations tried so far."""

    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        public = instance.public_as(Public)
        self.scene: Scene = scene_from_public(public)
        self.dims = public.dims
        self.evaluations = 0
        # Closest configuration seen by forward_kinematics, for the nudge feedback.
        self.best: tuple[float, list[float]] | None = None

    def _evaluate(self, joint_angles: list[float]) -> tuple[np.ndarray, Evaluation]:
        try:
            q = self.scene.arm.validate(joint_angles)
            ev = self.scene.evaluate(q)
        except ArmInputError as e:
            raise ToolError(str(e)) from e
        self.evaluations += 1
        return q, ev

    def _pose(self, ev: Evaluation) -> dict[str, Any]:
        if self.dims == 2:
            heading = math.degrees(math.atan2(ev.rotation[1, 0], ev.rotation[0, 0]))
            return {"position": _vec(ev.points[-1], 2), "heading_deg": _r(heading, 3)}
        return {
            "position": _vec(ev.points[-1], 3),
            "approach_direction": _vec(ev.rotation[:, 0], 3),
            "rotation_matrix": [[_r(x) for x in row] for row in ev.rotation],
        }

    @tool
    def forward_kinematics(self, joint_angles: JointAngles) -> ToolResult:
        """Joint positions (base first), end-effector pose, offset and distance to the target.

        Collisions are not checked here.

        Args:
            joint_angles: degrees, base to tip.
        """
        q, ev = self._evaluate(joint_angles)
        tol = self.scene.tolerance
        if self.best is None or ev.distance < self.best[0]:
            self.best = (ev.distance, [float(x) for x in q])
        out = {
            "joint_positions": [_vec(p, self.dims) for p in ev.points],
            "end_effector": self._pose(ev),
            "target": _vec(np.asarray(self.scene.target), self.dims),
            "offset_to_target": _vec(ev.offset, self.dims),
            "distance_to_target": _r(ev.distance, 5),
            "tolerance": tol,
            "within_tolerance": ev.distance <= tol,
        }
        hint = (
            "The end effector is within tolerance; check_collision before submitting."
            if ev.distance <= tol
            else f"Still {ev.distance - tol:.4f} m beyond the tolerance; move along offset_to_target."
        )
        return ToolResult(
            text=json.dumps(out) + "\n" + hint, data=out, metrics={"distance": ev.distance}
        )

    @tool
    def check_collision(self, joint_angles: JointAngles) -> ToolResult:
        """Collisions (with penetration depths), each link's clearance and the minimum clearance.

        Args:
            joint_angles: degrees, base to tip.
        """
        _, ev = self._evaluate(joint_angles)
        collisions = []
        for c in ev.collisions:
            item: dict[str, Any] = {"link": c.link, "penetration": _r(-c.clearance)}
            if c.obstacle is not None:
                item["obstacle"] = c.obstacle
            else:
                item["other_link"] = c.other_link
            collisions.append(item)
        per_link: list[dict[str, Any]] = []
        for link in range(1, self.scene.arm.n_joints + 1):
            mine = [c for c in ev.contacts if link in (c.link, c.other_link)]
            if not mine:
                per_link.append({"link": link, "clearance": None})
                continue
            c = mine[0]  # contacts are sorted, so the first is the closest
            entry: dict[str, Any] = {"link": link, "clearance": _r(c.clearance)}
            if c.obstacle is not None:
                entry["nearest_obstacle"] = c.obstacle
            else:
                entry["nearest_link"] = c.other_link if c.link == link else c.link
            per_link.append(entry)
        out = {
            "collision_free": ev.collision_free,
            "collisions": collisions,
            "min_clearance": None if not ev.contacts else _r(ev.min_clearance),
            "links": per_link,
        }
        if ev.collision_free:
            hint = "No collision."
        else:
            worst = ev.collisions[0]
            what = (
                f"obstacle {worst.obstacle}"
                if worst.obstacle is not None
                else f"link {worst.other_link}"
            )
            hint = (
                f"{len(ev.collisions)} collision(s); the deepest is link {worst.link} into {what} by "
                f"{-worst.clearance:.4f} m. Move that link away or bend the arm the other way."
            )
        return ToolResult(
            text=json.dumps(out) + "\n" + hint,
            data=out,
            metrics={"collisions": float(len(ev.collisions))},
        )

    @tool
    def jacobian(self, joint_angles: JointAngles, margin: Margin = DEFAULT_MARGIN) -> ToolResult:
        """First order: the offset to the target, `jacobian` (metres per degree; a row per
        coordinate, a column per joint), and each pair closer than `margin` with its clearance,
        shortfall (margin - clearance) and clearance gradient.

        Args:
            joint_angles: degrees, base to tip.
            margin: report pairs whose clearance is below this many metres.
        """
        q, _ = self._evaluate(joint_angles)
        lin, out = jacobian_report(self.scene, q, margin, self.dims)
        if self.best is None or lin.distance < self.best[0]:
            self.best = (lin.distance, [float(x) for x in q])
        return ToolResult(text=json.dumps(out), data=out, metrics={"distance": lin.distance})

    @tool
    def dls_step(self, joint_angles: JointAngles, damping: Damping = 0.01) -> ToolResult:
        """One damped least-squares step toward the target, pushing links out of near contacts.

        Says whether the cost |offset|^2 (+ contact terms) improved and, at the new angles, the
        distance to the target and whether they are within tolerance and collision-free; then the
        new joint_angles (within the limits). Keep improved angles (next damping a tenth); else
        step again from the old ones with ten times the damping.

        Args:
            joint_angles: degrees, base to tip.
            damping: larger gives shorter, safer steps.
        """
        q, _ = self._evaluate(joint_angles)
        out = dls_step_report(self.scene, q, damping, self.dims)
        distance = float(out["distance_to_target"])
        if self.best is None or distance < self.best[0]:
            self.best = (distance, list(out["joint_angles"]))
        return ToolResult(text=dls_step_text(out), data=out, metrics={"distance": distance})

    @tool
    def start_poses(self) -> ToolResult:
        """Collision-free simple poses (each joint at 0, half its limit or its limit) to start
        stepping from, ranked by how close four damped least-squares steps from each get."""
        out = start_poses_report(self.scene, self.dims)
        if not out["poses"]:
            raise ToolError("no simple pose is collision-free; start from the rest pose")
        return ToolResult(text=start_poses_text(out), data=out)

    @tool(final=True)
    def submit_angles(self, joint_angles: JointAngles) -> ToolResult:
        """Your final answer; it ends the episode.

        Args:
            joint_angles: degrees, base to tip.
        """
        _, ev = self._evaluate(joint_angles)
        distance = _r(ev.distance, 5)
        flags = flags_text(ev.distance <= self.scene.tolerance, ev.collision_free)
        return ToolResult(
            text=f"Submitted: {num_text(distance)} m from the target, {flags}.",
            data={
                "distance_to_target": distance,
                "tolerance": self.scene.tolerance,
                "collision_free": ev.collision_free,
                "collisions": len(ev.collisions),
            },
        )
