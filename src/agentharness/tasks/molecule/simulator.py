"""Lennard-Jones cluster energies, local minimization and a global-minimum search.

Pure domain code (no agent or message types). The pair potential is
``V(r) = 4 epsilon ((sigma/r)^12 - (sigma/r)^6)`` with ``epsilon = 1`` and a per-instance
length unit ``sigma`` (1 in reduced units): its minimum ``V = -1`` lies at
``r = 2^(1/6) sigma``. Energies do not depend on ``sigma`` (a structure scaled by it has
the reduced structure's energy), so the reference table below holds for every sigma.

Two implementations of the same energy live here, on purpose:

* **ASE** (:func:`ase_energy`, :func:`ase_energy_forces`) —
  ``ase.calculators.lj.LennardJones`` with ``epsilon=1, sigma=sigma, rc=100,
  smooth=False``. Every energy the agent is told and every energy the reward scores
  is ASE's. With ``smooth=False`` ASE shifts each pair energy by ``-V(rc)`` so it is
  zero at the cutoff; at ``rc = 100`` that shift is below ``1e-11`` per pair, far
  below the 1e-6 precision of the reference table, and coordinates are bounded
  (``|x| <= COORD_LIMIT``) so every pair lies inside the cutoff.
* **numpy** (:func:`lj_energy_gradient`, :func:`lbfgs`) — an analytic energy and
  gradient in reduced units, ~30x faster than stepping ASE's calculator with ASE's
  optimizers. :func:`relax` (the ``local_minimize`` tool) runs this L-BFGS and reports
  ASE's energy of the result; the generator checks its starts with the very same
  :func:`relax`, so "one minimization of the start does not solve it" holds for the
  tool. The tests check the two energies agree.

``ase`` is imported lazily so importing the package stays fast.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

# Putative global minima of LJ_N in reduced units, from the Cambridge Cluster Database
# (D. J. Wales et al., https://www-wales.ch.cam.ac.uk/CCD.html). The structures in
# GLOBAL_MINIMUM_TABLE reach every value (checked with ASE before an instance is built);
# the tests re-find some with this module's basin hopping.
GLOBAL_MINIMA: dict[int, float] = {
    3: -3.000000,
    4: -6.000000,
    5: -9.103852,
    6: -12.712062,
    7: -16.505384,
    8: -19.821489,
    9: -24.113360,
    10: -28.422532,
    11: -32.765970,
    12: -37.967600,
    13: -44.326801,
    14: -47.845157,
    15: -52.322627,
    16: -56.815742,
    17: -61.317995,
    18: -66.530949,
    19: -72.659782,
    20: -77.177043,
}
MIN_ATOMS = min(GLOBAL_MINIMA)
MAX_ATOMS = max(GLOBAL_MINIMA)
# Below six atoms LJ clusters have a single minimum: every start relaxes to the answer.
MIN_SEARCH_ATOMS = 6

CUTOFF = 100.0  # ASE rc; larger than any distance inside the coordinate box
COORD_LIMIT = 25.0  # |coordinate| bound; the box diagonal 50*sqrt(3) ~ 86.6 < CUTOFF
# Distances below are in units of sigma (multiply by the instance's sigma).
MIN_PAIR_DISTANCE = 0.5  # closer pairs give energies > 1.6e4: reject them as input errors
PAIR_EQUILIBRIUM = 2.0 ** (1.0 / 6.0)
UNBOUND_DISTANCE = 1.6  # an atom with no neighbour this close is reported as detached
RELAX_GTOL = 1e-6  # L-BFGS stops when no reduced gradient component exceeds this
RELAX_MAX_STEPS = 3000  # compact starts need 50-300 L-BFGS steps
LOOSE_DISTANCE = 3.0  # local_minimize refuses an atom with no neighbour within this distance
DECIMALS = 6  # coordinates handed to the agent are rounded to this many decimals
# Energies stored in instances are rounded too (v3): ASE's sums differ in the last bits
# between numpy builds and CPUs, and an instance must be the same wherever it is generated.
ENERGY_DECIMALS = 6


class StructureError(ValueError):
    """Coordinates that cannot be evaluated; the message says how to fix them."""


@dataclass(frozen=True)
class RelaxResult:
    """Outcome of one local minimization (`relax`)."""

    positions: FloatArray  # (n, 3), centred at the origin and rounded to DECIMALS
    energy: float  # ASE energy of the rounded positions
    max_force: float
    steps: int
    converged: bool


# -- reproducible arithmetic --------------------------------------------------------
# Instances and tool results must be the same on every machine. BLAS dot products and
# numpy's SIMD pow/exp differ in the last bits between CPUs, and an L-BFGS or a
# Metropolis search amplifies last bits into different answers. The numpy maths here
# uses elementwise +, -, *, / and sqrt (IEEE, correctly rounded) and numpy's fixed-order
# sums only; tests/test_task_pins.py checks instances under other CPU feature sets.
def _dot(a: FloatArray, b: FloatArray) -> float:
    return float((a * b).sum())


def _length(v: FloatArray) -> FloatArray:
    """Euclidean length along the last axis."""
    return np.sqrt((v * v).sum(axis=-1))


# -- input checking --------------------------------------------------------------------
def as_positions(coordinates: Any, n_atoms: int, sigma: float = 1.0) -> FloatArray:
    """Validate agent coordinates: shape (n_atoms, 3), finite, bounded, no overlaps
    (no pair closer than ``MIN_PAIR_DISTANCE * sigma``)."""
    try:
        pos = np.asarray(coordinates, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise StructureError(
            f"coordinates must be a list of {n_atoms} [x, y, z] number triples ({e})."
        ) from e
    if pos.ndim != 2 or pos.shape[1] != 3:
        raise StructureError(
            f"coordinates must be a list of [x, y, z] triples; got an array of shape {pos.shape}."
        )
    if pos.shape[0] != n_atoms:
        raise StructureError(
            f"this cluster has {n_atoms} atoms, but {pos.shape[0]} coordinate triples were given; "
            f"send exactly {n_atoms} [x, y, z] triples."
        )
    if not np.all(np.isfinite(pos)):
        raise StructureError("coordinates contain NaN or infinity; send finite numbers.")
    if np.abs(pos).max() > COORD_LIMIT:
        raise StructureError(
            f"every coordinate must lie within [-{COORD_LIMIT:g}, {COORD_LIMIT:g}] sigma; "
            "keep the cluster compact around the origin."
        )
    d, i, j = closest_pair(pos)
    if d < MIN_PAIR_DISTANCE * sigma:
        raise StructureError(
            f"atoms {i} and {j} are only {d:.3f} apart (minimum allowed "
            f"{MIN_PAIR_DISTANCE * sigma:.3f}, half of sigma = {sigma:g}); the energy there is "
            f"huge and meaningless. Place neighbouring atoms about {PAIR_EQUILIBRIUM * sigma:.3f} "
            "apart (the pair-potential minimum, 2^(1/6) sigma)."
        )
    return pos


def closest_pair(pos: FloatArray) -> tuple[float, int, int]:
    """The smallest interatomic distance and the (i, j) atom indices of that pair."""
    n = len(pos)
    if n < 2:
        return math.inf, 0, 0
    d = _length(pos[:, None, :] - pos[None, :, :])
    d[np.diag_indices(n)] = np.inf
    flat = int(np.argmin(d))
    i, j = divmod(flat, n)
    return float(d[i, j]), min(i, j), max(i, j)


def isolated_atoms(pos: FloatArray, distance: float) -> list[int]:
    """Atoms with no other atom within ``distance``."""
    n = len(pos)
    d = _length(pos[:, None, :] - pos[None, :, :])
    d[np.diag_indices(n)] = np.inf
    return [int(k) for k in np.where(d.min(axis=1) > distance)[0]]


def detached_atoms(pos: FloatArray, sigma: float = 1.0) -> list[int]:
    """Atoms with no neighbour within UNBOUND_DISTANCE sigma (they add ~nothing to the energy)."""
    return isolated_atoms(pos, UNBOUND_DISTANCE * sigma)


# -- ASE: what the tools and the reward use ----------------------------------------
def _atoms(pos: FloatArray, sigma: float = 1.0) -> Any:
    from ase import Atoms
    from ase.calculators.lj import LennardJones

    atoms = Atoms(f"Ar{len(pos)}", positions=pos, pbc=False)
    atoms.calc = LennardJones(epsilon=1.0, sigma=sigma, rc=CUTOFF, smooth=False)
    return atoms


def ase_energy_forces(pos: FloatArray, sigma: float = 1.0) -> tuple[float, FloatArray]:
    """Energy and forces of a cluster from ASE's Lennard-Jones calculator."""
    atoms = _atoms(pos, sigma)
    energy = float(atoms.get_potential_energy())
    forces = np.asarray(atoms.get_forces(), dtype=np.float64)
    if not math.isfinite(energy) or not np.all(np.isfinite(forces)):
        raise StructureError(
            "the energy is not finite for these coordinates; spread the atoms out."
        )
    return energy, forces


