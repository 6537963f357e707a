"""Knobs of the thermal task and its difficulty presets."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ThermalConfig(BaseModel):
    """Generator knobs. Each field can be overridden with ``make(..., knob=value)``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    grid_n: int = Field(41, ge=11, le=101, description="finite-difference nodes per plate side")
    plate_mm: float = Field(200.0, ge=50.0, le=1000.0, description="plate side length (mm)")
    thickness_mm: float = Field(3.0, ge=0.5, le=20.0, description="plate thickness (mm)")
    conductivity: tuple[float, float] = Field(
        (40.0, 60.0), description="range the in-plane conductivity k (W/m·K) is drawn from"
    )
    anisotropy: float = Field(
        1.0,
        ge=1.0,
        le=5.0,
        description="largest ratio between the two in-plane conductivities (1 = isotropic); "
        "the ratio is drawn from [1, anisotropy] and the stiff axis at random",
    )
    h_conv: float = Field(15.0, ge=0.0, le=200.0, description="face convection coefficient (W/m²K)")
    ambient_c: float = Field(
        20.0, ge=-20.0, le=50.0, description="ambient and edge temperature (°C)"
    )
    heater_radius_mm: float = Field(8.0, ge=2.0, le=40.0, description="Gaussian radius of a heater")
    # At least two of each: one heater is a uniform setting, and one monitor is hit by some
    # uniform setting, so a blind power sweep would solve it (the generator redraws those).
    n_heaters: int = Field(3, ge=2, le=12, description="number of heaters (controls), 2 or more")
    n_monitors: int = Field(
        3, ge=2, le=12, description="number of monitor points (targets), 2 or more"
    )
    max_power_w: float = Field(
        30.0, gt=0.0, le=500.0, description="upper bound on each heater's power"
    )
    tolerance_k: float = Field(
        0.5, ge=0.2, le=10.0, description="a target is hit when |T - target| <= tolerance (K)"
    )
    safety_margin_k: float = Field(
        5.0,
        ge=0.5,
        le=50.0,
        description="the safety limit sits at least this far above the hottest point of the "
        "hidden solution",
    )
    lazy_gap: float = Field(
        4.0,
        ge=0.0,
        le=100.0,
        description="the best uniform setting (every heater at one power) misses the targets "
        "by at least this many tolerances (RMS of the excess over the tolerance band), so the "
        "targets need heater-specific powers",
    )
    max_lucky_hit: float = Field(
        0.0005,
        ge=0.0,
        le=1.0,
        description="largest share of power vectors drawn uniformly from [0, max power] that may "
        "hit every target (plates where a blind guess is likely to succeed are redrawn)",
    )
    max_simulations: int = Field(
        30, ge=2, le=200, description="simulate calls allowed per episode (the tool refuses beyond)"
    )

    @model_validator(mode="after")
    def _check(self) -> ThermalConfig:
        lo, hi = self.conductivity
        if not 1.0 <= lo <= hi <= 500.0:
            raise ValueError(
                "conductivity must be a range (lo, hi) with 1 <= lo <= hi <= 500 (W/m·K)"
            )
        if self.heater_radius_mm * 4 > self.plate_mm:
            raise ValueError("heater_radius_mm must be at most a quarter of plate_mm")
        if self.max_simulations < self.n_heaters:
            # Each heater's response must be measured once; fewer leave it a guess.
            raise ValueError(
                f"max_simulations={self.max_simulations} cannot measure {self.n_heaters} "
                f"heaters (one simulation each); use max_simulations >= {self.n_heaters}"
            )
        return self


DIFFICULTIES: dict[str, dict[str, Any]] = {
    # Two heaters, two monitors, isotropic, a generous safety limit. Stronger heaters than
    # the other presets, so the targets span a range wide enough that no blind guess (and no
    # uniform setting) lands within the tolerance.
    "easy": {
        "grid_n": 31,
        "anisotropy": 1.0,
        "n_heaters": 2,
        "n_monitors": 2,
        "max_power_w": 60.0,
        "tolerance_k": 0.5,
        "lazy_gap": 3.0,
        "safety_margin_k": 8.0,
        "max_simulations": 30,
    },
    # More monitors than heaters (consistent but overdetermined), mild anisotropy.
    "medium": {
        "grid_n": 41,
        "anisotropy": 1.5,
        "n_heaters": 3,
        "n_monitors": 4,
        "tolerance_k": 0.5,
        "safety_margin_k": 5.0,
        "max_simulations": 30,
    },
    # More heaters than monitors: many power vectors hit the targets and only some of
    # them respect the tight safety limit. Strong anisotropy, tight tolerance.
    "hard": {
        "grid_n": 51,
        "anisotropy": 3.0,
        "n_heaters": 5,
        "n_monitors": 4,
        "tolerance_k": 0.25,
        "safety_margin_k": 2.0,
        "max_simulations": 30,
    },
}
