"""Layer 3: budgets and the feedback given when a turn calls no tool."""

from __future__ import annotations

from agentharness.core.instance import Instance
from agentharness.core.messages import Message
from agentharness.core.task import Budgets, Interaction
from agentharness.tasks.harmony.problem import Public
from agentharness.tasks.harmony.tools import HarmonyWorld

# Checking, asking for options and re-checking fit easily: the expert takes 2 turns per
# altered note plus a check and the submission (4 on easy, 12 on hard's five notes).
BUDGETS = Budgets(
    max_turns=16,
    max_tool_calls=30,
)
# Turns an instance gets beyond the expert's 2 per altered note (the presets' 16 at <= 5).
SLACK_TURNS = 6


class HarmonyInteraction(Interaction[HarmonyWorld]):
    """Tells a stalled agent what its last check found, or how to start."""

    def __init__(self) -> None:
        super().__init__(BUDGETS)

    def budgets_for(self, instance: Instance) -> Budgets:
        """More altered notes (the ``n_errors`` knob goes to 8) take more turns to repair."""
        altered = instance.public_as(Public).n_altered
        turns = max(BUDGETS.max_turns, 2 * altered + SLACK_TURNS)
        return BUDGETS.override(max_turns=turns, max_tool_calls=max(BUDGETS.max_tool_calls, turns))

    def on_no_tool_call(
        self, instance: Instance, world: HarmonyWorld, message: Message, nudges: int
    ) -> str | None:
        last = world.last_summary
        if last is not None:
            errors, parallels = last
            if errors == 0:
                return (
                    "You did not call a tool. Your working voices have no errors; call "
                    "submit_voices() to finish."
                )
            return (
                f"You did not call a tool. Your working voices still have {errors} "
                f"error(s), {parallels} of them parallel fifths/octaves (which score 0). Change "
                "the notes named in the report to other tones of the same chord "
                "(note_options(chord, voice) lists them with the errors each leaves; "
                "change_note(chord, voice, note) makes the change and checks it), then "
                "call submit_voices()."
            )
        return (
            "You did not call a tool, so nothing happened. Start by calling check_harmony() "
            "to see where the errors in the given voices are; fix them with change_note, and "
            "call submit_voices()."
        )
