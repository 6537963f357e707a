"""Layer 1: operating conditions and targets built around a hidden near-optimal cell design.

A draw picks the operating conditions (C-rate, ambient temperature, natural convection
and, where the agent picks cooling, one of the cooling systems on offer) and how hard the
cell is pushed: a seed electrode of random thickness at porosity 0.3, whose simulated
peak temperature ``T*`` becomes the thermal budget. The generator then searches, with the
same PyBaMM model the tools use, for the porosity that stores the most energy per kilogram
at exactly that peak temperature (the best thickness at three porosities by the secant
method on the peak temperature, then the vertex of the parabola through them); where the
agent picks cooling, the best cooling system is found first the same way. The best
simulated design is the hidden solution: the target is its specific energy, and the limit
sits a ``temperature_margin`` fraction of its temperature rise above its peak.

The specific energy at the temperature limit rises steeply with the allowed temperature
and is flat in porosity near its best, so the feasible designs form a thin sliver just
under the limit around the best porosities; since the conditions and the budget move it
from draw to draw, no fixed design (nor the reference cell) lands in it more than rarely.
Draws whose search runs into the transport limit, or in which the reference cell is
feasible, are redrawn. Generation is cached per (config, seed).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, system, user
from agentharness.core.task import Problem, UnsatisfiableKnobsError
from agentharness.tasks.battery.config import BatteryConfig
from agentharness.tasks.battery.problem import Design, Hidden, Public, SeedDesign
from agentharness.tasks.battery.simulator import (
    COOLING_G_PER_H,
    END_CUTOFF,
    PACKAGING_G,
    POROSITY_RANGE,
    REF_POROSITY,
    REF_THICKNESS_UM,
    THICKNESS_RANGE_UM,
    CellDesign,
    CellResult,
    DesignError,
    SimulationError,
    judge,
    simulate,
)

MAX_ATTEMPTS = 60
# The hidden design must warm up at least this much, so the temperature limit matters.
MIN_RISE_K = 4.0
# The seed electrode's porosity, and the porosities searched on either side of it.
SEED_POROSITY = 0.30
SIDE_POROSITIES = (0.22, 0.38)
OUTER_POROSITIES = (0.16, 0.46)
# Electrodes thicker than about this / C-rate**0.6 um are transport-limited at porosity 0.3.
TRANSPORT_CAP_UM = 100.0
TRANSPORT_EXPONENT = 0.6
# A scale for the first guess of the thickness under another cooling.
COOLING_GUESS_H = 10.0
# The iso-temperature search stops within this of T* (K) or after this many simulations.
ISO_TOLERANCE_K = 0.2
ISO_MAX_SIMS = 5
# A porosity's search must get this close to T* to count (else it hit the transport limit).
ISO_ACCEPT_K = 0.4

SYSTEM_PROMPT = """\
You are a lithium-ion cell designer. You choose the positive electrode of a cylindrical \
21700 cell (NMC811 cathode, graphite anode) so that the cell stores enough energy per \
kilogram without overheating during a constant-current discharge.

Each design is evaluated with PyBaMM: a Doyle-Fuller-Newman (DFN) electrochemical model \
coupled to a lumped thermal model (Chen2020 LG M50 parameters). The negative electrode is \
sized automatically to keep the reference capacity balance, so the nominal capacity grows \
with the positive loading (thickness x (1 - porosity)); the discharge current is the given \
C-rate times that nominal capacity. A discharge ends at the 2.5 V cut-off, or early when \
the electrolyte runs out inside a too thick / too dense electrode (transport-limited).

Specific energy = discharge energy / cell mass. The cell mass is the sum of: positive \
coating (NMC811 4750 kg/m3 + electrolyte 1200 kg/m3 in the pores), negative coating \
(graphite 2260 kg/m3, porosity 0.25), separator, aluminium and copper foils, a fixed \
packaging mass, and - only if you add forced cooling - cooling hardware.

