"""Knobs of the molecule task and its difficulty presets."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentharness.tasks.molecule.simulator import MAX_ATOMS, MIN_SEARCH_ATOMS

MAX_CALL_BUDGET = 100


class MoleculeConfig(BaseModel):
    """Generator knobs. Each field can be overridden with ``make(..., knob=value)``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    n_atoms_min: int = Field(
        6,
        ge=MIN_SEARCH_ATOMS,
        le=MAX_ATOMS,
        description="smallest cluster size an instance draws (from 6: smaller clusters have "
        "a single minimum)",
    )
    n_atoms_max: int = Field(
        8, ge=MIN_SEARCH_ATOMS, le=MAX_ATOMS, description="largest cluster size an instance draws"
    )
    sigma_min: float = Field(
        0.8,
        ge=0.5,
        le=2.0,
        description="smallest length unit sigma an instance draws; sigma varies so that no "
        "fixed structure answers every instance of a size",
    )
    sigma_max: float = Field(1.6, ge=0.5, le=2.0, description="largest sigma an instance draws")
    call_budget: int = Field(
        30,
        ge=1,
        le=MAX_CALL_BUDGET,
        description="how many energy / local_minimize calls the agent may make (submitting is free)",
    )
    tolerance: float = Field(
        1e-3,
        gt=0.0,
        le=5e-3,
        description="absolute energy tolerance (epsilon) for counting the global minimum as found; "
        "kept below 0.005 because LJ17's second-lowest minimum is only 0.011 above its global one",
    )
    reveal_target: bool = Field(
        True,
        description="state the known global-minimum energy in the prompt (it is public, tabulated "
        "in the Cambridge Cluster Database); when False the agent only learns yes/no",
    )

    @model_validator(mode="after")
    def _ordered(self) -> MoleculeConfig:
        if self.n_atoms_min > self.n_atoms_max:
            raise ValueError(
                f"n_atoms_min ({self.n_atoms_min}) must not exceed n_atoms_max ({self.n_atoms_max})"
            )
        if self.sigma_min > self.sigma_max:
            raise ValueError(
                f"sigma_min ({self.sigma_min}) must not exceed sigma_max ({self.sigma_max})"
            )
        return self


# Harder: more atoms (a rougher landscape with more local minima) and fewer calls. A
# plain basin-hopping search from the start (the prompt's hint, no structural
# knowledge) finds the global minimum in about 97% / 80% / 40% of instances.
DIFFICULTIES: dict[str, dict[str, Any]] = {
    "easy": {"n_atoms_min": 7, "n_atoms_max": 9, "call_budget": 30},
    "medium": {"n_atoms_min": 10, "n_atoms_max": 14, "call_budget": 15},
    "hard": {"n_atoms_min": 15, "n_atoms_max": 20, "call_budget": 12},
}
