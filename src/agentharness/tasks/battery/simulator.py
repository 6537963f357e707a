"""The battery world model: a PyBaMM DFN cell with a lumped thermal model and a cell-mass model.

Pure domain code (no agent or message types).

Electrochemistry and heat
-------------------------
The cell is PyBaMM's Doyle–Fuller–Newman model (``pybamm.lithium_ion.DFN``) with the
``"lumped"`` thermal option and ``"calculate discharge energy"`` enabled, parameterised by
``ParameterValues("Chen2020")`` (LG M50 21700, NMC811 / graphite-SiOx). It is built and
discretised **once per process**: the design variables are PyBaMM input parameters and the
electrode / separator domains use ``SymbolicUniform1DSubMesh``, so the electrode thickness
can change between solves without rebuilding (about 0.05 s per solve instead of ~1.5 s).

Design variables and what follows from them:

* positive-electrode thickness ``L_p`` and porosity ``eps_p``; the active-material volume
  fraction is ``1 - eps_p`` (Chen2020 has no separate binder phase);
* the negative electrode is sized to keep the reference N/P balance:
  ``L_n = L_n0 * L_p (1 - eps_p) / (L_p0 (1 - eps_p0))`` with the Chen2020 stoichiometry
  windows, so capacity scales with the positive loading;
* nominal capacity ``Q_nom = 5 A.h * L_p (1 - eps_p) / (L_p0 (1 - eps_p0))``; the constant
  discharge current is ``C-rate * Q_nom``;
* the thermal volume of the cell scales with the stack thickness (the Chen2020 cell volume
  times stack / reference stack); the cooling surface area stays that of the 21700 can;
* ambient (= initial) temperature and the total heat-transfer coefficient ``h`` are inputs.

A discharge ends at the 2.5 V cut-off or, for transport-limited designs, when the
electrolyte concentration anywhere falls below ``ELECTROLYTE_DEPLETION_MOL_M3`` (a custom
PyBaMM event; without it the DFN stalls for tens of seconds on such designs).

Cell-mass model (specific energy = discharge energy / cell mass)
----------------------------------------------------------------
Everything per unit electrode-pair area, times the Chen2020 electrode area
``A = 0.065 m x 1.58 m = 0.1027 m2``:

* positive coating: ``L_p [(1 - eps_p) rho_NMC811 + eps_p rho_electrolyte]``;
* negative coating: ``L_n [(1 - eps_n) rho_graphite + eps_n rho_electrolyte]`` (eps_n = 0.25);
* separator: ``L_s [(1 - eps_s) rho_PE + eps_s rho_electrolyte]`` (12 um, eps_s = 0.47);
* current collectors: half of each double-side-coated foil per electrode pair,
  ``L_Al/2 rho_Al + L_Cu/2 rho_Cu`` (16 um aluminium, 12 um copper);
* packaging: a fixed ``PACKAGING_G`` for can, header, tabs and excess electrolyte;
* forced cooling (only where the agent chooses cooling): ``COOLING_G_PER_H`` grams per
  W.m-2.K-1 of heat-transfer coefficient above the natural-convection baseline.

Densities are in ``DENSITY_KG_M3``. For the reference Chen2020 design this gives about
67 g and ~265 Wh/kg at C/2, close to the real LG M50.
"""

from __future__ import annotations

import math
import threading
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

# ---- reference cell (Chen2020) -----------------------------------------------------------
REF_THICKNESS_UM = 75.6
REF_POROSITY = 0.335
REF_NEG_THICKNESS_UM = 85.2
REF_CAPACITY_AH = 5.0
ELECTRODE_AREA_M2 = 0.065 * 1.58
NEG_POROSITY = 0.25
SEPARATOR_UM = 12.0
SEPARATOR_POROSITY = 0.47
AL_FOIL_UM = 16.0
CU_FOIL_UM = 12.0
CUTOFF_V = 2.5

# ---- mass model -----------------------------------------------------------------------------
DENSITY_KG_M3 = {
    "nmc811": 4750.0,
    "graphite": 2260.0,
    "electrolyte": 1200.0,
    "polyethylene": 950.0,
    "aluminium": 2700.0,
    "copper": 8960.0,
}
PACKAGING_G = 13.0
COOLING_G_PER_H = 0.15

