"""Layer 4: re-evaluate the submitted structure with ASE and score its energy gap."""

from __future__ import annotations

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.reward import Reward, RewardComponent
from agentharness.core.tools import World
from agentharness.tasks.molecule.simulator import StructureError, as_positions, ase_energy
from agentharness.tasks.molecule.tools import MoleculeWorld

W_OUTCOME, W_PROXIMITY, W_EFFICIENCY = 0.6, 0.3, 0.1
# Proximity falls linearly to zero at this fraction of |E_global|: a single
# minimization from a random start typically lands 5-15% above the global minimum.
PROXIMITY_SCALE = 0.15


def reward(instance: Instance, world: World, trajectory: Trajectory) -> Reward:
    """Score the submission as submitted (no re-minimization).

    * outcome (0.6): 1 when the energy is within ``tolerance`` of the global minimum;
    * proximity (0.3): ``1 - gap / (0.15 |E_global|)``, clipped to [0, 1];
    * efficiency (0.1): only on success, ``1 - (calls - 1) / budget``.
    """
    answer = world.final_answer
    n = int(instance.public["n_atoms"])
    target = float(instance.hidden["global_minimum"])
    tol = float(instance.public["tolerance"])
    budget = int(instance.public["call_budget"])
    if answer is None:
        return Reward.zero("no structure was submitted")
    try:
        energy = ase_energy(as_positions(answer.get("coordinates"), n))
    except StructureError as e:
        return Reward.zero(f"the submitted structure cannot be evaluated: {e}")

    gap = max(0.0, energy - target)
    success = gap <= tol
    proximity = max(0.0, 1.0 - gap / (PROXIMITY_SCALE * abs(target)))
    calls = world.calls_used if isinstance(world, MoleculeWorld) else budget
    efficiency = max(0.0, 1.0 - max(0, calls - 1) / budget) if success else 0.0
    verdict = "the global minimum" if success else f"{gap:.6f} above the global minimum"
    return Reward.from_components(
        [
            RewardComponent(
                name="outcome",
                value=float(success),
                weight=W_OUTCOME,
                detail=f"E = {energy:.6f} vs global minimum {target:.6f} (tolerance {tol:g})",
            ),
            RewardComponent(
                name="proximity",
                value=proximity,
                weight=W_PROXIMITY,
                detail=f"gap {gap:.6f}, zero credit at {PROXIMITY_SCALE * abs(target):.3f}",
            ),
            RewardComponent(
                name="efficiency",
                value=efficiency,
                weight=W_EFFICIENCY,
                detail=f"{calls} of {budget} calls used",
            ),
        ],
        success=success,
        explanation=f"submitted LJ{n} structure has energy {energy:.6f}: {verdict}",
    )