def ase_energy(pos: FloatArray, sigma: float = 1.0) -> float:
    return ase_energy_forces(pos, sigma)[0]


def max_force(forces: FloatArray) -> float:
    return float(_length(forces).max()) if len(forces) else 0.0


def relax(pos: FloatArray, sigma: float = 1.0, max_steps: int = RELAX_MAX_STEPS) -> RelaxResult:
    """Local minimization: :func:`lbfgs` on the analytic energy, ASE's energy reported.

    Runs in reduced units (coordinates divided by ``sigma``); the result is centred at
    the origin, rounded to ``DECIMALS`` and re-evaluated with ASE, so resubmitting the
    returned coordinates scores exactly the reported energy. The line search bounds
    every step (0.3 sigma), so rough starts do not fling atoms away.
    """
    x0 = np.asarray(pos, dtype=np.float64).ravel() / sigma
    x, _, steps, converged = _lbfgs(x0, gtol=RELAX_GTOL, max_iter=max_steps)
    out = x.reshape(-1, 3) * sigma
    if not np.all(np.isfinite(out)):
        raise StructureError(
            "the minimization diverged; start from a more compact, non-overlapping cluster."
        )
    out = np.round(out - out.mean(axis=0), DECIMALS)
    if np.abs(out).max() > COORD_LIMIT:
        raise StructureError(
            "the cluster fell apart during the minimization (atoms drifted beyond "
            f"{COORD_LIMIT:g}); start from a more compact cluster with neighbours "
            f"~{PAIR_EQUILIBRIUM * sigma:.2f} apart."
        )
    energy, forces = ase_energy_forces(out, sigma)
    return RelaxResult(
        positions=out, energy=energy, max_force=max_force(forces), steps=steps, converged=converged
    )


