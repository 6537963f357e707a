"""Structural and cost model of a bolted annular flange (pure domain code).

The part
--------
A flat annular flange with bore diameter ``bore_d``, bolt-circle diameter ``bcd`` and
outer diameter ``outer_d``. The pipe/hub welded into the bore pulls on the flange with
an axial force ``F`` (e.g. the pressure end load ``p * pi * bore_d**2 / 4``), spread as a
uniform line load ``w = F / (2 pi b)`` along the inner edge ``r = b = bore_d / 2``. The
bolts on the bolt circle ``r = a = bcd / 2`` react it. The designer chooses the plate
thickness ``t``, the material, the bolt count ``n`` and the bolt size ``d``.

Displacement model (documented, closed form)
--------------------------------------------
``delta = delta_bending + delta_shear + delta_bolts`` — the axial displacement of the
loaded inner edge relative to the mating face.

1. **Bending** — axisymmetric Kirchhoff plate between ``b`` and ``a``, inner edge free
   and loaded by ``w``; outer edge held vertically on the bolt circle with an elastic
   rotational restraint ``k_theta`` (N*mm/mm/rad). The general solution of
   ``nabla^4 y = 0`` is ``y = C1 + C2 r^2 + C3 ln r + C4 r^2 ln r`` with
   ``C4 = F / (8 pi D)`` from vertical equilibrium, ``D = E t^3 / (12 (1 - nu^2))``, and
   the boundary conditions ``M_r(b) = 0``, ``y(a) = 0`` and
   ``D (y'' + nu y'/r)|_a + k_theta y'(a) = 0`` (the natural boundary condition of an edge
   rotational spring). The two limits are Roark's closed forms, *Roark's Formulas for
   Stress and Strain*, 7th ed., Table 11.2, case 1a (annular line load at ``r0 = b``,
   outer edge simply supported, inner edge free: ``y_b = -w a^3/D (C1 L9 / C7 - L3)``)
   for ``k_theta = 0`` and case 1e (outer edge fixed, inner edge free:
   ``y_b = -w a^3/D (C1 L6 / C4 - L3)``) for ``k_theta -> inf``; the tests check both.
2. **Bolt restraint** — rotating the rim by ``theta`` about the outer heel (the flange
   edge bearing on the mating face) stretches each bolt by ``e theta`` with lever
   ``e = (outer_d - bcd) / 2``. With bolt axial stiffness ``k_b = E_bolt A_s / L_eff``
   (``A_s`` the tensile stress area, ``L_eff = t + 0.8 d`` the clamped length plus the
   usual 0.4 d per head/nut) and ``n`` bolts smeared over the circumference, the heel
   sees a line spring ``k_line = eta n k_b / (2 pi a)`` in series with the rim's own
   cantilever bending ``e^3 / (3 D)``, so
   ``k_theta = e^2 / (1 / k_line + e^3 / (3 D))``. ``eta = min(1, (1.8 d + 2 t) / pitch)``
   is the share of the rim a bolt actually grips (its nut face spread at 45 degrees
   through the plate) — with widely spaced bolts the rim between them is free. More and
   larger bolts, a thicker plate and a wider rim push the support from hinged towards
   clamped.
3. **Transverse shear** — thick-plate (Mindlin) correction from the exact shear force
   ``Q(r) = F / (2 pi r)``: ``delta_shear = 1.2 F ln(a/b) / (2 pi G t)``,
   ``G = E / (2 (1 + nu))``, shear factor 1.2 for a rectangular section (Roark also
   tabulates shear deflections of thick annular plates; this is derived directly from
   the statically determinate shear force rather than quoted from a table).
4. **Bolt stretch** — the bolt circle itself rises by ``F / (n k_b)``.

Design rules (violations raise :class:`DesignError`)
----------------------------------------------------
* ``n`` is a multiple of 4 between 4 and 32 (flange practice: bolts straddle the
  centre lines); ``d`` is a standard metric size in :data:`BOLTS`.
* Bolt pitch ``pi * bcd / n`` at least ``2.5 d`` (holes must not overlap and a wrench
  must fit between nuts).
* Hole centre to outer edge at least ``1.2 d_hole``; hole centre to bore at least
  ``1.5 d_hole`` (nut clearance to the hub).
* Bolt tensile stress ``F / (n A_s)`` at most :data:`BOLT_ALLOWABLE_MPA`.
* ``t`` between :data:`MIN_THICKNESS_MM` and the radial span ``a - b`` (beyond that the
  part is a block, not a plate, and the model does not apply).

Strength (a requirement, not a rule: :func:`analyze` reports it)
-----------------------------------------------------------------
The peak plate bending stress ``6 M_max / t^2`` (``M_max`` the larger of the tangential
moment at the bore and the radial moment at the bolt circle) must not exceed the
material's yield stress over :data:`STRESS_SAFETY_FACTOR`. Thickness is the only
remedy the plate has, so the cheapest design meets it with
``t >= max(t_displacement, t_stress)``.

Cost model (US dollars per flange)
----------------------------------
* material: the round blank ``pi/4 outer_d^2 t`` times density times price per kg;
* turning: ``SETUP + m (FACE_RATE * 2 * face_area + TURN_RATE * pi (outer_d + bore_d) t)``
  with ``m`` the material's machinability factor (steel A36 = 1);
* drilling: ``n m (HOLE_BASE + DRILL_RATE * d_hole * t)``;
* bolts: ``n`` bolt sets (bolt, nut, two washers) at the catalogue price of size ``d``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any


class DesignError(ValueError):
    """A design that breaks a rule of the model; the message says how to fix it."""


@dataclass(frozen=True)
class Material:
    """A catalogue material (plate), with the cost data the model uses."""

    name: str
    label: str
    e_gpa: float
    nu: float
    density: float  # kg/m^3
    price_per_kg: float  # $/kg of blank
    machinability: float  # machining cost multiplier, steel A36 = 1
    yield_mpa: float  # 0.2% proof / yield stress

    @property
    def allowable_mpa(self) -> float:
        """Allowed peak plate bending stress: yield over :data:`STRESS_SAFETY_FACTOR`."""
        return self.yield_mpa / STRESS_SAFETY_FACTOR


# Handbook values (ASM / MatWeb typical: 4140 annealed, C954 as cast); prices are
# indicative 2020s bar/plate prices.
MATERIALS: dict[str, Material] = {
    m.name: m
    for m in (
        Material("steel_A36", "ASTM A36 STEEL", 200.0, 0.26, 7850.0, 1.10, 1.0, 250.0),
        Material("stainless_304", "STAINLESS 304", 193.0, 0.29, 8000.0, 4.20, 1.8, 215.0),
        Material("aluminium_6061", "ALUMINIUM 6061-T6", 68.9, 0.33, 2700.0, 5.00, 0.7, 276.0),
        Material("ductile_iron", "DUCTILE IRON 65-45-12", 169.0, 0.275, 7100.0, 1.60, 0.9, 310.0),
        Material("steel_4140", "ALLOY STEEL 4140", 205.0, 0.29, 7850.0, 2.30, 1.3, 415.0),
        Material("bronze_C954", "AL-BRONZE C954", 110.0, 0.32, 7450.0, 9.00, 1.1, 205.0),
        Material("titanium_Ti6Al4V", "TITANIUM Ti-6Al-4V", 114.0, 0.34, 4430.0, 35.0, 3.5, 880.0),
    )
}


@dataclass(frozen=True)
class BoltSize:
    """A metric coarse bolt: stress area (ISO 898-1), clearance hole (ISO 273 medium)."""

    d: int
    stress_area: float  # mm^2
    hole_d: float  # mm
    set_price: float  # $ per bolt set (grade 8.8 bolt, nut, two washers)


BOLTS: dict[int, BoltSize] = {
    b.d: b
    for b in (
        BoltSize(10, 58.0, 11.0, 1.20),
        BoltSize(12, 84.3, 13.5, 1.60),
        BoltSize(16, 157.0, 17.5, 2.60),
        BoltSize(20, 245.0, 22.0, 4.20),
        BoltSize(24, 353.0, 26.0, 6.50),
        BoltSize(30, 561.0, 33.0, 11.00),
        BoltSize(36, 817.0, 39.0, 17.00),
    )
}

BOLT_E_MPA = 205_000.0
BOLT_ALLOWABLE_MPA = 320.0  # half the 640 MPa yield of grade 8.8: margin for prying
MIN_PITCH_FACTOR = 2.5
OUTER_EDGE_FACTOR = 1.2
INNER_EDGE_FACTOR = 1.5
MIN_BOLTS, MAX_BOLTS = 4, 32
MIN_THICKNESS_MM = 3.0
STRESS_SAFETY_FACTOR = 1.5  # allowed plate bending stress = yield / 1.5

SETUP = 20.0  # $ per part
FACE_RATE = 0.0004  # $/mm^2 faced (both faces)
TURN_RATE = 0.0015  # $/mm^2 of turned cylindrical surface (OD and bore)
HOLE_BASE = 1.5  # $ per hole (positioning, deburring)
DRILL_RATE = 0.002  # $ per mm of hole diameter per mm of depth


@dataclass(frozen=True)
class Geometry:
    """The fixed, drawing-given part: diameters in mm and the axial load in N."""

    outer_d: float
    bore_d: float
    bcd: float
    load_n: float

    @property
    def a(self) -> float:
        return self.bcd / 2

    @property
    def b(self) -> float:
        return self.bore_d / 2

    @property
    def rim(self) -> float:
        """Prying lever: bolt circle to outer edge."""
        return (self.outer_d - self.bcd) / 2


@dataclass(frozen=True)
class Design:
    """The designer's choice."""

    thickness: float
    material: str
    n_bolts: int
    bolt_d: int


