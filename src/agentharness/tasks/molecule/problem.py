"""The instance data of a molecule search, typed: ``Public`` (shown) and ``Hidden`` (truth).

Read them with ``instance.public_as(Public)`` / ``instance.hidden_as(Hidden)``; the
generator builds them and stores ``model_dump(mode="json")``. Field order is the order
of the stored JSON, so instances are unchanged by going through these models.
Coordinates are one ``(x, y, z)`` per atom, in the instance's length unit.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

Structure = tuple[tuple[float, float, float], ...]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Public(_Frozen):
    """What the prompt states: the cluster, its start and the rules of the search."""

    n_atoms: int
    sigma: float = 1.0  # the Lennard-Jones length unit (epsilon is 1)
    start: Structure
    call_budget: int  # energy + local_minimize calls allowed
    tolerance: float  # energy tolerance for counting the global minimum as found
    target_energy: float | None  # the global minimum, unless reveal_target=False hides it


class Hidden(_Frozen):
    """The global minimum the instance was built around, and the start's own minimum."""

    global_minimum: float  # tabulated energy (Cambridge Cluster Database)
    solution: Structure  # a rotated, relabelled global-minimum structure, scaled by sigma
    solution_energy: float  # its ASE energy, checked against global_minimum
    start_local_minimum: float  # what one local_minimize of the start reaches
