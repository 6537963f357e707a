"""Knobs of the flange task and its difficulty presets."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentharness.tasks.flange.simulator import MATERIALS


class FlangeConfig(BaseModel):
    """How a flange-design problem is drawn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bore_min_mm: float = Field(80.0, ge=40.0, le=400.0, description="Smallest bore diameter drawn.")
    bore_max_mm: float = Field(160.0, ge=40.0, le=400.0, description="Largest bore diameter drawn.")
    n_permitted: int = Field(
        2,
        ge=1,
        le=len(MATERIALS),
        description="Catalogue materials the drawing permits (the rest are not allowed).",
    )
    exclude_unconstrained_best: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description="Probability that the drawing does not permit the material that would be "
        "cheapest if every catalogue material were allowed.",
    )
    budget_slack: float = Field(
        0.08,
        ge=0.01,
        le=2.0,
        description="The drawing's cost limit above the cheapest feasible design's cost, as a "
        "fraction of it.",
    )
    load_as_pressure: bool = Field(
        False,
        description="The drawing gives the design pressure on the bore area instead of the axial "
        "force, so the agent must compute F = p * pi * bore^2 / 4.",
    )
    free_tool_calls: int = Field(
        8,
        ge=1,
        le=50,
        description="analyze/cost calls that cost nothing in the efficiency component.",
    )

    @model_validator(mode="after")
    def _bore_range(self) -> FlangeConfig:
        if self.bore_min_mm > self.bore_max_mm:
            raise ValueError("bore_min_mm must not exceed bore_max_mm")
        return self


# Harder presets permit more materials to compare, give the load as a pressure and
# narrow the cost margin over the cheapest feasible design (12% -> 8% -> 4%). Every
# preset spans a wide range of sizes: a single design that fits many drawings would
# score without reading any (v2's narrow easy range let one design fit 1 in 8).
DIFFICULTIES: dict[str, dict[str, Any]] = {
    "easy": {
        "bore_min_mm": 50.0,
        "bore_max_mm": 300.0,
        "n_permitted": 1,
        "exclude_unconstrained_best": 0.5,
        "budget_slack": 0.12,
        "load_as_pressure": False,
        "free_tool_calls": 10,
    },
    "medium": {
        "bore_min_mm": 50.0,
        "bore_max_mm": 300.0,
        "n_permitted": 2,
        "exclude_unconstrained_best": 0.7,
        "budget_slack": 0.08,
        "load_as_pressure": False,
        "free_tool_calls": 8,
    },
    "hard": {
        "bore_min_mm": 50.0,
        "bore_max_mm": 320.0,
        "n_permitted": 3,
        "exclude_unconstrained_best": 0.8,
        "budget_slack": 0.04,
        "load_as_pressure": True,
        "free_tool_calls": 6,
    },
}
