"""Layer 3: budgets and the feedback given when a turn calls no tool."""

from __future__ import annotations

from agentharness.core.instance import Instance
from agentharness.core.messages import Message
from agentharness.core.task import Budgets, Interaction
from agentharness.tasks.tsp_vision.problem import Public
from agentharness.tasks.tsp_vision.tools import TspVisionWorld

# Reading the map and checking a tour or two fits easily; the expert needs two turns.
# Checks of tour_length are limited separately (the config's ``max_checks``).
BUDGETS = Budgets(
    max_turns=10,
    max_tool_calls=20,
)


class TspVisionInteraction(Interaction[TspVisionWorld]):
    """Points a stalled agent at its best tour so far, or at how to start."""

    def __init__(self) -> None:
        super().__init__(BUDGETS)

    def on_no_tool_call(
        self, instance: Instance, world: TspVisionWorld, message: Message, nudges: int
    ) -> str | None:
        if world.best is not None:
            order, length = world.best
            left = max(0, world.max_checks - world.checks)
            return (
                "You did not call a tool. Your best valid tour so far is "
                f"{', '.join(order)} with length {length:.2f}. Try to shorten it: draw it with "
                "show_tour, remove any crossing legs, move a city next to its neighbours on the "
                f"map ({left} tour_length check{'s' if left != 1 else ''} left), or call "
                "submit_tour with it now."
            )
        labels = instance.public_as(Public).labels
        return (
            "You did not call a tool, so nothing happened. Read each city's position from the "
            "map grid and plan a short tour, then call tour_length with a list of all "
            f"{len(labels)} labels ({', '.join(labels)}), each once, to check it; call "
            "submit_tour with your best tour to answer."
        )
