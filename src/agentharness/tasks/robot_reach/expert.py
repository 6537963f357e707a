"""The scripted expert: inverse kinematics in the open, one damped least-squares step at a time.

Every step is two visible tool calls: ``jacobian(q)`` reports the end effector's offset
to the target, its Jacobian (metres per degree) and every link closer than 1 cm to an
obstacle or another link (clearance, shortfall, gradient); ``solve_linear`` then solves

    [ jacobian        ]        [ offset_to_target ]
    [ 3 x gradient_k  ]  dq =  [ 3 x shortfall_k  ]
    [ damping x I     ]        [ 0                ]

by least squares, and the next angles are ``q + dq`` (each joint kept within its limits,
where the limit itself is sent). This is Levenberg-Marquardt with its bookkeeping in
view: a step that lowers ``|offset|^2 + sum (3 x shortfall)^2`` is kept and the damping
divided by 10; a worse one is dropped (the next step starts from the kept angles) and the
damping multiplied by 10, as is a step of more than 30 degrees. Once the end effector is
within half the tolerance and nothing collides, the angles are submitted.

The start is one of a few simple poses stated as visible numbers: the rest pose from the
prompt, the straight pose, or each joint at 0, half its limit or its limit. Choosing the
start is where the expert plans with privileged knowledge: it runs the search privately
from the rest pose, the straight pose and the ten such grid poses nearest the hidden
solution, and plays the one that reaches the target in the fewest calls. Every number it
sends is one it read in the conversation (or one step of arithmetic on such numbers);
nothing is copied from the hidden solution, and there is no hidden fallback: when no start
converges it submits the best angles its search found.

It reads its own calls' results from ``messages`` (matched by call id), so random calls
interleaved by a noisy agent do not derail it; a failed call is repeated.
"""

from __future__ import annotations

import itertools
from collections.abc import Generator
from typing import Any

import numpy as np

from agentharness.core.calculator import least_squares
from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.tasks.robot_reach.problem import Hidden, Public
from agentharness.tasks.robot_reach.simulator import scene_from_public
from agentharness.tasks.robot_reach.tools import DEFAULT_MARGIN, jacobian_report

DAMPING = 0.01  # the damping the jacobian tool's description suggests
MIN_DAMPING = 0.0001
MAX_DAMPING = 100.0
CLEARANCE_WEIGHT = 3
MAX_STEP_DEG = 30.0
# The search's own calls, the final answer included (the interaction allows 60).
MAX_CALLS = 30
# Grid starts tried privately besides the rest and the straight pose.
GRID_STARTS = 10
RETRIES = 3

Call = tuple[str, dict[str, Any], str]  # tool name, arguments, what the expert says
Search = Generator[Call, dict[str, Any], None]


def _cost(report: dict[str, Any]) -> float:
    offset = np.asarray(report["offset_to_target"], dtype=float)
    short = np.asarray([c["shortfall"] for c in report["near_contacts"]], dtype=float)
    return float(offset @ offset + (CLEARANCE_WEIGHT * short) @ (CLEARANCE_WEIGHT * short))


def _fmt(q: list[float]) -> str:
    return "[" + ", ".join(f"{x:.2f}" for x in q) + "]"


class RobotReachExpert:
    """Damped least squares through the ``jacobian`` and ``solve_linear`` tools."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.public = instance.public_as(Public)
        self.scene = scene_from_public(self.public)
        arm = self.scene.arm
        self.n = arm.n_joints
        self.lower, self.upper = list(arm.lower_deg), list(arm.upper_deg)
        self.tol = self.public.tolerance
        self.search: Search | None = None
        self.pending: tuple[str, Call] | None = None  # my call id and the call
        self.retries = 0
        self.turn = 0

    # -- the search ----------------------------------------------------------------------

    def _search(self, start: list[float], why: str) -> Search:
        """The calls of one search from ``start``; each yield receives that call's result."""
        calls = 1
        q = start
        report = yield (
            "jacobian",
            {"joint_angles": q},
            f"{why} I ask for the Jacobian there: how the end effector and any link within "
            f"{DEFAULT_MARGIN:g} m of an obstacle move per degree of each joint.",
        )
        kept_q, kept, cost = q, report, _cost(report)
        # The closest collision-free angles seen: the answer if the search gives up.
        free = (q, report) if report["collision_free"] else None
        damping = DAMPING
        while True:
            if kept["distance_to_target"] <= self.tol / 2 and kept["collision_free"]:
                clear = kept["min_clearance"]
                yield (
                    "submit_angles",
                    {"joint_angles": kept_q},
                    f"The end effector is {kept['distance_to_target']:g} m from the target "
                    f"(tolerance {self.tol:g} m) and "
                    + (
                        "there is nothing to collide with"
                        if clear is None
                        else f"the smallest clearance is {clear:g} m, so nothing collides"
                    )
                    + ": I submit these angles.",
                )
                return
            if calls + 3 > MAX_CALLS or damping > MAX_DAMPING:
                best_q, best = free if free is not None else (kept_q, kept)
                yield (
                    "submit_angles",
                    {"joint_angles": best_q},
                    "The search is not getting closer, so I submit the closest collision-free "
                    f"angles it found ({best['distance_to_target']:g} m from the target).",
                )
                return
            a, b = self._system(kept, damping)
            near = len(kept["near_contacts"])
            pushing = (
                f" with {near} row(s) pushing the link(s) within {DEFAULT_MARGIN:g} m of a contact "
                f"out (gradient and shortfall times {CLEARANCE_WEIGHT}),"
                if near
                else ","
            )
            solved = yield (
                "solve_linear",
                {"a": a, "b": b},
                f"The end effector is {kept['distance_to_target']:g} m from the target. I solve "
                f"for a damped least-squares step: jacobian x dq = offset_to_target{pushing} and "
                f"damping {damping:g} on each joint.",
            )
            calls += 1
            dq = [float(x) for x in solved["x"]]
            if max(abs(x) for x in dq) > MAX_STEP_DEG:
                damping *= 10
                continue
            q = [
                lo if x + d < lo else hi if x + d > hi else x + d
                for x, d, lo, hi in zip(kept_q, dq, self.lower, self.upper, strict=True)
            ]
            clamped = any(x + d != y for x, d, y in zip(kept_q, dq, q, strict=True))
            report = yield (
                "jacobian",
                {"joint_angles": q},
                f"Adding the step gives the angles {_fmt(q)}"
                + (" (held at a joint limit)" if clamped else "")
                + "; I check there.",
            )
            calls += 1
            if report["collision_free"] and (
                free is None or report["distance_to_target"] < free[1]["distance_to_target"]
            ):
                free = (q, report)
            new_cost = _cost(report)
            if new_cost < cost:
                kept_q, kept, cost = q, report, new_cost
                damping = max(damping / 10, MIN_DAMPING)
            else:
                damping *= 10

    def _system(
        self, report: dict[str, Any], damping: float
    ) -> tuple[list[list[float]], list[float]]:
        a = [list(row) for row in report["jacobian"]]
        b = list(report["offset_to_target"])
        for c in report["near_contacts"]:
            a.append([CLEARANCE_WEIGHT * g for g in c["gradient"]])
            b.append(CLEARANCE_WEIGHT * c["shortfall"])
        for j in range(self.n):
            a.append([damping if k == j else 0.0 for k in range(self.n)])
            b.append(0.0)
        return a, b

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
        name, args, _ = call
        if name == "jacobian":
            q = np.asarray(args["joint_angles"], dtype=float)
            return jacobian_report(self.scene, q, DEFAULT_MARGIN, self.public.dims)[1]
        return least_squares(args["a"], args["b"])

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
