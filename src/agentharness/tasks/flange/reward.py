"""Layer 4: verify the submitted flange against the drawing; credit only a conforming one.

v2 paid partial credit per constraint (displacement, cost, material), so a design that
met one constraint and missed the other by far still earned 0.3-0.6, and the stiffest
affordable design of one material earned 0.48-0.72 without the drawing. v3 gates: the
design earns nothing unless it meets every requirement of the drawing — the design
rules on its real geometry, the displacement limit, the plate stress allowable, the cost
limit and a permitted material. A conforming design earns 0.8, plus up to 0.1 for a
cost close to the cheapest feasible design's and 0.1 for few analyze/cost calls.
"""

from __future__ import annotations

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.tasks.flange.config import FlangeConfig
from agentharness.tasks.flange.generator import design_of
from agentharness.tasks.flange.problem import Hidden
from agentharness.tasks.flange.simulator import DesignError, analyze, cost
from agentharness.tasks.flange.tools import FlangeWorld

CONFORMING = 0.8  # what a design meeting every requirement earns before the bonuses


def economy(total: float, reference: float, budget: float) -> float:
    """1 at or below the reference (cheapest feasible) cost, 0 at the cost limit."""
    if total <= reference:
        return 1.0
    if budget <= reference:
        return 0.0
    return max(0.0, 1.0 - (total - reference) / (budget - reference))


def efficiency(checks: int, free: int) -> float:
    """1 up to ``free`` analyze/cost calls, then falling linearly to 0 at three times that."""
    if checks <= free:
        return 1.0
    return max(0.0, 1.0 - (checks - free) / (2 * free))


def reward(instance: Instance, world: FlangeWorld, trajectory: Trajectory) -> Reward:
    """0 unless the design meets every requirement; then 0.8 + economy + efficiency.

    The submitted design is re-analyzed and re-costed on the drawing's own geometry;
    nothing the agent or the tools reported is trusted.
    """
    answer = world.final_answer
    if answer is None:
        return Reward.zero("no design submitted")
    try:
        design = design_of(answer)
    except (KeyError, TypeError, ValueError) as e:
        return Reward.zero(f"submitted design is malformed: {e}")
    hidden = instance.hidden_as(Hidden)
    geom = hidden.geometry()
    try:
        result = analyze(geom, design)
        total = cost(geom, design).total
    except DesignError as e:
        return _fails([f"the design breaks a rule on the drawing's geometry: {e}"])
    limit = hidden.limit_mm
    budget = hidden.budget_usd
    reference = hidden.solution_cost_usd
    permitted = hidden.permitted
    disp = result.max_displacement
    checks = {
        "displacement": (disp <= limit, f"{disp:.4g} mm vs limit {limit:g} mm"),
        "stress": (
            result.stress_ok,
            f"peak plate stress {result.plate_stress:.0f} MPa vs allowable "
            f"{result.allowable_stress:.0f} MPa",
        ),
        "cost": (total <= budget, f"${total:.2f} vs limit ${budget:.2f}"),
        "material": (
            design.material in permitted,
            f"{design.material} {'is' if design.material in permitted else 'is NOT'} permitted "
            f"({', '.join(permitted)})",
        ),
    }
    missed = [f"{name} ({detail})" for name, (ok, detail) in checks.items() if not ok]
    requirements = [
        RewardComponent(name=name, value=float(ok), weight=0.0, detail=detail)
        for name, (ok, detail) in checks.items()
    ]
    if missed:
        return _fails(missed, requirements)
    n_checks = world.checks
    free = FlangeConfig.model_validate(instance.config).free_tool_calls
    econ = economy(total, reference, budget)
    eff = efficiency(n_checks, free)
    components = [
        *requirements,
        RewardComponent(
            name="conforming",
            value=1.0,
            weight=CONFORMING,
            detail="meets every requirement of the drawing",
        ),
        RewardComponent(
            name="economy",
            value=econ,
            weight=0.1,
            detail=f"${total:.2f}: 1 at the cheapest feasible ${reference:.2f}, 0 at the limit "
            f"${budget:.2f}",
        ),
        RewardComponent(
            name="efficiency",
            value=eff,
            weight=0.1,
            detail=f"{n_checks} analyze/cost calls ({free} free)",
        ),
    ]
    return Reward.from_components(
        components, success=True, explanation="design meets every requirement of the drawing"
    )


def _fails(missed: list[str], requirements: list[RewardComponent] | None = None) -> Reward:
    why = "missed: " + "; ".join(missed)
    components = [
        *(requirements or []),
        RewardComponent(name="conforming", value=0.0, weight=CONFORMING, detail=why),
    ]
    return Reward.from_components(components, success=False, explanation=why, gate=0.0)
