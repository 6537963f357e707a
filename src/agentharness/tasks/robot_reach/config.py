"""Knobs of the robot_reach generator and the three difficulty presets."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class RobotReachConfig(BaseModel):
    """How a reaching problem is drawn. Lengths are in metres, angles in degrees."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_links: int = Field(3, ge=2, le=7, description="Links (= revolute joints) of the arm.")
    spatial: bool = Field(
        False,
        description="3-D arm with alternating yaw (z) / pitch (y) joints and spherical obstacles; "
        "otherwise a planar arm with circular obstacles.",
    )
    n_obstacles: int = Field(2, ge=0, le=16, description="Circles/spheres placed around the arm.")
    obstacle_radius: float = Field(
        0.25, gt=0.0, le=1.0, description="Mean obstacle radius (each drawn in 0.6-1.4x of it)."
    )
    obstacle_gap: float = Field(
        0.2,
        ge=0.01,
        le=1.0,
        description="Free space between the hidden solution's links and the obstacles placed "
        "beside them (their surfaces sit 1-2x this far apart); smaller is tighter.",
    )
    narrow_passages: bool = Field(
        False,
        description="Place side obstacles in groups that flank a link from both sides "
        "(two circles, or three spheres around it), forming a narrow passage.",
    )
    joint_limit_deg: float = Field(
        150.0,
        ge=30.0,
        le=180.0,
        description="Typical joint half-range; each limit is drawn in 0.6-1.0x of it.",
    )
    tolerance: float = Field(0.05, gt=0.0, le=0.5, description="Success radius around the target.")
    link_radius: float = Field(
        0.04, ge=0.0, le=0.2, description="Half-thickness of each link capsule."
    )
    self_collision: bool = Field(False, description="Non-adjacent links may not touch each other.")
    start_distance: float = Field(
        0.5,
        ge=0.0,
        le=1.5,
        description="The arm's start configuration leaves its end effector at least this "
        "share of the arm's reach away from the target.",
    )


DIFFICULTIES: dict[str, dict[str, Any]] = {
    "easy": {
        "n_links": 2,
        "spatial": False,
        "n_obstacles": 1,
        "obstacle_radius": 0.25,
        "obstacle_gap": 0.25,
        "narrow_passages": False,
        "joint_limit_deg": 160.0,
        "tolerance": 0.05,
        "self_collision": False,
    },
    "medium": {
        "n_links": 4,
        "spatial": False,
        "n_obstacles": 4,
        "obstacle_radius": 0.2,
        "obstacle_gap": 0.12,
        "narrow_passages": False,
        "joint_limit_deg": 135.0,
        "tolerance": 0.03,
        "self_collision": True,
    },
    # Cluttered: with 8 obstacles 5 cm off the hidden pose (v1), the arm's redundancy made
    # hard easier than medium for a collision-aware local solver (IK from the straight
    # pose solved 95% vs 77%); 12 obstacles 4 cm off bring that to 72%, and to 7% for
    # IK that ignores the obstacles (medium 35%, easy 48%).
    "hard": {
        "n_links": 6,
        "spatial": True,
        "n_obstacles": 12,
        "obstacle_radius": 0.18,
        "obstacle_gap": 0.04,
        "narrow_passages": True,
        "joint_limit_deg": 120.0,
        "tolerance": 0.02,
        "self_collision": True,
    },
}
