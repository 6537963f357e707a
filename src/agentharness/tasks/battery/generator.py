"""Layer 1: operating conditions and targets built around a hidden feasible cell design."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, system, user
from agentharness.core.task import Problem
from agentharness.tasks.battery.config import BatteryConfig
from agentharness.tasks.battery.simulator import (
    COOLING_G_PER_H,
    END_CUTOFF,
    PACKAGING_G,
    POROSITY_RANGE,
    REF_POROSITY,
    REF_THICKNESS_UM,
    THICKNESS_RANGE_UM,
    CellDesign,
    CellResult,
    DesignError,
    SimulationError,
    judge,
    simulate,
)

MAX_ATTEMPTS = 60
# The hidden design must warm up at least this much, so the temperature limit matters.
MIN_RISE_K = 2.0

SYSTEM_PROMPT = """\
You are a lithium-ion cell designer. You choose the positive electrode of a cylindrical \
21700 cell (NMC811 cathode, graphite anode) so that the cell stores enough energy per \
kilogram without overheating during a constant-current discharge.

Each design is evaluated with PyBaMM: a Doyle-Fuller-Newman (DFN) electrochemical model \
coupled to a lumped thermal model (Chen2020 LG M50 parameters). The negative electrode is \
sized automatically to keep the reference capacity balance, so the nominal capacity grows \
with the positive loading (thickness x (1 - porosity)); the discharge current is the given \
C-rate times that nominal capacity. A discharge ends at the 2.5 V cut-off, or early when \
the electrolyte runs out inside a too thick / too dense electrode (transport-limited).

Specific energy = discharge energy / cell mass. The cell mass is the sum of: positive \
coating (NMC811 4750 kg/m3 + electrolyte 1200 kg/m3 in the pores), negative coating \
(graphite 2260 kg/m3, porosity 0.25), separator, aluminium and copper foils, a fixed \
packaging mass, and - only if you add forced cooling - cooling hardware.

Tools:
- simulate_cell(thickness_um, porosity[, heat_transfer_coefficient]): runs the simulation \
and reports energy, capacity, mass breakdown, specific energy, peak temperature, and for \
each constraint its value, target, margin and whether it holds. Simulations are limited.
- submit_design(thickness_um, porosity[, heat_transfer_coefficient]): your final answer; \
it ends the episode. The submitted design is re-simulated for grading.

Grading: full credit when both constraints hold for the submitted design; partial credit \
per constraint, by how close it comes; fewer simulations score slightly better.
"""


class BatteryGenerator:
    """Draws conditions and a hidden design, then sets the targets that design meets."""

    def generate(self, config: BatteryConfig, seed: int) -> Problem:
        rng = np.random.default_rng(seed)
        fallback: Problem | None = None
        for attempt in range(1, MAX_ATTEMPTS + 1):
            problem, nontrivial = _attempt(config, rng, attempt)
            if problem is not None and nontrivial:
                return problem
            if problem is not None and fallback is None:
                fallback = problem
        if fallback is not None:  # solvable, just easier than intended
            return fallback
        raise ValueError(
            f"could not draw a solvable cell-design problem in {MAX_ATTEMPTS} attempts; widen "
            "the thickness/porosity ranges or lower the C-rates"
        )

    def prompt(self, instance: Instance) -> list[Message]:
        pub = instance.public
        if pub["choose_cooling"]:
            cooling = (
                f"Cooling: natural convection gives a heat-transfer coefficient of "
                f"{pub['heat_transfer_w_m2k']:g} W/m²K. You may add forced cooling by choosing "
                f"heat_transfer_coefficient anywhere in [{pub['heat_transfer_w_m2k']:g}, "
                f"{pub['cooling_max_w_m2k']:g}] W/m²K; every W/m²K above natural convection adds "
                f"{pub['cooling_mass_g_per_w_m2k']:g} g of cooling hardware to the cell mass. "
                "Omit the argument for natural convection."
            )
            answer = "submit_design(thickness_um=..., porosity=..., heat_transfer_coefficient=...)"
        else:
            cooling = (
                f"Cooling: fixed, heat-transfer coefficient {pub['heat_transfer_w_m2k']:g} "
                "W/m²K (do not pass heat_transfer_coefficient)."
            )
            answer = "submit_design(thickness_um=..., porosity=...)"
        lo_t, hi_t = pub["thickness_range_um"]
        lo_p, hi_p = pub["porosity_range"]
        text = f"""\