# -- numpy: the generator's fast search --------------------------------------------
def lj_energy_gradient(x: FloatArray) -> tuple[float, FloatArray]:
    """Analytic LJ energy (no cutoff) and gradient of flat coordinates ``x`` (3n,)."""
    p = x.reshape(-1, 3)
    n = len(p)
    diff = p[:, None, :] - p[None, :, :]
    r2 = (diff * diff).sum(-1) + np.eye(n)
    ir6 = 1.0 / (r2 * r2 * r2)  # products, not power(): SIMD pow differs between CPUs
    ir12 = ir6 * ir6
    np.fill_diagonal(ir6, 0.0)
    np.fill_diagonal(ir12, 0.0)
    energy = 2.0 * float((ir12 - ir6).sum())  # 4 * sum over i<j == 2 * sum over i!=j
    coef = (-48.0 * ir12 + 24.0 * ir6) / r2
    grad = (coef[:, :, None] * diff).sum(axis=1)
    return energy, grad.ravel()


def lbfgs(
    x: FloatArray, gtol: float = 1e-6, max_iter: int = 3000, memory: int = 10, max_step: float = 0.3
) -> tuple[FloatArray, float]:
    """A small L-BFGS with backtracking, on :func:`lj_energy_gradient` (reduced units).

    Written out rather than taken from scipy: scipy's L-BFGS-B calls threaded BLAS
    that slows it ~10x on a loaded machine for problems this small.
    """
    x, energy, _, _ = _lbfgs(x, gtol, max_iter, memory, max_step)
    return x, energy