Tools:
- simulate_cell(thickness_um, porosity[, heat_transfer_coefficient]): runs the simulation \
and reports energy, capacity, mass breakdown, specific energy, peak temperature, and for \
each constraint its value, target, margin and whether it holds. Simulations are limited.
- calculate(expression): arithmetic on numbers (+ - * / **, parentheses, sqrt, log, floor, \
min, max, ...).
- solve_linear(a, b): the x with a @ x = b (least squares when there is no exact solution), \
e.g. the coefficients of a parabola through three points.
- submit_design(thickness_um, porosity[, heat_transfer_coefficient]): your final answer; \
it ends the episode. The submitted design is re-simulated for grading.
calculate and solve_linear only compute with the numbers you give them; they know nothing \
about the cell and do not count as simulations.

Grading: the submitted design is re-simulated. A design hotter than the limit scores 0. \
Within the limit: full credit when the specific energy also meets the target; a design \
that falls only slightly short of the target (within the stated window) earns partial \
credit in proportion to how close it comes, anything further short earns nothing. Fewer \
simulations score slightly better once the design is feasible.
"""


class BatteryGenerator:
    """Draws conditions, finds the best design at a thermal budget, and sets the targets."""

    def generate(self, config: BatteryConfig, seed: int) -> Problem:
        cached = _generate_cached(config.model_dump_json(), seed)
        return Problem(public=copy.deepcopy(cached.public), hidden=copy.deepcopy(cached.hidden))

    def prompt(self, instance: Instance) -> list[Message]:
        pub = instance.public_as(Public)
        if pub.choose_cooling:
            offered = ", ".join(f"{h:g}" for h in pub.cooling_options_w_m2k or ())
            cooling = (
                f"Cooling: natural convection gives a heat-transfer coefficient of "
                f"{pub.heat_transfer_w_m2k:g} W/m²K. You may fit one forced-cooling system "
                f"instead, which raises the total heat_transfer_coefficient to one of {offered} "
                f"W/m²K; every W/m²K above natural convection adds "
                f"{pub.cooling_mass_g_per_w_m2k:g} g of cooling hardware to the cell mass. "
                "Omit the argument for natural convection."
            )
            answer = "submit_design(thickness_um=..., porosity=..., heat_transfer_coefficient=...)"
        else:
            cooling = (
                f"Cooling: fixed, heat-transfer coefficient {pub.heat_transfer_w_m2k:g} "
                "W/m²K (do not pass heat_transfer_coefficient)."
            )
            answer = "submit_design(thickness_um=..., porosity=...)"
        lo_t, hi_t = pub.thickness_range_um
        lo_p, hi_p = pub.porosity_range
        text = f"""\
Design the positive electrode for these operating conditions:
- Discharge: constant current at {pub.c_rate:g}C from full charge to 2.5 V.
- Ambient (and initial) temperature: {pub.ambient_c:g} °C.
- {cooling}

Requirements:
- Specific energy >= {pub.specific_energy_target_wh_kg:g} Wh/kg.
- Peak cell temperature during the discharge <= {pub.peak_temperature_limit_c:g} °C.

Design variables: thickness_um in [{lo_t:g}, {hi_t:g}] micrometres, porosity in \
[{lo_p:g}, {hi_p:g}]. (Reference LG M50 cell: 75.6 um, porosity 0.335; packaging \
{pub.packaging_g:g} g.)
Simulation budget: {pub.max_simulations} calls to simulate_cell.

The target is close to the most specific energy any design reaches within this temperature \
limit, so only designs that run just under the limit, with a well-chosen porosity, meet \
both. Partial credit: a design within the limit whose specific energy is short of the \
target by less than {100 * pub.progress_window:g} % earns part of the score; further \
short, or hotter than the limit, earns nothing.

