"""Knobs of the battery task and its difficulty presets."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentharness.tasks.battery.simulator import (
    AMBIENT_RANGE_C,
    C_RATE_RANGE,
    H_RANGE,
    THICKNESS_RANGE_UM,
)


class BatteryConfig(BaseModel):
    """Generator knobs. Each field can be overridden with ``make(..., knob=value)``.

    An instance draws how hard the cell is pushed (the thickness of a seed electrode at
    porosity 0.3, whose peak temperature sets the thermal budget), then a C-rate that
    electrode sustains, the ambient temperature, natural convection and (with
    ``choose_cooling``) one of the cooling systems on offer. The generator then finds, with
    the simulator, the porosity (and cooling) that stores the most energy per kilogram at
    that peak temperature: that design is the hidden solution, its specific energy is the
    target and the limit sits a ``temperature_margin`` fraction of its temperature rise
    above its peak. So the feasible designs form a thin sliver just under the limit along
    the best porosities, and it moves with every draw.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    c_rate: tuple[float, float] = Field(
        (0.6, 2.0),
        description="range the discharge C-rate is drawn from (rounded to 0.05), capped by what "
        "the seed electrode sustains without running out of electrolyte",
    )
    ambient_c: tuple[float, float] = Field(
        (10.0, 40.0), description="range the ambient temperature (°C) is drawn from"
    )
    heat_transfer: tuple[float, float] = Field(
        (5.0, 20.0),
        description="range the (natural-convection) heat-transfer coefficient h (W/m²K) is "
        "drawn from",
    )
    thickness_um: tuple[float, float] = Field(
        (35.0, 115.0),
        description="range the seed electrode's thickness (at porosity 0.3) is drawn from, "
        "log-uniformly, below what the slowest C-rate sustains; its peak temperature is the "
        "hidden design's",
    )
    choose_cooling: bool = Field(
        False,
        description="the agent also picks forced cooling among cooling_options (it raises the "
        "heat-transfer coefficient and adds mass above the natural-convection baseline)",
    )
    cooling_options: tuple[float, ...] = Field(
        (10.0, 25.0, 45.0),
        min_length=1,
        max_length=6,
        description="with choose_cooling: the forced-cooling systems on offer, as W/m²K each adds "
        "to natural convection; the agent fits one of them or none",
    )
    temperature_margin: float = Field(
        0.015,
        ge=0.002,
        le=0.5,
        description="the peak-temperature limit sits this fraction of the hidden design's "
        "temperature rise (peak minus ambient) above its peak: the width of the feasible band",
    )
    energy_margin: float = Field(
        0.0,
        ge=0.0,
        le=0.2,
        description="the specific-energy target sits this fraction below the hidden design's "
        "value (0: the target is the hidden design's own specific energy)",
    )
    progress_window: float = Field(
        0.03,
        ge=0.005,
        le=0.5,
        description="partial credit: a design within the limit earns progress credit only when "
        "its specific energy is within this fraction below the target",
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

        inside("c_rate", self.c_rate, C_RATE_RANGE)
        inside("ambient_c", self.ambient_c, AMBIENT_RANGE_C)
        inside("heat_transfer", self.heat_transfer, H_RANGE)
        inside("thickness_um", self.thickness_um, THICKNESS_RANGE_UM)
        for extra in self.cooling_options:
            if not 1.0 <= extra <= H_RANGE[1] - self.heat_transfer[1]:
                raise ValueError(
                    "every cooling option must add between 1 W/m²K and what keeps the total "
                    f"within {H_RANGE[1]:g} W/m²K"
                )
        return self


DIFFICULTIES: dict[str, dict[str, Any]] = {
    # Thickness and porosity only; the widest band under the limit.
    "easy": {
        "c_rate": (0.6, 2.0),
        "temperature_margin": 0.015,
        "progress_window": 0.03,
        "choose_cooling": False,
        "max_simulations": 30,
    },
    # A band about half as wide: the limit must be hugged more closely.
    "medium": {
        "c_rate": (0.6, 2.2),
        "temperature_margin": 0.01,
        "progress_window": 0.025,
        "choose_cooling": False,
        "max_simulations": 30,
    },
    # Faster discharges; the agent also picks a forced-cooling system (or none), which
    # costs mass, and the band is narrower still.
    "hard": {
        "c_rate": (1.0, 2.5),
        "temperature_margin": 0.007,
        "progress_window": 0.02,
        "choose_cooling": True,
        "cooling_options": (10.0, 25.0, 45.0),
        "max_simulations": 30,
    },
}