def _lbfgs(
    x: FloatArray, gtol: float = 1e-6, max_iter: int = 3000, memory: int = 10, max_step: float = 0.3
) -> tuple[FloatArray, float, int, bool]:
    """:func:`lbfgs` that also returns the steps taken and whether it converged."""
    energy, grad = lj_energy_gradient(x)
    s_hist: list[FloatArray] = []
    y_hist: list[FloatArray] = []
    steps = 0
    for _ in range(max_iter):
        if np.abs(grad).max() < gtol:
            break
        steps += 1
        q = grad.copy()
        alphas = []
        for s, y in zip(reversed(s_hist), reversed(y_hist), strict=True):
            a = _dot(s, q) / _dot(y, s)
            alphas.append(a)
            q -= a * y
        if s_hist:
            q *= _dot(s_hist[-1], y_hist[-1]) / _dot(y_hist[-1], y_hist[-1])
        for (s, y), a in zip(zip(s_hist, y_hist, strict=True), reversed(alphas), strict=True):
            q += s * (a - _dot(y, q) / _dot(y, s))
        direction = -q
        slope = _dot(direction, grad)
        if slope >= 0.0:  # not a descent direction: restart from steepest descent
            direction, slope = -grad, -_dot(grad, grad)
            s_hist.clear()
            y_hist.clear()
        t = min(1.0, max_step / float(np.abs(direction).max()))
        for _ in range(40):
            x_new = x + t * direction
            e_new, g_new = lj_energy_gradient(x_new)
            if e_new <= energy + 1e-4 * t * slope:
                break
            t *= 0.5
        s, y = x_new - x, g_new - grad
        if _dot(s, y) > 1e-12:
            s_hist.append(s)
            y_hist.append(y)
            if len(s_hist) > memory:
                s_hist.pop(0)
                y_hist.pop(0)
        x, energy, grad = x_new, e_new, g_new
    return x, energy, steps, bool(np.abs(grad).max() < gtol)


def random_cluster(n: int, rng: np.random.Generator, min_distance: float = 0.95) -> FloatArray:
    """Random positions in a sphere sized for the cluster, no pair closer than min_distance."""
    radius = 0.9 * n ** (1.0 / 3.0) + 0.4
    for _ in range(1000):
        pos: list[FloatArray] = []
        for _ in range(200 * n):
            if len(pos) == n:
                break
            v = rng.uniform(-radius, radius, 3)
            if _dot(v, v) > radius * radius:
                continue
            if all(_length(v - p) >= min_distance for p in pos):
                pos.append(v)
        if len(pos) == n:
            arr = np.array(pos)
            return np.asarray(arr - arr.mean(axis=0), dtype=np.float64)
        radius *= 1.05  # too crowded: widen the sphere and try again
    raise RuntimeError(f"could not place {n} atoms")  # unreachable for n <= MAX_ATOMS