Find a design that meets both requirements, then call {answer}."""
        return [system(SYSTEM_PROMPT), user(text)]


@lru_cache(maxsize=512)
def _generate_cached(config_json: str, seed: int) -> Problem:
    config = BatteryConfig.model_validate_json(config_json)
    rng = np.random.default_rng(seed)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        problem = _attempt(config, rng, attempt)
        if problem is not None:
            return problem
    raise UnsatisfiableKnobsError(
        f"battery: could not draw a solvable cell-design problem in {MAX_ATTEMPTS} attempts "
        f"for seed {seed}; widen the thickness range, lower the C-rates or min_utilization"
    )


@dataclass(frozen=True)
class Point:
    """One simulated design of the search."""

    thickness_um: float
    porosity: float
    result: CellResult

    @property
    def peak(self) -> float:
        return self.result.peak_temperature_c

    @property
    def specific_energy(self) -> float:
        return self.result.specific_energy_wh_kg


@dataclass(frozen=True)
class Conditions:
    c_rate: float
    ambient_c: float
    h: float
    baseline_h: float | None
    min_utilization: float

    def run(self, thickness_um: float, porosity: float) -> Point | None:
        """Simulate; ``None`` for a failed or transport-limited discharge."""
        t = round(min(max(thickness_um, THICKNESS_RANGE_UM[0]), THICKNESS_RANGE_UM[1]), 1)
        eps = round(porosity, 3)
        try:
            r = simulate(
                CellDesign(t, eps, self.c_rate, self.h, self.ambient_c), baseline_h=self.baseline_h
            )
        except (DesignError, SimulationError):
            return None
        if r.end_reason != END_CUTOFF or r.utilization < self.min_utilization:
            return None
        return Point(t, eps, r)


def iso_temperature(cond: Conditions, porosity: float, peak: float, guess: float) -> list[Point]:
    """Designs at ``porosity`` whose peak temperature is close to ``peak`` (secant on thickness).

    Transport-limited designs count as too thick. Returns every valid point simulated.
    """
    lo, hi = THICKNESS_RANGE_UM
    points: list[Point] = []
    thickness = guess
    for _ in range(ISO_MAX_SIMS):
        p = cond.run(thickness, porosity)
        if p is None:
            hi = min(hi, thickness)
        else:
            points.append(p)
            if p.peak > peak:
                hi = min(hi, p.thickness_um)
            else:
                lo = max(lo, p.thickness_um)
            if abs(p.peak - peak) < ISO_TOLERANCE_K:
                break
        if hi - lo < 0.2:
            break
        near = sorted(points, key=lambda q: abs(q.peak - peak))
        nxt: float | None = None
        if len(near) >= 2 and abs(near[0].peak - near[1].peak) > 1e-6:
            a, b = near[0], near[1]
            nxt = a.thickness_um + (peak - a.peak) * (b.thickness_um - a.thickness_um) / (
                b.peak - a.peak
            )
        elif near:
            a = near[0]
            rise = max(peak - cond.ambient_c, 1.0)
            nxt = a.thickness_um * (1.0 + 0.4 * (peak - a.peak) / rise)
        if nxt is None or not lo < nxt < hi:
            nxt = (lo + hi) / 2
        thickness = round(nxt, 1)
        if any(abs(q.thickness_um - thickness) < 0.05 for q in points):
            break
    return points


def _interp(points: list[Point], peak: float, attr: str) -> float | None:
    """``attr`` (specific_energy or thickness_um) at ``peak`` from the two nearest points."""
    near = sorted(points, key=lambda q: abs(q.peak - peak))
    if not near or abs(near[0].peak - peak) > ISO_ACCEPT_K:
        return None
    a = near[0]
    if len(near) == 1 or abs(near[1].peak - a.peak) < 1e-6:
        return float(getattr(a, attr))
    b = near[1]
    va, vb = float(getattr(a, attr)), float(getattr(b, attr))
    return va + (peak - a.peak) * (vb - va) / (b.peak - a.peak)


def _vertex(xs: list[float], ys: list[float]) -> float:
    """The x of the parabola's top through three points (the middle x if not concave)."""
    (x0, x1, x2), (y0, y1, y2) = xs, ys
    den = (x0 - x1) * (x0 - x2) * (x1 - x2)
    a = (x2 * (y1 - y0) + x1 * (y0 - y2) + x0 * (y2 - y1)) / den
    b = (x2 * x2 * (y0 - y1) + x1 * x1 * (y2 - y0) + x0 * x0 * (y1 - y2)) / den
    if a >= 0:
        return x1
    return min(max(-b / (2 * a), x0), x2)


