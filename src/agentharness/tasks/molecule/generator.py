"""Layer 1: draw a cluster size and a random start, built around a known global minimum."""

from __future__ import annotations

import json

import numpy as np

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, system, user
from agentharness.core.task import Problem
from agentharness.tasks.molecule.config import MoleculeConfig
from agentharness.tasks.molecule.problem import Hidden, Public
from agentharness.tasks.molecule.simulator import (
    COORD_LIMIT,
    DECIMALS,
    ENERGY_DECIMALS,
    GLOBAL_MINIMA,
    LOOSE_DISTANCE,
    MIN_PAIR_DISTANCE,
    PAIR_EQUILIBRIUM,
    as_positions,
    ase_energy,
    global_minimum_structure,
    isolated_atoms,
    random_cluster,
    random_rotation,
    relax,
    rotate,
)

START_DECIMALS = 3
SIGMA_DECIMALS = 4
_START_DRAWS = 200
# The start's own local minimum lies at least this fraction of |E_global| above the
# global minimum, so there is room for partial credit and one minimization is far off.
START_MIN_GAP = 0.02


class GenerationError(RuntimeError):
    """No start could be drawn that one local minimization does not solve."""


class MoleculeGenerator:
    """Deterministic generator of Lennard-Jones cluster instances.

    Each instance draws a size and a length unit sigma (so no fixed structure answers
    every instance of a size). The hidden solution is the size's global-minimum
    structure (found by seeded basin hopping, cached per size) scaled by sigma, under a
    seed-dependent rotation and atom relabelling; its ASE energy is checked against the
    reference table. The start is a random compact cluster whose local minimum, found
    with the ``local_minimize`` tool's own :func:`relax`, lies at least 2% of
    ``|E_global|`` above the global minimum: one minimization of the start never solves
    it, and that minimum is the baseline of the reward's partial credit.
    """

    def generate(self, config: MoleculeConfig, seed: int) -> Problem:
        rng = np.random.default_rng([seed % 2**64, 0x4C4A])  # "LJ"
        n = int(rng.integers(config.n_atoms_min, config.n_atoms_max + 1))
        sigma = round(float(rng.uniform(config.sigma_min, config.sigma_max)), SIGMA_DECIMALS)
        target = GLOBAL_MINIMA[n]

        core = global_minimum_structure(n) * sigma
        solution = np.round(rotate(core, random_rotation(rng))[rng.permutation(n)], DECIMALS)
        solution_energy = round(
            ase_energy(as_positions(solution, n, sigma), sigma), ENERGY_DECIMALS
        )
        if abs(solution_energy - target) > 1e-5:  # never hand out an unverified instance
            raise RuntimeError(f"LJ{n} solution has energy {solution_energy}, expected {target}")

        floor = target + max(10 * config.tolerance, START_MIN_GAP * abs(target))
        for _ in range(_START_DRAWS):
            start = np.round(random_cluster(n, rng) * sigma, START_DECIMALS)
            pos = as_positions(start, n, sigma)  # the start must itself be a valid tool input
            if isolated_atoms(pos, LOOSE_DISTANCE * sigma):
                continue  # local_minimize would refuse it
            start_minimum = round(relax(pos, sigma).energy, ENERGY_DECIMALS)
            if start_minimum > floor:
                break
        else:
            raise GenerationError(
                f"LJ{n}: no start in {_START_DRAWS} draws stays above the global basin"
            )

        public = Public(
            n_atoms=n,
            sigma=sigma,
            start=start.tolist(),
            call_budget=config.call_budget,
            tolerance=config.tolerance,
            target_energy=target if config.reveal_target else None,
        )
        hidden = Hidden(
            global_minimum=target,
            solution=solution.tolist(),
            solution_energy=solution_energy,
            start_local_minimum=start_minimum,
        )
        return Problem(public=public.model_dump(mode="json"), hidden=hidden.model_dump(mode="json"))

    def prompt(self, instance: Instance) -> list[Message]:
        pub = instance.public_as(Public)
        n, budget, tol = pub.n_atoms, pub.call_budget, pub.tolerance
        target = pub.target_energy
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
        start = json.dumps(pub.start)
        sigma = pub.sigma
        text = f"""Find the lowest-energy arrangement (the global minimum) of a cluster of {n} identical atoms
interacting through the Lennard-Jones pair potential with epsilon = 1 and sigma = {sigma:g}:
  V(r) = 4 ((sigma/r)^12 - (sigma/r)^6), and the cluster energy E is the sum of V over all atom pairs.
A single pair is most stable at r = 2^(1/6) sigma = {PAIR_EQUILIBRIUM * sigma:.4f} with V = -1. Energies do
not depend on sigma (it only sets the length scale). The energy landscape has many local minima;
a local minimization only reaches the bottom of the basin it starts in.

{goal}

Starting structure ({n} atoms, one [x, y, z] per atom):
{start}

Tools:
- energy(coordinates): the energy, largest force and closest pair distance of a structure, and
  whether it is at the global minimum.
- local_minimize(coordinates): relaxes a structure to the nearest local minimum (L-BFGS; energy
  from ASE's Lennard-Jones calculator) and returns the relaxed coordinates (centred at the
  origin) and their energy.
- submit_structure(coordinates): your final answer; it ends the episode.

Rules:
- energy and local_minimize together may be called at most {budget} times; submit_structure does
  not count. Once the budget is spent only submit_structure works.
- coordinates: exactly {n} [x, y, z] triples, every value within [-{COORD_LIMIT:g}, {COORD_LIMIT:g}],
  no two atoms closer than {MIN_PAIR_DISTANCE * sigma:.3f} (half of sigma).
- The submission is scored exactly as submitted (it is not minimized again), so submit the
  coordinates a local_minimize call returned.
- Score: 1 within {tol:g} of the global minimum, less up to 0.05 for the share of the budget used.
  Otherwise at most 0.5, in proportion to how far below the starting structure's own local
  minimum (what one local_minimize of it reaches) you got towards the global minimum: the start's
  local minimum, or anything higher, scores 0.

Hint: basin hopping works: perturb the best minimum so far (move one or two loosely bound atoms
elsewhere on the surface, or shift every atom by up to ~0.4 sigma), minimize again, keep
improvements. Compact, icosahedron-like packings are favoured."""
        return [
            system(
                "You are a computational chemist searching for the global minimum of a "
                "Lennard-Jones cluster. Act only through the tools and finish by calling "
                "submit_structure once."
            ),
            user(text),
        ]
