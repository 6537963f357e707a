"""The privileged expert: reads the hidden coordinates, checks the optimal tour, submits."""

from __future__ import annotations

import json

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant


class TspVisionExpert:
    """Checks the stored optimal tour once with ``tour_length``, then submits it.

    What to do next is read from the conversation (was the optimal tour already
    checked successfully?), so random calls interleaved by a noisy agent do not
    derail it.
    """

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.solution: list[str] = list(instance.hidden["solution"])
        self.n = 0

    def _checked(self, messages: list[Message]) -> bool:
        ids = set()
        for m in messages:
            if m.role != "assistant":
                continue
            for tc in m.tool_calls or []:
                if tc.function.name != "tour_length":
                    continue
                try:
                    args = json.loads(tc.function.arguments)
                except json.JSONDecodeError:
                    continue
                if isinstance(args, dict) and args.get("order") == self.solution:
                    ids.add(tc.id)
        return any(
            m.role == "tool" and m.tool_call_id in ids and not m.text.startswith("Error")
            for m in messages
        )

    def next_turn(self, messages: list[Message]) -> Message:
        self.n += 1
        call_id = f"expert_{self.n}"
        order = {"order": self.solution}
        route = " -> ".join([*self.solution, self.solution[0]])
        if not self._checked(messages):
            cities = self.instance.hidden["cities"]
            labels = self.instance.public["labels"]
            read = ", ".join(
                f"{lab} ({x}, {y})" for lab, (x, y) in zip(labels, cities, strict=True)
            )
            text = (
                f"Reading the map, the cities are at {read}. "
                f"The shortest tour I find is {route}. Let me check its length."
            )
            return assistant(text, [ToolCall.make(call_id, "tour_length", order)])
        return assistant(
            f"The tour {route} is valid and has no crossing legs; submitting it.",
            [ToolCall.make(call_id, "submit_tour", order)],
        )