def best_design(cond: Conditions, seed: Point) -> tuple[Point, list[Point]] | None:
    """The design with the most specific energy at the seed's peak temperature.

    A porosity whose search cannot reach that temperature (transport-limited first) is
    skipped; ``None`` when no other porosity than the seed's can.
    """
    peak = seed.peak
    loading = seed.thickness_um * (1 - seed.porosity)
    found: dict[float, list[Point]] = {seed.porosity: [seed]}
    energy: dict[float, float] = {seed.porosity: seed.specific_energy}

    def search(eps: float, guess: float | None = None) -> bool:
        pts = iso_temperature(cond, eps, peak, guess or loading / (1 - eps))
        se = _interp(pts, peak, "specific_energy")
        if se is None:
            return False
        found[eps], energy[eps] = pts, se
        return True

    for eps in SIDE_POROSITIES:
        search(eps)
    if len(found) < 2:
        return None
    best = max(energy, key=lambda e: energy[e])
    if best in SIDE_POROSITIES:  # the top lies beyond a side: look one step further out
        search(OUTER_POROSITIES[0] if best == SIDE_POROSITIES[0] else OUTER_POROSITIES[1])
    ranked = sorted(energy)
    top = max(ranked, key=lambda e: energy[e])
    i = ranked.index(top)
    trio = ranked[max(0, min(i - 1, len(ranked) - 3)) :][:3]
    if len(trio) == 3:
        top = round(_vertex(trio, [energy[e] for e in trio]), 3)
    if all(abs(top - e) > 0.005 for e in found):
        known = [(e, _interp(found[e], peak, "thickness_um")) for e in trio]
        xs = [e for e, t in known if t is not None]
        ys = [t for _, t in known if t is not None]
        search(top, float(np.interp(top, xs, ys)))
    points = [p for pts in found.values() for p in pts]
    # The local slope of specific energy against peak temperature ranks points that missed
    # T* slightly: the best is the one with the most energy once moved onto T*.
    slope = _slope(found, peak)
    near = [p for p in points if abs(p.peak - peak) <= ISO_ACCEPT_K]
    chosen = max(near, key=lambda p: p.specific_energy - slope * (p.peak - peak))
    return chosen, points


def best_cooling(cond: Conditions, seed: Point, options: list[float]) -> tuple[float, Point] | None:
    """The cooling on offer (total heat-transfer coefficient) that stores the most energy.

    Forced cooling lets a thicker electrode stay at the same peak temperature but adds
    mass, so the best system is not always the strongest: the best thickness at the
    seed's porosity and the seed's peak temperature is found for each option (the seed's
    own cooling is one). An option whose search cannot reach that temperature (too hot
    even when thin, or transport-limited first) is skipped. Returns the best cooling and
    a design with it close to the seed's peak.
    """
    peak = seed.peak
    energy: dict[float, float] = {cond.h: seed.specific_energy}
    points: dict[float, list[Point]] = {cond.h: [seed]}
    for h in options:
        if h in energy:
            continue
        c = replace(cond, h=h)
        guess = seed.thickness_um * ((h + COOLING_GUESS_H) / (cond.h + COOLING_GUESS_H)) ** 0.5
        pts = iso_temperature(c, seed.porosity, peak, guess)
        se = _interp(pts, peak, "specific_energy")
        if se is not None:
            energy[h], points[h] = se, pts
    h_best = max(energy, key=lambda h: energy[h])
    near = min(points[h_best], key=lambda q: abs(q.peak - peak))
    if abs(near.peak - peak) > ISO_ACCEPT_K:
        return None
    return h_best, near


def _slope(found: dict[float, list[Point]], peak: float) -> float:
    """d(specific energy)/d(peak temperature) along the search, from the closest pair."""
    slopes = []
    for pts in found.values():
        near = sorted(pts, key=lambda q: abs(q.peak - peak))[:2]
        if len(near) == 2 and abs(near[0].peak - near[1].peak) > 0.05:
            a, b = near
            slopes.append((b.specific_energy - a.specific_energy) / (b.peak - a.peak))
    return float(np.median(slopes)) if slopes else 0.0


