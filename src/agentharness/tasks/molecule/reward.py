"""Layer 4: re-evaluate the submitted structure with ASE and score the search's progress.

Partial credit is measured from the start's own local minimum (what one
``local_minimize`` of the given start reaches, recorded by the generator with the
tool's own optimizer), not from zero: submitting the start, or its local minimum,
earns nothing. Efficiency only trims a solved answer.
"""

from __future__ import annotations

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.tasks.molecule.problem import Hidden, Public
from agentharness.tasks.molecule.simulator import (
    ENERGY_DECIMALS,
    StructureError,
    as_positions,
    ase_energy,
)
from agentharness.tasks.molecule.tools import MoleculeWorld

PARTIAL_WEIGHT = 0.5  # the most an answer short of the global minimum can earn
EFFICIENCY_WEIGHT = 0.05  # the share of a solved answer that depends on calls used


def reward(instance: Instance, world: MoleculeWorld, trajectory: Trajectory) -> Reward:
    """Score the submission as submitted (no re-minimization).

    * solved (within ``tolerance`` of the global minimum): ``1 - 0.05 x`` the share of
      the call budget used beyond the first call;
    * otherwise ``0.5 x progress``, where progress is
      ``(E_start_min - E) / (E_start_min - E_global)`` clipped to [0, 1] and
      ``E_start_min`` is the energy one ``local_minimize`` of the start reaches.
    """
    answer = world.final_answer
    pub, hid = instance.public_as(Public), instance.hidden_as(Hidden)
    n, sigma, tol, budget = pub.n_atoms, pub.sigma, pub.tolerance, pub.call_budget
    target, baseline = hid.global_minimum, hid.start_local_minimum
    if answer is None:
        return Reward.zero("no structure was submitted")
    try:
        energy = ase_energy(as_positions(answer.get("coordinates"), n, sigma), sigma)
    except StructureError as e:
        return Reward.zero(f"the submitted structure cannot be evaluated: {e}")

    gap = max(0.0, energy - target)
    success = gap <= tol
    span = baseline - target
    # The baseline is stored rounded (v3): the start's own minimum, re-found, is no progress.
    below = round(baseline - energy, ENERGY_DECIMALS)
    progress = 1.0 if success else min(1.0, max(0.0, below / span))
    calls = world.calls_used
    efficiency = max(0.0, 1.0 - max(0, calls - 1) / budget)
    trim = 1.0 - EFFICIENCY_WEIGHT * (1.0 - efficiency) if success else 1.0
    verdict = "the global minimum" if success else f"{gap:.6f} above the global minimum"
    return Reward.from_components(
        [
            RewardComponent(
                name="search",
                value=1.0 if success else PARTIAL_WEIGHT * progress,
                weight=1.0,
                detail=(
                    f"E = {energy:.6f} vs global minimum {target:.6f} (tolerance {tol:g}); "
                    f"{progress:.2f} of the way down from the start's local minimum "
                    f"{baseline:.6f} (unsolved answers earn {PARTIAL_WEIGHT:g} x this)"
                ),
            ),
            RewardComponent(
                name="efficiency",
                value=efficiency,
                weight=0.0,
                detail=(
                    f"{calls} of {budget} calls used; trims a solved answer by up to "
                    f"{EFFICIENCY_WEIGHT:g}, counts for nothing otherwise"
                ),
            ),
        ],
        success=success,
        explanation=f"submitted LJ{n} structure has energy {energy:.6f}: {verdict}",
        gate=trim,
    )
