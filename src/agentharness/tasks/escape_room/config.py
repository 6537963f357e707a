"""Knobs of the escape-room generator and the difficulty presets."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class EscapeRoomConfig(BaseModel):
    """How big the house is and how long the chain of clues to the exit code is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_rooms: int = Field(5, ge=2, le=12, description="Rooms in the house (a random tree of doors).")
    chain_length: int = Field(
        3,
        ge=1,
        le=8,
        description="Clues in the chain; each gives exit-code digits and the way to the next clue.",
    )
    code_length: int = Field(4, ge=3, le=8, description="Digits of the exit code.")
    locked_doors: int = Field(1, ge=0, le=11, description="Doors between rooms that need a key.")
    n_distractors: int = Field(
        2,
        ge=0,
        le=12,
        description="Red herrings: junk, stray keys, decoy boxes, fake notes, graffiti.",
    )
    action_limit_factor: float = Field(
        3.0, ge=1.5, le=10.0, description="The action limit is factor * par + 10 tool calls."
    )

    @model_validator(mode="after")
    def _doors_fit(self) -> EscapeRoomConfig:
        if self.locked_doors > self.n_rooms - 1:
            raise ValueError(
                f"locked_doors={self.locked_doors} but {self.n_rooms} rooms have only "
                f"{self.n_rooms - 1} doors; use at most {self.n_rooms - 1}."
            )
        return self


DIFFICULTIES: dict[str, dict[str, Any]] = {
    "easy": {
        "n_rooms": 3,
        "chain_length": 2,
        "code_length": 3,
        "locked_doors": 1,
        "n_distractors": 0,
    },
    "medium": {
        "n_rooms": 5,
        "chain_length": 3,
        "code_length": 4,
        "locked_doors": 1,
        "n_distractors": 2,
    },
    "hard": {
        "n_rooms": 8,
        "chain_length": 6,
        "code_length": 6,
        "locked_doors": 3,
        "n_distractors": 6,
    },
}
