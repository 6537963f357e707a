"""The molecule task spec."""

from __future__ import annotations

from agentharness.core.task import TaskSpec
from agentharness.tasks.molecule.config import DIFFICULTIES, MoleculeConfig
from agentharness.tasks.molecule.expert import MoleculeExpert
from agentharness.tasks.molecule.generator import MoleculeGenerator
from agentharness.tasks.molecule.interaction import MoleculeInteraction
from agentharness.tasks.molecule.reward import reward
from agentharness.tasks.molecule.tools import MoleculeWorld

TASK = TaskSpec(
    name="molecule",
    version=1,
    modality="text",
    description=(
        "Find the global minimum of a Lennard-Jones cluster (3-20 atoms) with energy and "
        "local-minimization tools on ASE's LJ calculator under a call budget. Sparse: many "
        "local minima, yes/no feedback; reward by the energy gap to the known minimum."
    ),
    config_model=MoleculeConfig,
    difficulties=DIFFICULTIES,
    generator=MoleculeGenerator(),
    world=MoleculeWorld,
    interaction=MoleculeInteraction(),
    reward=reward,
    expert=MoleculeExpert,
    solved_threshold=0.9,
    tags=("text", "sparse", "optimization", "chemistry"),
)
