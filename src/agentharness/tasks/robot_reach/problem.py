"""The instance data of a reaching problem, typed: ``Public`` (the prompt) and ``Hidden``.

The generator builds both through these models (``model_dump(mode="json")``, fields in
the order they are stored, so instances are unchanged by going through them), and every
layer reads them back with ``instance.public_as(Public)`` / ``instance.hidden_as(Hidden)``.
Lengths are in metres, angles in degrees; points have ``dims`` coordinates (2 or 3).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ObstacleData(_Frozen):
    """A circle (planar arm) or sphere (spatial arm)."""

    center: tuple[float, ...]
    radius: float


class Start(_Frozen):
    """The arm's resting configuration: collision-free and far from the target.

    The generator states all three; a hand-made instance may give the angles alone.
    """

    joint_angles: tuple[float, ...]
    end_effector: tuple[float, ...] | None = None
    distance_to_target: float | None = None


class Public(_Frozen):
    """What the prompt states: the arm, the obstacles, the target and the start."""

    dims: Literal[2, 3]
    spatial: bool
    n_joints: int
    link_lengths: tuple[float, ...]
    joint_axes: tuple[Literal["z", "y"], ...]
    joint_limits_deg: tuple[tuple[float, float], ...]  # (lower, upper) per joint
    link_radius: float
    obstacles: tuple[ObstacleData, ...]
    target: tuple[float, ...]
    tolerance: float
    self_collision: bool
    # Every robot_reach-v2 (and later) instance has one; without it the straight pose is the start.
    start: Start | None = None


class Hidden(_Frozen):
    """The collision-free configuration the problem was built around."""

    solution: tuple[float, ...]
    solution_distance: float
    solution_clearance: float | None  # None when nothing can collide
