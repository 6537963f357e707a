"""Knobs of the finance task and its difficulty presets."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentharness.tasks.finance.simulator import CONFLICTS, RATIO_NAMES


class FinanceConfig(BaseModel):
    """How a forecasting problem is drawn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    history_years: int = Field(3, ge=2, le=5, description="Years of historical statements shown.")
    n_conditions: int = Field(
        8,
        ge=1,
        le=len(RATIO_NAMES),
        description="Ratio conditions the forecast must meet "
        "(each: match or beat the best historical value).",
    )
    band: float = Field(
        0.2,
        ge=0.03,
        le=0.6,
        description="Half-width of each driver's plausible range, as a fraction of last year's "
        "value (debt, dividends and capex get wider ranges, depreciation a narrower one).",
    )
    rate_slack: float = Field(
        0.005,
        ge=0.0,
        le=0.05,
        description="How far the tax and interest rates may move beyond their historical range.",
    )
    conflict_pairs: int = Field(
        0,
        ge=0,
        le=len(CONFLICTS),
        description="Pairs of ratios that pull against each other which must both be among "
        "the conditions.",
    )
    margin: float = Field(
        0.01,
        ge=0.001,
        le=0.1,
        description="Relative slack by which the hidden forecast beats every target "
        "(solvability margin).",
    )
    # Values travel in cents (the tools print them so), and an identity over k rounded items
    # can be off by k half-cents; below a few cents no forecast read from a tool can hold.
    tolerance: float = Field(
        0.5,
        ge=0.05,
        le=10.0,
        description="Absolute tolerance of the accounting identities (at least 0.05: values "
        "are kept in cents and an identity sums up to seven of them).",
    )
    min_credited: int = Field(
        1,
        ge=1,
        le=len(RATIO_NAMES),
        description="At least this many conditions must be ones that no naive forecast "
        "(extrapolations of the history, optimistic ends of the ranges) already meets; only "
        "those earn partial credit, and no naive forecast can meet every condition.",
    )
    free_checks: int = Field(
        8,
        ge=1,
        le=50,
        description="calculate_metrics calls that cost nothing in the efficiency component.",
    )


DIFFICULTIES: dict[str, dict[str, Any]] = {
    "easy": {
        "n_conditions": 5,
        "band": 0.3,
        "rate_slack": 0.01,
        "conflict_pairs": 0,
        "margin": 0.02,
    },
    "medium": {
        "n_conditions": 8,
        "band": 0.2,
        "rate_slack": 0.005,
        "conflict_pairs": 1,
        "margin": 0.01,
    },
    "hard": {
        "n_conditions": 12,
        "band": 0.12,
        "rate_slack": 0.0025,
        "conflict_pairs": 3,
        "margin": 0.005,
    },
}
