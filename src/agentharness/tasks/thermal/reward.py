"""Layer 4: re-simulate the submitted powers; pay for solving, not for playing safe.

The reward (since thermal-v2) is gated and measured against what a lazy answer gets:

* **gate** — an answer that is invalid or breaks the safety limit anywhere on the plate
  scores 0. Staying safe earns nothing by itself (any cold plate is safe).
* **targets** (weight 0.85) — 1 when every monitor is within tolerance. Otherwise partial
  credit ``PARTIAL_CAP * progress ** 2`` (at most 0.6) for real progress towards the
  targets: ``progress = 1 - E / E_uniform``, where ``E`` is the RMS of how far the monitors
  miss their tolerance band and ``E_uniform`` is the same for the *best uniform setting*
  (every heater at one power, chosen with hindsight on this very plate; see
  :func:`~agentharness.tasks.thermal.simulator.uniform_baseline`). Any uniform answer, all
  heaters off or at full power, therefore earns no partial credit, and an answer must
  close most of the gap before partial credit matters.
* **efficiency** (weight 0.15) — paid only when every target is hit: 1 up to
  ``n_heaters + FREE_EXTRA`` simulations, then falling to 0 at the budget.

So a solved plate scores 0.85-1.0, an unsolved but safe one at most 0.51, anything else 0.
"""

from __future__ import annotations

import numpy as np

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.core.tools import ToolError
from agentharness.tasks.thermal.problem import Public
from agentharness.tasks.thermal.simulator import (
    SimulationError,
    get_model,
    response_matrices,
    rms_excess,
    spec_from_public,
    uniform_baseline,
)
from agentharness.tasks.thermal.tools import ThermalWorld, check_powers

W_TARGETS, W_EFFICIENCY = 0.85, 0.15
# Partial credit (targets not all hit) is at most this share of the targets component.
PARTIAL_CAP = 0.6
# Simulations beyond (n_heaters + FREE_EXTRA) start to cost efficiency credit.
FREE_EXTRA = 2


def progress(excess_k: float, uniform_excess_k: float) -> float:
    """Share of the best uniform setting's miss that the answer closed, in [0, 1]."""
    if excess_k <= 0.0:
        return 1.0
    if uniform_excess_k <= 0.0:
        return 0.0
    return float(min(1.0, max(0.0, 1.0 - excess_k / uniform_excess_k)))


def partial_credit(excess_k: float, uniform_excess_k: float) -> float:
    """Value of the targets component when not every target is hit."""
    return PARTIAL_CAP * progress(excess_k, uniform_excess_k) ** 2


def reward(instance: Instance, world: ThermalWorld, trajectory: Trajectory) -> Reward:
    """Targets (gated on safety, partial credit relative to the best uniform setting) and
    efficiency once solved."""
    answer = world.final_answer
    if answer is None:
        return Reward.zero("no powers were submitted")
    pub = instance.public_as(Public)
    try:
        powers = check_powers(pub, list(answer.get("powers", [])))
        model = get_model(spec_from_public(pub))
        result = model.solve(powers)
    except (ToolError, SimulationError, TypeError, ValueError) as e:
        return Reward.zero(f"the submitted powers are invalid: {e}")

    tol = pub.tolerance_k
    limit = pub.safety_limit_c
    ambient = pub.plate.ambient_c
    targets = np.array([m.target_c for m in pub.monitors])
    errors = np.asarray(result.monitor_c) - targets
    n_mon = len(errors)
    hits = int(np.sum(np.abs(errors) <= tol))
    solved = hits == n_mon
    safe = result.hottest_c <= limit
    excess = rms_excess(errors, tol)
    g, _ = response_matrices(model)
    _, uniform_excess = uniform_baseline(g, targets - ambient, tol, pub.max_power_w)
    prog = progress(excess, uniform_excess)

    sims = world.simulations
    free = len(pub.heaters) + FREE_EXTRA
    budget = pub.max_simulations
    efficiency = 1.0 if sims <= free else max(0.0, 1.0 - (sims - free) / max(1, budget - free))

    components = [
        RewardComponent(
            name="targets",
            value=1.0 if solved else partial_credit(excess, uniform_excess),
            weight=W_TARGETS,
            detail=(
                f"{hits}/{n_mon} within ±{tol:g} K; RMS miss {excess:.3f} K vs "
                f"{uniform_excess:.3f} K for the best uniform setting (progress {prog:.2f})"
            ),
        ),
        RewardComponent(
            name="efficiency",
            value=efficiency if solved else 0.0,
            weight=W_EFFICIENCY,
            detail=f"{sims} simulations ({free} free)"
            + ("" if solved else "; paid only when every target is hit"),
        ),
        RewardComponent(
            name="hits",
            value=hits / n_mon,
            weight=0.0,
            detail=f"max error {float(np.max(np.abs(errors))):.3f} K",
        ),
        RewardComponent(
            name="safety",
            value=float(safe),
            weight=0.0,
            detail=f"hottest {result.hottest_c:.2f} °C vs limit {limit:g} °C",
        ),
    ]
    explanation = (
        f"{hits}/{n_mon} targets hit (progress {prog:.2f} over the best uniform setting), "
        f"hottest {result.hottest_c:.2f} °C ({'safe' if safe else 'UNSAFE'} vs {limit:g} °C), "
        f"{sims} simulations"
    )
    return Reward.from_components(
        components,
        success=safe and solved,
        explanation=explanation,
        gate=1.0 if safe else 0.0,
    )
