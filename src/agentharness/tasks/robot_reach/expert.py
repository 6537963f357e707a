"""The scripted expert: inverse kinematics in the open, one damped least-squares step at a time.

Every step is one visible ``dls_step(q, damping)`` call. The tool solves

    [ jacobian        ]        [ offset_to_target ]
    [ 3 x gradient_k  ]  dq =  [ 3 x shortfall_k  ]
    [ damping x I     ]        [ 0                ]

by least squares at ``q`` and reports the new angles (``q + dq`` within the limits) with
``cost_before`` and ``cost_after`` (``|offset|^2 + sum (3 x shortfall)^2``). This is
Levenberg-Marquardt with its bookkeeping in view: a step that lowers the cost (and moves
no joint more than 30 degrees) is kept, and the next step starts from the new angles the
tool reported, with the damping divided by 10; a worse one is dropped (the next step
starts again from the kept angles) and the damping multiplied by 10. As soon as a kept step
reports ``within_tolerance`` and ``collision_free`` its angles are submitted (v5; v4 waited
for half the tolerance, a rule a policy had to compute from the distance). Every angle the
expert sends is one a tool reported (or the start), copied, never computed in its head:
v3's expert added ``solve_linear``'s step to the angles itself, which a small model
imitating it could not do.

The start is one of a few simple poses stated as visible numbers: the rest pose from the
prompt, the straight pose, or each joint at 0, half its limit or its limit. Choosing the
start is where the expert plans with privileged knowledge: it runs the search privately
from the rest pose, the straight pose and the ten such grid poses nearest the hidden
solution, and plays the one that reaches the target in the fewest calls. Every number it
sends is one it read in the conversation (or a damping a power of ten from the last);
nothing is copied from the hidden solution, and there is no hidden fallback: when no start
converges it submits the closest collision-free angles its search found.

It reads its own calls' results from ``messages`` (matched by call id), so random calls
interleaved by a noisy agent do not derail it; a failed call is repeated.
"""

from __future__ import annotations

import itertools
from collections.abc import Generator
from typing import Any

import numpy as np

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.tasks.robot_reach.problem import Hidden, Public
from agentharness.tasks.robot_reach.simulator import scene_from_public
from agentharness.tasks.robot_reach.tools import DEFAULT_MARGIN, dls_step_report, jacobian_report

DAMPING = 0.01  # the damping the dls_step tool defaults to
MIN_DAMPING = 0.0001
MAX_DAMPING = 100.0
MAX_STEP_DEG = 30.0
# The search's own calls, the final answer included (the interaction allows 60).
MAX_CALLS = 24
# Grid starts tried privately besides the rest and the straight pose.
GRID_STARTS = 10
RETRIES = 3

Call = tuple[str, dict[str, Any], str]  # tool name, arguments, what the expert says
Search = Generator[Call, dict[str, Any], None]


def _fmt(q: list[float]) -> str:
    return "[" + ", ".join(f"{x:g}" for x in q) + "]"


