"""A privileged scripted designer that bisects the electrode thickness through the tools."""

from __future__ import annotations

import json
from typing import Any

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.tasks.battery.simulator import END_DEPLETION, THICKNESS_RANGE_UM

ID_PREFIX = "battery_expert_"
MAX_PROBES = 6
# Delivered/nominal capacity below this means the design is transport-limited.
TRANSPORT_LIMITED = 0.85


class BatteryExpert:
    """Knows the hidden design's porosity (and cooling) and searches the thickness.

    Every turn is derived from the conversation so far, so interleaved foreign tool
    calls do no harm: any feasible simulation in the history is submitted at once;
    otherwise the expert bisects the thickness at the hidden porosity, moving thinner
    when the cell runs too hot or is transport-limited and thicker when the specific
    energy is short. After ``MAX_PROBES`` probes it submits the hidden design, which the
    generator verified.
    """

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.solution: dict[str, Any] = dict(instance.hidden["solution"])
        self.turn = 0

    def _call(self, name: str, args: dict[str, Any]) -> Message:
        self.turn += 1
        return assistant(tool_calls=[ToolCall.make(f"{ID_PREFIX}{self.turn}", name, args)])

    def _args(self, thickness: float, porosity: float, h: float | None) -> dict[str, Any]:
        args: dict[str, Any] = {"thickness_um": thickness, "porosity": porosity}
        if self.instance.public["choose_cooling"] and h is not None:
            args["heat_transfer_coefficient"] = h
        return args

    def next_turn(self, messages: list[Message]) -> Message:
        reports = _simulation_reports(messages)
        feasible = [rep for _, rep in reports if rep.get("feasible")]
        if feasible:
            best = max(
                feasible,
                key=lambda r: min(
                    r["constraints"]["specific_energy"]["margin_wh_kg"]
                    / max(1.0, r["constraints"]["specific_energy"]["target_wh_kg"]),
                    r["constraints"]["peak_temperature"]["margin_k"] / 10.0,
                ),
            )
            d = best["design"]
            return self._call(
                "submit_design",
                self._args(d["thickness_um"], d["porosity"], d["heat_transfer_coefficient_w_m2k"]),
            )

        porosity = float(self.solution["porosity"])
        h = self.solution.get("heat_transfer_coefficient")
        lo, hi = THICKNESS_RANGE_UM
        own = [rep for call_id, rep in reports if call_id.startswith(ID_PREFIX)]
        for rep in own:
            thickness = float(rep["design"]["thickness_um"])
            res = rep["results"]
            too_hot = not rep["constraints"]["peak_temperature"]["satisfied"]
            limited = (
                res["end_of_discharge"] == END_DEPLETION or res["utilization"] < TRANSPORT_LIMITED
            )
            if too_hot or limited:
                hi = min(hi, thickness)
            else:  # cool enough and not transport-limited, so the energy must be short
                lo = max(lo, thickness)
        if len(own) >= MAX_PROBES or hi - lo < 0.5:
            return self._call(
                "submit_design",
                self._args(float(self.solution["thickness_um"]), porosity, h),
            )
        return self._call("simulate_cell", self._args(round((lo + hi) / 2, 1), porosity, h))


def _simulation_reports(messages: list[Message]) -> list[tuple[str, dict[str, Any]]]:
    """``(call id, parsed report)`` of every successful simulate_cell call so far."""
    names: dict[str, str] = {}
    for m in messages:
        if m.role == "assistant":
            for c in m.tool_calls or []:
                names[c.id] = c.function.name
    out: list[tuple[str, dict[str, Any]]] = []
    for m in messages:
        if m.role != "tool" or m.tool_call_id is None:
            continue
        if names.get(m.tool_call_id, m.name) != "simulate_cell":
            continue
        try:
            rep = json.loads(m.text)
        except (json.JSONDecodeError, TypeError):
            continue  # an error message, not a report
        if isinstance(rep, dict) and "constraints" in rep and "design" in rep:
            out.append((m.tool_call_id, rep))
    return out
