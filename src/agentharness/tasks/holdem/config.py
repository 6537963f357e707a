"""Knobs of the heads-up hold'em task and the difficulty presets."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

BotStyle = Literal["passive", "loose", "tight", "aggressive"]


class HoldemConfig(BaseModel):
    """A session: how many hands, stacks and blinds, the bot's style and the table image."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_hands: int = Field(24, ge=1, le=60, description="hands in the session")
    bot_style: BotStyle = Field(
        "loose", description="the bot's playing style (stated in the prompt)"
    )
    big_blind: int = Field(
        2, ge=2, le=1000, description="big blind in chips; the small blind is half"
    )
    stack_bb: int = Field(
        100,
        ge=10,
        le=1000,
        description="both players' stack at the start of every hand, in big blinds",
    )
    min_edge_bb: float = Field(
        10.0,
        gt=0.0,
        le=1000.0,
        description=(
            "full marks need beating the best card-blind baseline by the reference "
            "policy's margin on the same deals, and by at least this many big blinds"
        ),
    )
    image_width: int = Field(720, ge=600, le=1600, description="table image width, pixels")

    @model_validator(mode="after")
    def _even_blind(self) -> HoldemConfig:
        if self.big_blind % 2:
            raise ValueError("big_blind must be even (the small blind is half of it)")
        return self

    @model_validator(mode="after")
    def _reachable_edge(self) -> HoldemConfig:
        # Check-and-fold loses at most the blinds, so no play beats it by more than every
        # stack of the session; a larger margin would make full marks unreachable.
        if self.min_edge_bb > self.n_hands * self.stack_bb:
            raise ValueError(
                f"min_edge_bb={self.min_edge_bb:g} can never be reached: a session of "
                f"{self.n_hands} hands wins at most n_hands x stack_bb = "
                f"{self.n_hands * self.stack_bb} big blinds; lower it or play more hands"
            )
        return self


# Harder: a bot that punishes passive play and bluffs more, and a longer session.
DIFFICULTIES: dict[str, dict[str, object]] = {
    "easy": {"n_hands": 24, "bot_style": "passive"},
    "medium": {"n_hands": 24, "bot_style": "loose"},
    "hard": {"n_hands": 32, "bot_style": "aggressive"},
}
