"""The expert: a minimal-change repair, each new note picked from a visible ``note_options``
and made with ``change_note``."""

from __future__ import annotations

import itertools

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.parsing import answered_calls
from agentharness.tasks.harmony import simulator
from agentharness.tasks.harmony.problem import Public
from agentharness.tasks.harmony.simulator import VOICES, Voicing
from agentharness.tasks.harmony.tools import options_at

# Orders of the changes tried when looking for one where each is its position's best option.
MAX_ORDERS = 720

Change = tuple[int, int]  # (chord, voice), both 0-based


class HarmonyExpert:
    """Checks the given voices, changes notes one at a time from ``note_options``, submits.

    The plan is a minimal-change repair of the public data (dynamic programming over the
    chords, :func:`simulator.repair`): which notes to change. Each change is then made in
    the open: the expert asks ``note_options`` for that chord and voice (on the voices with
    the earlier changes made) and takes the new note from the list it gets back, so every
    note it sends is one a tool showed it. It orders the changes so that, where possible,
    each one is the best option listed (fewest errors, then warnings): on easy exercises
    (one altered note) it is in 19 of 20; on medium and hard, where changes only work
    together, in about half. Each change is made by ``change_note`` (v4), whose reply holds
    the whole new set of voices: the next call and the answer copy them from there. v3's
    expert wrote the changed voices itself, and SmolLM2-135M trained on it named the right
    note but submitted the voices unchanged; v2's expert named the new notes from its
    private search.

    What to do next is read from the conversation (which voices were checked, which
    options were asked for), so random calls interleaved by a noisy agent do not derail it.
    """

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        pub = instance.public_as(Public)
        self.chords = pub.chord_infos()
        self.given = pub.given.as_dict()
        self.given_real = simulator.to_realization(
            [[simulator.parse_pitch(x) for x in self.given[v]] for v in VOICES]
        )
        self._plan: list[tuple[Change, str]] | None = None
        self.n = 0

    def _planned(self) -> list[tuple[Change, str]]:
        """The changes, in the order they are made, with each new note's name."""
        if self._plan is None:
            fixed = simulator.repair(self.given_real, self.chords) or self.given_real
            changes = simulator.changed_notes(self.given_real, fixed)
            order = self._order(changes, fixed)
            self._plan = [
                ((i, k), simulator.spell(fixed[i][k], self.chords[i].tones)) for i, k in order
            ]
        return self._plan

    def _order(self, changes: list[Change], fixed: list[Voicing]) -> list[Change]:
        """The first order (of at most MAX_ORDERS) where each change is the best option."""
        for order in itertools.islice(itertools.permutations(changes), MAX_ORDERS):
            real = list(self.given_real)
            for i, k in order:
                best = options_at(real, self.chords, i, k)[0]
                if simulator.parse_pitch(best["note"]) != fixed[i][k]:
                    break
                notes = list(real[i])
                notes[k] = fixed[i][k]
                real[i] = (notes[0], notes[1], notes[2], notes[3])
            else:
                return list(order)
        return changes

    def _voices_after(self, n_changes: int) -> dict[str, list[str]]:
        out = {v: list(self.given[v]) for v in VOICES}
        for (i, k), name in self._planned()[:n_changes]:
            out[VOICES[k]][i] = name
        return out

    @staticmethod
    def _asked(messages: list[Message], name: str, arguments: dict[str, object]) -> bool:
        """Was ``name`` called with ``arguments`` and answered without error?"""
        return any(
            call.name == name
            and call.arguments == arguments
            and reply.outcome is not None
            and not reply.outcome.is_error
            for call, reply in answered_calls(messages)
        )

    def next_turn(self, messages: list[Message]) -> Message:
        self.n += 1
        call_id = f"expert_{self.n}"
        if not self._asked(messages, "check_harmony", {"voices": self.given}):
            return assistant(
                "First I check the given voices to locate the errors.",
                [ToolCall.make(call_id, "check_harmony", {"voices": self.given})],
            )
        plan = self._planned()
        for n, ((i, k), name) in enumerate(plan):
            voices = self._voices_after(n)
            args = {"voices": voices, "chord": i + 1, "voice": VOICES[k]}
            if not self._asked(messages, "note_options", args):
                return assistant(
                    f"I ask which notes the {VOICES[k]} could sing at chord {i + 1} "
                    "and how many errors each would leave.",
                    [ToolCall.make(call_id, "note_options", args)],
                )
            change = {**args, "note": name}
            if not self._asked(messages, "change_note", change):
                return assistant(
                    f"I take {name} for the {VOICES[k]} at chord {i + 1}.",
                    [ToolCall.make(call_id, "change_note", change)],
                )
        fixed = self._voices_after(len(plan))
        return assistant(
            "The voices the last change returned have no errors; I submit them.",
            [ToolCall.make(call_id, "submit_voices", {"voices": fixed})],
        )
