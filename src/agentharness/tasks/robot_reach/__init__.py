"""robot_reach: move an articulated arm's end effector onto a target.

A planar (2-D, circular obstacles) or spatial (3-D, alternating yaw/pitch joints,
spherical obstacles) serial arm of 2-7 revolute links with joint limits. The agent probes
configurations with ``forward_kinematics`` (joint positions, end-effector pose, offset and
distance to the target) and ``check_collision`` (capsule-vs-circle/sphere contacts,
optional self-collision, per-link clearances), then answers with ``submit_angles``.
Full credit within the tolerance and collision-free; partial credit by distance when
collision-free; a colliding answer scores 0. Harder levels add links, obstacles closer
to the only feasible pose, narrow passages and a third dimension.
"""

from agentharness.tasks.robot_reach.task import TASK

__all__ = ["TASK"]
