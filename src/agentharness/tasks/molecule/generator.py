"""Layer 1: draw a cluster size and a random start, built around a known global minimum."""

from __future__ import annotations

import json

import numpy as np

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, system, user
from agentharness.core.task import Problem
from agentharness.tasks.molecule.config import MoleculeConfig
from agentharness.tasks.molecule.simulator import (
    COORD_LIMIT,
    DECIMALS,
    GLOBAL_MINIMA,
    MIN_PAIR_DISTANCE,
    PAIR_EQUILIBRIUM,
    as_positions,
    ase_energy,
    global_minimum_structure,
    lbfgs,
    random_cluster,
    random_rotation,
)

START_DECIMALS = 3
_START_DRAWS = 30


class MoleculeGenerator:
    """Deterministic generator of Lennard-Jones cluster instances.

    The hidden solution is the size's global-minimum structure (found by seeded basin
    hopping, cached per size) under a seed-dependent rotation and atom relabelling; its
    ASE energy is checked against the reference table before the instance is returned.
    The start is a random compact cluster whose own local minimum is, where the size
    allows, *not* the global one, so one minimization of the start does not solve it.
    """

    def generate(self, config: MoleculeConfig, seed: int) -> Problem:
        rng = np.random.default_rng([seed % 2**64, 0x4C4A])  # "LJ"
        n = int(rng.integers(config.n_atoms_min, config.n_atoms_max + 1))
        target = GLOBAL_MINIMA[n]

        core = global_minimum_structure(n)
        solution = np.round((core @ random_rotation(rng).T)[rng.permutation(n)], DECIMALS)
        solution_energy = ase_energy(as_positions(solution, n))
        if abs(solution_energy - target) > 1e-5:  # never hand out an unverified instance
            raise RuntimeError(f"LJ{n} solution has energy {solution_energy}, expected {target}")

        start = np.round(random_cluster(n, rng), START_DECIMALS)
        start_minimum = lbfgs(start.ravel())[1]
        for _ in range(_START_DRAWS):  # sizes 3-5 have one minimum: the last draw stands
            if start_minimum > target + 10 * config.tolerance:
                break
            start = np.round(random_cluster(n, rng), START_DECIMALS)
            start_minimum = lbfgs(start.ravel())[1]
        as_positions(start, n)  # the start must itself be a valid tool input

        return Problem(
            public={
                "n_atoms": n,
                "start": start.tolist(),
                "call_budget": config.call_budget,
                "tolerance": config.tolerance,
                "target_energy": target if config.reveal_target else None,
            },
            hidden={
                "global_minimum": target,
                "solution": solution.tolist(),
                "solution_energy": solution_energy,
                "start_local_minimum": round(start_minimum, 6),
            },
        )

    def prompt(self, instance: Instance) -> list[Message]:
        pub = instance.public
        n, budget, tol = pub["n_atoms"], pub["call_budget"], pub["tolerance"]
        target = pub["target_energy"]
        if target is not None:
            goal = (
                f"Target: the known global minimum of LJ{n} is E = {target:.6f} (Cambridge Cluster "
                f"Database). It counts as found when your submitted energy is within {tol:g} of it."
            )
        else:
            goal = (
                "The target energy is not given: energy and local_minimize tell you only whether a "
                f"structure is at the global minimum (within {tol:g}) or not."
            )
        start = json.dumps(pub["start"])
        text = f"""Find the lowest-energy arrangement (the global minimum) of a cluster of {n} identical atoms
interacting through the Lennard-Jones pair potential in reduced units (epsilon = 1, sigma = 1):
  V(r) = 4 (r^-12 - r^-6), and the cluster energy E is the sum of V over all atom pairs.
A single pair is most stable at r = 2^(1/6) = {PAIR_EQUILIBRIUM:.4f} with V = -1. The energy landscape has
many local minima; a local minimization only reaches the bottom of the basin it starts in.

{goal}

Starting structure ({n} atoms, one [x, y, z] per atom):
{start}

Tools:
- energy(coordinates): the energy, largest force and closest pair distance of a structure, and
  whether it is at the global minimum.
- local_minimize(coordinates): relaxes a structure to the nearest local minimum (ASE FIRE + LBFGS)
  and returns the relaxed coordinates (centred at the origin) and their energy.
- submit_structure(coordinates): your final answer; it ends the episode.

Rules:
- energy and local_minimize together may be called at most {budget} times; submit_structure does
  not count. Once the budget is spent only submit_structure works.
- coordinates: exactly {n} [x, y, z] triples in units of sigma, every value within
  [-{COORD_LIMIT:g}, {COORD_LIMIT:g}], no two atoms closer than {MIN_PAIR_DISTANCE}.
- The submission is scored exactly as submitted (it is not minimized again), so submit the
  coordinates a local_minimize call returned. Full credit within {tol:g} of the global minimum,
  partial credit shrinking with the energy gap, and a small bonus for using fewer calls.

Hint: basin hopping works: perturb the best minimum so far (move one or two loosely bound atoms
elsewhere on the surface, or shift every atom by up to ~0.4), minimize again, keep improvements.
Compact, icosahedron-like packings are favoured."""
        return [
            system(
                "You are a computational chemist searching for the global minimum of a "
                "Lennard-Jones cluster. Act only through the tools and finish by calling "
                "submit_structure once."
            ),
            user(text),
        ]