Design the positive electrode for these operating conditions:
- Discharge: constant current at {pub["c_rate"]:g}C from full charge to 2.5 V.
- Ambient (and initial) temperature: {pub["ambient_c"]:g} °C.
- {cooling}

Requirements:
- Specific energy >= {pub["specific_energy_target_wh_kg"]:g} Wh/kg.
- Peak cell temperature during the discharge <= {pub["peak_temperature_limit_c"]:g} °C.

Design variables: thickness_um in [{lo_t:g}, {hi_t:g}] micrometres, porosity in \
[{lo_p:g}, {hi_p:g}]. (Reference LG M50 cell: 75.6 um, porosity 0.335; packaging \
{pub["packaging_g"]:g} g.)
Simulation budget: {pub["max_simulations"]} calls to simulate_cell.

Find a design that meets both requirements, then call {answer}."""
        return [system(SYSTEM_PROMPT), user(text)]


def _feasible(result: CellResult, target: float, limit: float) -> bool:
    return judge(result, target, limit).feasible


def _attempt(
    config: BatteryConfig, rng: np.random.Generator, attempt: int
) -> tuple[Problem | None, bool]:
    """One deterministic draw: ``(problem or None, whether it is non-trivial)``."""
    c_rate = float(config.c_rates[int(rng.integers(len(config.c_rates)))])
    ambient = round(float(rng.uniform(*config.ambient_c)), 1)
    natural = round(float(rng.uniform(*config.heat_transfer)), 1)
    thickness = round(float(rng.uniform(*config.thickness_um)), 1)
    porosity = round(float(rng.uniform(*config.porosity)), 3)
    h = natural
    baseline: float | None = None
    if config.choose_cooling:
        baseline = natural
        h = round(
            float(rng.uniform(natural + 5.0, natural + 0.7 * (config.cooling_max - natural))), 1
        )
    try:
        hidden = simulate(CellDesign(thickness, porosity, c_rate, h, ambient), baseline_h=baseline)
    except (DesignError, SimulationError):
        return None, False
    if hidden.end_reason != END_CUTOFF or hidden.utilization < config.min_utilization:
        return None, False
    if hidden.peak_temperature_c - ambient < MIN_RISE_K:
        return None, False
    # Round the requirements outwards so the hidden design keeps its margin exactly.
    target = math.floor(hidden.specific_energy_wh_kg * (1.0 - config.energy_margin) * 10) / 10
    limit = math.ceil((hidden.peak_temperature_c + config.temperature_margin_k) * 10) / 10
    if not _feasible(hidden, target, limit):
        return None, False

    # Non-trivial: the reference cell must fail, and with free cooling the hidden
    # electrode must need the cooling.
    naive = [(REF_THICKNESS_UM, REF_POROSITY)]
    if config.choose_cooling:
        naive.append((thickness, porosity))
    nontrivial = True
    for t_um, eps in naive:
        try:
            r = simulate(CellDesign(t_um, eps, c_rate, natural, ambient), baseline_h=baseline)
        except (DesignError, SimulationError):
            continue
        if _feasible(r, target, limit):
            nontrivial = False
            break

    public: dict[str, Any] = {
        "c_rate": c_rate,
        "ambient_c": ambient,
        "heat_transfer_w_m2k": natural,
        "choose_cooling": config.choose_cooling,
        "specific_energy_target_wh_kg": target,
        "peak_temperature_limit_c": limit,
        "thickness_range_um": list(THICKNESS_RANGE_UM),
        "porosity_range": list(POROSITY_RANGE),
        "packaging_g": PACKAGING_G,
        "max_simulations": config.max_simulations,
    }
    if config.choose_cooling:
        public["cooling_max_w_m2k"] = config.cooling_max
        public["cooling_mass_g_per_w_m2k"] = COOLING_G_PER_H
    hidden_data: dict[str, Any] = {
        "solution": {
            "thickness_um": thickness,
            "porosity": porosity,
            "heat_transfer_coefficient": h if config.choose_cooling else None,
        },
        "solution_specific_energy_wh_kg": round(hidden.specific_energy_wh_kg, 3),
        "solution_peak_temperature_c": round(hidden.peak_temperature_c, 3),
        "attempts": attempt,
        "nontrivial": nontrivial,
    }
    return Problem(public=public, hidden=hidden_data), nontrivial
