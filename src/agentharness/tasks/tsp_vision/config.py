"""Knobs of the visual TSP task and the difficulty presets."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class TspVisionConfig(BaseModel):
    """How a map is drawn: cities, the grid they sit on and how readable the image is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_cities: int = Field(10, ge=4, le=26, description="cities on the map, labelled A, B, C, ...")
    grid_size: int = Field(
        100, ge=20, le=1000, description="coordinates are integers in 0..grid_size on both axes"
    )
    min_separation: float = Field(
        10.0,
        ge=1.0,
        description="smallest distance between two cities, in grid units (readability)",
    )
    show_grid: bool = Field(
        True,
        description="draw light grid lines (else only the axis ticks) to help read coordinates",
    )
    image_size: int = Field(
        640, ge=320, le=1280, description="side of the square map image, pixels"
    )
    max_checks: int = Field(
        3,
        ge=1,
        le=20,
        description="tour_length checks per episode; few enough that tour lengths cannot be "
        "inverted into distances, so the positions must be read from the map",
    )
    tolerance: float = Field(
        0.08,
        gt=0.0,
        le=1.0,
        description="reward falls linearly from 1 at the optimal length to 0 at this relative "
        "excess (0.08: a tour 8% longer than optimal earns nothing)",
    )

    @model_validator(mode="after")
    def _packable(self) -> TspVisionConfig:
        # Random sequential placement jams near ~55% disk coverage; stay well below it.
        usable = self.grid_size * 0.9
        if self.n_cities * self.min_separation**2 > 0.35 * usable**2:
            raise ValueError(
                f"{self.n_cities} cities cannot be placed {self.min_separation:g} apart on a "
                f"{self.grid_size} grid; lower min_separation or n_cities, or raise grid_size"
            )
        return self


# Easy has 8 cities, not fewer: with 6 there are only 60 tours, and a few checked at
# random find a near-optimal one without the map. Harder presets add cities and narrow
# the band of tours that earn credit.
DIFFICULTIES: dict[str, dict[str, object]] = {
    "easy": {
        "n_cities": 8,
        "grid_size": 100,
        "min_separation": 11.0,
        "show_grid": True,
        "max_checks": 3,
        "tolerance": 0.10,
    },
    "medium": {
        "n_cities": 11,
        "grid_size": 100,
        "min_separation": 9.0,
        "show_grid": True,
        "max_checks": 3,
        "tolerance": 0.08,
    },
    "hard": {
        "n_cities": 16,
        "grid_size": 100,
        "min_separation": 8.0,
        "show_grid": True,
        "max_checks": 3,
        "tolerance": 0.06,
    },
}
