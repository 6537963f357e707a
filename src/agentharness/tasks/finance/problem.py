"""The instance data of a forecasting problem, typed: ``Public`` (the prompt) and ``Hidden``.

The generator builds both through these models (``model_dump(mode="json")``, fields in
the order they are stored, so instances are unchanged by going through them), and every
layer reads them back with ``instance.public_as(Public)`` / ``instance.hidden_as(Hidden)``.
Line items, bounds and the history are keyed by the item names of
:data:`~agentharness.tasks.finance.simulator.ITEMS` (domain keys, in statement order).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ConditionSpec(_Frozen):
    """A ratio that must match or beat its best historical value."""

    ratio: str
    direction: Literal["at_least", "at_most"]
    target: float
    best_year: str  # the year that set the target, e.g. "FY2023"
    # False: a naive forecast already meets it, so it earns no partial credit.
    credited: bool = True


class Public(_Frozen):
    """What the prompt states: the history, the rules and the conditions."""

    company: str
    units: str
    years: tuple[str, ...]  # the historical years, oldest first
    forecast_year: str
    history: dict[str, tuple[float, ...]]  # item -> one value per historical year
    tolerance: float  # absolute tolerance of the accounting identities
    bounds: dict[str, tuple[float, float]]  # ranged driver -> [min, max]
    tax_rate_range: tuple[float, float]
    interest_rate_range: tuple[float, float]
    min_cash: float
    # Empty only while the generator is still choosing them.
    conditions: tuple[ConditionSpec, ...] = ()


class Hidden(_Frozen):
    """The forecast the problem was built around, and what the naive forecasts score."""

    solution: dict[str, float]  # item -> amount
    solution_margin: float  # the relative margin by which it beats every target
    naive_scores: dict[str, float]  # naive forecast name -> its score on this instance
    attempt: int  # the sub-seed draw that succeeded
