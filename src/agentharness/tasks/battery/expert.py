"""The scripted expert (battery-v3): a search through the simulator, computed in the open.

The feasible designs are a thin sliver just under the temperature limit at about the best
porosity (and, on hard, the best cooling system), so the expert searches for it the way an
engineer would, using only what the conversation shows:

1. **Thickness at the limit.** At a fixed porosity and cooling, thicker electrodes store
   more energy per kilogram and run hotter, so the best design there is the thickest one
   whose peak temperature stays within the limit. Starting from the reference cell of the
   prompt (75.6 um, porosity 0.335), each next thickness is computed with ``calculate``
   from visible numbers: a power-law step from one design (the peak rise grows about like
   thickness^1.5), a step along the slope an earlier search measured, or a secant step
   between the two designs nearest the limit, aiming 0.01 K under it and rounded down to
   the simulator's 0.1 um. A transport-limited design bounds the thickness from above
   (the next probe is the midpoint of the bracket, and a limit within 2 um of such a
   design counts as capped there). *Landing* goes on until the thickest 0.1 um design
   under the limit is known; a *comparison* stops once a design is within 0.3 K of the
   limit and interpolates, with ``calculate``, the thickness and specific energy at it.
2. **Cooling (hard).** Comparisons at the reference porosity for the cooling systems on
   offer, searched as a unimodal row: the two middle ones first, then the neighbour on
   the better side; the most specific energy at the limit wins. A new system starts from
   the last one's thickness at the limit scaled by sqrt((h + 10) / (h' + 10)).
3. **Porosity.** Landings at the reference porosity, 0.08 below it (starting at the same
   active loading, thickness x (1 - porosity)) and halfway between; then ``solve_linear``
   fits a parabola ``a p^2 + b p + c`` through the three best (porosity, specific energy)
   points and the expert lands at its top, ``-b / (2a)`` (``calculate``, kept within one
   step of the probes); after that it bisects between the best porosity and its better
   neighbour, a few rounds at most.

Any feasible simulation in the conversation (its own or a foreign one) is submitted at
once, so most searches end early; when the search ends without one, or the simulation
budget runs low, it submits the design within the limit with the most specific energy.
Every number it sends was visible first (the prompt, a tool's result or its own earlier
arguments), and it reads ``instance.hidden`` for nothing. Tool results are read as data
(``message.outcome``).

The search is a coroutine (:meth:`BatteryExpert._search`) that yields one turn at a time
and receives the outcomes of exactly its own calls, so foreign calls a noisy agent
interleaves do not disturb it.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from agentharness.core.calculator import evaluate
from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, ToolOutcome, assistant
from agentharness.core.parsing import answered_calls
from agentharness.tasks.battery.problem import Public
from agentharness.tasks.battery.simulator import END_DEPLETION, REF_POROSITY, REF_THICKNESS_UM

ID_PREFIX = "battery_expert_"
# Delivered/nominal capacity below this means the design is transport-limited.
TRANSPORT_LIMITED = 0.85
# The porosity step between probes.
POROSITY_STEP = 0.08
# Simulations per curve (one porosity at one cooling) at most.
CURVE_SIMS = 4
# A comparison curve stops once a design is this close to the limit (K).
CLOSE_K = 0.3
# Parabola rounds (each lands on one more porosity) at most.
VERTEX_ROUNDS = 4
# Keep this many simulations for the end.
RESERVE = 1
# The simulator's thickness resolution (um).
GRID_UM = 0.1
# Thickness steps aim this far under the temperature limit (the report prints 0.01 K).
AIM_K = 0.01
# Simulations per curve when landing on the thickest design under the limit.
LANDING_SIMS = 6
# A slope dT/dthickness is read off designs at least this far apart (um).
SLOPE_UM = 1.0
# The delivered capacity falls off a cliff just below a transport-limited design: a curve
# whose limit lies within this of one (um) is capped there.
WALL_UM = 2.0


@dataclass(frozen=True)
class Sim:
    """One simulated design, as its report shows it."""

    thickness: float
    porosity: float
    h: float
    peak: float
    specific_energy: float
    cool: bool  # within the temperature limit
    limited: bool  # transport-limited (electrolyte depletion or low utilization)
    feasible: bool
    left: int  # simulations left

    @classmethod
    def of(cls, rep: dict[str, Any]) -> Sim:
        res, design = rep["results"], rep["design"]
        return cls(
            thickness=float(design["thickness_um"]),
            porosity=float(design["porosity"]),
            h=float(design["heat_transfer_coefficient_w_m2k"]),
            peak=float(res["peak_temperature_c"]),
            specific_energy=float(res["specific_energy_wh_kg"]),
            cool=bool(rep["constraints"]["peak_temperature"]["satisfied"]),
            limited=res["end_of_discharge"] == END_DEPLETION
            or float(res["utilization"]) < TRANSPORT_LIMITED,
            feasible=bool(rep["feasible"]),
            left=int(rep["simulations_left"]),
        )


@dataclass(frozen=True)
class Curve:
    """What one porosity at one cooling gives at the temperature limit: the thickness and
    specific energy there (interpolated by a comparison, the landed design's otherwise)."""

    porosity: float
    h: float
    thickness: float
    specific_energy: float
    sims: tuple[Sim, ...]
    limit_c: float

    @property
    def slope(self) -> tuple[Sim, Sim] | None:
        """Two valid designs near the limit, at least ``SLOPE_UM`` apart (their secant is
        dT/dthickness), thinner first."""
        valid = [s for s in self.sims if not s.limited]
        if len(valid) < 2:
            return None
        ranked = sorted(valid, key=lambda s: abs(s.peak - self.limit_c))
        a = ranked[0]
        b = next((s for s in ranked[1:] if abs(s.thickness - a.thickness) >= SLOPE_UM), None)
        if b is None or b.peak == a.peak:
            return None
        return (a, b) if a.thickness < b.thickness else (b, a)


@dataclass(frozen=True)
class Step:
    """One assistant turn: what it says and the calls it makes."""

    text: str
    calls: tuple[tuple[str, dict[str, Any]], ...]


Outcomes = list[ToolOutcome | None]
Search = Generator[Step, Outcomes, Any]


class _Stop(Exception):
    """The search cannot go on (a failed computation, the budget); submit the best."""


def _n(x: float) -> str:
    """A number as the tool results print it (without float noise)."""
    return repr(round(float(x), 10))


class BatteryExpert:
    """Searches thickness, cooling and porosity through the tools; submits what it found."""

    def __init__(self, instance: Instance) -> None:
        pub = instance.public_as(Public)
        self.limit = pub.peak_temperature_limit_c
        self.ambient = pub.ambient_c
        self.t_min, self.t_max = pub.thickness_range_um
        self.p_min, self.p_max = pub.porosity_range
        self.natural = pub.heat_transfer_w_m2k
        self.coolings = (
            [self.natural, *(pub.cooling_options_w_m2k or ())] if pub.choose_cooling else []
        )
        self.turn = 0
        self.pending: list[str] = []
        self.search: Search | None = None
        self.done = False
        self.fitted = False  # the parabola is fitted once, then the search bisects

    # -- the turn loop ------------------------------------------------------------------

    def next_turn(self, messages: list[Message]) -> Message:
        outcomes: dict[str, ToolOutcome | None] = {}
        sims: list[Sim] = []
        for call, message in answered_calls(messages):
            outcomes[call.id] = message.outcome
            out = message.outcome
            if call.name == "simulate_cell" and out is not None and not out.is_error:
                if isinstance(out.data, dict):
                    sims.append(Sim.of(out.data))
        feasible = [s for s in sims if s.feasible]
        if feasible:
            best = max(feasible, key=lambda s: s.specific_energy)
            return self._submit(
                best,
                f"The design {best.thickness:g} um, porosity {best.porosity:g} "
                f"(h {best.h:g} W/m²K) meets the specific-energy target and stays within the "
                "temperature limit, so I submit it.",
            )
        if sims and min(s.left for s in sims) <= RESERVE:
            return self._submit_best(sims, "The simulation budget is nearly used up")
        if self.done:
            return self._submit_best(sims, "My search is over without a feasible design")
        try:
            if self.search is None:
                self.search = self._search()
                step = next(self.search)
            else:
                step = self.search.send([outcomes.get(i) for i in self.pending])
        except (StopIteration, _Stop):
            self.done = True
            return self._submit_best(sims, "My search is over without a feasible design")
        return self._emit(step)

    def _emit(self, step: Step) -> Message:
        self.turn += 1
        calls = [
            ToolCall.make(f"{ID_PREFIX}{self.turn}_{i}", name, args)
            for i, (name, args) in enumerate(step.calls)
        ]
        self.pending = [c.id for c in calls]
        return assistant(step.text, tool_calls=calls)

    def _args(self, thickness: float, porosity: float, h: float) -> dict[str, Any]:
        args: dict[str, Any] = {"thickness_um": thickness, "porosity": porosity}
        if self.coolings:
            args["heat_transfer_coefficient"] = h
        return args

    def _submit(self, s: Sim, text: str) -> Message:
        self.turn += 1
        args = self._args(s.thickness, s.porosity, s.h)
        return assistant(
            text, tool_calls=[ToolCall.make(f"{ID_PREFIX}{self.turn}", "submit_design", args)]
        )

    def _submit_best(self, sims: list[Sim], why: str) -> Message:
        cool = [s for s in sims if s.cool and not s.limited] or [s for s in sims if s.cool]
        if not cool:
            if not sims:
                return assistant(f"{why}, and no simulation succeeded; I stop here.")
            best = min(sims, key=lambda s: s.peak)
            return self._submit(best, f"{why}; I submit the coolest design I simulated.")
        best = max(cool, key=lambda s: s.specific_energy)
        return self._submit(
            best,
            f"{why}, so I submit the design within the temperature limit with the most specific "
            f"energy: {best.thickness:g} um, porosity {best.porosity:g} "
            f"({best.specific_energy:g} Wh/kg).",
        )

    # -- primitives (sub-generators) -----------------------------------------------------

    def _simulate(self, thickness: float, porosity: float, h: float, text: str) -> Search:
        (out,) = yield Step(text, (("simulate_cell", self._args(thickness, porosity, h)),))
        if out is None or out.is_error or not isinstance(out.data, dict):
            return None
        return Sim.of(out.data)

    def _calculate(self, text: str, *expressions: str) -> Search:
        outs = yield Step(text, tuple(("calculate", {"expression": e}) for e in expressions))
        values = []
        for out in outs:
            if out is None or out.is_error or not isinstance(out.data, dict):
                raise _Stop
            values.append(float(out.data["value"]))
        return values

    # -- the search ----------------------------------------------------------------------

    def _search(self) -> Search:
        p0 = REF_POROSITY
        plan = (
            "My plan: at a fixed porosity, the best design is the thickest one whose peak "
            "temperature stays at the limit, so I find that thickness with secant steps on the "
            "simulated peak temperature (computing each step with calculate). Comparing the "
            "specific energy there across porosities"
            + (" and the cooling systems on offer" if self.coolings else "")
            + ", I fit a parabola through the best porosities and go to its top, and submit the "
            "first design that meets both requirements."
        )
        first = (
            f"I start from the reference cell of the prompt ({REF_THICKNESS_UM:g} um, porosity "
            f"{p0:g}) to see how hot it runs against the {self.limit:g} °C limit. {plan}"
        )
        if not self.coolings:
            h = self.natural
            c0 = yield from self._curve(p0, h, REF_THICKNESS_UM, None, first, precise=False)
        else:
            h, c0 = yield from self._choose_cooling(p0, first)
        if c0 is None:
            raise _Stop
        yield from self._porosity(c0)

    def _choose_cooling(self, p0: float, first: str) -> Search:
        hs = self.coolings
        curves: dict[int, Curve | None] = {}
        order = [1, 2]
        text = (
            f"{first} Cooling first: more cooling lets a thicker electrode stay at the limit but "
            "adds mass, so I compare the systems on offer at the reference porosity, starting "
            f"with h = {hs[1]:g} W/m²K."
        )
        curves[1] = yield from self._curve(p0, hs[1], REF_THICKNESS_UM, None, text, False)
        curves[2] = yield from self._from_cooling(p0, hs[2], curves[1])
        se = {i: (c.specific_energy if c else -math.inf) for i, c in curves.items()}
        nxt = 0 if se[1] >= se[2] else 3
        why = (
            f"h = {hs[1]:g} W/m²K gives more specific energy at the limit than {hs[2]:g}, so the "
            f"best system is at most {hs[1]:g}: I try {hs[0]:g} (natural convection) too."
            if nxt == 0
            else f"h = {hs[2]:g} W/m²K beats {hs[1]:g}, so I try the stronger {hs[3]:g} too."
        )
        order.append(nxt)
        curves[nxt] = yield from self._from_cooling(p0, hs[nxt], curves[1 if nxt == 0 else 2], why)
        se = {i: (c.specific_energy if c else -math.inf) for i, c in curves.items()}
        best = max(order, key=lambda i: se[i])
        if curves[best] is None:
            raise _Stop
        return hs[best], curves[best]

    def _from_cooling(
        self, p: float, h: float, near: Curve | None, why: str | None = None
    ) -> Search:
        """A curve at cooling ``h``, starting from ``near``'s thickness scaled to ``h``."""
        lead = why or f"Now h = {h:g} W/m²K at the same porosity."
        if near is None:
            return (
                yield from self._curve(
                    p,
                    h,
                    REF_THICKNESS_UM,
                    None,
                    f"{lead} I start again from the reference thickness.",
                    False,
                )
            )
        expr = self._clamped(
            f"floor(10 * {_n(near.thickness)} * sqrt(({_n(h)} + 10) / ({_n(near.h)} + 10))) / 10"
        )
        (t0,) = yield from self._calculate(
            f"{lead} Stronger cooling lets a thicker electrode reach the same temperature; as a "
            f"first guess I scale the thickness at the limit with h = {near.h:g} "
            f"({near.thickness:g} um) by sqrt((h + 10) / (h' + 10)).",
            expr,
        )
        return (
            yield from self._curve(p, h, t0, near, f"I simulate {t0:g} um with h = {h:g}.", False)
        )

    def _porosity(self, c0: Curve) -> Search:
        h = c0.h
        c0 = yield from self._land(c0)
        if c0 is None:
            raise _Stop
        curves = [c0]
        p1_expr = f"round(1000 * ({_n(c0.porosity)} - {POROSITY_STEP:g})) / 1000"
        c1 = yield from self._new_porosity(
            curves,
            p1_expr,
            f"At porosity {c0.porosity:g} the thickest design within the limit is "
            f"{c0.thickness:g} um with {c0.specific_energy:g} Wh/kg, short of the target. Now "
            f"the porosity: I probe {POROSITY_STEP:g} lower, starting at the same active "
            "loading, thickness x (1 - porosity).",
        )
        if c1 is not None:
            curves.append(c1)
        if c1 is not None:
            mid = round((c0.porosity + c1.porosity) / 2, 3)
            c2 = yield from self._between(
                c0,
                c1,
                mid,
                f"For a parabola through the porosities I probe halfway between {c1.porosity:g} "
                f"({c1.specific_energy:g} Wh/kg) and {c0.porosity:g} "
                f"({c0.specific_energy:g} Wh/kg): {mid:g}, starting from the thickness "
                "interpolated between theirs.",
            )
            if c2 is not None:
                curves.append(c2)
        for _ in range(VERTEX_ROUNDS):
            c = yield from self._vertex(curves, h)
            if c is None:
                return
            curves.append(c)

    def _new_porosity(self, curves: list[Curve], p_expr: str, text: str) -> Search:
        p_value = evaluate(p_expr)
        if not self.p_min <= p_value <= self.p_max:
            return None
        near = min(curves, key=lambda c: abs(c.porosity - p_value))
        t_expr = self._loading_expr(near, p_value)
        p, t0 = yield from self._calculate(text, p_expr, t_expr)
        return (
            yield from self._curve(
                p, near.h, t0, near, f"I simulate {t0:g} um at porosity {p:g}.", True
            )
        )

    def _loading_expr(self, near: Curve, p: float) -> str:
        return self._clamped(
            f"floor(10 * {_n(near.thickness)} * (1 - {_n(near.porosity)}) / (1 - {_n(p)})) / 10"
        )

    def _clamped(self, expr: str) -> str:
        """``expr``, kept within the thickness range where it would leave it."""
        value = evaluate(expr)
        if value < self.t_min:
            return f"max({expr}, {_n(self.t_min)})"
        if value > self.t_max:
            return f"min({expr}, {_n(self.t_max)})"
        return expr

    def _vertex(self, curves: list[Curve], h: float) -> Search:
        """Fit a parabola through the three best porosities and land at its top.

        When the top is a porosity already searched (or the parabola has none between the
        probes), the next porosity is the midpoint between the best one and its better
        neighbour: a bisection towards the optimum.
        """
        by_p: dict[float, Curve] = {}
        for c in curves:
            if c.porosity not in by_p or c.specific_energy > by_p[c.porosity].specific_energy:
                by_p[c.porosity] = c
        best3 = sorted(by_p.values(), key=lambda c: -c.specific_energy)[:3]
        if len(best3) < 3:
            return None
        best3.sort(key=lambda c: c.porosity)
        top = max(best3, key=lambda c: c.specific_energy)
        lo = max(self.p_min, best3[0].porosity - POROSITY_STEP)
        hi = min(self.p_max, best3[-1].porosity + POROSITY_STEP)
        p_expr: str | None = None
        if not self.fitted:
            self.fitted = True
            a_rows = [[c.porosity * c.porosity, c.porosity, 1.0] for c in best3]
            b_vec = [c.specific_energy for c in best3]
            (out,) = yield Step(
                "I fit a parabola a p^2 + b p + c through the three best porosities "
                f"({', '.join(f'{c.porosity:g}: {c.specific_energy:g} Wh/kg' for c in best3)}) "
                "with solve_linear; its top, -b / (2a), is the best porosity they suggest.",
                (("solve_linear", {"a": a_rows, "b": b_vec}),),
            )
            if out is None or out.is_error or not isinstance(out.data, dict):
                raise _Stop
            a, b, _ = (float(v) for v in out.data["x"])
            if a < 0:
                p_expr = (
                    f"round(1000 * min(max(-({_n(b)}) / (2 * {_n(a)}), {_n(lo)}), {_n(hi)})) / 1000"
                )
                why = (
                    "The parabola opens downwards. I compute its top, -b / (2a), kept within "
                    "one step of the probes and rounded to 0.001"
                )
            elif top is best3[0] or top is best3[-1]:
                p_expr = f"round(1000 * {_n(lo if top is best3[0] else hi)}) / 1000"
                why = (
                    f"The parabola has no top and the best porosity, {top.porosity:g}, is at "
                    "the edge, so I step one probe further on that side"
                )
        if p_expr is not None and not any(abs(evaluate(p_expr) - q) < 5e-4 for q in by_p):
            near = sorted(by_p.values(), key=lambda c: abs(c.porosity - evaluate(p_expr)))[:2]
            p, t0 = yield from self._calculate(
                f"{why}; as a first guess for the thickness at the limit there I interpolate "
                "between the nearest porosities.",
                p_expr,
                self._interp_expr(near[0], near[1], evaluate(p_expr)),
            )
            return (
                yield from self._curve(
                    p, h, t0, near[0], f"I simulate {t0:g} um at porosity {p:g}.", True
                )
            )
        # Bisect between the best porosity and its better neighbour.
        ps = sorted(by_p)
        k = ps.index(top.porosity)
        sides = [q for q in (ps[k - 1] if k else None, ps[k + 1] if k + 1 < len(ps) else None)]
        nb = max((q for q in sides if q is not None), key=lambda q: by_p[q].specific_energy)
        if abs(nb - top.porosity) < 0.002:
            return None
        mid = round((top.porosity + nb) / 2, 3)
        return (
            yield from self._between(
                top,
                by_p[nb],
                mid,
                f"The best porosity so far is {top.porosity:g} ({top.specific_energy:g} Wh/kg) "
                f"and its better neighbour is {nb:g} ({by_p[nb].specific_energy:g} Wh/kg), so I "
                f"try the porosity halfway between them, {mid:g}, starting from the thickness "
                "interpolated between theirs.",
            )
        )

    def _between(self, c1: Curve, c2: Curve, mid: float, text: str) -> Search:
        """Land at porosity ``mid`` (a midpoint of two searched ones)."""
        (t0,) = yield from self._calculate(text, self._interp_expr(c1, c2, mid))
        return (
            yield from self._curve(
                mid, c1.h, t0, c1, f"I simulate {t0:g} um at porosity {mid:g}.", True
            )
        )

    def _interp_expr(self, c1: Curve, c2: Curve, p: float) -> str:
        return self._clamped(
            f"floor(10 * ({_n(c1.thickness)} + ({_n(p)} - {_n(c1.porosity)}) * "
            f"({_n(c2.thickness)} - {_n(c1.thickness)}) / ({_n(c2.porosity)} - "
            f"{_n(c1.porosity)}))) / 10"
        )

    def _land(self, c: Curve) -> Search:
        """Continue ``c``'s curve until it sits on the thickest design under the limit."""
        return (
            yield from self._curve(
                c.porosity,
                c.h,
                None,
                None,
                "",
                True,
                list(c.sims),
            )
        )

    # -- one curve: the thickness at the limit for one porosity and cooling ---------------

    def _curve(
        self,
        p: float,
        h: float,
        t0: float | None,
        near: Curve | None,
        text: str,
        precise: bool,
        sims: list[Sim] | None = None,
    ) -> Search:
        """Simulate until the limit is bracketed closely; estimate the limit values.

        ``near`` is a curve whose slope (dT/dthickness) seeds the first step; ``precise``
        continues until the thickest 0.1 um design under the limit is found.
        """
        sims = list(sims or [])
        t = t0
        for _ in range(LANDING_SIMS if precise else CURVE_SIMS):
            if t is None:
                nxt = yield from self._next_thickness(sims, near)
                if nxt is None:
                    break
                t, text = nxt
            s = yield from self._simulate(t, p, h, text)
            t = None
            if s is None:
                raise _Stop
            sims.append(s)
            if s.left <= RESERVE:
                raise _Stop
            if not precise and self._close(sims):
                break
        if precise:
            return self._landed(p, h, sims)
        return (yield from self._estimate(p, h, sims))

    def _landed(self, p: float, h: float, sims: list[Sim]) -> Curve | None:
        """The thickest design found within the limit (not transport-limited) at ``p``."""
        cool = [s for s in sims if s.cool and not s.limited]
        if not cool:
            return None
        best = max(cool, key=lambda s: s.specific_energy)
        return Curve(p, h, best.thickness, best.specific_energy, tuple(sims), self.limit)

    def _close(self, sims: list[Sim]) -> bool:
        valid = [s for s in sims if not s.limited]
        return len(valid) >= 2 and min(abs(s.peak - self.limit) for s in valid) <= CLOSE_K

    def _bracket(self, sims: list[Sim]) -> tuple[float, float]:
        lo = max([s.thickness for s in sims if s.cool and not s.limited], default=self.t_min)
        hi = min([s.thickness for s in sims if not s.cool or s.limited], default=self.t_max)
        return lo, hi

    def _next_thickness(self, sims: list[Sim], near: Curve | None) -> Search:
        """The next thickness to simulate and why, or ``None`` when the limit is found.

        Steps aim ``AIM_K`` under the limit (the report prints peaks to 0.01 K) and round
        down to the simulator's 0.1 um.
        """
        lo, hi = self._bracket(sims)
        done = {s.thickness for s in sims}
        if hi - lo <= GRID_UM + 1e-9 and lo in done:
            return None  # the thickest design under the limit is known
        if hi <= self.t_min + 1e-9 and self.t_min in done:
            return None  # too hot even at the thinnest electrode
        if lo >= self.t_max - 1e-9 and self.t_max in done:
            return None  # cool even at the thickest electrode
        valid = [s for s in sims if not s.limited]
        cool = [s for s in valid if s.cool]
        hot = [s for s in valid if not s.cool]
        wall = min((s.thickness for s in sims if s.limited), default=math.inf)
        if cool and not hot and wall - lo <= WALL_UM:
            return None  # capped by the electrolyte just above the thickest cool design
        aim = f"({_n(self.limit)} - {AIM_K:g})"
        expr: str | None = None
        nearest = sorted(valid, key=lambda s: abs(s.peak - self.limit))
        a: Sim | None = None
        b: Sim | None = None
        why = ""
        if len(nearest) >= 2 and nearest[0].peak != nearest[1].peak:
            a, b = nearest[0], nearest[1]
            expr = self._secant(a, b, aim)
            why = (
                f"The designs at {a.thickness:g} and {b.thickness:g} um peak at {a.peak:g} and "
                f"{b.peak:g} °C; a secant step to {AIM_K:g} K under the {self.limit:g} °C limit "
                "(rounded down to 0.1 um) is my next thickness."
            )
            if cool and hot and not lo < evaluate(expr) < hi:
                # Outside the bracket: a secant between the designs on either side instead.
                a = max(cool, key=lambda s: s.thickness)
                b = min(hot, key=lambda s: s.thickness)
                expr = self._secant(a, b, aim)
                why = (
                    f"The limit lies between {a.thickness:g} um ({a.peak:g} °C) and "
                    f"{b.thickness:g} um ({b.peak:g} °C). A secant step between them to "
                    f"{AIM_K:g} K under the limit, rounded down to 0.1 um, is my next thickness."
                )
        elif nearest and near is not None and near.slope is not None:
            a = nearest[0]
            s1, s2 = near.slope
            expr = (
                f"floor(10 * ({_n(a.thickness)} + ({aim} - {_n(a.peak)}) * "
                f"({_n(s2.thickness)} - {_n(s1.thickness)}) / ({_n(s2.peak)} - "
                f"{_n(s1.peak)}))) / 10"
            )
            why = (
                f"It peaks at {a.peak:g} °C. I correct the thickness towards the limit with the "
                f"slope of the last search ({s1.thickness:g} -> {s2.thickness:g} um gave "
                f"{s1.peak:g} -> {s2.peak:g} °C)."
            )
        elif nearest and nearest[0].peak > self.ambient:
            a = nearest[0]
            expr = (
                f"floor(10 * {_n(a.thickness)} * (({aim} - {_n(self.ambient)}) / "
                f"({_n(a.peak)} - {_n(self.ambient)})) ** (2 / 3)) / 10"
            )
            why = (
                f"It peaks at {a.peak:g} °C, a rise of {a.peak - self.ambient:.2f} K over the "
                f"ambient {self.ambient:g} °C where {self.limit - self.ambient:.2f} K are "
                "allowed. The rise grows about like thickness^1.5, so I scale the thickness by "
                "(allowed rise / this rise)^(2/3)."
            )
        if expr is not None:
            value = evaluate(expr)
            if cool and value <= lo + 1e-9:
                # The limit lies within 0.1 um above the thickest cool design: one grid step
                # thicker is worth a try only if a straight line says it stays cool.
                c = max(cool, key=lambda s: s.thickness)
                if a is not None and b is not None and a.thickness != b.thickness:
                    slope = (b.peak - a.peak) / (b.thickness - a.thickness)
                else:
                    slope = 0.0
                step_lo = lo + GRID_UM
                if c.peak + slope * GRID_UM > self.limit or step_lo >= hi - 1e-9:
                    return None
                if any(abs(step_lo - d) < GRID_UM / 2 for d in done):
                    return None
                (t,) = yield from self._calculate(
                    f"The secant puts the limit less than 0.1 um above {c.thickness:g} um "
                    f"({c.peak:g} °C); a straight line says one grid step thicker still stays "
                    "under it, so I try that.",
                    f"{_n(c.thickness)} + {GRID_UM:g}",
                )
                return t, f"I simulate {t:g} um."
            if lo < value < hi and value not in done:
                (t,) = yield from self._calculate(why, expr)
                return t, f"I simulate {t:g} um."
        mid = round((lo + hi) / 2, 2)
        if hi - lo <= GRID_UM + 1e-9 or any(abs(mid - d) < GRID_UM / 2 for d in done):
            return None
        return mid, (
            f"The limit lies between {lo:g} um (within it, not transport-limited) and {hi:g} um "
            f"(too hot or transport-limited); I try the midpoint, {mid:g} um."
        )

    def _secant(self, a: Sim, b: Sim, aim: str) -> str:
        return (
            f"floor(10 * ({_n(a.thickness)} + ({aim} - {_n(a.peak)}) * "
            f"({_n(b.thickness)} - {_n(a.thickness)}) / ({_n(b.peak)} - {_n(a.peak)}))) / 10"
        )

    def _estimate(self, p: float, h: float, sims: list[Sim]) -> Search:
        """The thickness and specific energy at the limit, from the designs nearest it.

        Where a transport-limited design lies below the thickness at the limit, the
        electrolyte caps the electrode before the temperature does: the best design found
        within the limit stands for this porosity.
        """
        valid = [s for s in sims if not s.limited]
        cool = [s for s in valid if s.cool]
        wall = min((s.thickness for s in sims if s.limited), default=math.inf)
        best = max(cool, key=lambda s: s.specific_energy) if cool else None
        at_top = best is not None and best.thickness >= self.t_max - 1e-9
        if len(valid) < 2 or at_top:
            return (
                None
                if best is None
                else Curve(p, h, best.thickness, best.specific_energy, tuple(sims), self.limit)
            )
        a, b = sorted(valid, key=lambda s: abs(s.peak - self.limit))[:2]
        hot = [s for s in valid if not s.cool]
        if best is not None and not hot and abs(a.peak - self.limit) > CLOSE_K and wall < math.inf:
            # Far below the limit with the electrolyte running out above: no extrapolation
            # past what was seen.
            return Curve(p, h, best.thickness, best.specific_energy, tuple(sims), self.limit)
        if a.peak == b.peak:
            return (
                None
                if best is None
                else Curve(p, h, best.thickness, best.specific_energy, tuple(sims), self.limit)
            )
        frac = f"({_n(self.limit)} - {_n(a.peak)}) / ({_n(b.peak)} - {_n(a.peak)})"
        t_expr = f"{_n(a.thickness)} + {frac} * ({_n(b.thickness)} - {_n(a.thickness)})"
        if best is not None and evaluate(t_expr) >= wall - WALL_UM:
            return Curve(p, h, best.thickness, best.specific_energy, tuple(sims), self.limit)
        t, se = yield from self._calculate(
            f"Interpolating linearly between {a.thickness:g} um ({a.peak:g} °C, "
            f"{a.specific_energy:g} Wh/kg) and {b.thickness:g} um ({b.peak:g} °C, "
            f"{b.specific_energy:g} Wh/kg) to the {self.limit:g} °C limit gives the thickness "
            f"and specific energy at the limit for porosity {p:g}.",
            t_expr,
            f"{_n(a.specific_energy)} + {frac} * ({_n(b.specific_energy)} - "
            f"{_n(a.specific_energy)})",
        )
        return Curve(p, h, t, se, tuple(sims), self.limit)


__all__ = ["BatteryExpert"]
