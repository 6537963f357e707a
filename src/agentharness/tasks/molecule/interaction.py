"""Layer 3: budgets and what the agent is told when a turn calls no tool."""

from __future__ import annotations

from agentharness.core.instance import Instance
from agentharness.core.messages import Message
from agentharness.core.task import Budgets, Interaction
from agentharness.tasks.molecule.config import MAX_CALL_BUDGET
from agentharness.tasks.molecule.problem import Public
from agentharness.tasks.molecule.tools import MoleculeWorld

# The per-instance call budget (stated in the prompt) is enforced by the world; these
# episode limits only backstop it, leaving room for rejected calls and the submission.
BUDGETS = Budgets(
    max_turns=MAX_CALL_BUDGET + 30,
    max_tool_calls=MAX_CALL_BUDGET + 30,
)


class MoleculeInteraction(Interaction[MoleculeWorld]):
    """Tells an agent that stopped calling tools where its search stands."""

    def __init__(self) -> None:
        super().__init__(BUDGETS)

    def on_no_tool_call(
        self, instance: Instance, world: MoleculeWorld, message: Message, nudges: int
    ) -> str | None:
        best = "none yet" if world.best_energy is None else f"{world.best_energy:.6f}"
        target = instance.public_as(Public).target_energy
        goal = f" (target {target:.6f})" if target is not None else ""
        if world.calls_left == 0:
            return (
                "You did not call a tool. Your energy/local_minimize budget is spent "
                f"(best energy {best}{goal}): call submit_structure now with your best relaxed "
                "coordinates."
            )
        return (
            f"You did not call a tool, so nothing happened. Best energy so far: {best}{goal}; "
            f"{world.calls_left} of {world.call_budget} energy/local_minimize calls left. Keep "
            "searching (perturb your best minimum and call local_minimize on it), or call "
            "submit_structure with the best relaxed coordinates local_minimize returned."
        )
