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

The start is the first pose ``start_poses`` lists (v6): collision-free simple poses, each
joint at 0, half its limit or its limit, ranked by how close four damped steps from each
get. When ``STEPS_PER_START`` steps from a start have not reached the target (or the
damping has grown past 100) it moves on to the next listed pose, and when none converges
it submits the closest collision-free angles a step reported. Every number it sends is
one it read in the conversation (or a damping a power of ten from the last), and every
decision is read off what a tool reported, so nothing it does depends on the hidden
solution. Each step's narration states both flags ("0.12 m from the target, not within
tolerance, collision-free"), so the decision to step again or submit follows words the
model has just written. Since v7 those words are the first line of the ``dls_step`` reply
(:func:`~.tools.step_verdict`), copied: the narration of a kept step is that line and its
decision, of a dropped one the line's first words. (SmolLM2 trained on v6's episodes read
``"within_tolerance": false`` and wrote "within tolerance".) v3-v5's expert chose its
start privately: it rehearsed the search from a dozen simple poses nearest the hidden
solution and played the quickest; SmolLM2 trained on those episodes guessed a start,
always took two steps and submitted.

It reads its own calls' results from ``messages`` (matched by call id), so random calls
interleaved by a noisy agent do not derail it; a failed call is repeated.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.tasks.robot_reach.tools import (
    DAMPING,
    MAX_DAMPING,
    MAX_STEP_DEG,
    MIN_DAMPING,
    angles_text,
    keeps,
    num_text,
    step_verdict,
)

# dls_step calls from one start before the expert moves on to the next listed pose.
STEPS_PER_START = 4
RETRIES = 3

Call = tuple[str, dict[str, Any], str]  # tool name, arguments, what the expert says
Search = Generator[Call, dict[str, Any], None]


class RobotReachExpert:
    """Damped least squares through the ``dls_step`` tool, from the poses ``start_poses`` lists."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.search: Search | None = None
        self.pending: tuple[str, Call] | None = None  # my call id and the call
        self.retries = 0
        self.turn = 0

    # -- the search ----------------------------------------------------------------------

    def _plan(self) -> Search:
        """The whole episode's calls; each yield receives that call's result."""
        listed = yield (
            "start_poses",
            {},
            "I list collision-free simple poses to start from.",
        )
        poses = [p["joint_angles"] for p in listed["poses"]]
        # The closest collision-free angles seen: the answer if every start gives up.
        free: dict[str, Any] | None = None
        for k, start in enumerate(poses):
            why = (
                f"I start from pose 1, {angles_text(start)}."
                if k == 0
                else f"That start is not converging, so I try pose {k + 1}, {angles_text(start)}."
            )
            outcome = yield from self._search(start, why)
            if outcome["solved"]:
                return
            best = outcome["free"]
            if best is not None and (
                free is None or best["distance_to_target"] < free["distance_to_target"]
            ):
                free = best
        best = free if free is not None else {"joint_angles": poses[0], "distance_to_target": None}
        away = (
            f" ({num_text(best['distance_to_target'])} m from the target)"
            if best["distance_to_target"] is not None
            else ""
        )
        yield (
            "submit_angles",
            {"joint_angles": best["joint_angles"]},
            f"No start converged, so I submit the closest collision-free angles I found{away}.",
        )

    def _search(
        self, start: list[float], why: str
    ) -> Generator[Call, dict[str, Any], dict[str, Any]]:
        """Steps from ``start`` until within tolerance (submitted) or giving up on it."""
        damping = DAMPING
        step = yield (
            "dls_step",
            {"joint_angles": start, "damping": damping},
            f"{why} I take a damped least-squares step from there (damping {damping:g}).",
        )
        steps = 1
        kept_q, cost = start, float(step["cost_before"])
        kept: dict[str, Any] | None = None  # the step that reached kept_q, if one did
        free: dict[str, Any] | None = None  # the closest collision-free step of this search
        while True:
            if step["collision_free"] and (
                free is None or step["distance_to_target"] < free["distance_to_target"]
            ):
                free = step
            if keeps(step, cost):
                kept_q, cost, kept = step["joint_angles"], float(step["cost_after"]), step
                damping = max(damping / 10, MIN_DAMPING)
            else:
                damping *= 10
            # The decision is read off the flags the step reported, said aloud in the words
            # of the reply's first line (copied, v7).
            if kept is step:
                note = step_verdict(step)
            elif not step["improved"]:
                note = "Not improved, so I keep the old angles"
            else:  # improved, but a step longer than MAX_STEP_DEG is not kept
                note = (
                    f"Improved, but a joint moved {num_text(step['largest_step_deg'])} degrees, "
                    f"more than {MAX_STEP_DEG:g}, so I keep the old angles"
                )
            if kept is step and step["within_tolerance"] and step["collision_free"]:
                yield (
                    "submit_angles",
                    {"joint_angles": kept_q},
                    f"{note}: I submit these angles.",
                )
                return {"solved": True, "free": free}
            if steps >= STEPS_PER_START or damping > MAX_DAMPING:
                return {"solved": False, "free": free}
            step = yield (
                "dls_step",
                {"joint_angles": kept_q, "damping": damping},
                f"{note}: I step again from "
                + ("these angles" if kept is step else f"the angles I kept, {angles_text(kept_q)},")
                + f" with damping {damping:g}.",
            )
            steps += 1

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
