"""Knobs of the harmony task and the difficulty presets."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ErrorType = Literal["parallel", "crossing", "range", "leap"]


class HarmonyConfig(BaseModel):
    """How a chorale exercise is drawn: its length, key, chords and injected errors."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_chords: int = Field(6, ge=3, le=16, description="chords in the progression (ends V-I)")
    n_errors: int = Field(
        2, ge=1, le=8, description="notes altered from a correct realization (one per chord)"
    )
    error_types: tuple[ErrorType, ...] = Field(
        ("parallel", "crossing", "range", "leap"),
        min_length=1,
        description="kinds of error injected; a parallel comes first whenever it is listed",
    )
    minor_keys: bool = Field(False, description="also draw minor keys (harmonic minor)")
    inversions: bool = Field(False, description="allow first-inversion chords (I6, ii6, viio6 ...)")
    max_accidentals: int = Field(
        2, ge=0, le=4, description="largest number of sharps or flats in the key signature"
    )

    @model_validator(mode="after")
    def _fits(self) -> HarmonyConfig:
        if self.n_errors > self.n_chords - 1:
            raise ValueError(
                f"{self.n_errors} errors need at least {self.n_errors + 1} chords (one altered "
                "note per chord); lower n_errors or raise n_chords"
            )
        return self


# Harder: longer progressions, more altered notes of more kinds, minor keys, then
# inversions and more accidentals. Easy has five chords and up to three accidentals so
# that exercises rarely repeat (a fixed answer must not fit many instances).
DIFFICULTIES: dict[str, dict[str, object]] = {
    "easy": {
        "n_chords": 5,
        "n_errors": 1,
        "error_types": ("parallel",),
        "minor_keys": False,
        "inversions": False,
        "max_accidentals": 3,
    },
    "medium": {
        "n_chords": 7,
        "n_errors": 3,
        "error_types": ("parallel", "crossing", "range", "leap"),
        "minor_keys": True,
        "inversions": False,
        "max_accidentals": 3,
    },
    "hard": {
        "n_chords": 10,
        "n_errors": 5,
        "error_types": ("parallel", "crossing", "range", "leap"),
        "minor_keys": True,
        "inversions": True,
        "max_accidentals": 4,
    },
}
