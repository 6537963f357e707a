"""Knobs of the heads-up hold'em task and the difficulty presets."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class HoldemConfig(BaseModel):
    """A session: how many hands, stacks and blinds, the bot's style and the table image."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_hands: int = Field(
        6, ge=1, le=40, description="hands in the session (ends earlier on a bust)"
    )
    bot_style: Literal["passive", "loose", "tight", "aggressive"] = Field(
        "loose", description="the bot's playing style (stated in the prompt)"
    )
    big_blind: int = Field(
        2, ge=2, le=1000, description="big blind in chips; the small blind is half"
    )
    stack_bb: int = Field(
        100, ge=10, le=1000, description="starting stack of both players, in big blinds"
    )
    min_reference_win_bb: float = Field(
        20.0,
        ge=0.0,
        le=500.0,
        description=(
            "the generator keeps a card sequence only when the equity-based reference policy "
            "wins at least this many big blinds over the session against this bot (the "
            "instance's verified solution)"
        ),
    )
    chip_scale: float = Field(
        5.0,
        gt=0.0,
        le=50.0,
        description="reward sharpness k in sigmoid(k * net chips / starting stack)",
    )
    image_width: int = Field(900, ge=600, le=1600, description="table image width, pixels")

    @model_validator(mode="after")
    def _even_blind(self) -> HoldemConfig:
        if self.big_blind % 2:
            raise ValueError("big_blind must be even (the small blind is half of it)")
        return self


DIFFICULTIES: dict[str, dict[str, object]] = {
    "easy": {"n_hands": 4, "bot_style": "passive"},
    "medium": {"n_hands": 6, "bot_style": "loose"},
    "hard": {"n_hands": 10, "bot_style": "aggressive"},
}
