"""Layer 1: plates, heaters and monitors built around a hidden feasible power vector.

Each plate is drawn at random (conductivity, heater and monitor positions), then a hidden
power vector, and the targets are the monitor temperatures that vector produces. A draw is
kept only when it is well posed and cannot be solved without reading the plate:

* every monitor responds to some heater and the response matrix is not near-singular;
* no *uniform* setting (every heater at one power) comes within ``lazy_gap`` tolerances
  (RMS excess) of the targets, so the targets need heater-specific powers;
* at most ``max_lucky_hit`` of blindly drawn power vectors hit every target;
* the hidden vector, re-simulated on the rounded public data, hits every target safely.
"""

from __future__ import annotations

import math

import numpy as np

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, system, user
from agentharness.core.task import Problem, UnsatisfiableKnobsError
from agentharness.tasks.thermal.config import ThermalConfig
from agentharness.tasks.thermal.problem import Heater, Hidden, Monitor, Plate, Public, target_rise
from agentharness.tasks.thermal.simulator import (
    PlateModel,
    get_model,
    plate_spec,
    response_matrices,
    uniform_baseline,
)

MAX_ATTEMPTS = 300
# Hidden power vectors tried per plate before the plate itself is redrawn.
SOLUTION_DRAWS = 40
# The Monte Carlo sample that estimates how often a blind guess would hit every target.
LUCKY_SAMPLES = 8000
LUCKY_SEED = 20260

# v6: no "Tools:" section. It repeated the tool signatures the agent reads anyway (and
# left out probe_heaters); what they cannot say is the one sentence before the Rules.
SYSTEM_PROMPT = """\
You are a thermal control engineer. You set the electrical power of heaters on a thin \
metal plate so that the steady-state temperature at monitor points matches given \
targets, while no point of the plate exceeds a safety limit. calculate, solve_linear and \
minimize_max only compute with the numbers you give them: they know nothing about the \
plate and do not count as simulations.

Rules:
- `powers` is a list of watts, one per heater, in heater order (H1, H2, ...). Every power \
must be between 0 and the maximum power.
- A target is hit when |T - target| <= tolerance. Full credit needs every target hit with \
the whole plate below the safety limit; fewer simulations then score slightly better. An \
answer that exceeds the safety limit anywhere scores 0. An answer that misses some target \
earns only a little partial credit, and only when it comes much closer to the targets than \
any uniform setting (every heater at the same power) could.
"""


class ThermalGenerator:
    """Draws a plate layout, a hidden power vector, and the targets that vector meets."""

    def generate(self, config: ThermalConfig, seed: int) -> Problem:
        rng = np.random.default_rng(seed)
        for _ in range(MAX_ATTEMPTS):
            problem = _attempt(config, rng)
            if problem is not None:
                return problem
        raise UnsatisfiableKnobsError(
            f"thermal: could not draw a well-posed plate in {MAX_ATTEMPTS} attempts for seed "
            f"{seed}; use fewer "
            "heaters/monitors, a smaller heater_radius_mm or a larger plate, a larger "
            "max_power_w, or relax lazy_gap / max_lucky_hit"
        )

    def prompt(self, instance: Instance) -> list[Message]:
        pub = instance.public_as(Public)
        plate = pub.plate
        # v6: positions as (x, y) in mm, stated once, instead of "x = .. mm, y = .. mm".
        heaters = "\n".join(f"  {h.id} at ({h.x_mm:g}, {h.y_mm:g})" for h in pub.heaters)
        monitors = "\n".join(
            f"  {m.id} at ({m.x_mm:g}, {m.y_mm:g}): target {m.target_c:.1f} °C, "
            f"rise {target_rise(m.target_c, plate.ambient_c):g} K"
            for m in pub.monitors
        )
        n = len(pub.heaters)
        example = ", ".join(f"P{i + 1}" for i in range(n))
        # v6: the same facts in fewer words; the tools' signatures say what a call costs.
        text = f"""\
Plate: {plate.size_mm:g} x {plate.size_mm:g} mm, {plate.thickness_mm:g} mm thick, thermal \
conductivity {plate.kx_w_mk:g} W/m·K along x and {plate.ky_w_mk:g} W/m·K along y. The edges are \
held at the ambient {plate.ambient_c:g} °C; both faces lose heat to the ambient air \
(h = {plate.h_conv_w_m2k:g} W/m²K). Positions in mm from the lower-left corner.

Heaters ({n}, Gaussian patches of radius {plate.heater_radius_mm:g} mm, each 0 to \
{pub.max_power_w:g} W):
{heaters}

Monitors, their target temperature and target rise above ambient:
{monitors}

Tolerance: ±{pub.tolerance_k:g} K at every monitor.
Safety limit: no point of the plate may exceed {pub.safety_limit_c:g} °C.
Simulation budget: {pub.max_simulations} simulations.

Find powers that hit every target safely, then call submit_powers with powers = [{example}]."""
        return [system(SYSTEM_PROMPT), user(text)]


