"""Steady-state heat conduction on a thin rectangular plate (finite differences).

The plate is square, ``size_m`` on a side and ``thickness_m`` thick. Its four edges are
clamped to ambient temperature (a heat sink) and both faces lose heat by convection
with coefficient ``h_conv`` (W/m²K). Heaters are Gaussian patches that inject
``P_i`` watts in total. For the temperature rise ``θ = T - T_amb`` the steady balance
per unit volume is

    kx ∂²θ/∂x² + ky ∂²θ/∂y² - (2 h_conv / thickness) θ + q(x, y) = 0,

discretized with the 5-point stencil on a ``grid_n x grid_n`` node grid (edge nodes
fixed at θ = 0). The matrix is symmetric positive definite and does not depend on the
powers, so it is factorized once per plate (``scipy.sparse.linalg.splu``) and cached;
each simulation is then one sparse triangular solve.

Pure domain code: no agent, tool or message types.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentharness.tasks.thermal.problem import Plate, Public


class SimulationError(ValueError):
    """The simulator cannot evaluate the request (bad powers, numerical failure)."""


@dataclass(frozen=True)
class PlateSpec:
    """Everything that defines one plate; hashable so factorizations can be cached.

    Heater and monitor positions are grid node indices ``(ix, iy)``; node ``(ix, iy)``
    sits at ``x = ix * dx``, ``y = iy * dx`` with ``dx = size_m / (grid_n - 1)``.
    """

    grid_n: int
    size_m: float
    thickness_m: float
    kx: float
    ky: float
    h_conv: float
    ambient_c: float
    heater_sigma_m: float
    heaters: tuple[tuple[int, int], ...]
    monitors: tuple[tuple[int, int], ...]

    @property
    def dx(self) -> float:
        return self.size_m / (self.grid_n - 1)

    def node_xy_m(self, node: tuple[int, int]) -> tuple[float, float]:
        return node[0] * self.dx, node[1] * self.dx


@dataclass(frozen=True)
class SimResult:
    """Temperatures (°C) from one steady solve."""

    powers: tuple[float, ...]
    monitor_c: tuple[float, ...]
    heater_c: tuple[float, ...]
    hottest_c: float
    hottest_node: tuple[int, int]
    field_c: np.ndarray  # (grid_n, grid_n), indexed [iy, ix]


class PlateModel:
    """A factorized plate: solve for any power vector with one sparse solve."""

    def __init__(self, spec: PlateSpec) -> None:
        if spec.grid_n < 5:
            raise SimulationError("grid_n must be at least 5")
        if min(spec.kx, spec.ky, spec.thickness_m, spec.size_m) <= 0 or spec.h_conv < 0:
            raise SimulationError("conductivities, thickness and size must be positive")
        self.spec = spec
        n = spec.grid_n
        self._m = n - 2  # interior nodes per side
        matrix = _assemble(self._m, spec.dx, spec.kx, spec.ky, spec.h_conv, spec.thickness_m)
        import scipy.sparse.linalg as spla  # lazy: keeps listing tasks fast

        self._lu = spla.splu(matrix.tocsc())
        self._sources = self._source_matrix()
        # SuperLU objects are not documented as thread-safe; worlds share cached models.
        self._lock = threading.Lock()

    @property
    def n_heaters(self) -> int:
        return len(self.spec.heaters)

    def _source_matrix(self) -> np.ndarray:
        """Column i: volumetric heat source (W/m³) per watt of heater i, interior nodes."""
        spec, m = self.spec, self._m
        idx = np.arange(1, m + 1) * spec.dx
        xx, yy = np.meshgrid(idx, idx)  # [iy, ix]
        cols = []
        for node in spec.heaters:
            hx, hy = spec.node_xy_m(node)
            g = np.exp(-((xx - hx) ** 2 + (yy - hy) ** 2) / (2 * spec.heater_sigma_m**2))
            # Normalize on the grid so the heater injects exactly its nominal power.
            g /= g.sum() * spec.dx**2 * spec.thickness_m
            cols.append(g.ravel())
        return np.stack(cols, axis=1) if cols else np.zeros((m * m, 0))

    def solve(self, powers: Sequence[float]) -> SimResult:
        """Steady temperatures for heater powers in watts (validated here too)."""
        p = np.asarray(powers, dtype=float)
        if p.shape != (self.n_heaters,):
            raise SimulationError(f"expected {self.n_heaters} powers, got {p.size}")
        if not np.all(np.isfinite(p)):
            raise SimulationError("powers must be finite numbers (no NaN or infinity)")
        if np.any(p < 0):
            raise SimulationError("powers must be non-negative")
        q = self._sources @ p
        with self._lock:
            theta = self._lu.solve(q)
        if not np.all(np.isfinite(theta)):
            raise SimulationError("the linear solve produced non-finite temperatures")
        n, m = self.spec.grid_n, self._m
        field = np.full((n, n), float(self.spec.ambient_c))
        field[1 : m + 1, 1 : m + 1] += theta.reshape(m, m)
        iy, ix = np.unravel_index(int(np.argmax(field)), field.shape)
        return SimResult(
            powers=tuple(float(x) for x in p),
            monitor_c=tuple(float(field[y, x]) for x, y in self.spec.monitors),
            heater_c=tuple(float(field[y, x]) for x, y in self.spec.heaters),
            hottest_c=float(field[iy, ix]),
            hottest_node=(int(ix), int(iy)),
            field_c=field,
        )


def _assemble(m: int, dx: float, kx: float, ky: float, h_conv: float, t: float) -> Any:
    """SPD 5-point operator for -(kx θ_xx + ky θ_yy) + (2h/t) θ on m x m interior nodes."""
    import scipy.sparse as sp

    one = np.ones(m)
    d2 = sp.diags([-one[:-1], 2 * one, -one[:-1]], [-1, 0, 1], format="csr") / dx**2
    eye = sp.identity(m, format="csr")
    # Unknowns are ordered [iy, ix] row-major: x varies fastest.
    op = kx * sp.kron(eye, d2) + ky * sp.kron(d2, eye) + (2 * h_conv / t) * sp.identity(m * m)
    return sp.csr_matrix(op)


_CACHE: OrderedDict[PlateSpec, PlateModel] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 64


def get_model(spec: PlateSpec) -> PlateModel:
    """The factorized model of ``spec``, built once and kept in a small LRU cache."""
    with _CACHE_LOCK:
        model = _CACHE.get(spec)
        if model is not None:
            _CACHE.move_to_end(spec)
            return model
    model = PlateModel(spec)
    with _CACHE_LOCK:
        _CACHE[spec] = model
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return model


def response_matrices(model: PlateModel) -> tuple[np.ndarray, np.ndarray]:
    """Rise per watt at monitors (m x n) and at heater nodes (n x n), by superposition."""
    n = model.n_heaters
    g = np.zeros((len(model.spec.monitors), n))
    h = np.zeros((n, n))
    for j in range(n):
        unit = [0.0] * n
        unit[j] = 1.0
        r = model.solve(unit)
        g[:, j] = np.asarray(r.monitor_c) - model.spec.ambient_c
        h[:, j] = np.asarray(r.heater_c) - model.spec.ambient_c
    return g, h


def rms_excess(errors_k: Sequence[float] | np.ndarray, tolerance_k: float) -> float:
    """Root mean square of how far each monitor misses its tolerance band (0 when all hit)."""
    e = np.maximum(np.abs(np.asarray(errors_k, dtype=float)) - tolerance_k, 0.0)
    return float(np.sqrt(np.mean(e * e))) if e.size else 0.0


def uniform_baseline(
    g: np.ndarray, rise_k: Sequence[float] | np.ndarray, tolerance_k: float, p_max: float
) -> tuple[float, float]:
    """The best *uniform* setting (every heater at the same power ``c``) for given target rises.

    Returns ``(c, rms_excess)``: the power in ``[0, p_max]`` whose monitor errors have the
    smallest :func:`rms_excess`, and that excess. This is what an answer that ignores the
    plate's geometry can reach at best, so rewards are measured against it. The excess is
    convex in ``c`` (a root mean square of convex functions), so a grid search refined by a
    bounded scalar minimisation finds the optimum; the result is deterministic.
    """
    from scipy.optimize import minimize_scalar

    a = np.asarray(g, dtype=float).sum(axis=1)  # rise per watt when every heater gets c
    rise = np.asarray(rise_k, dtype=float)

    def excess(c: float) -> float:
        return rms_excess(a * c - rise, tolerance_k)

    grid = np.linspace(0.0, p_max, 201)
    miss = np.maximum(np.abs(np.outer(grid, a) - rise[None, :]) - tolerance_k, 0.0)
    values = np.sqrt(np.mean(miss * miss, axis=1))
    k = int(np.argmin(values))
    lo, hi = grid[max(0, k - 1)], grid[min(len(grid) - 1, k + 1)]
    best_c, best = float(grid[k]), float(values[k])
    if hi > lo:
        res = minimize_scalar(excess, bounds=(float(lo), float(hi)), method="bounded")
        if res.success and float(res.fun) < best:
            best_c, best = float(res.x), float(res.fun)
    return best_c, best


def plate_spec(
    plate: Plate, heaters: Sequence[tuple[int, int]], monitors: Sequence[tuple[int, int]]
) -> PlateSpec:
    """The plate as the prompt states it, with heaters and monitors at these grid nodes."""
    return PlateSpec(
        grid_n=plate.grid_n,
        size_m=plate.size_mm / 1000.0,
        thickness_m=plate.thickness_mm / 1000.0,
        kx=plate.kx_w_mk,
        ky=plate.ky_w_mk,
        h_conv=plate.h_conv_w_m2k,
        ambient_c=plate.ambient_c,
        heater_sigma_m=plate.heater_radius_mm / 1000.0,
        heaters=tuple(heaters),
        monitors=tuple(monitors),
    )


def spec_from_public(public: Public) -> PlateSpec:
    """Rebuild the plate from an instance's public data."""
    return plate_spec(
        public.plate, [h.node for h in public.heaters], [m.node for m in public.monitors]
    )