@dataclass(frozen=True)
class Analysis:
    """Result of :func:`analyze`; lengths in mm, stresses in MPa."""

    max_displacement: float
    bending: float
    shear: float
    bolt_stretch: float
    restraint: float  # 0 = hinged (Roark 1a), 1 = clamped (Roark 1e)
    bolt_stress: float
    plate_stress: float
    allowable_stress: float  # the material's yield / STRESS_SAFETY_FACTOR

    @property
    def stress_ok(self) -> bool:
        return self.plate_stress <= self.allowable_stress

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class Cost:
    """Result of :func:`cost`, dollars."""

    material: float
    machining: float
    drilling: float
    bolts: float
    mass_kg: float

    @property
    def total(self) -> float:
        return self.material + self.machining + self.drilling + self.bolts


def _finite_positive(name: str, value: float) -> None:
    if not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise DesignError(f"{name} must be a finite positive number, got {value!r}.")


def check_geometry(geom: Geometry) -> None:
    for name in ("outer_d", "bore_d", "bcd", "load_n"):
        _finite_positive(name, getattr(geom, name))
    if not geom.bore_d < geom.bcd < geom.outer_d:
        raise DesignError("geometry needs bore diameter < bolt circle diameter < outer diameter.")


def check_parts(design: Design) -> None:
    """The rules that do not depend on the drawing: thickness floor, catalogue, bolt count."""
    t = design.thickness
    if not isinstance(t, int | float) or not math.isfinite(t):
        raise DesignError(f"thickness must be a finite number in mm, got {t!r}.")
    if t < MIN_THICKNESS_MM:
        raise DesignError(f"thickness {t:g} mm is below the minimum {MIN_THICKNESS_MM:g} mm.")
    if design.material not in MATERIALS:
        raise DesignError(
            f"unknown material '{design.material}'; choose one of {', '.join(MATERIALS)}."
        )
    n = design.n_bolts
    if isinstance(n, bool) or not isinstance(n, int) or not MIN_BOLTS <= n <= MAX_BOLTS or n % 4:
        raise DesignError(
            f"n_bolts must be a multiple of 4 from {MIN_BOLTS} to {MAX_BOLTS}, got {n!r}."
        )
    if design.bolt_d not in BOLTS:
        raise DesignError(
            f"bolt_diameter {design.bolt_d!r} is not a standard size; use one of "
            f"{', '.join(f'M{d}' for d in BOLTS)} (give the number, e.g. 16)."
        )