def icosahedral_seed(n: int, rng: np.random.Generator) -> FloatArray:
    """A 13-atom Mackay icosahedron, trimmed (n < 13) or face-capped (n > 13).

    LJ global minima up to 20 atoms are (poly)icosahedral except a few small ones,
    so starting the search here cuts the hops needed by an order of magnitude.
    """
    phi = (1.0 + math.sqrt(5.0)) / 2.0
    verts = []
    for a in (-1.0, 1.0):
        for b in (-phi, phi):
            verts += [(0.0, a, b), (a, b, 0.0), (b, 0.0, a)]
    v = np.array(verts) / math.sqrt(1.0 + phi * phi) * 1.09
    if n <= 13:
        keep = rng.choice(12, n - 1, replace=False)
        return np.asarray(np.vstack([np.zeros(3), v[keep]]), dtype=np.float64)
    edge = float(_length(v[0] - v[1:]).min()) * 1.01
    faces = [
        (i, j, k)
        for i in range(12)
        for j in range(i + 1, 12)
        for k in range(j + 1, 12)
        if max(_length(v[i] - v[j]), _length(v[i] - v[k]), _length(v[j] - v[k])) <= edge
    ]
    caps = np.array([v[list(f)].mean(axis=0) for f in faces])
    caps *= (1.09 + 0.75) / _length(caps)[:, None]
    anchor = v[rng.integers(12)]  # cap the faces around one vertex first, as LJ14-19 do
    order = np.argsort(_length(caps - anchor) + rng.uniform(0.0, 0.3, len(caps)))
    return np.asarray(np.vstack([np.zeros(3), v, caps[order[: n - 13]]]), dtype=np.float64)


def _surface_move(p: FloatArray, rng: np.random.Generator, count: int) -> FloatArray:
    """Move the ``count`` least bound atoms to random points just outside the surface."""
    n = len(p)
    centre = p.mean(axis=0)
    d = _length(p[:, None, :] - p[None, :, :]) + np.eye(n) * 1e9
    ir6 = 1.0 / (d * d * d * d * d * d)
    atom_energy = (4.0 * (ir6 * ir6 - ir6)).sum(axis=1)
    for w in np.argsort(atom_energy)[-count:]:
        others = np.delete(p, w, axis=0)
        for _ in range(50):
            u = rng.normal(size=3)
            u /= _length(u)
            q = centre + u * (float(((p - centre) * u).sum(axis=1).max()) + 0.6)
            if float(_length(others - q).min()) > 0.9:
                break
        p[w] = q
    return p


def perturb(
    p: FloatArray, rng: np.random.Generator, step: float = 0.4, surface_prob: float = 0.5
) -> FloatArray:
    """One basin-hopping move in reduced units: relocate the one or two least bound atoms
    to the surface, or displace every atom by up to ``step`` (atoms that wander off are
    put back near the centre, the usual guard against evaporation)."""
    p = np.array(p, dtype=np.float64)
    n = len(p)
    if rng.random() < surface_prob:
        return _surface_move(p, rng, int(rng.integers(1, 3)))
    radius = 0.9 * n ** (1.0 / 3.0) + 0.4
    p += rng.uniform(-step, step, p.shape)
    centre = p.mean(axis=0)
    far = _length(p - centre) > radius + 1.0
    p[far] = centre + rng.uniform(-radius / 2, radius / 2, (int(far.sum()), 3))
    return p


def basin_hopping(
    n: int,
    rng: np.random.Generator,
    max_hops: int = 3000,
    temperature: float = 0.8,
    step: float = 0.4,
    surface_prob: float = 0.5,
) -> tuple[FloatArray, float]:
    """Metropolis basin hopping until the known global minimum is reached (or hops run out).

    Starts from :func:`icosahedral_seed`; each hop is one :func:`perturb` move.
    """
    target = GLOBAL_MINIMA[n]
    x, e = lbfgs(icosahedral_seed(n, rng).ravel())
    best_x, best_e = x, e
    for _ in range(max_hops):
        if best_e <= target + 1e-5:
            break
        p = perturb(x.reshape(-1, 3), rng, step, surface_prob)
        y, ey = lbfgs(p.ravel())
        if ey < e or rng.random() < math.exp(-(ey - e) / temperature):
            x, e = y, ey
        if ey < best_e:
            best_x, best_e = y, ey
    return best_x.reshape(-1, 3), best_e