def _attempt(config: ThermalConfig, rng: np.random.Generator) -> Problem | None:
    """One deterministic draw; ``None`` when the draw is not well posed."""
    n_grid = config.grid_n
    k = float(rng.uniform(*config.conductivity))
    ratio = float(rng.uniform(1.0, config.anisotropy))
    kx, ky = (k, k / ratio) if rng.random() < 0.5 else (k / ratio, k)
    heaters = _place(
        rng,
        n_grid,
        config.n_heaters,
        (0.15, 0.85),
        min(0.22, 0.7 / math.sqrt(config.n_heaters)),
        [],
    )
    if heaters is None:
        return None
    monitors = _place(
        rng,
        n_grid,
        config.n_monitors,
        (0.1, 0.9),
        min(0.12, 0.5 / math.sqrt(config.n_monitors)),
        heaters,
    )
    if monitors is None:
        return None
    dx_mm = config.plate_mm / (n_grid - 1)
    plate = Plate(
        size_mm=config.plate_mm,
        thickness_mm=config.thickness_mm,
        kx_w_mk=round(kx, 1),
        ky_w_mk=round(ky, 1),
        h_conv_w_m2k=config.h_conv,
        ambient_c=config.ambient_c,
        heater_radius_mm=config.heater_radius_mm,
        grid_n=n_grid,
    )
    # Build the model from the published plate so every consumer sees the very same plate.
    model = get_model(plate_spec(plate, heaters, monitors))
    g, h = response_matrices(model)
    # Every monitor must respond noticeably to some heater, and the targets must pin
    # down the powers well (no near-duplicate rows or columns of the response matrix).
    if np.min(g.max(axis=1)) < 0.1:
        return None
    sv = np.linalg.svd(g, compute_uv=False)
    if sv[-1] < 0.03 * sv[0]:
        return None

    p_max = config.max_power_w
    # Draw the hidden powers until no uniform setting comes close to the targets they
    # produce: the targets then require telling the heaters apart (non-uniform powers).
    # A cheap screen on a grid of uniform settings (it can only overestimate the uniform
    # optimum); the exact check on the rounded targets follows.
    uniform_rise = np.outer(np.linspace(0.0, p_max, 101), g.sum(axis=1))
    for _ in range(SOLUTION_DRAWS):
        solution = np.round(rng.uniform(0.1, 0.9, config.n_heaters) * p_max, 2)
        rise = g @ solution
        if rise.min() < 3.0:
            continue
        miss = np.maximum(np.abs(uniform_rise - rise) - config.tolerance_k, 0.0)
        if np.sqrt(np.mean(miss * miss, axis=1)).min() >= config.lazy_gap * config.tolerance_k:
            break
    else:
        return None
    result = model.solve(solution.tolist())
    targets = [round(t, 1) for t in result.monitor_c]
    if min(targets) - config.ambient_c < 3.0:
        return None
    rises = [t - config.ambient_c for t in targets]
    _, lazy = uniform_baseline(g, rises, config.tolerance_k, p_max)
    if lazy < config.lazy_gap * config.tolerance_k:
        return None
    if lucky_hit_rate(g, rises, config.tolerance_k, p_max) > config.max_lucky_hit:
        return None
    limit = math.ceil(result.hottest_c + config.safety_margin_k)
    if not _verify(model, solution, targets, config, limit):
        return None
    public = Public(
        plate=plate,
        heaters=tuple(
            Heater(id=f"H{i + 1}", x_mm=round(x * dx_mm, 2), y_mm=round(y * dx_mm, 2), node=(x, y))
            for i, (x, y) in enumerate(heaters)
        ),
        monitors=tuple(
            Monitor(
                id=f"M{i + 1}",
                x_mm=round(x * dx_mm, 2),
                y_mm=round(y * dx_mm, 2),
                node=(x, y),
                target_c=t,
            )
            for i, ((x, y), t) in enumerate(zip(monitors, targets, strict=True))
        ),
        max_power_w=config.max_power_w,
        tolerance_k=config.tolerance_k,
        max_simulations=config.max_simulations,
        safety_limit_c=float(limit),
    )
    hidden = Hidden(
        solution=tuple(solution.tolist()),
        solution_monitor_c=tuple(round(t, 4) for t in result.monitor_c),
        solution_hottest_c=round(result.hottest_c, 4),
        safety_binding=_safety_binds(g, h, targets, config, limit),
        uniform_baseline_excess_k=round(lazy, 4),
    )
    return Problem(public=public.model_dump(mode="json"), hidden=hidden.model_dump(mode="json"))