def check_design(geom: Geometry, design: Design) -> None:
    """Raise :class:`DesignError` naming the broken rule and the fix."""
    check_geometry(geom)
    check_parts(design)
    t, n, bolt = design.thickness, design.n_bolts, BOLTS[design.bolt_d]
    span = geom.a - geom.b
    if t > span:
        raise DesignError(
            f"thickness {t:g} mm exceeds the radial span (bolt circle - bore)/2 = {span:g} mm; "
            "the part is then a block, not a plate, and the plate model does not apply. "
            "Use a stiffer material or a stronger bolt pattern instead."
        )
    pitch = math.pi * geom.bcd / n
    if pitch < bolt.hole_d:
        raise DesignError(
            f"{n} holes of {bolt.hole_d:g} mm overlap on the {geom.bcd:g} mm bolt circle "
            f"(pitch {pitch:.1f} mm); use fewer or smaller bolts."
        )
    if pitch < MIN_PITCH_FACTOR * bolt.d:
        raise DesignError(
            f"bolt pitch {pitch:.1f} mm is below {MIN_PITCH_FACTOR:g} x d = "
            f"{MIN_PITCH_FACTOR * bolt.d:g} mm (no wrench clearance); use fewer or smaller bolts."
        )
    if geom.rim < OUTER_EDGE_FACTOR * bolt.hole_d:
        raise DesignError(
            f"edge distance {geom.rim:g} mm (bolt circle to outer edge) is below "
            f"{OUTER_EDGE_FACTOR:g} x hole diameter = {OUTER_EDGE_FACTOR * bolt.hole_d:g} mm "
            f"for M{bolt.d}; use a smaller bolt."
        )
    if span < INNER_EDGE_FACTOR * bolt.hole_d:
        raise DesignError(
            f"distance {span:g} mm from bolt circle to bore is below "
            f"{INNER_EDGE_FACTOR:g} x hole diameter = {INNER_EDGE_FACTOR * bolt.hole_d:g} mm "
            f"for M{bolt.d} (no nut clearance to the hub); use a smaller bolt."
        )
    stress = geom.load_n / (n * bolt.stress_area)
    if stress > BOLT_ALLOWABLE_MPA:
        raise DesignError(
            f"bolts overloaded: {geom.load_n / 1000:.1f} kN over {n} x M{bolt.d} gives "
            f"{stress:.0f} MPa > allowable {BOLT_ALLOWABLE_MPA:g} MPa; use more or larger bolts."
        )


