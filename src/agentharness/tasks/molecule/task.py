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
    version=4,
    modality="text",
    description=(
        "Find the global minimum of a Lennard-Jones cluster (7-20 atoms, per-instance sigma) "
        "with energy and local-minimization tools under a call budget. Sparse: many local "
        "minima, yes/no feedback; full credit at the known minimum, otherwise at most 0.5 by "
        "progress below the start's own local minimum."
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
    # Its basin hops perturb coordinates at random and it falls back to the hidden
    # solution when the budget runs low: those numbers are not in the conversation.
    imitable=False,
)
