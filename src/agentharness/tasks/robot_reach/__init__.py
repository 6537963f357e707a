"""robot_reach: move an articulated arm's end effector onto a target (robot_reach-v2).

A planar (2-D, circular obstacles) or spatial (3-D, alternating yaw/pitch joints,
spherical obstacles) serial arm of 2-7 revolute links with joint limits, resting at a
given collision-free start configuration far from the target. The agent probes
configurations with ``forward_kinematics`` (joint positions, end-effector pose, offset and
distance to the target) and ``check_collision`` (capsule-vs-circle/sphere contacts,
optional self-collision, per-link clearances), then answers with ``submit_angles``.

Reward (v2, see :mod:`.reward`): 0 for an answer that collides or is invalid; 0.9-1.0
within the tolerance (efficiency pays only then); otherwise partial credit only inside a
shaped radius around the target (a quarter of the arm's reach and half the start's
distance), at most 0.45 and falling quadratically to 0 at that radius, so a
collision-free answer anywhere else, the start, straight or limit pose earn nothing.
Harder levels add links, obstacles closer to the only feasible pose (12 on hard, 4 cm
off it), narrow passages and a third dimension.

v1 paid 0.15 for any collision-free answer anywhere and partial reach credit far from
the target (the straight pose earned 0.11-0.15, the best constant answer 0.19).
"""

from agentharness.tasks.robot_reach.task import TASK

__all__ = ["TASK"]