def _bolt_stiffness(design: Design) -> float:
    bolt = BOLTS[design.bolt_d]
    return BOLT_E_MPA * bolt.stress_area / (design.thickness + 0.8 * bolt.d)


def plate_bending(
    load_n: float, a: float, b: float, e_mpa: float, nu: float, t: float, k_theta: float
) -> tuple[float, float, float]:
    """Bending solution of the restrained annular plate (see the module docstring).

    Solves the two boundary conditions for ``C2, C3`` in closed form. Returns
    ``(deflection, restraint, moment)``: the inner-edge deflection ``y_b - y_a`` (mm);
    ``restraint`` = ``M_r(a)`` over its clamped value (0 hinge, Roark 1a; 1 clamp, Roark
    1e); and the largest bending moment per unit length (N*mm/mm), the larger of the
    tangential moment at the bore and the radial moment at the bolt circle.
    """
    d_flex = e_mpa * t**3 / (12.0 * (1.0 - nu**2))
    c4 = load_n / (8.0 * math.pi * d_flex)
    la, lb = math.log(a), math.log(b)

    def s_of(c2: float, c3: float, r: float, lr: float) -> float:
        # S(r) = y'' + nu y'/r = 2 C2 (1+nu) - C3 (1-nu)/r^2 + C4 (2 (1+nu) ln r + 3 + nu)
        return 2 * c2 * (1 + nu) - c3 * (1 - nu) / r**2 + c4 * (2 * (1 + nu) * lr + 3 + nu)

    def solve(k: float) -> tuple[float, float]:
        # y'(r) = 2 C2 r + C3 / r + C4 (2 r ln r + r); rows: M_r(b) = 0, edge spring at a.
        a11, a12 = 2.0 * (1.0 + nu), -(1.0 - nu) / b**2
        r1 = -c4 * (2.0 * (1.0 + nu) * lb + 3.0 + nu)
        if math.isinf(k):  # clamped: y'(a) = 0
            a21, a22 = 2.0 * a, 1.0 / a
            r2 = -c4 * (2.0 * a * la + a)
        else:
            a21 = d_flex * 2.0 * (1.0 + nu) + k * 2.0 * a
            a22 = -d_flex * (1.0 - nu) / a**2 + k / a
            r2 = -(d_flex * c4 * (2.0 * (1.0 + nu) * la + 3.0 + nu) + k * c4 * (2.0 * a * la + a))
        det = a11 * a22 - a12 * a21
        return (r1 * a22 - a12 * r2) / det, (a11 * r2 - a21 * r1) / det

    c2, c3 = solve(k_theta)
    deflection = c2 * (b * b - a * a) + c3 * (lb - la) + c4 * (b * b * lb - a * a * la)
    m_ra = -d_flex * s_of(c2, c3, a, la)
    # M_t(b) = -D (y'/r + nu y''); with M_r(b) = 0 this is -D (1 - nu^2) y'(b) / b.
    slope_b = 2 * c2 * b + c3 / b + c4 * (2 * b * lb + b)
    m_tb = -d_flex * (1 - nu**2) * slope_b / b
    c2c, c3c = solve(math.inf)
    m_ra_clamped = -d_flex * s_of(c2c, c3c, a, la)
    restraint = m_ra / m_ra_clamped if m_ra_clamped != 0 else 0.0
    return deflection, restraint, max(abs(m_ra), abs(m_tb))


