"""Knobs of the battery task and its difficulty presets."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentharness.tasks.battery.simulator import (
    AMBIENT_RANGE_C,
    C_RATE_RANGE,
    H_RANGE,
    POROSITY_RANGE,
    THICKNESS_RANGE_UM,
)


class BatteryConfig(BaseModel):
    """Generator knobs. Each field can be overridden with ``make(..., knob=value)``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    c_rates: tuple[float, ...] = Field(
        (1.0,), min_length=1, max_length=8, description="discharge C-rates an instance draws from"
    )
    ambient_c: tuple[float, float] = Field(
        (20.0, 30.0), description="range the ambient temperature (°C) is drawn from"
    )
    heat_transfer: tuple[float, float] = Field(
        (8.0, 15.0),
        description="range the (natural-convection) heat-transfer coefficient h (W/m²K) is "
        "drawn from",
    )
    thickness_um: tuple[float, float] = Field(
        (50.0, 100.0),
        description="range the hidden design's positive-electrode thickness is drawn from",
    )
    porosity: tuple[float, float] = Field(
        (0.28, 0.45),
        description="range the hidden design's positive-electrode porosity is drawn from",
    )
    choose_cooling: bool = Field(
        False,
        description="the agent also chooses the heat-transfer coefficient (forced cooling, which "
        "adds mass above the natural-convection baseline)",
    )
    cooling_max: float = Field(
        80.0, ge=5.0, le=200.0, description="largest heat-transfer coefficient the agent may choose"
    )
    energy_margin: float = Field(
        0.06,
        ge=0.0,
        le=0.3,
        description="the specific-energy target sits this fraction below the hidden design's value",
    )
    temperature_margin_k: float = Field(
        4.0,
        ge=0.2,
        le=30.0,
        description="the peak-temperature limit sits this far above the hidden design's peak",
    )
    min_utilization: float = Field(
        0.9,
        ge=0.5,
        le=1.0,
        description="the hidden design must deliver at least this fraction of its nominal capacity",
    )
    max_simulations: int = Field(
        30, ge=2, le=200, description="simulate_cell calls allowed per episode (refused beyond)"
    )

    @model_validator(mode="after")
    def _check(self) -> BatteryConfig:
        def inside(name: str, rng: tuple[float, float], bounds: tuple[float, float]) -> None:
            lo, hi = rng
            if not bounds[0] <= lo <= hi <= bounds[1]:
                raise ValueError(
                    f"{name} must be a range (lo, hi) with "
                    f"{bounds[0]:g} <= lo <= hi <= {bounds[1]:g}"
                )

        inside("ambient_c", self.ambient_c, AMBIENT_RANGE_C)
        inside("heat_transfer", self.heat_transfer, H_RANGE)
        inside("thickness_um", self.thickness_um, THICKNESS_RANGE_UM)
        inside("porosity", self.porosity, POROSITY_RANGE)
        for c in self.c_rates:
            if not C_RATE_RANGE[0] <= c <= C_RATE_RANGE[1]:
                raise ValueError(
                    f"every C-rate must be in [{C_RATE_RANGE[0]:g}, {C_RATE_RANGE[1]:g}]"
                )
        if self.choose_cooling and self.cooling_max < self.heat_transfer[1] + 5.0:
            raise ValueError("cooling_max must exceed the largest natural h by at least 5 W/m²K")
        return self


DIFFICULTIES: dict[str, dict[str, Any]] = {
    # 1C, mild conditions, thickness and porosity only, generous margins.
    "easy": {
        "c_rates": (1.0,),
        "ambient_c": (20.0, 30.0),
        "heat_transfer": (8.0, 15.0),
        "thickness_um": (50.0, 100.0),
        "porosity": (0.28, 0.45),
        "choose_cooling": False,
        "energy_margin": 0.05,
        "temperature_margin_k": 3.0,
    },
    # Faster discharges, wider climate and cooling conditions, tighter margins.
    "medium": {
        "c_rates": (1.0, 1.5, 2.0),
        "ambient_c": (15.0, 35.0),
        "heat_transfer": (6.0, 20.0),
        "thickness_um": (50.0, 110.0),
        "porosity": (0.28, 0.48),
        "choose_cooling": False,
        "energy_margin": 0.03,
        "temperature_margin_k": 2.5,
    },
    # High rates under natural convection that cannot hold the limit for the hidden
    # electrode: the agent also sizes forced cooling, which costs cell mass. Tight margins.
    "hard": {
        "c_rates": (1.5, 2.0, 2.5),
        "ambient_c": (20.0, 40.0),
        "heat_transfer": (5.0, 12.0),
        "thickness_um": (50.0, 110.0),
        "porosity": (0.3, 0.5),
        "choose_cooling": True,
        "cooling_max": 80.0,
        "energy_margin": 0.02,
        "temperature_margin_k": 1.5,
    },
}
