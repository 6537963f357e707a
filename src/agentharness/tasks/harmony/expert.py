"""The expert: a search-based repairer that changes as few notes as possible."""

from __future__ import annotations

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.parsing import answered_calls
from agentharness.tasks.harmony import simulator
from agentharness.tasks.harmony.problem import Public
from agentharness.tasks.harmony.simulator import VOICES


class HarmonyExpert:
    """Checks the given voices, repairs them by minimal-change search, checks, submits.

    It uses only public data (the chords and the given voices): dynamic programming
    over the chords finds the fewest note changes that leave no error (see
    :func:`simulator.repair`). What to do next is read from the conversation (which
    voices were already checked successfully), so random calls interleaved by a noisy
    agent do not derail it.
    """

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        pub = instance.public_as(Public)
        self.chords = pub.chord_infos()
        self.given = pub.given.as_dict()
        self._fixed: dict[str, list[str]] | None = None
        self._changes: list[str] = []
        self.n = 0

    def _repair(self) -> dict[str, list[str]]:
        if self._fixed is None:
            n = len(self.chords)
            midis = [[simulator.parse_pitch(x) for x in self.given[v]] for v in VOICES]
            given = simulator.to_realization(midis)
            fixed = simulator.repair(given, self.chords) or given
            out = {v: list(self.given[v]) for v in VOICES}
            for i, k in simulator.changed_notes(given, fixed):
                name = simulator.spell(fixed[i][k], self.chords[i].tones)
                self._changes.append(
                    f"chord {i + 1} {VOICES[k]} {out[VOICES[k]][i]} -> {name}"
                )
                out[VOICES[k]][i] = name
            assert all(len(out[v]) == n for v in VOICES)
            self._fixed = out
        return self._fixed

    @staticmethod
    def _checked_ok(messages: list[Message], voices: dict[str, list[str]]) -> bool:
        """Was check_harmony already called on ``voices`` and answered without error?"""
        return any(
            call.name == "check_harmony"
            and call.arguments.get("voices") == voices
            and reply.outcome is not None
            and not reply.outcome.is_error
            for call, reply in answered_calls(messages)
        )

    def next_turn(self, messages: list[Message]) -> Message:
        self.n += 1
        call_id = f"expert_{self.n}"
        if not self._checked_ok(messages, self.given):
            return assistant(
                "First I check the given voices to locate the errors.",
                [ToolCall.make(call_id, "check_harmony", {"voices": self.given})],
            )
        fixed = self._repair()
        if not self._checked_ok(messages, fixed):
            changes = "; ".join(self._changes) or "none"
            return assistant(
                "Searching for the fewest note changes (other tones of the same chords) that "
                f"remove every error, I change: {changes}. Checking the result.",
                [ToolCall.make(call_id, "check_harmony", {"voices": fixed})],
            )
        return assistant(
            "The repaired voices have no errors; submitting them.",
            [ToolCall.make(call_id, "submit_voices", {"voices": fixed})],
        )
