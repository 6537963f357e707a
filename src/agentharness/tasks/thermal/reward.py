"""Layer 4: re-simulate the submitted powers and grade targets, safety and efficiency."""

from __future__ import annotations

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.core.tools import ToolError, World
from agentharness.tasks.thermal.simulator import SimulationError, get_model, spec_from_public
from agentharness.tasks.thermal.tools import check_powers

# An unsafe answer keeps this fraction of its score: safety first, but a near-miss
# still ranks above no answer at all.
UNSAFE_GATE = 0.1
# Simulations beyond (n_heaters + FREE_EXTRA) start to cost efficiency credit.
FREE_EXTRA = 2


def reward(instance: Instance, world: World, trajectory: Trajectory) -> Reward:
    """Targets hit (0.6), closeness (0.25), efficiency (0.15); unsafe answers are gated."""
    answer = world.final_answer
    if answer is None:
        return Reward.zero("no powers were submitted")
    try:
        powers = check_powers(instance, list(answer.get("powers", [])))
        result = get_model(spec_from_public(instance.public)).solve(powers)
    except (ToolError, SimulationError, TypeError, ValueError) as e:
        return Reward.zero(f"the submitted powers are invalid: {e}")

    pub = instance.public
    tol = float(pub["tolerance_k"])
    limit = float(pub["safety_limit_c"])
    errors = [
        abs(t - float(m["target_c"]))
        for m, t in zip(pub["monitors"], result.monitor_c, strict=True)
    ]
    n_mon = len(errors)
    hits = sum(e <= tol for e in errors)
    # Closeness: full inside the tolerance, falling linearly to 0 at 10x the tolerance.
    closeness = (
        sum(1.0 if e <= tol else max(0.0, 1.0 - (e - tol) / (9.0 * tol)) for e in errors) / n_mon
    )
    safe = result.hottest_c <= limit

    sims = int(getattr(world, "simulations", 0))
    free = len(pub["heaters"]) + FREE_EXTRA
    budget = int(pub["max_simulations"])
    efficiency = 1.0 if sims <= free else max(0.0, 1.0 - (sims - free) / max(1, budget - free))

    components = [
        RewardComponent(
            name="targets",
            value=hits / n_mon,
            weight=0.6,
            detail=f"{hits}/{n_mon} within ±{tol:g} K",
        ),
        RewardComponent(
            name="closeness", value=closeness, weight=0.25, detail=f"max error {max(errors):.3f} K"
        ),
        RewardComponent(
            name="efficiency",
            value=efficiency,
            weight=0.15,
            detail=f"{sims} simulations ({free} free)",
        ),
        RewardComponent(
            name="safety",
            value=float(safe),
            weight=0.0,
            detail=f"hottest {result.hottest_c:.2f} °C vs limit {limit:g} °C",
        ),
    ]
    success = safe and hits == n_mon
    explanation = (
        f"{hits}/{n_mon} targets hit, hottest {result.hottest_c:.2f} °C "
        f"({'safe' if safe else 'UNSAFE'} vs {limit:g} °C), {sims} simulations"
    )
    return Reward.from_components(
        components, success=success, explanation=explanation, gate=1.0 if safe else UNSAFE_GATE
    )