# ---- accepted ranges (also enforced by the tool schemas) --------------------------------------
THICKNESS_RANGE_UM = (30.0, 150.0)
POROSITY_RANGE = (0.15, 0.60)
C_RATE_RANGE = (0.1, 5.0)
H_RANGE = (0.5, 200.0)
AMBIENT_RANGE_C = (-20.0, 60.0)

ELECTROLYTE_DEPLETION_MOL_M3 = 50.0
MAX_SOLVER_STEPS = 5000
KELVIN = 273.15

END_CUTOFF = "voltage cut-off"
END_DEPLETION = "electrolyte depletion"
END_TIME = "time limit"


class DesignError(ValueError):
    """A design outside the accepted ranges (or not a finite number)."""


class SimulationError(RuntimeError):
    """PyBaMM could not solve the design (non-convergence, bad state)."""


@dataclass(frozen=True)
class CellDesign:
    """One operating point: the design variables plus the conditions it runs under."""

    thickness_um: float
    porosity: float
    c_rate: float
    heat_transfer: float  # total heat-transfer coefficient, W.m-2.K-1
    ambient_c: float

    def rounded(self) -> CellDesign:
        """The design as simulated: rounded so equal-looking designs share a cache entry."""
        return CellDesign(
            thickness_um=round(float(self.thickness_um), 1),
            porosity=round(float(self.porosity), 3),
            c_rate=round(float(self.c_rate), 2),
            heat_transfer=round(float(self.heat_transfer), 1),
            ambient_c=round(float(self.ambient_c), 1),
        )


def validate(design: CellDesign) -> CellDesign:
    """Reject non-finite or out-of-range values with a message that says how to fix them."""
    checks = (
        ("thickness_um", design.thickness_um, THICKNESS_RANGE_UM, "um"),
        ("porosity", design.porosity, POROSITY_RANGE, ""),
        ("c_rate", design.c_rate, C_RATE_RANGE, "C"),
        ("heat_transfer", design.heat_transfer, H_RANGE, "W/m2K"),
        ("ambient_c", design.ambient_c, AMBIENT_RANGE_C, "degC"),
    )
    for name, value, (lo, hi), unit in checks:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise DesignError(f"{name} must be a number, got {value!r}")
        if not math.isfinite(value):
            raise DesignError(f"{name} must be a finite number, got {value}")
        if not lo <= value <= hi:
            raise DesignError(f"{name}={value:g} is outside [{lo:g}, {hi:g}] {unit}".rstrip())
    return design.rounded()


# ---- design relations -------------------------------------------------------------------------
def loading_ratio(thickness_um: float, porosity: float) -> float:
    """Positive active-material loading relative to the Chen2020 reference."""
    return thickness_um * (1.0 - porosity) / (REF_THICKNESS_UM * (1.0 - REF_POROSITY))


def negative_thickness_um(thickness_um: float, porosity: float) -> float:
    """Negative electrode thickness that keeps the reference N/P balance."""
    return REF_NEG_THICKNESS_UM * loading_ratio(thickness_um, porosity)


def nominal_capacity_ah(thickness_um: float, porosity: float) -> float:
    return REF_CAPACITY_AH * loading_ratio(thickness_um, porosity)


@dataclass(frozen=True)
class MassBreakdown:
    """Cell mass in grams by component (see the module docstring)."""

    positive_electrode: float
    negative_electrode: float
    separator: float
    current_collectors: float
    packaging: float
    cooling: float

    @property
    def total(self) -> float:
        return (
            self.positive_electrode
            + self.negative_electrode
            + self.separator
            + self.current_collectors
            + self.packaging
            + self.cooling
        )

    def as_dict(self) -> dict[str, float]:
        return {**{k: round(v, 2) for k, v in asdict(self).items()}, "total": round(self.total, 2)}