def lucky_hit_rate(g: np.ndarray, rises: list[float], tolerance_k: float, p_max: float) -> float:
    """Share of power vectors drawn uniformly from the allowed box that hit every target.

    A fixed sample (its own seed, so the instance's random stream is untouched) of
    ``LUCKY_SAMPLES`` vectors; superposition makes each one a matrix product.
    """
    sample = np.random.default_rng(LUCKY_SEED).uniform(0.0, p_max, (LUCKY_SAMPLES, g.shape[1]))
    miss = np.abs(sample @ g.T - np.asarray(rises)[None, :])
    return float(np.mean(np.all(miss <= tolerance_k, axis=1)))


def _place(
    rng: np.random.Generator,
    n_grid: int,
    count: int,
    span: tuple[float, float],
    min_sep: float,
    avoid: list[tuple[int, int]],
) -> list[tuple[int, int]] | None:
    """Grid nodes inside ``span`` (fractions of the side), ``min_sep`` apart and off ``avoid``."""
    lo, hi = (round(f * (n_grid - 1)) for f in span)
    sep = min_sep * (n_grid - 1)
    clear = 0.06 * (n_grid - 1)
    nodes: list[tuple[int, int]] = []
    for _ in range(400):
        if len(nodes) == count:
            break
        cand = (int(rng.integers(lo, hi + 1)), int(rng.integers(lo, hi + 1)))
        if any(math.dist(cand, o) < sep for o in nodes):
            continue
        if any(math.dist(cand, o) < clear for o in avoid):
            continue
        nodes.append(cand)
    return nodes if len(nodes) == count else None


def _verify(
    model: PlateModel, powers: np.ndarray, targets: list[float], config: ThermalConfig, limit: float
) -> bool:
    """Re-simulate the hidden solution: in bounds, every target hit, safety limit held."""
    if np.any(powers < 0) or np.any(powers > config.max_power_w):
        return False
    r = model.solve(powers.tolist())
    hits = all(abs(t - c) <= config.tolerance_k for t, c in zip(targets, r.monitor_c, strict=True))
    return hits and r.hottest_c <= limit


def _safety_binds(
    g: np.ndarray, h: np.ndarray, targets: list[float], config: ThermalConfig, limit: float
) -> bool:
    """Does some target-hitting power vector overheat a heater? (the limit then matters)"""
    from scipy.optimize import linprog

    rise = np.asarray(targets) - config.ambient_c
    a_ub = np.vstack([g, -g])
    b_ub = np.concatenate([rise + config.tolerance_k, -(rise - config.tolerance_k)])
    bounds = [(0.0, config.max_power_w)] * g.shape[1]
    for row in h:
        res = linprog(-row, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
        if res.status == 0 and -res.fun + config.ambient_c > limit:
            return True
    return False
