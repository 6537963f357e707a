"""The privileged expert: relaxes the start honestly, then seeds from the hidden solution.

An honest basin-hopping search through the tools cannot be guaranteed to hit the global
minimum within the budget, so the expert uses its privilege: after one exploratory
``local_minimize`` of the start, it minimizes a slightly perturbed copy of the hidden
global-minimum structure (which relaxes back into the global basin) and submits the
relaxed coordinates the tool returned. Its next action is derived from the tool results
in the conversation, not a script index, so random calls interleaved by a noisy agent do
not derail it: any ``local_minimize`` result that reached the global minimum is submitted,
and if its own calls fail (e.g. the budget was spent by someone else) it submits the
hidden solution itself, which is at the global minimum as stored.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.tasks.molecule.simulator import DECIMALS

PERTURBATION = 0.05  # sigma; well inside the global minimum's basin


class MoleculeExpert:
    """Scripted solver that acts only through the task's tools."""

    def __init__(self, instance: Instance) -> None:
        self.start: list[list[float]] = instance.public["start"]
        self.solution: list[list[float]] = instance.hidden["solution"]
        rng = np.random.default_rng([instance.seed % 2**64, 0xE7])
        sol = np.array(self.solution)
        self.candidate = np.round(
            sol + rng.uniform(-PERTURBATION, PERTURBATION, sol.shape), DECIMALS
        ).tolist()
        self._n = 0

    def _call(self, purpose: str, name: str, args: dict[str, Any], text: str) -> Message:
        self._n += 1
        return assistant(
            text, tool_calls=[ToolCall.make(f"expert_{purpose}_{self._n}", name, args)]
        )

    def next_turn(self, messages: list[Message]) -> Message:
        done: set[str] = set()
        for m in messages:
            if m.role == "tool" and m.tool_call_id and m.tool_call_id.startswith("expert_"):
                done.add(m.tool_call_id.split("_")[1])
        for m in reversed(messages):
            if m.role != "tool" or m.name != "local_minimize" or m.text.startswith("Error"):
                continue
            try:
                result = json.loads(m.text)
            except json.JSONDecodeError:
                continue
            if (
                isinstance(result, dict)
                and result.get("global_minimum_reached")
                and "coordinates" in result
            ):
                return self._call(
                    "submit",
                    "submit_structure",
                    {"coordinates": result["coordinates"]},
                    f"That minimum has energy {result.get('energy')}, the global minimum. Submitting it.",
                )
        if "start" not in done:
            return self._call(
                "start",
                "local_minimize",
                {"coordinates": self.start},
                "First I relax the starting structure to see which basin it sits in.",
            )
        if "refine" not in done:
            return self._call(
                "refine",
                "local_minimize",
                {"coordinates": self.candidate},
                "The start relaxed into a higher local minimum. I try a compact icosahedron-based "
                "candidate and relax it.",
            )
        return self._call(
            "submit",
            "submit_structure",
            {"coordinates": self.solution},
            "Submitting the icosahedron-based global-minimum structure.",
        )
