"""A privileged scripted solver that works through the tools like a design engineer.

It reads the drawing's numbers from ``instance.hidden`` (it cannot see images), takes
the cheapest design meeting the limit over the permitted materials and valid bolt
patterns (the generator's search, :func:`~agentharness.tasks.flange.simulator.cheapest_design`),
checks it with ``analyze`` and ``cost`` and submits it.

The stage is read from which of its own calls already have results in the conversation,
so random calls interleaved by a ``noisy`` agent do not derail it.
"""

from __future__ import annotations

import json
from typing import Any

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.tasks.flange.generator import geometry_of
from agentharness.tasks.flange.simulator import MATERIALS, valid_patterns

ANALYZE_ID = "flange_analyze"
COST_ID = "flange_cost"
SUBMIT_ID = "flange_submit"


class FlangeExpert:
    """Analyze, cost and submit the cheapest feasible design."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.solution: dict[str, Any] = dict(instance.hidden["solution"])
        self.n = 0

    def _call(self, text: str | None, call_id: str, name: str) -> Message:
        self.n += 1
        return assistant(
            text, tool_calls=[ToolCall.make(f"{call_id}_{self.n}", name, self.solution)]
        )

    def _reading(self) -> str:
        h = self.instance.hidden
        d = h["drawing"]
        if d["load_as_pressure"]:
            load = (
                f"design pressure p = {d['pressure_mpa']:g} MPa on the bore, so the end load is "
                f"F = p*pi*{d['bore_d']:g}^2/4 = {h['load_n'] / 1000:.1f} kN"
            )
        else:
            load = f"axial load F = {d['load_kn']:g} kN on the bore edge"
        patterns = valid_patterns(geometry_of(self.instance))
        sizes = sorted({b for _, b in patterns})
        s = self.solution
        labels = ", ".join(MATERIALS[m].label.lower() for m in d["permitted"])
        return (
            f"From drawing {d['number']}: outer diameter {d['outer_d']:g} mm, bolt circle "
            f"{d['bcd']:g} mm, bore {d['bore_d']:g} mm; {load}; displacement limit "
            f"{d['limit_mm']:g} mm (note 4); permitted materials: {labels}. The edge distances "
            f"allow bolt sizes M{', M'.join(str(x) for x in sizes)}. For each permitted material "
            "and valid bolt pattern I take the thinnest plate meeting the limit and cost it; the "
            f"cheapest is t = {s['thickness']:g} mm {s['material']} with {s['n_bolts']} x "
            f"M{s['bolt_diameter']}. Let me verify it."
        )

    def next_turn(self, messages: list[Message]) -> Message:
        done: dict[str, bool] = {}
        for m in messages:
            if m.role == "tool" and m.tool_call_id:
                stage = m.tool_call_id.rsplit("_", 1)[0]
                ok = not m.text.startswith("Error")
                done[stage] = done.get(stage, False) or ok
        if not done.get(ANALYZE_ID):
            return self._call(self._reading(), ANALYZE_ID, "analyze")
        if not done.get(COST_ID):
            return self._call(
                "The displacement check passes. Now the cost against the budget.", COST_ID, "cost"
            )
        return self._call(
            "Both the displacement limit and the budget are met with a permitted material. "
            f"Submitting {json.dumps(self.solution)}.",
            SUBMIT_ID,
            "submit_design",
        )
