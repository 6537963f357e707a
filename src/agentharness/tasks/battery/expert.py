"""A privileged scripted designer that bisects the electrode thickness through the tools."""

from __future__ import annotations

from typing import Any

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.parsing import answered_calls
from agentharness.tasks.battery.problem import Hidden, Public
from agentharness.tasks.battery.simulator import END_DEPLETION, REF_THICKNESS_UM, THICKNESS_RANGE_UM

ID_PREFIX = "battery_expert_"
MAX_PROBES = 14
# Delivered/nominal capacity below this means the design is transport-limited.
TRANSPORT_LIMITED = 0.85


class BatteryExpert:
    """Knows the hidden design's porosity (and cooling) and bisects the thickness.

    Every turn is derived from the conversation so far, so interleaved foreign tool
    calls do no harm: any feasible simulation in the history is submitted at once.
    Otherwise the expert bisects the thickness at the hidden porosity, starting from the
    reference cell's thickness: a probe that runs too hot or is transport-limited bounds
    it from above, one that is cool but short of energy from below. The feasible band
    lies between, just under the temperature limit. After ``MAX_PROBES`` probes it
    submits the hidden design, which the generator verified. Tool results are read as
    data (``message.outcome``), never parsed from the text.
    """

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.choose_cooling = instance.public_as(Public).choose_cooling
        self.solution = instance.hidden_as(Hidden).solution
        self.turn = 0

    def _call(self, name: str, args: dict[str, Any]) -> Message:
        self.turn += 1
        return assistant(tool_calls=[ToolCall.make(f"{ID_PREFIX}{self.turn}", name, args)])

    def _args(self, thickness: float, porosity: float, h: float | None) -> dict[str, Any]:
        args: dict[str, Any] = {"thickness_um": thickness, "porosity": porosity}
        if self.choose_cooling and h is not None:
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

        porosity = self.solution.porosity
        h = self.solution.heat_transfer_coefficient
        own = [rep for call_id, rep in reports if call_id.startswith(ID_PREFIX)]
        if len(own) >= MAX_PROBES:
            return self._call("submit_design", self._args(self.solution.thickness_um, porosity, h))
        thickness = self._next_thickness(own)
        if thickness is None:
            return self._call("submit_design", self._args(self.solution.thickness_um, porosity, h))
        return self._call("simulate_cell", self._args(thickness, porosity, h))

    def _next_thickness(self, own: list[dict[str, Any]]) -> float | None:
        """The next probe: the midpoint of the bracket the own probes leave.

        Only visible numbers go in: the first probe is the reference cell's thickness,
        then each probe is the midpoint of two visible thicknesses (the range's ends or
        earlier probes), unrounded, so a model imitating the expert can do it in its head.
        """
        if not own:
            return REF_THICKNESS_UM
        lo, hi = THICKNESS_RANGE_UM
        for rep in own:
            t = float(rep["design"]["thickness_um"])
            res = rep["results"]
            limited = (
                res["end_of_discharge"] == END_DEPLETION or res["utilization"] < TRANSPORT_LIMITED
            )
            too_hot = not rep["constraints"]["peak_temperature"]["satisfied"]
            if limited or too_hot:
                hi = min(hi, t)
            else:  # cool enough and not transport-limited, so the energy must be short
                lo = max(lo, t)
        if hi - lo < 0.1:
            return None
        return (lo + hi) / 2


def _simulation_reports(messages: list[Message]) -> list[tuple[str, dict[str, Any]]]:
    """``(call id, report)`` of every successful simulate_cell call so far (as data)."""
    return [
        (call.id, message.outcome.data)
        for call, message in answered_calls(messages)
        if call.name == "simulate_cell"
        and message.outcome is not None
        and not message.outcome.is_error
        and isinstance(message.outcome.data, dict)
    ]