def rim_restraint(geom: Geometry, design: Design, e_mpa: float, nu: float) -> float:
    """Rotational stiffness (N*mm/mm/rad) the bolts and the rim give the bolt-circle edge."""
    bolt = BOLTS[design.bolt_d]
    t, n = design.thickness, design.n_bolts
    pitch = math.pi * geom.bcd / n
    eta = min(1.0, (1.8 * bolt.d + 2.0 * t) / pitch)
    k_line = eta * n * _bolt_stiffness(design) / (2.0 * math.pi * geom.a)
    d_flex = e_mpa * t**3 / (12.0 * (1.0 - nu**2))
    e = geom.rim
    return e**2 / (1.0 / k_line + e**3 / (3.0 * d_flex))


def analyze(geom: Geometry, design: Design) -> Analysis:
    """Displacement of the loaded bore edge and the stresses; raises DesignError."""
    check_design(geom, design)
    return _analyze_checked(geom, design)


def _analyze_checked(geom: Geometry, design: Design) -> Analysis:
    mat = MATERIALS[design.material]
    bolt = BOLTS[design.bolt_d]
    t, n = design.thickness, design.n_bolts
    e_mpa = mat.e_gpa * 1000.0
    k_b = _bolt_stiffness(design)
    k_theta = rim_restraint(geom, design, e_mpa, mat.nu)
    bending, restraint, moment = plate_bending(
        geom.load_n, geom.a, geom.b, e_mpa, mat.nu, t, k_theta
    )
    g_mpa = e_mpa / (2.0 * (1.0 + mat.nu))
    shear = 1.2 * geom.load_n * math.log(geom.a / geom.b) / (2.0 * math.pi * g_mpa * t)
    stretch = geom.load_n / (n * k_b)
    total = bending + shear + stretch
    if not (math.isfinite(total) and total > 0):
        raise DesignError("the plate model produced no finite displacement for this design.")
    plate_stress = 6.0 * moment / t**2  # a requirement (see ``stress_ok``), not a rule
    return Analysis(
        max_displacement=total,
        bending=bending,
        shear=shear,
        bolt_stretch=stretch,
        restraint=min(1.0, max(0.0, restraint)),
        bolt_stress=geom.load_n / (n * bolt.stress_area),
        plate_stress=plate_stress,
        allowable_stress=mat.allowable_mpa,
    )


def cost(geom: Geometry, design: Design) -> Cost:
    """Cost breakdown of one flange; raises DesignError on an invalid design."""
    check_design(geom, design)
    mat = MATERIALS[design.material]
    bolt = BOLTS[design.bolt_d]
    t, n = design.thickness, design.n_bolts
    blank_mm3 = math.pi / 4 * geom.outer_d**2 * t
    material = blank_mm3 * 1e-9 * mat.density * mat.price_per_kg
    face = math.pi / 4 * (geom.outer_d**2 - geom.bore_d**2)
    turned = math.pi * (geom.outer_d + geom.bore_d) * t
    machining = SETUP + mat.machinability * (FACE_RATE * 2 * face + TURN_RATE * turned)
    drilling = n * mat.machinability * (HOLE_BASE + DRILL_RATE * bolt.hole_d * t)
    part_mm3 = (face - n * math.pi / 4 * bolt.hole_d**2) * t
    return Cost(
        material=material,
        machining=machining,
        drilling=drilling,
        bolts=n * bolt.set_price,
        mass_kg=part_mm3 * 1e-9 * mat.density,
    )


