"""The instance data of a harmony exercise, typed: ``Public`` (shown) and ``Hidden`` (truth).

Read them with ``instance.public_as(Public)`` / ``instance.hidden_as(Hidden)``; the
generator builds them and stores ``model_dump(mode="json")``. Field order is the order
of the stored JSON, so instances are unchanged by going through these models.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from agentharness.tasks.harmony.simulator import VOICES, ChordInfo


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Chord(_Frozen):
    """One chord of the progression as stated in the prompt, with its pitch classes."""

    figure: str  # Roman numeral, e.g. "V" or "viio6"
    tones: tuple[str, ...]  # spelled chord tones, root first, e.g. ("G", "B", "D")
    bass: str  # the note the bass must sound, e.g. "B" for V6 of C
    pcs: tuple[int, ...]  # the chord's pitch classes, sorted
    root_pc: int
    third_pc: int
    fifth_pc: int
    bass_pc: int

    @classmethod
    def of(cls, info: ChordInfo) -> Chord:
        return cls(
            figure=info.figure,
            tones=info.tones,
            bass=info.bass_name,
            pcs=tuple(sorted(info.pcs)),
            root_pc=info.root_pc,
            third_pc=info.third_pc,
            fifth_pc=info.fifth_pc,
            bass_pc=info.bass_pc,
        )

    def info(self) -> ChordInfo:
        """The simulator's view of this chord."""
        return ChordInfo(
            figure=self.figure,
            tones=self.tones,
            bass_name=self.bass,
            pcs=frozenset(self.pcs),
            root_pc=self.root_pc,
            third_pc=self.third_pc,
            fifth_pc=self.fifth_pc,
            bass_pc=self.bass_pc,
        )


class Lines(_Frozen):
    """Four voices as pitch names, one per chord (e.g. ``"F#4"``), in SATB order."""

    soprano: tuple[str, ...]
    alto: tuple[str, ...]
    tenor: tuple[str, ...]
    bass: tuple[str, ...]

    def as_dict(self) -> dict[str, list[str]]:
        """``{"soprano": [...], ...}``: a fresh, mutable copy (the ``voices`` argument)."""
        return {v: list(getattr(self, v)) for v in VOICES}


class Injected(_Frozen):
    """One note altered from the correct realization."""

    chord: int  # 0-based chord index
    voice: str  # "soprano", "alto", "tenor" or "bass"
    original: int  # MIDI number of the correct note
    altered: int  # MIDI number of the note given instead
    error_type: str  # the kind of error it was injected to cause (config.ErrorType)


class Public(_Frozen):
    """What the prompt states: the key, the chords and the faulty voices."""

    key: str  # music21 key name, e.g. "B-" (major) or "f#" (minor)
    key_label: str  # e.g. "Bb major"
    n_chords: int
    chords: tuple[Chord, ...]
    given: Lines
    n_altered: int  # notes altered from a correct realization

    def chord_infos(self) -> list[ChordInfo]:
        return [c.info() for c in self.chords]


class Hidden(_Frozen):
    """The correct realization the exercise was built from, and what was altered."""

    solution: Lines
    solution_midi: tuple[tuple[int, ...], ...]  # four lines (S, A, T, B) of MIDI numbers
    given_midi: tuple[tuple[int, ...], ...]  # the given voices as MIDI numbers
    injected: tuple[Injected, ...]
