"""Layer 3: budgets and the feedback given when the agent stops calling tools."""

from __future__ import annotations

from agentharness.core.instance import Instance
from agentharness.core.messages import Message
from agentharness.core.task import Budgets, Interaction
from agentharness.tasks.robot_reach.problem import Public
from agentharness.tasks.robot_reach.tools import RobotReachWorld

BUDGETS = Budgets(max_turns=40, max_tool_calls=60, max_nudges=2, max_format_errors=3)


def par_tool_calls(n_joints: int) -> int:
    """Tool calls an agent may use before the efficiency credit starts to fall."""
    return 10 + 2 * n_joints


class RobotReachInteraction(Interaction[RobotReachWorld]):
    """Nudges a silent agent back to the tools, reminding it of its closest attempt."""

    def __init__(self) -> None:
        super().__init__(BUDGETS)

    def on_no_tool_call(
        self, instance: Instance, world: RobotReachWorld, message: Message, nudges: int
    ) -> str | None:
        pub = instance.public_as(Public)
        n, tol = pub.n_joints, pub.tolerance
        text = (
            "You did not call a tool, so nothing happened. Test configurations with "
            f"forward_kinematics(joint_angles) (distance and offset to the target {list(pub.target)}) and "
            "check_collision(joint_angles) (obstacles and clearances); start_poses() lists "
            "collision-free poses to start from and dls_step(joint_angles, damping) takes a "
            "damped least-squares step towards the target. Then call "
            f"submit_angles(joint_angles) with exactly {n} angles in degrees within the joint limits "
            f"once the distance is at most {tol:g} m and nothing collides."
        )
        best = world.best
        if best is not None:
            dist, angles = best
            text += (
                f" Your closest configuration so far is {[round(a, 3) for a in angles]} at "
                f"{dist:.4f} m from the target."
            )
        return text
