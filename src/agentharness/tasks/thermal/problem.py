"""The instance data of a plate, typed: ``Public`` (the prompt) and ``Hidden`` (the truth).

The generator builds both through these models (``model_dump(mode="json")``, fields in
the order they are stored, so instances are unchanged by going through them), and every
layer reads them back with ``instance.public_as(Public)`` / ``instance.hidden_as(Hidden)``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Plate(_Frozen):
    """The plate's geometry and material, as the prompt states them."""

    size_mm: float
    thickness_mm: float
    kx_w_mk: float  # in-plane conductivity along x (W/m·K)
    ky_w_mk: float  # ... and along y
    h_conv_w_m2k: float  # face convection coefficient
    ambient_c: float  # the edges' and the air's temperature
    heater_radius_mm: float  # Gaussian radius of every heater
    grid_n: int  # finite-difference nodes per side


class Heater(_Frozen):
    """A heater: its label, position and grid node ``(ix, iy)``."""

    id: str  # "H1", "H2", ...
    x_mm: float
    y_mm: float
    node: tuple[int, int]


class Monitor(_Frozen):
    """A monitor point and the temperature it must reach."""

    id: str  # "M1", "M2", ...
    x_mm: float
    y_mm: float
    node: tuple[int, int]
    target_c: float


def target_rise(target_c: float, ambient_c: float) -> float:
    """A monitor's target rise above ambient, as the prompt prints it and reports carry it."""
    return round(target_c - ambient_c, 4)


class Public(_Frozen):
    """What the prompt states: the plate, heaters, monitors and the rules."""

    plate: Plate
    heaters: tuple[Heater, ...]
    monitors: tuple[Monitor, ...]
    max_power_w: float  # upper bound on each heater's power
    tolerance_k: float  # a target is hit when |T - target| <= tolerance
    max_simulations: int  # simulate calls allowed
    safety_limit_c: float  # no point of the plate may exceed it


class Hidden(_Frozen):
    """The power vector the targets were made from, and what it gives."""

    solution: tuple[float, ...]  # watts per heater
    solution_monitor_c: tuple[float, ...]
    solution_hottest_c: float
    safety_binding: bool  # some target-hitting power vector overheats a heater
    uniform_baseline_excess_k: float  # the best uniform setting's RMS miss
