"""The instance data of a cell-design problem, typed: ``Public`` (the prompt) and ``Hidden``.

The generator builds both through these models (fields in the order they are stored, so
instances are unchanged by going through them: :meth:`Public.dump` leaves out the
cooling fields of a problem without the cooling choice, as they were never stored), and
every layer reads them back with ``instance.public_as(Public)`` /
``instance.hidden_as(Hidden)``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Public(_Frozen):
    """What the prompt states: the operating conditions, the requirements and the rules."""

    c_rate: float  # constant-current discharge rate (C)
    ambient_c: float  # ambient and initial temperature (°C)
    heat_transfer_w_m2k: float  # natural convection (the fixed cooling without a choice)
    choose_cooling: bool  # the agent may fit one of the forced-cooling systems on offer
    specific_energy_target_wh_kg: float
    peak_temperature_limit_c: float
    progress_window: float  # partial credit only this fraction below the target
    thickness_range_um: tuple[float, float]
    porosity_range: tuple[float, float]
    packaging_g: float
    max_simulations: int  # simulate_cell calls allowed
    # Only with choose_cooling: the total heat-transfer coefficients on offer, and the
    # hardware mass per W/m²K above natural convection.
    cooling_options_w_m2k: tuple[float, ...] | None = None
    cooling_mass_g_per_w_m2k: float | None = None

    def dump(self) -> dict[str, Any]:
        """The stored form (the cooling fields only where the agent picks cooling)."""
        return self.model_dump(mode="json", exclude_none=True)


class Design(_Frozen):
    """A cell design; ``heat_transfer_coefficient`` is ``None`` unless cooling is chosen."""

    thickness_um: float
    porosity: float
    heat_transfer_coefficient: float | None


class SeedDesign(_Frozen):
    """The electrode whose peak temperature set the thermal budget."""

    thickness_um: float
    porosity: float


class Hidden(_Frozen):
    """The near-optimal design the requirements were built around, and how it was found."""

    solution: Design
    solution_specific_energy_wh_kg: float
    solution_peak_temperature_c: float
    seed_design: SeedDesign
    search_simulations: int
    attempts: int