class RobotReachExpert:
    """Damped least squares through the ``dls_step`` tool."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.public = instance.public_as(Public)
        self.scene = scene_from_public(self.public)
        arm = self.scene.arm
        self.n = arm.n_joints
        self.lower, self.upper = list(arm.lower_deg), list(arm.upper_deg)
        self.search: Search | None = None
        self.pending: tuple[str, Call] | None = None  # my call id and the call
        self.retries = 0
        self.turn = 0

    # -- the search ----------------------------------------------------------------------

    def _search(self, start: list[float], why: str) -> Search:
        """The calls of one search from ``start``; each yield receives that call's result."""
        damping = DAMPING
        step = yield (
            "dls_step",
            {"joint_angles": start, "damping": damping},
            f"{why} I take a damped least-squares step from there (damping {damping:g}).",
        )
        calls = 1
        kept_q, cost = start, float(step["cost_before"])
        kept: dict[str, Any] | None = None  # the step that reached kept_q, if one did
        # The closest collision-free angles seen: the answer if the search gives up.
        free: dict[str, Any] | None = None
        while True:
            if step["collision_free"] and (
                free is None or step["distance_to_target"] < free["distance_to_target"]
            ):
                free = step
            too_long = step["largest_step_deg"] > MAX_STEP_DEG
            if not too_long and step["cost_after"] < cost:
                note = f"Improved, {step['distance_to_target']:g} m from the target"
                kept_q, cost, kept = step["joint_angles"], float(step["cost_after"]), step
                damping = max(damping / 10, MIN_DAMPING)
            else:
                note = (
                    f"A joint moved {step['largest_step_deg']:g} degrees, more than {MAX_STEP_DEG:g}"
                    if too_long
                    else "Not improved"
                )
                damping *= 10
            # Submitted as soon as the kept angles are within tolerance and collision-free:
            # the two flags the step reported, so the decision is read, not computed.
            if kept is step and step["within_tolerance"] and step["collision_free"]:
                yield (
                    "submit_angles",
                    {"joint_angles": kept_q},
                    f"{note}, within tolerance and collision-free: I submit these angles.",
                )
                return
            if calls + 2 > MAX_CALLS or damping > MAX_DAMPING:
                best = free if free is not None else step
                yield (
                    "submit_angles",
                    {"joint_angles": best["joint_angles"]},
                    "The search is not getting closer, so I submit the closest collision-free "
                    f"angles it found ({best['distance_to_target']:g} m from the target).",
                )
                return
            step = yield (
                "dls_step",
                {"joint_angles": kept_q, "damping": damping},
                f"{note}: I step again from "
                + ("these angles" if kept is step else f"the angles I kept, {_fmt(kept_q)},")
                + f" with damping {damping:g}.",
            )
            calls += 1

    # -- planning: which start --------------------------------------------------------------

    def _starts(self) -> list[tuple[list[float], str]]:
        """Simple starting poses, in the order they are preferred."""
        out: list[tuple[list[float], str]] = []
        if self.public.start is not None:
            out.append((list(self.public.start.joint_angles), "I start from the arm's rest pose."))
        out.append(([0.0] * self.n, "I start from the straight pose (every joint at 0)."))
        levels = [
            sorted({lo, lo / 2, 0.0, hi / 2, hi})
            for lo, hi in zip(self.lower, self.upper, strict=True)
        ]
        aim = np.asarray(self.instance.hidden_as(Hidden).solution, dtype=float)
        grid = sorted(
            itertools.product(*levels), key=lambda q: float(np.linalg.norm(np.asarray(q) - aim))
        )
        why = (
            "I start from a rough guess of a pose that reaches around the obstacles, each joint "
            "at 0, half its limit or its limit:"
        )
        for q in grid[:GRID_STARTS]:
            out.append(([float(x) for x in q], f"{why} {_fmt(list(q))}."))
        return out

    def _rehearse(self, start: list[float], why: str) -> tuple[int, bool, float]:
        """Run a search privately: its number of calls, whether it solves, its last distance."""
        search = self._search(start, why)
        call = next(search)
        calls = 1
        while call[0] != "submit_angles":
            call = search.send(self._answer(call))
            calls += 1
        q = np.asarray(call[1]["joint_angles"], dtype=float)
        _, report = jacobian_report(self.scene, q, DEFAULT_MARGIN, self.public.dims)
        solved = report["within_tolerance"] and report["collision_free"]
        return calls, bool(solved), float(report["distance_to_target"])

    def _answer(self, call: Call) -> dict[str, Any]:
        _, args, _ = call
        q = np.asarray(args["joint_angles"], dtype=float)
        return dls_step_report(self.scene, q, args["damping"], self.public.dims)

    def _plan(self) -> Search:
        best: tuple[tuple[bool, int, float], list[float], str] | None = None
        for start, why in self._starts():
            calls, solved, distance = self._rehearse(start, why)
            key = (not solved, calls if solved else 0, distance)
            if best is None or key < best[0]:
                best = (key, start, why)
        assert best is not None
        return self._search(best[1], best[2])

    # -- acting --------------------------------------------------------------------------

    def next_turn(self, messages: list[Message]) -> Message:
        self.turn += 1
        if self.search is None:
            self.search = self._plan()
            return self._issue(next(self.search))
        assert self.pending is not None
        call_id, call = self.pending
        result = next((m for m in messages if m.role == "tool" and m.tool_call_id == call_id), None)
        outcome = None if result is None else result.outcome
        if outcome is None or outcome.is_error or not isinstance(outcome.data, dict):
            if self.retries >= RETRIES:
                return assistant("My tool calls keep failing, so I stop here.")
            self.retries += 1
            return self._issue(call, "That call failed; I repeat it. ")
        self.retries = 0
        try:
            return self._issue(self.search.send(outcome.data))
        except StopIteration:  # answered already; nothing left to do
            return assistant("I have submitted my answer.")

    def _issue(self, call: Call, lead: str = "") -> Message:
        name, args, text = call
        call_id = f"rr_expert_{self.turn}"
        self.pending = (call_id, call)
        return assistant(lead + text, tool_calls=[ToolCall.make(call_id, name, args)])