def cell_mass(thickness_um: float, porosity: float, cooling_h_extra: float = 0.0) -> MassBreakdown:
    """The documented mass model; ``cooling_h_extra`` is forced cooling above the baseline."""
    rho = DENSITY_KG_M3
    um = 1e-6 * ELECTRODE_AREA_M2 * 1000.0  # um of thickness x area -> m3, times kg->g

    def coating(t_um: float, eps: float, solid: float) -> float:
        return t_um * um * ((1.0 - eps) * solid + eps * rho["electrolyte"])

    return MassBreakdown(
        positive_electrode=coating(thickness_um, porosity, rho["nmc811"]),
        negative_electrode=coating(
            negative_thickness_um(thickness_um, porosity), NEG_POROSITY, rho["graphite"]
        ),
        separator=coating(SEPARATOR_UM, SEPARATOR_POROSITY, rho["polyethylene"]),
        current_collectors=(AL_FOIL_UM / 2 * rho["aluminium"] + CU_FOIL_UM / 2 * rho["copper"])
        * um,
        packaging=PACKAGING_G,
        cooling=COOLING_G_PER_H * max(0.0, cooling_h_extra),
    )


# ---- PyBaMM -----------------------------------------------------------------------------------
_LOCK = threading.Lock()
_SIM: Any = None


def _build() -> Any:
    """Build and discretise the DFN once; thickness/porosity/current/T/h are inputs."""
    import pybamm

    pybamm.set_logging_level("ERROR")
    model = pybamm.lithium_ion.DFN(
        options={"calculate discharge energy": "true", "thermal": "lumped"}
    )
    ce = model.variables["Electrolyte concentration [mol.m-3]"]
    model.events.append(
        pybamm.Event("Electrolyte depletion", pybamm.min(ce) - ELECTROLYTE_DEPLETION_MOL_M3)
    )
    pv = pybamm.ParameterValues("Chen2020")
    lp = pybamm.InputParameter("Lp")
    eps = pybamm.InputParameter("eps_p")
    ratio = lp * (1 - eps) / (REF_THICKNESS_UM * 1e-6 * (1 - REF_POROSITY))
    ln = REF_NEG_THICKNESS_UM * 1e-6 * ratio
    ls = pv["Separator thickness [m]"]
    lcc = (
        pv["Negative current collector thickness [m]"]
        + pv["Positive current collector thickness [m]"]
    ) / 2
    ref_stack = REF_NEG_THICKNESS_UM * 1e-6 + ls + REF_THICKNESS_UM * 1e-6 + lcc
    temp = pybamm.InputParameter("T_amb")
    pv.update(
        {
            "Positive electrode thickness [m]": lp,
            "Positive electrode porosity": eps,
            "Positive electrode active material volume fraction": 1 - eps,
            "Negative electrode thickness [m]": ln,
            "Nominal cell capacity [A.h]": REF_CAPACITY_AH * ratio,
            "Cell volume [m3]": pv["Cell volume [m3]"] * (ln + ls + lp + lcc) / ref_stack,
            "Current function [A]": pybamm.InputParameter("I"),
            "Ambient temperature [K]": temp,
            "Initial temperature [K]": temp,
            "Total heat transfer coefficient [W.m-2.K-1]": pybamm.InputParameter("h"),
        }
    )
    submesh = dict(model.default_submesh_types)
    for domain in ("negative electrode", "separator", "positive electrode"):
        submesh[domain] = pybamm.SymbolicUniform1DSubMesh
    # A coarse mesh: accurate to ~0.1 % in energy here and 2-3x faster than the default.
    var_pts = dict(model.default_var_pts)
    var_pts.update({"x_n": 10, "x_s": 5, "x_p": 10, "r_n": 10, "r_p": 10})
    solver = pybamm.IDAKLUSolver(options={"max_num_steps": MAX_SOLVER_STEPS})
    return pybamm.Simulation(
        model, parameter_values=pv, submesh_types=submesh, var_pts=var_pts, solver=solver
    )


@dataclass(frozen=True)
class Discharge:
    """Raw electro-thermal outcome of one constant-current discharge."""

    energy_wh: float
    capacity_ah: float
    duration_s: float
    peak_temperature_c: float
    end_reason: str