def valid_patterns(geom: Geometry) -> list[tuple[int, int]]:
    """All (n_bolts, bolt_d) pairs that pass the bolt rules (thickness-independent)."""
    out = []
    span = geom.a - geom.b
    t_probe = min(span, max(MIN_THICKNESS_MM, 10.0))
    for d in BOLTS:
        for n in range(MIN_BOLTS, MAX_BOLTS + 1, 4):
            try:
                check_design(geom, Design(t_probe, "steel_A36", n, d))
            except DesignError:
                continue
            out.append((n, d))
    return out


def _threshold_thickness(
    value: Callable[[float], float], target: float, span: float
) -> float | None:
    """Smallest ``t`` in ``[MIN_THICKNESS_MM, span]`` with ``value(t) <= target``, for a
    ``value`` falling with thickness like a power of it (displacement about 1/t^3, stress
    about 1/t^2), or None when even ``span`` is not enough.

    Newton's method on log(value) vs log(t) with a secant slope converges in a few
    steps; bisection on the kept bracket is the safety net.
    """
    if value(span) > target:
        return None
    if value(MIN_THICKNESS_MM) <= target:
        return MIN_THICKNESS_MM
    lo, hi = MIN_THICKNESS_MM, span
    t, prev = min(span, max(MIN_THICKNESS_MM, span / 3)), None
    for _ in range(12):
        v = value(t)
        if v <= target:
            hi = min(hi, t)
            if v > target * (1.0 - 1e-6):
                return t
        else:
            lo = max(lo, t)
        power = 3.0
        if prev is not None and prev[0] != t and prev[1] != v:
            power = max(0.5, math.log(prev[1] / v) / math.log(t / prev[0]))
        prev = (t, v)
        t_next = t * (v / target) ** (1.0 / power)
        t = t_next if lo < t_next < hi else 0.5 * (lo + hi)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if value(mid) <= target:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-4:
            break
    return hi


def min_thickness(geom: Geometry, material: str, n: int, d: int, limit: float) -> float | None:
    """Smallest thickness meeting ``max_displacement <= limit``, or None."""
    span = geom.a - geom.b
    check_design(geom, Design(span, material, n, d))  # every rule but thickness is t-free

    def disp(t: float) -> float:
        return _analyze_checked(geom, Design(t, material, n, d)).max_displacement

    return _threshold_thickness(disp, limit, span)


def min_thickness_stress(geom: Geometry, material: str, n: int, d: int) -> float | None:
    """Smallest thickness whose peak plate stress is within the allowable, or None.

    The stress falls monotonically with thickness (checked over random geometries).
    """
    span = geom.a - geom.b
    check_design(geom, Design(span, material, n, d))

    def stress(t: float) -> float:
        return _analyze_checked(geom, Design(t, material, n, d)).plate_stress

    return _threshold_thickness(stress, MATERIALS[material].allowable_mpa, span)


def meets(geom: Geometry, design: Design, limit: float) -> bool:
    """Every rule, the displacement limit and the stress allowable (not the budget)."""
    try:
        result = analyze(geom, design)
    except DesignError:
        return False
    return result.max_displacement <= limit and result.stress_ok


def cheapest_design(
    geom: Geometry, limit: float, materials: list[str], t_step: float = 0.1
) -> tuple[Design, float] | None:
    """The cheapest valid design meeting ``limit`` and the stress allowable, thickness
    rounded up to ``t_step``."""
    best: tuple[Design, float] | None = None
    # Cost grows with thickness, so a candidate's cost at the thickness floor bounds it from
    # below: try candidates cheapest-floor first and stop once the floor reaches the best.
    floors = sorted(
        (cost(geom, Design(MIN_THICKNESS_MM, m, n, d)).total, n, d, m)
        for n, d in valid_patterns(geom)
        for m in materials
    )
    for floor, n, d, m in floors:
        if best is not None and floor >= best[1]:
            break
        t_disp = min_thickness(geom, m, n, d, limit)
        t_stress = min_thickness_stress(geom, m, n, d)
        if t_disp is None or t_stress is None:
            continue
        t = math.ceil(max(t_disp, t_stress) / t_step - 1e-9) * t_step
        t = round(t, 4)
        design = Design(t, m, n, d)
        if not meets(geom, design, limit):
            continue
        try:
            c = cost(geom, design).total
        except DesignError:
            continue
        if best is None or c < best[1]:
            best = (design, c)
    return best


def geometry_dict(geom: Geometry) -> dict[str, Any]:
    return asdict(geom)
