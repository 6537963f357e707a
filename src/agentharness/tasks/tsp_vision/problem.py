"""The instance data of a map, typed: what the prompt shows and the hidden truth.

The generator builds both through these models (``model_dump(mode="json")``, fields in
the order they are stored), and every layer reads them back with
``instance.public_as(Public)`` / ``instance.hidden_as(Hidden)``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class Public(BaseModel):
    """What the prompt is made of; the city positions are only in the image."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    labels: tuple[str, ...]
    n_cities: int
    grid_size: int
    show_grid: bool
    image_size: int


class Hidden(BaseModel):
    """The city coordinates (what the map shows) and the tour the map was built around."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cities: tuple[tuple[int, int], ...]
    solution: tuple[str, ...]
    optimal_length: float
    method: Literal["held-karp", "2opt+oropt"]
    exact: bool
