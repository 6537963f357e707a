"""The expert: a minimal-change repair, each new note picked from a visible ``note_options``
and made with ``change_note`` on the environment's working voices."""

from __future__ import annotations

import itertools
from typing import Any

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
    the open: the expert asks ``note_options`` for that chord and voice and takes the new
    note from the list it gets back, so every note it sends is one a tool showed it. It
    orders the changes so that, where possible, each one is the best option listed (fewest
    errors, then warnings): on easy exercises (one altered note) it is in 19 of 20; on
    medium and hard, where changes only work together, in about half. ``change_note`` edits
    the environment's working voices (v5), and ``submit_voices()`` answers with them, so no
    call carries the voices: v4's expert passed all of them to every call and submitted the
    copy ``change_note`` returned; v3's wrote the changed voices itself (SmolLM2-135M trained
    on it named the right note but submitted the voices unchanged); v2's named the new notes
    from its private search.

    The working voices are read from the conversation (the given voices, then every change
    and every checked set of voices that succeeded), so random calls interleaved by a noisy
    agent do not derail it: a note they changed is put back.
    """

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        pub = instance.public_as(Public)
        self.chords = pub.chord_infos()
        self.given = pub.given.as_dict()
        self.given_real = _real(self.given)
        self._fixed: list[Voicing] | None = None
        self._orders: dict[tuple[Voicing, ...], list[Change]] = {}
        self.n = 0

    @property
    def fixed(self) -> list[Voicing]:
        """The minimal-change repair of the given voices (the given ones if none is found)."""
        if self._fixed is None:
            self._fixed = simulator.repair(self.given_real, self.chords) or self.given_real
        return self._fixed

    def _order(self, real: list[Voicing]) -> list[Change]:
        """The changes from ``real`` to the repair, in the first order (of at most
        MAX_ORDERS) where each is the best option ``note_options`` lists."""
        key = tuple(real)
        if key not in self._orders:
            fixed = self.fixed
            changes = simulator.changed_notes(real, fixed)
            self._orders[key] = changes
            for order in itertools.islice(itertools.permutations(changes), MAX_ORDERS):
                trial = list(real)
                for i, k in order:
                    best = options_at(trial, self.chords, i, k)[0]
                    if simulator.parse_pitch(best["note"]) != fixed[i][k]:
                        break
                    notes = list(trial[i])
                    notes[k] = fixed[i][k]
                    trial[i] = (notes[0], notes[1], notes[2], notes[3])
                else:
                    self._orders[key] = list(order)
                    break
        return self._orders[key]

    def _working(self, messages: list[Message]) -> tuple[dict[str, list[str]], bool, Change | None]:
        """From the conversation: the working voices, whether they were checked, and the
        position ``note_options`` was last asked about since they last changed."""
        voices = {v: list(line) for v, line in self.given.items()}
        checked = False
        asked: Change | None = None
        for call, reply in answered_calls(messages):
            if reply.outcome is None or reply.outcome.is_error:
                continue
            args: dict[str, Any] = call.arguments
            given = args.get("voices")
            if call.name == "check_harmony":
                checked = True
                if isinstance(given, dict):
                    voices, asked = {v: list(given[v]) for v in VOICES}, None
            elif call.name == "change_note":
                voices[args["voice"]][int(args["chord"]) - 1] = str(args["note"])
                asked = None
            elif call.name == "note_options":
                asked = (int(args["chord"]) - 1, VOICES.index(args["voice"]))
        return voices, checked, asked

    def next_turn(self, messages: list[Message]) -> Message:
        self.n += 1
        call_id = f"expert_{self.n}"
        voices, checked, asked = self._working(messages)
        if not checked:
            return assistant(
                "First I check the given voices to locate the errors.",
                [ToolCall.make(call_id, "check_harmony", {})],
            )
        order = self._order(_real(voices))
        if not order:
            return assistant(
                "The working voices have no errors now; I submit them.",
                [ToolCall.make(call_id, "submit_voices", {})],
            )
        i, k = order[0]
        where = {"chord": i + 1, "voice": VOICES[k]}
        if asked != (i, k):
            return assistant(
                f"I ask which notes the {VOICES[k]} could sing at chord {i + 1} "
                "and how many errors each would leave.",
                [ToolCall.make(call_id, "note_options", where)],
            )
        name = simulator.spell(self.fixed[i][k], self.chords[i].tones)
        return assistant(
            f"I take {name} for the {VOICES[k]} at chord {i + 1}.",
            [ToolCall.make(call_id, "change_note", {**where, "note": name})],
        )


def _real(voices: dict[str, list[str]]) -> list[Voicing]:
    return simulator.to_realization([[simulator.parse_pitch(x) for x in voices[v]] for v in VOICES])
