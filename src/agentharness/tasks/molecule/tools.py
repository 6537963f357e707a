"""Layer 2: the per-episode world — a call budget and three tools on the LJ potential."""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from pydantic import Field

from agentharness.core.instance import Instance
from agentharness.core.tools import ToolError, ToolResult, World, tool
from agentharness.tasks.molecule.problem import Hidden, Public
from agentharness.tasks.molecule.simulator import (
    COORD_LIMIT,
    DECIMALS,
    LOOSE_DISTANCE,
    MAX_ATOMS,
    MIN_ATOMS,
    PAIR_EQUILIBRIUM,
    FloatArray,
    StructureError,
    as_positions,
    ase_energy_forces,
    closest_pair,
    detached_atoms,
    isolated_atoms,
    max_force,
    relax,
)

Coordinate = Annotated[float, Field(ge=-COORD_LIMIT, le=COORD_LIMIT)]
Atom = Annotated[list[Coordinate], Field(min_length=3, max_length=3)]
Coordinates = Annotated[list[Atom], Field(min_length=MIN_ATOMS, max_length=MAX_ATOMS)]

LOCAL_MINIMUM_FORCE = 1e-3  # `energy` calls a structure a local minimum below this force


class MoleculeWorld(World):
    """One search: the cluster size, the call budget and the best energy seen so far.

    Only ``energy`` and ``local_minimize`` calls that actually evaluate a structure
    spend the budget; rejected input does not. Feedback is deliberately sparse: the
    energy and a yes/no on whether it is the global minimum.
    """

    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        pub = instance.public_as(Public)
        self.n_atoms = pub.n_atoms
        self.sigma = pub.sigma
        self.call_budget = pub.call_budget
        self.tolerance = pub.tolerance
        self.global_minimum = instance.hidden_as(Hidden).global_minimum
        self.calls_used = 0
        self.best_energy: float | None = None
        self.submitted_energy: float | None = None

    # -- helpers ------------------------------------------------------------------
    @property
    def calls_left(self) -> int:
        return max(0, self.call_budget - self.calls_used)

    def reached(self, energy: float) -> bool:
        return energy <= self.global_minimum + self.tolerance

    def _positions(self, coordinates: list[list[float]]) -> FloatArray:
        try:
            return as_positions(coordinates, self.n_atoms, self.sigma)
        except StructureError as e:
            raise ToolError(str(e)) from e

    def _check_budget(self) -> None:
        if self.calls_used >= self.call_budget:
            best = "none" if self.best_energy is None else f"{self.best_energy:.6f}"
            raise ToolError(
                f"the call budget ({self.call_budget} energy/local_minimize calls) is spent. "
                f"Call submit_structure now with your best coordinates (best energy so far: {best})."
            )

    def _record(self, energy: float) -> dict[str, Any]:
        self.calls_used += 1
        if self.best_energy is None or energy < self.best_energy:
            self.best_energy = energy
        assert self.best_energy is not None
        return {
            "global_minimum_reached": self.reached(energy),
            "best_energy_so_far": round(self.best_energy, DECIMALS),
            "calls_left": self.calls_left,
        }

    # -- tools --------------------------------------------------------------------
    @tool
    def energy(self, coordinates: Coordinates) -> dict[str, Any]:
        """Evaluate the Lennard-Jones energy of a structure (costs one call of the budget).

        Args:
            coordinates: one [x, y, z] triple per atom.
        """
        self._check_budget()
        pos = self._positions(coordinates)
        try:
            e, forces = ase_energy_forces(pos, self.sigma)
        except StructureError as err:
            raise ToolError(str(err)) from err
        fm = max_force(forces)
        out: dict[str, Any] = {
            "energy": round(e, DECIMALS),
            "max_force": round(fm, DECIMALS),
            "closest_pair_distance": round(closest_pair(pos)[0], 4),
            "at_local_minimum": fm < LOCAL_MINIMUM_FORCE,
        }
        out.update(self._record(e))
        return out

    @tool(timeout_s=90.0)
    def local_minimize(self, coordinates: Coordinates) -> dict[str, Any]:
        """Relax a structure to the nearest local energy minimum (costs one call of the budget).

        Args:
            coordinates: one [x, y, z] triple per atom; the starting point. Keep it compact
                (neighbours ~1.12 sigma apart): isolated atoms feel almost no force.
        """
        self._check_budget()
        pos = self._positions(coordinates)
        loose = isolated_atoms(pos, LOOSE_DISTANCE * self.sigma)
        if loose:
            raise ToolError(
                f"atom(s) {loose} have no neighbour within {LOOSE_DISTANCE * self.sigma:.3f} "
                f"({LOOSE_DISTANCE:g} sigma), where the forces are too weak to minimize; move them "
                f"next to the cluster (about {PAIR_EQUILIBRIUM * self.sigma:.3f} from their nearest "
                "neighbours) and call local_minimize again."
            )
        try:
            res = relax(pos, self.sigma)
        except StructureError as err:
            raise ToolError(str(err)) from err
        out: dict[str, Any] = {
            "energy": round(res.energy, DECIMALS),
            "converged": res.converged,
            "steps": res.steps,
        }
        out.update(self._record(res.energy))
        loose = detached_atoms(res.positions, self.sigma)
        if loose:
            out["detached_atoms"] = loose
        if not res.converged:
            out["note"] = (
                "not fully converged within the step limit; minimize these coordinates again"
            )
        elif out["global_minimum_reached"]:
            out["note"] = "global minimum reached: submit these coordinates with submit_structure"
        else:
            out["note"] = "a local minimum, not the global one: perturb it and minimize again"
        out["coordinates"] = np.round(res.positions, DECIMALS).tolist()
        return out

    @tool(final=True)
    def submit_structure(self, coordinates: Coordinates) -> ToolResult:
        """Submit your final structure; it is scored exactly as given and ends the episode.

        Args:
            coordinates: one [x, y, z] triple per atom (submit the relaxed coordinates
                returned by local_minimize).
        """
        pos = self._positions(coordinates)
        try:
            e, _ = ase_energy_forces(pos, self.sigma)
        except StructureError as err:
            raise ToolError(str(err)) from err
        self.submitted_energy = e
        return ToolResult(
            text=f"Structure submitted: {self.n_atoms} atoms, energy {e:.6f}.",
            data={"n_atoms": self.n_atoms, "energy": e},
        )
