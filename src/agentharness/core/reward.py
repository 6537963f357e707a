"""Reward breakdowns: a total in [0, 1] made of named, weighted components."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, field_validator


class RewardComponent(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    value: float = Field(description="Score of this component in [0, 1].")
    weight: float = Field(ge=0.0)
    detail: str = ""

    @field_validator("value")
    @classmethod
    def _clip(cls, v: float) -> float:
        if not math.isfinite(v):
            return 0.0
        return min(1.0, max(0.0, v))


class Reward(BaseModel):
    """The final verdict on an episode. ``total`` is the weighted mean of components."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    total: float = Field(ge=0.0, le=1.0)
    success: bool
    components: list[RewardComponent] = Field(default_factory=list)
    explanation: str = ""

    @classmethod
    def from_components(
        cls,
        components: list[RewardComponent],
        *,
        success: bool,
        explanation: str = "",
        gate: float = 1.0,
    ) -> Reward:
        """Weighted mean of ``components`` times ``gate`` (a hard 0/1 precondition)."""
        weight = sum(c.weight for c in components)
        mean = sum(c.value * c.weight for c in components) / weight if weight > 0 else 0.0
        total = min(1.0, max(0.0, mean * gate))
        return cls(total=total, success=success, components=components, explanation=explanation)

    @classmethod
    def zero(cls, explanation: str) -> Reward:
        return cls(total=0.0, success=False, explanation=explanation)

    def component(self, name: str) -> float | None:
        for c in self.components:
            if c.name == name:
                return c.value
        return None
