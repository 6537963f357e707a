"""Layer 3: budgets and what the agent hears when it stops calling tools."""

from __future__ import annotations

from agentharness.core.instance import Instance
from agentharness.core.messages import Message
from agentharness.core.task import Budgets, Interaction
from agentharness.tasks.flange.tools import FlangeWorld

BUDGETS = Budgets(
    max_turns=24,
    max_tool_calls=40,
)


class FlangeInteraction(Interaction[FlangeWorld]):
    """Points the agent at the drawing, the check tools and ``submit_design``."""

    def __init__(self, budgets: Budgets | None = None) -> None:
        super().__init__(budgets or BUDGETS)

    def on_no_tool_call(
        self, instance: Instance, world: FlangeWorld, message: Message, nudges: int
    ) -> str | None:
        base = "You did not call a tool, so nothing happened. "
        if not world.history:
            return base + (
                "Read the drawing (diameters, load, displacement limit in note 4, unit cost "
                "limit in note 5, permitted materials in note 2), pick a candidate thickness, "
                "material, bolt count and bolt size, check it with analyze(...) and cost(...) "
                "on the drawing's dimensions and load, and finish with "
                "submit_design(thickness, material, n_bolts, bolt_diameter)."
            )
        # Only what the agent's own calls returned: the drawing's limits stay on the drawing.
        disps = [c.displacement for c in world.history if c.displacement is not None]
        costs = [c.cost for c in world.history if c.cost is not None]
        parts = []
        if disps:
            parts.append(
                f"your last analyzed design displaces the bore edge by "
                f"{disps[-1]:.4g} mm (the drawing's note 4 gives the limit)"
            )
        if costs:
            parts.append(f"your last costed design costs ${costs[-1]:.2f} (note 5 gives the limit)")
        summary = "; ".join(parts)
        return (
            f"{base}{summary[0].upper()}{summary[1:]}. Adjust the design if needed, check it "
            "with analyze and cost, then call submit_design(thickness, material, n_bolts, "
            "bolt_diameter); the material must be one the drawing permits."
        )