def transport_cap_um(c_rate: float) -> float:
    """About the thickest electrode (porosity 0.3) that is not transport-limited at ``c_rate``."""
    return TRANSPORT_CAP_UM / c_rate**TRANSPORT_EXPONENT


def _attempt(config: BatteryConfig, rng: np.random.Generator, attempt: int) -> Problem | None:
    """One deterministic draw, or ``None`` to redraw."""
    # The seed thickness first, log-uniform over the range that the slowest C-rate allows,
    # then a C-rate its electrode can sustain: so the hidden designs spread evenly over
    # thin and thick electrodes instead of piling up where every C-rate overlaps.
    c_lo, c_hi = config.c_rate
    lo, hi = config.thickness_um
    hi = max(lo, min(hi, transport_cap_um(c_lo)))
    seed_thickness = round(float(np.exp(rng.uniform(np.log(lo), np.log(hi)))), 1)
    c_top = max(c_lo, min(c_hi, (TRANSPORT_CAP_UM / seed_thickness) ** (1 / TRANSPORT_EXPONENT)))
    c_rate = round(round(float(rng.uniform(c_lo, c_top)) / 0.05) * 0.05, 2)
    c_rate = round(min(max(c_rate, c_lo), c_hi), 2)
    ambient = round(float(rng.uniform(*config.ambient_c)), 1)
    natural = round(float(rng.uniform(*config.heat_transfer)), 1)
    h, baseline = natural, None
    options = [round(natural + x, 1) for x in config.cooling_options]
    if config.choose_cooling:
        h = options[int(rng.integers(len(options)))]
        baseline = natural
    cond = Conditions(c_rate, ambient, h, baseline, config.min_utilization)
    seed = cond.run(seed_thickness, SEED_POROSITY)
    if seed is None or seed.peak - ambient < MIN_RISE_K:
        return None
    if config.choose_cooling:
        cooled = best_cooling(cond, seed, [natural, *options])
        if cooled is None:
            return None
        h, seed = cooled
        cond = replace(cond, h=h)
    found = best_design(cond, seed)
    if found is None:
        return None
    best, points = found
    hidden = best.result
    # Round the requirements outwards so the hidden design keeps its margin exactly.
    target = math.floor(hidden.specific_energy_wh_kg * (1.0 - config.energy_margin) * 10) / 10
    rise = hidden.peak_temperature_c - ambient
    limit = math.ceil((hidden.peak_temperature_c + config.temperature_margin * rise) * 100) / 100
    if not judge(hidden, target, limit).feasible:
        return None
    # The reference cell (printed in the prompt) must not be an answer.
    try:
        ref = simulate(
            CellDesign(REF_THICKNESS_UM, REF_POROSITY, c_rate, natural, ambient),
            baseline_h=baseline,
        )
        if judge(ref, target, limit).feasible:
            return None
    except (DesignError, SimulationError):
        pass

    public = Public(
        c_rate=c_rate,
        ambient_c=ambient,
        heat_transfer_w_m2k=natural,
        choose_cooling=config.choose_cooling,
        specific_energy_target_wh_kg=target,
        peak_temperature_limit_c=limit,
        progress_window=config.progress_window,
        thickness_range_um=THICKNESS_RANGE_UM,
        porosity_range=POROSITY_RANGE,
        packaging_g=PACKAGING_G,
        max_simulations=config.max_simulations,
        cooling_options_w_m2k=tuple(options) if config.choose_cooling else None,
        cooling_mass_g_per_w_m2k=COOLING_G_PER_H if config.choose_cooling else None,
    )
    hidden_data = Hidden(
        solution=Design(
            thickness_um=best.thickness_um,
            porosity=best.porosity,
            heat_transfer_coefficient=h if config.choose_cooling else None,
        ),
        solution_specific_energy_wh_kg=round(hidden.specific_energy_wh_kg, 3),
        solution_peak_temperature_c=round(hidden.peak_temperature_c, 3),
        seed_design=SeedDesign(thickness_um=seed.thickness_um, porosity=seed.porosity),
        search_simulations=len(points) + 1,
        attempts=attempt,
    )
    return Problem(public=public.dump(), hidden=hidden_data.model_dump(mode="json"))
