"""Layer 4: re-simulate the submitted design and grade both constraints and efficiency."""

from __future__ import annotations

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.core.tools import ToolError, World
from agentharness.tasks.battery.tools import run_design

# A violated constraint keeps at most this much of its component, falling to 0 at the
# shortfall scale below: close misses rank above wild ones.
PARTIAL_CAP = 0.6
ENERGY_SHORTFALL_SCALE = 0.15  # fraction of the target
THERMAL_EXCESS_SCALE_K = 10.0
# Simulations up to this many are free; efficiency then falls to 0 at the budget.
FREE_SIMULATIONS = 6


def reward(instance: Instance, world: World, trajectory: Trajectory) -> Reward:
    """Energy (0.2), temperature (0.2), both (0.5), efficiency (0.1, only when feasible)."""
    answer = world.final_answer
    if answer is None:
        return Reward.zero("no design was submitted")
    try:
        result, v = run_design(
            instance,
            float(answer["thickness_um"]),
            float(answer["porosity"]),
            None
            if answer.get("heat_transfer_coefficient") is None
            else float(answer["heat_transfer_coefficient"]),
        )
    except (ToolError, KeyError, TypeError, ValueError) as e:
        return Reward.zero(f"the submitted design could not be re-simulated: {e}")

    if v.energy_ok:
        energy = 1.0
    else:
        short = -v.energy_margin / v.target_wh_kg
        energy = PARTIAL_CAP * max(0.0, 1.0 - short / ENERGY_SHORTFALL_SCALE)
    if v.thermal_ok:
        thermal = 1.0
    else:
        thermal = PARTIAL_CAP * max(0.0, 1.0 - (-v.thermal_margin) / THERMAL_EXCESS_SCALE_K)

    sims = int(getattr(world, "simulations", 0))
    budget = int(instance.public["max_simulations"])
    if not v.feasible:
        efficiency = 0.0
    elif sims <= FREE_SIMULATIONS:
        efficiency = 1.0
    else:
        efficiency = max(0.0, 1.0 - (sims - FREE_SIMULATIONS) / max(1, budget - FREE_SIMULATIONS))

    components = [
        RewardComponent(
            name="specific_energy",
            value=energy,
            weight=0.2,
            detail=f"{v.specific_energy_wh_kg:.2f} Wh/kg vs target >= {v.target_wh_kg:g}",
        ),
        RewardComponent(
            name="peak_temperature",
            value=thermal,
            weight=0.2,
            detail=f"{v.peak_temperature_c:.2f} °C vs limit <= {v.limit_c:g}",
        ),
        RewardComponent(
            name="feasible", value=float(v.feasible), weight=0.5, detail="both constraints hold"
        ),
        RewardComponent(
            name="efficiency",
            value=efficiency,
            weight=0.1,
            detail=f"{sims} simulations ({FREE_SIMULATIONS} free, counted only when feasible)",
        ),
    ]
    d = result.design
    explanation = (
        f"design {d.thickness_um:g} um / porosity {d.porosity:g} / h {d.heat_transfer:g} W/m²K: "
        f"{v.specific_energy_wh_kg:.1f} Wh/kg ({'ok' if v.energy_ok else 'short'}), peak "
        f"{v.peak_temperature_c:.2f} °C ({'ok' if v.thermal_ok else 'too hot'}), "
        f"{sims} simulations"
    )
    return Reward.from_components(components, success=v.feasible, explanation=explanation)
