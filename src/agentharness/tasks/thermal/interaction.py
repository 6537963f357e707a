"""Layer 3: budgets and what the agent hears when it stops calling tools."""

from __future__ import annotations

from agentharness.core.instance import Instance
from agentharness.core.messages import Message
from agentharness.core.task import Budgets, Interaction
from agentharness.tasks.thermal.problem import Public
from agentharness.tasks.thermal.tools import ThermalWorld


class ThermalInteraction(Interaction[ThermalWorld]):
    """Nudges with the state of the search: best simulation so far and what to do next."""

    def __init__(self) -> None:
        super().__init__(
            Budgets(
                max_turns=40,
                max_tool_calls=50,
            )
        )

    def on_no_tool_call(
        self, instance: Instance, world: ThermalWorld, message: Message, nudges: int
    ) -> str | None:
        pub = instance.public_as(Public)
        n = len(pub.heaters)
        fmt = (
            f"powers = a list of {n} numbers in watts (heaters H1..H{n}, each 0 to "
            f"{pub.max_power_w:g} W)"
        )
        best = world.best_report
        if best is None:
            return (
                "You did not call a tool, so nothing happened. Start by calling `simulate` with "
                f"{fmt} and read how far each monitor is from its target. Steady conduction "
                "with fixed-temperature edges is linear in the heater powers, so each heater's rise "
                "per watt (`probe_heaters` measures them all) tells you how it affects each "
                "monitor, and solve_linear or minimize_max turn that response into powers."
            )
        left = pub.max_simulations - world.simulations
        return (
            f"You did not call a tool. Your best simulation so far: powers {best['powers_w']} W -> "
            f"{best['verdict']}. You have {left} simulations left. Keep adjusting with `simulate`, "
            f"or call `submit_powers` with {fmt} to finish; without a submitted answer the "
            "episode scores zero."
        )
