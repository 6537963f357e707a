"""Layer 4: re-analyze and re-cost the submitted flange and score it."""

from __future__ import annotations

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.core.tools import World
from agentharness.tasks.flange.generator import design_of, geometry_of
from agentharness.tasks.flange.simulator import DesignError, analyze, cost
from agentharness.tasks.flange.tools import FlangeWorld

# Partial credit for a missed constraint fades to zero at this relative excess.
PARTIAL_SPAN = 0.5
NON_PERMITTED_GATE = 0.5


def constraint_score(value: float, limit: float) -> float:
    """1 when ``value <= limit``; otherwise at most 0.5, falling to 0 at +PARTIAL_SPAN excess."""
    if value <= limit:
        return 1.0
    excess = value / limit - 1.0
    return 0.5 * max(0.0, 1.0 - excess / PARTIAL_SPAN)


def efficiency(checks: int, free: int) -> float:
    """1 up to ``free`` analyze/cost calls, then falling linearly to 0 at three times that."""
    if checks <= free:
        return 1.0
    return max(0.0, 1.0 - (checks - free) / (2 * free))


def reward(instance: Instance, world: World, trajectory: Trajectory) -> Reward:
    """Displacement and cost constraints (partial by margin), material, success, efficiency.

    The submitted design is re-analyzed and re-costed here; nothing the agent claimed is
    trusted. No submission (or a design breaking a rule) scores 0; a material the drawing
    does not permit halves the total.
    """
    answer = world.final_answer
    if answer is None:
        return Reward.zero("no design submitted")
    try:
        design = design_of(answer)
        geom = geometry_of(instance)
        disp = analyze(geom, design).max_displacement
        total = cost(geom, design).total
    except (DesignError, KeyError, TypeError, ValueError) as e:
        return Reward.zero(f"submitted design is invalid: {e}")
    limit = float(instance.hidden["limit_mm"])
    budget = float(instance.hidden["budget_usd"])
    permitted = list(instance.hidden["permitted"])
    disp_ok, cost_ok = disp <= limit, total <= budget
    mat_ok = design.material in permitted
    success = disp_ok and cost_ok and mat_ok
    checks = world.checks if isinstance(world, FlangeWorld) else 0
    free = int(instance.config.get("free_tool_calls", 8))
    eff = efficiency(checks, free) if success else 0.0
    components = [
        RewardComponent(
            name="displacement",
            value=constraint_score(disp, limit),
            weight=0.3,
            detail=f"{disp:.4g} mm vs limit {limit:g} mm",
        ),
        RewardComponent(
            name="cost",
            value=constraint_score(total, budget),
            weight=0.3,
            detail=f"${total:.2f} vs budget ${budget:.2f}",
        ),
        RewardComponent(
            name="material",
            value=float(mat_ok),
            weight=0.1,
            detail=f"{design.material} {'is' if mat_ok else 'is NOT'} permitted "
            f"({', '.join(permitted)})",
        ),
        RewardComponent(
            name="outcome",
            value=float(success),
            weight=0.2,
            detail="all requirements met" if success else "not all requirements met",
        ),
        RewardComponent(
            name="efficiency",
            value=eff,
            weight=0.1,
            detail=f"{checks} analyze/cost calls ({free} free); counts only on success",
        ),
    ]
    missed = [
        name
        for name, ok in (("displacement", disp_ok), ("cost", cost_ok), ("material", mat_ok))
        if not ok
    ]
    explanation = "design meets every requirement" if success else "missed: " + ", ".join(missed)
    # A material the drawing does not permit makes the part non-conforming: halve everything.
    gate = 1.0 if mat_ok else NON_PERMITTED_GATE
    return Reward.from_components(components, success=success, explanation=explanation, gate=gate)
