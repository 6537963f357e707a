"""Layer 3: budgets and what the agent hears when it stops calling tools."""

from __future__ import annotations

from agentharness.core.instance import Instance
from agentharness.core.messages import Message
from agentharness.core.task import Budgets, Interaction
from agentharness.tasks.battery.problem import Public
from agentharness.tasks.battery.tools import BatteryWorld


class BatteryInteraction(Interaction[BatteryWorld]):
    """Nudges with the state of the search: the best design so far and what to do next."""

    def __init__(self) -> None:
        # v3: room for a search computed in the open (a calculate turn before most
        # simulations); the simulation budget itself is the instance's max_simulations.
        super().__init__(
            Budgets(
                max_turns=60,
                max_tool_calls=80,
            )
        )

    def on_no_tool_call(
        self, instance: Instance, world: BatteryWorld, message: Message, nudges: int
    ) -> str | None:
        pub = instance.public_as(Public)
        args = "thickness_um (micrometres) and porosity"
        if pub.choose_cooling:
            args += " (and optionally heat_transfer_coefficient in W/m²K)"
        best = world.best
        if best is None:
            return (
                "You did not call a tool, so nothing happened. Start by calling `simulate_cell` "
                f"with {args} - for example the reference cell, 75.6 um and 0.335 - and read how "
                f"far it is from the targets (specific energy >= "
                f"{pub.specific_energy_target_wh_kg:g} Wh/kg, peak temperature <= "
                f"{pub.peak_temperature_limit_c:g} °C)."
            )
        d = best["design"]
        left = pub.max_simulations - world.simulations
        return (
            f"You did not call a tool. Your best design so far: {d['thickness_um']:g} um, "
            f"porosity {d['porosity']:g}, h {d['heat_transfer_coefficient_w_m2k']:g} W/m²K -> "
            f"{best['feedback']} You have {left} simulations left. Keep refining with "
            f"`simulate_cell` (calculate helps with the next thickness, e.g. a secant step "
            f"towards the limit), or call `submit_design` with {args} to finish; without a "
            "submitted design the episode scores zero."
        )