_SEARCH_SALT = 2024  # any constant works; this one makes every size fast on the first try
_HOPS_PER_ATTEMPT = 60  # restarting beats waiting out an unlucky run
GLOBAL_MINIMUM_TABLE = Path(__file__).with_name("global_minima.json")
TABLE_DECIMALS = 9


def search_global_minimum(n: int) -> FloatArray:
    """Re-find LJ_n's global minimum by seeded basin hopping (reduced units, centred).

    Basin hopping is chaotic: a last-bit difference in one energy (BLAS kernels and
    SIMD maths differ between CPUs) changes an accept decision and the search ends in
    another copy (rotation, labelling) of the same minimum. So instances never search:
    they read :data:`GLOBAL_MINIMUM_TABLE`, which this function wrote once
    (:func:`write_global_minimum_table`) and the tests re-derive.
    """
    target = GLOBAL_MINIMA[n]
    for attempt in range(50):
        rng = np.random.default_rng([n, attempt, _SEARCH_SALT])
        pos, e = basin_hopping(n, rng, max_hops=_HOPS_PER_ATTEMPT)
        if e < target - 1e-5:  # would mean the reference table is wrong
            raise RuntimeError(f"LJ{n}: found {e:.6f}, below the tabulated {target}")
        if e <= target + 1e-5:
            x, _, _, _ = _lbfgs(pos.ravel(), gtol=1e-10)  # polish to the basin floor
            pos = x.reshape(-1, 3)
            return np.asarray(pos - pos.mean(axis=0), dtype=np.float64)
    raise RuntimeError(f"LJ{n}: basin hopping did not reach {target}")


def write_global_minimum_table(path: Path = GLOBAL_MINIMUM_TABLE) -> None:
    """Write every size's global-minimum coordinates (reduced units) to ``path``."""
    sizes = [
        f'"{n}": [\n'
        + ",\n".join(
            json.dumps(atom) for atom in np.round(search_global_minimum(n), TABLE_DECIMALS).tolist()
        )
        + "\n]"
        for n in GLOBAL_MINIMA
    ]
    path.write_text("{\n" + ",\n".join(sizes) + "\n}\n")  # one atom per line


@functools.cache
def _global_minimum_table() -> dict[int, tuple[tuple[float, float, float], ...]]:
    raw = json.loads(GLOBAL_MINIMUM_TABLE.read_text())
    return {
        int(n): tuple((float(a), float(b), float(c)) for a, b, c in xyz) for n, xyz in raw.items()
    }


def global_minimum_structure(n: int) -> FloatArray:
    """A structure of LJ_n at its known global minimum (reduced units, centred at the
    origin), read from :data:`GLOBAL_MINIMUM_TABLE` so it is the same on every machine."""
    if n not in GLOBAL_MINIMA:
        raise ValueError(f"no reference global minimum for {n} atoms ({MIN_ATOMS}..{MAX_ATOMS})")
    return np.array(_global_minimum_table()[n], dtype=np.float64)


def random_rotation(rng: np.random.Generator) -> FloatArray:
    """A uniformly random proper rotation matrix, from a normalized Gaussian quaternion.

    Only +, *, / and sqrt (correctly rounded everywhere), no LAPACK: the same draws give
    the same matrix to the last bit on every CPU.
    """
    q = rng.normal(size=4)
    w, x, y, z = (float(c) for c in q / _length(q))
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ],
        dtype=np.float64,
    )


def rotate(points: FloatArray, rotation: FloatArray) -> FloatArray:
    """``points @ rotation.T`` written out elementwise, so no BLAS kernel decides the
    last bits."""
    return np.stack(
        [
            points[:, 0] * rotation[k, 0]
            + points[:, 1] * rotation[k, 1]
            + points[:, 2] * rotation[k, 2]
            for k in range(3)
        ],
        axis=1,
    )
