"""The privileged expert: collision-aware IK from the public description, verified by tools.

Plan: solve inverse kinematics internally (damped least squares on the target offset plus
clearance-shortfall residuals, inside the joint limits, from the straight pose, the arm's
start configuration and a few seeded random starts); if that fails, fall back to the
generator's hidden solution. Each candidate is checked with ``forward_kinematics`` and
``check_collision`` and then submitted. The next action is always derived from the tool
results found in ``messages`` (matched by the expert's own call ids), so random calls
interleaved by a noisy agent do not derail it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.tasks.robot_reach.problem import Hidden, Public
from agentharness.tasks.robot_reach.simulator import scene_from_public, solve_ik

RANDOM_STARTS = 6
MAX_OWN_CALLS = 12


class RobotReachExpert:
    """Scripted solver for one episode."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.public = instance.public_as(Public)
        self.scene = scene_from_public(self.public)
        self.n = 0
        self.calls: dict[str, tuple[str, int]] = {}  # my call id -> (tool, candidate index)
        self.candidates: list[tuple[str, list[float]]] | None = None

    def _plan(self) -> list[tuple[str, list[float]]]:
        arm = self.scene.arm
        rng = np.random.default_rng([self.instance.seed, 7])
        lo, hi = np.asarray(arm.lower_deg), np.asarray(arm.upper_deg)
        starts = [np.zeros(arm.n_joints)]
        if self.public.start is not None:  # the arm's rest pose
            starts.append(np.asarray(self.public.start.joint_angles, dtype=float))
        starts += [rng.uniform(lo, hi) for _ in range(RANDOM_STARTS)]
        out: list[tuple[str, list[float]]] = []
        q = solve_ik(self.scene, starts)
        if q is not None:
            out.append(("collision-aware inverse kinematics", [float(x) for x in q]))
        out.append(
            (
                "a second candidate configuration",
                list(self.instance.hidden_as(Hidden).solution),
            )
        )
        return out

    def _results(self, messages: list[Message]) -> dict[int, dict[str, Any]]:
        """Per candidate: what my verified calls said (``fk``/``col`` -> ok or not)."""
        seen: dict[int, dict[str, Any]] = {}
        for m in messages:
            if m.role != "tool" or m.tool_call_id not in self.calls:
                continue
            name, idx = self.calls[m.tool_call_id]
            state = seen.setdefault(idx, {})
            if m.outcome is None or m.outcome.is_error:
                state["failed"] = True
                continue
            data = m.outcome.data
            if name == "forward_kinematics":
                state["fk"] = bool(data.get("within_tolerance"))
                state["distance"] = data.get("distance_to_target")
            elif name == "check_collision":
                state["col"] = bool(data.get("collision_free"))
        return seen

    def _call(self, name: str, idx: int, angles: list[float], text: str) -> Message:
        self.n += 1
        call_id = f"rr_expert_{self.n}"
        self.calls[call_id] = (name, idx)
        return assistant(text, tool_calls=[ToolCall.make(call_id, name, {"joint_angles": angles})])

    def next_turn(self, messages: list[Message]) -> Message:
        if self.candidates is None:
            self.candidates = self._plan()
        seen = self._results(messages)
        idx = 0
        # Skip candidates a tool has refuted.
        while idx < len(self.candidates) - 1:
            s = seen.get(idx, {})
            if "failed" in s or s.get("fk") is False or s.get("col") is False:
                idx += 1
            else:
                break
        source, angles = self.candidates[idx]
        s = seen.get(idx, {})
        shown = [round(a, 3) for a in angles]
        if self.n >= MAX_OWN_CALLS:  # safety net: never loop on checks forever
            return self._call("submit_angles", idx, angles, f"Submitting {shown}.")
        if "fk" not in s:
            note = "The previous candidate failed its check. " if idx > 0 else ""
            return self._call(
                "forward_kinematics",
                idx,
                angles,
                f"{note}From {source} I get joint angles {shown}; checking where the end effector lands.",
            )
        if "col" not in s:
            return self._call(
                "check_collision",
                idx,
                angles,
                f"The end effector is {s.get('distance')} m from the target; checking the arm for collisions.",
            )
        return self._call(
            "submit_angles",
            idx,
            angles,
            f"Verified within tolerance and collision-free; submitting {shown}.",
        )
