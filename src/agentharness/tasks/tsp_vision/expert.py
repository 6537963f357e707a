"""The privileged expert, and the strongest policy without the map (``blind_policy``).

The expert reads the hidden coordinates (what the map shows), checks the optimal tour
once and submits it. :class:`TspVisionBlind` never looks at the map: it searches with
the tour lengths ``tour_length`` reports and submits the shortest tour it found. Both
read the tools' results as data (``message.outcome``), never the text.
"""

from __future__ import annotations

import hashlib
import random

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.parsing import answered_calls
from agentharness.tasks.tsp_vision.config import TspVisionConfig
from agentharness.tasks.tsp_vision.problem import Hidden, Public


def _ok(reply: Message) -> bool:
    """The tool call this message answers succeeded."""
    return reply.outcome is not None and not reply.outcome.is_error


def _out_of_checks(reply: Message) -> bool:
    """A ``tour_length`` refusal because every check is used up (``checks_left`` 0)."""
    outcome = reply.outcome
    return (
        outcome is not None
        and outcome.is_error
        and isinstance(outcome.data, dict)
        and outcome.data.get("checks_left") == 0
    )


class TspVisionExpert:
    """Checks the stored optimal tour once with ``tour_length``, then submits it.

    What to do next is read from the conversation (was the optimal tour already
    checked successfully?), so random calls interleaved by a noisy agent do not
    derail it.
    """

    def __init__(self, instance: Instance) -> None:
        self.hidden = instance.hidden_as(Hidden)
        self.labels = instance.public_as(Public).labels
        self.solution: list[str] = list(self.hidden.solution)
        self.n = 0

    def _checked(self, messages: list[Message]) -> bool:
        return any(
            call.name == "tour_length"
            and call.arguments.get("order") == self.solution
            and _ok(reply)
            for call, reply in answered_calls(messages)
        )

    def next_turn(self, messages: list[Message]) -> Message:
        self.n += 1
        call_id = f"expert_{self.n}"
        order = {"order": self.solution}
        route = " -> ".join([*self.solution, self.solution[0]])
        out_of_checks = any(m.role == "tool" and _out_of_checks(m) for m in messages)
        if not self._checked(messages) and not out_of_checks:
            read = ", ".join(
                f"{lab} ({x}, {y})"
                for lab, (x, y) in zip(self.labels, self.hidden.cities, strict=True)
            )
            text = (
                f"Reading the map, the cities are at {read}. "
                f"The shortest tour I find is {route}. Let me check its length."
            )
            return assistant(text, [ToolCall.make(call_id, "tour_length", order)])
        return assistant(
            f"The tour {route} is valid and its length matches the positions I read; "
            "submitting it.",
            [ToolCall.make(call_id, "submit_tour", order)],
        )


class TspVisionBlind:
    """The strongest policy I can write that never reads the map (the ``blind_policy``).

    Without positions the only instance-specific information is what the tools say, so
    it searches by ``tour_length`` alone: it checks the labels in their given order, then
    a random 2-opt move (a reversed stretch) or city move applied to the shortest tour
    so far, one check per turn, keeping the shortest, until the checks run out; then it
    submits the shortest tour it measured. With unlimited checks this black-box local
    search, or least squares over many tour lengths, would solve the task blind; the
    check budget is what makes the map necessary.
    """

    def __init__(self, instance: Instance) -> None:
        self.labels: list[str] = list(instance.public_as(Public).labels)
        self.max_checks = TspVisionConfig.model_validate(instance.config).max_checks
        digest = hashlib.sha256(",".join(self.labels).encode()).digest()
        self.rng = random.Random(int.from_bytes(digest[:8], "big") ^ instance.seed)
        self.sent: dict[str, list[str]] = {}
        self.n = 0
        self.submitted = False

    def _measured(self, messages: list[Message]) -> tuple[list[tuple[float, list[str]]], bool]:
        """My checked tours with their lengths, and whether the checks ran out."""
        found: list[tuple[float, list[str]]] = []
        exhausted = False
        for m in messages:
            if m.role != "tool" or m.tool_call_id not in self.sent or m.outcome is None:
                continue
            data = m.outcome.data
            if _ok(m) and isinstance(data, dict) and "length" in data:
                found.append((float(data["length"]), self.sent[m.tool_call_id]))
            elif _out_of_checks(m):
                exhausted = True
        return found, exhausted

    def _neighbour(self, order: list[str]) -> list[str]:
        n = len(order)
        out = list(order)
        if n < 4:
            return out
        if self.rng.random() < 0.6:  # 2-opt: reverse a stretch
            i, j = sorted(self.rng.sample(range(1, n), 2))
            out[i : j + 1] = reversed(out[i : j + 1])
        else:  # move one city elsewhere
            city = out.pop(self.rng.randrange(n))
            out.insert(self.rng.randrange(n), city)
        return out

    def next_turn(self, messages: list[Message]) -> Message:
        self.n += 1
        found, exhausted = self._measured(messages)
        best = min(found, key=lambda x: x[0])[1] if found else list(self.labels)
        if exhausted or len(self.sent) >= self.max_checks or self.submitted:
            self.submitted = True
            return assistant(
                f"Submitting the shortest tour I measured ({len(found)} checked).",
                [ToolCall.make(f"blind_submit_{self.n}", "submit_tour", {"order": best})],
            )
        candidate = best if not found else self._neighbour(best)
        tried = set(map(tuple, self.sent.values()))
        for _ in range(20):
            if tuple(candidate) not in tried:
                break
            candidate = self._neighbour(best)
        call_id = f"blind_check_{self.n}"
        self.sent[call_id] = candidate
        return assistant(
            "I cannot see the map; checking a tour near my shortest one so far.",
            [ToolCall.make(call_id, "tour_length", {"order": candidate})],
        )