@lru_cache(maxsize=4096)
def _discharge(design: CellDesign) -> Discharge:
    global _SIM
    current = design.c_rate * nominal_capacity_ah(design.thickness_um, design.porosity)
    inputs = {
        "Lp": design.thickness_um * 1e-6,
        "eps_p": design.porosity,
        "I": current,
        "T_amb": design.ambient_c + KELVIN,
        "h": design.heat_transfer,
    }
    t_end = 3600.0 * 1.3 / design.c_rate
    with _LOCK:  # one shared built simulation per process; the solver is not re-entrant
        if _SIM is None:
            _SIM = _build()
        try:
            sol = _SIM.solve([0.0, t_end], inputs=inputs)
        except Exception as e:
            raise SimulationError(f"PyBaMM did not converge ({type(e).__name__}: {e})") from e
        energy = float(sol["Discharge energy [W.h]"].entries[-1])
        capacity = float(sol["Discharge capacity [A.h]"].entries[-1])
        duration = float(sol.t[-1])
        peak_k = float(max(sol["Volume-averaged cell temperature [K]"].entries))
        termination = str(sol.termination)
    if not all(math.isfinite(v) for v in (energy, capacity, duration, peak_k)):
        raise SimulationError("PyBaMM returned non-finite results")
    if "Electrolyte depletion" in termination:
        end = END_DEPLETION
    elif "Minimum voltage" in termination:
        end = END_CUTOFF
    else:
        end = END_TIME
    return Discharge(energy, capacity, duration, peak_k - KELVIN, end)


@dataclass(frozen=True)
class CellResult:
    """Everything the tools and the reward need about one simulated design."""

    design: CellDesign
    energy_wh: float
    capacity_ah: float
    nominal_capacity_ah: float
    duration_min: float
    peak_temperature_c: float
    end_reason: str
    mass: MassBreakdown
    specific_energy_wh_kg: float

    @property
    def utilization(self) -> float:
        """Delivered over nominal capacity: low values mean a transport-limited design."""
        return self.capacity_ah / self.nominal_capacity_ah

    @property
    def average_voltage(self) -> float:
        return self.energy_wh / self.capacity_ah if self.capacity_ah > 0 else 0.0


def simulate(design: CellDesign, baseline_h: float | None = None) -> CellResult:
    """Discharge ``design`` at constant current and evaluate its specific energy.

    ``baseline_h`` is the natural-convection heat-transfer coefficient when the agent
    chooses forced cooling; cooling above it adds mass. Raises :class:`DesignError` for
    bad inputs and :class:`SimulationError` when PyBaMM fails.
    """
    d = validate(design)
    dis = _discharge(d)
    extra = 0.0 if baseline_h is None else d.heat_transfer - baseline_h
    mass = cell_mass(d.thickness_um, d.porosity, extra)
    return CellResult(
        design=d,
        energy_wh=dis.energy_wh,
        capacity_ah=dis.capacity_ah,
        nominal_capacity_ah=nominal_capacity_ah(d.thickness_um, d.porosity),
        duration_min=dis.duration_s / 60.0,
        peak_temperature_c=dis.peak_temperature_c,
        end_reason=dis.end_reason,
        mass=mass,
        specific_energy_wh_kg=dis.energy_wh / (mass.total / 1000.0),
    )


@dataclass(frozen=True)
class Verdict:
    """How a simulated design fares against the two constraints."""

    specific_energy_wh_kg: float
    target_wh_kg: float
    peak_temperature_c: float
    limit_c: float

    @property
    def energy_margin(self) -> float:
        """Wh/kg above the target (negative: short of it)."""
        return self.specific_energy_wh_kg - self.target_wh_kg

    @property
    def thermal_margin(self) -> float:
        """Kelvin below the limit (negative: over it)."""
        return self.limit_c - self.peak_temperature_c

    @property
    def energy_ok(self) -> bool:
        return self.energy_margin >= 0.0

    @property
    def thermal_ok(self) -> bool:
        return self.thermal_margin >= 0.0

    @property
    def feasible(self) -> bool:
        return self.energy_ok and self.thermal_ok


def judge(result: CellResult, target_wh_kg: float, limit_c: float) -> Verdict:
    return Verdict(result.specific_energy_wh_kg, target_wh_kg, result.peak_temperature_c, limit_c)
