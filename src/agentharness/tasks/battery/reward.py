"""Layer 4: re-simulate the submitted design; pay for solving, not for playing safe.

The reward is gated on the temperature limit: a design hotter than the limit scores 0
(a cell that overheats is not a partial answer). Within the limit:

* ``feasible`` (0.65): the specific energy also meets the target;
* ``progress`` (0.25): how close the specific energy comes to the target, counted only
  within the instance's ``progress_window`` below it (0 at the window's edge and beyond,
  1 at the target). The target sits at the best specific energy reachable under the
  limit, so being cool is worth nothing on its own: a thin, cool electrode falls far
  outside the window;
* ``efficiency`` (0.1): few simulations, paid only for a feasible design.
"""

from __future__ import annotations

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.core.tools import ToolError
from agentharness.tasks.battery.problem import Public
from agentharness.tasks.battery.simulator import Verdict
from agentharness.tasks.battery.tools import BatteryWorld, run_design

WEIGHTS = {"feasible": 0.65, "progress": 0.25, "efficiency": 0.1}
# Simulations up to this many are free; efficiency then falls to 0 at the budget.
FREE_SIMULATIONS = 10


def progress(v: Verdict, window: float) -> float:
    """1 at or above the target, falling linearly to 0 at ``window`` (a fraction) below it."""
    if v.energy_ok:
        return 1.0
    short = -v.energy_margin / max(v.target_wh_kg, 1e-9)
    return max(0.0, 1.0 - short / window)


def efficiency(sims: int, budget: int) -> float:
    if sims <= FREE_SIMULATIONS:
        return 1.0
    return max(0.0, 1.0 - (sims - FREE_SIMULATIONS) / max(1, budget - FREE_SIMULATIONS))


def reward(instance: Instance, world: BatteryWorld, trajectory: Trajectory) -> Reward:
    """Zero above the temperature limit; else feasible 0.65 + progress 0.25 + efficiency 0.1."""
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

    pub = instance.public_as(Public)
    window = pub.progress_window
    sims = world.simulations
    budget = pub.max_simulations
    prog = progress(v, window)
    eff = efficiency(sims, budget) if v.feasible else 0.0
    components = [
        RewardComponent(
            name="feasible",
            value=float(v.feasible),
            weight=WEIGHTS["feasible"],
            detail="both constraints hold",
        ),
        RewardComponent(
            name="progress",
            value=prog,
            weight=WEIGHTS["progress"],
            detail=f"{v.specific_energy_wh_kg:.2f} Wh/kg vs target >= {v.target_wh_kg:g} "
            f"(credit only within {100 * window:g} % below it)",
        ),
        RewardComponent(
            name="efficiency",
            value=eff,
            weight=WEIGHTS["efficiency"],
            detail=f"{sims} simulations ({FREE_SIMULATIONS} free, counted only when feasible)",
        ),
    ]
    d = result.design
    explanation = (
        f"design {d.thickness_um:g} um / porosity {d.porosity:g} / h {d.heat_transfer:g} W/m²K: "
        f"{v.specific_energy_wh_kg:.1f} Wh/kg ({'ok' if v.energy_ok else 'short'}), peak "
        f"{v.peak_temperature_c:.2f} °C ({'ok' if v.thermal_ok else 'too hot: score 0'}), "
        f"{sims} simulations"
    )
    return Reward.from_components(
        components,
        success=v.feasible,
        explanation=explanation,
        gate=1.0 if v.thermal_ok else 0.0,
    )
