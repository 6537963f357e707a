"""Layer 1: synthetic company histories and a forecast problem built around a solution.

A draw simulates a company's statements year by year from a few operating parameters
(growth, cost shares, working-capital days, depreciation, capex, debt, interest, tax and
payout rates), rounding every driver to a whole number so the identities hold exactly
in the shown history. It then states plausible ranges for next year's drivers, takes
the best historical value of every ratio as its target, and picks the conditions
greedily: a ratio joins only if the linear programme of all identities, ranges and the
conditions so far stays feasible with a margin. The LP's forecast is the hidden
solution and is re-checked with :func:`evaluate`. Draws that fail are redrawn from a
sub-seed, so every returned instance is solvable.
"""

from __future__ import annotations

import copy
import math
from functools import lru_cache

import numpy as np

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, system, user
from agentharness.core.task import Problem, UnsatisfiableKnobsError
from agentharness.tasks.finance.config import FinanceConfig
from agentharness.tasks.finance.problem import ConditionSpec, Hidden, Public
from agentharness.tasks.finance.simulator import (
    CONFLICTS,
    DRIVERS,
    ITEMS,
    LABELS,
    RATIO_NAMES,
    SECTIONS,
    Condition,
    complete,
    evaluate,
    historical_ratios,
    identities,
    last_year,
    naive_forecasts,
    num,
    ratios,
    rules,
    solve_forecast_lp,
    trend_forecast,
)

MAX_ATTEMPTS = 400
LAST_YEAR = 2024

# How wide each driver's range is, relative to the config's band.
BAND_FACTOR: dict[str, float] = {
    "revenue": 1.0,
    "cogs": 1.0,
    "sga": 1.0,
    "rnd": 1.0,
    "depreciation": 0.5,
    "capex": 1.5,
    "receivables": 1.0,
    "inventory": 1.0,
    "payables": 1.0,
    "short_term_debt": 2.0,
    "long_term_debt": 1.5,
    "dividends": 2.0,
}

COMPANIES = (
    "Alder Instruments",
    "Brightwater Foods",
    "Cobalt Logistics",
    "Dunmore Textiles",
    "Evergreen Pharma",
    "Fairhaven Tools",
    "Granite Robotics",
    "Harbor Electronics",
    "Ironbridge Materials",
    "Juniper Software",
    "Kestrel Aerospace",
    "Larkspur Apparel",
)


def _draw_history(rng: np.random.Generator, n_years: int) -> list[dict[str, float]] | None:
    """``n_years`` consistent statements (whole numbers), or ``None`` for a bad draw."""
    for _ in range(50):
        cogs_r = rng.uniform(0.42, 0.65)
        sga_r = rng.uniform(0.08, 0.18)
        rnd_r = rng.uniform(0.02, 0.07)
        dep_r = rng.uniform(0.08, 0.14)
        ppe_r = rng.uniform(0.3, 0.8)
        if 1 - cogs_r - sga_r - rnd_r - dep_r * ppe_r >= 0.05:
            break
    else:
        return None
    rev0 = rng.uniform(5_000, 60_000)
    mu = rng.uniform(-0.02, 0.12)
    dso, dio, dpo = rng.uniform(35, 70), rng.uniform(30, 90), rng.uniform(25, 60)
    std_r, ltd_r = rng.uniform(0.01, 0.06), rng.uniform(0.1, 0.45)
    ir, tr, payout = rng.uniform(0.035, 0.08), rng.uniform(0.19, 0.28), rng.uniform(0.1, 0.5)
    cogs0 = rev0 * cogs_r
    prev: dict[str, float] = {
        "revenue": round(rev0),
        "cash": round(rev0 * rng.uniform(0.05, 0.2)),
        "receivables": round(rev0 * dso / 365),
        "inventory": round(cogs0 * dio / 365),
        "ppe": round(rev0 * ppe_r),
        "payables": round(cogs0 * dpo / 365),
        "short_term_debt": round(rev0 * std_r),
        "long_term_debt": round(rev0 * ltd_r),
    }
    assets = prev["cash"] + prev["receivables"] + prev["inventory"] + prev["ppe"]
    prev["equity"] = assets - prev["payables"] - prev["short_term_debt"] - prev["long_term_debt"]
    if prev["equity"] < 0.15 * assets:
        return None

    def nrm(sd: float) -> float:
        return float(rng.normal(0.0, sd))

    years: list[dict[str, float]] = []
    for _ in range(n_years):
        rev = round(prev["revenue"] * (1 + mu + nrm(0.04)))
        cogs = round(rev * (cogs_r + nrm(0.015)))
        d: dict[str, float] = {"revenue": rev, "cogs": cogs}
        d["sga"] = round(rev * (sga_r + nrm(0.01)))
        d["rnd"] = round(rev * max(0.005, rnd_r + nrm(0.005)))
        d["depreciation"] = round(prev["ppe"] * (dep_r + nrm(0.005)))
        invest = d["depreciation"] + 0.5 * (rev * ppe_r - prev["ppe"])
        d["capex"] = round(max(0.3 * d["depreciation"], invest) * rng.uniform(0.9, 1.1))
        d["receivables"] = round(rev * (dso + nrm(4)) / 365)
        d["inventory"] = round(cogs * (dio + nrm(6)) / 365)
        d["payables"] = round(cogs * (dpo + nrm(4)) / 365)
        d["short_term_debt"] = round(rev * max(0.002, std_r + nrm(0.01)))
        d["long_term_debt"] = round(prev["long_term_debt"] * rng.uniform(0.85, 1.15))
        debt = (
            prev["short_term_debt"]
            + prev["long_term_debt"]
            + d["short_term_debt"]
            + d["long_term_debt"]
        ) / 2
        d["interest_expense"] = round(debt * (ir + nrm(0.003)))
        pretax = rev - cogs - d["sga"] - d["rnd"] - d["depreciation"] - d["interest_expense"]
        if pretax < 0.02 * rev:
            return None
        d["tax"] = round(pretax * (tr + nrm(0.01)))
        d["dividends"] = round((pretax - d["tax"]) * max(0.02, payout + nrm(0.05)))
        full = complete(d, prev)
        if full["cash"] < 0.02 * rev or full["equity"] <= 0.1 * full["total_assets"]:
            return None
        if (
            min(full[k] for k in ("receivables", "inventory", "payables", "dividends", "capex"))
            <= 0
        ):
            return None
        full = {k: float(round(v)) for k, v in full.items()}  # exact already; drop float noise
        years.append(full)
        prev = full
    return years


def _public_base(years: list[dict[str, float]], config: FinanceConfig, name: str) -> Public:
    """History, ranges and rates (conditions are added later)."""
    last = years[-1]
    bounds: dict[str, tuple[float, float]] = {}
    for k, f in BAND_FACTOR.items():
        v, w = last[k], config.band * f
        lo = max(0.0, float(math.ceil(v * (1 - w))))
        hi = float(math.floor(v * (1 + w)))
        bounds[k] = (lo, max(hi, lo))
    tax_rates = [y["tax"] / y["pretax_income"] for y in years]
    int_rates = [
        years[t]["interest_expense"]
        / (
            (
                years[t - 1]["short_term_debt"]
                + years[t - 1]["long_term_debt"]
                + years[t]["short_term_debt"]
                + years[t]["long_term_debt"]
            )
            / 2
        )
        for t in range(1, len(years))
    ]
    s = config.rate_slack

    def outward(lo: float, hi: float) -> tuple[float, float]:
        return (math.floor(max(0.0, lo) * 1e4) / 1e4, math.ceil(hi * 1e4) / 1e4)

    first = LAST_YEAR - len(years) + 1
    return Public(
        company=name,
        units="USD thousands",
        years=tuple(f"FY{first + t}" for t in range(len(years))),
        forecast_year=f"FY{LAST_YEAR + 1}",
        history={k: tuple(y[k] for y in years) for k in ITEMS},
        tolerance=config.tolerance,
        bounds=bounds,
        tax_rate_range=outward(min(tax_rates) - s, max(tax_rates) + s),
        interest_rate_range=outward(min(int_rates) - s, max(int_rates) + s),
        min_cash=float(math.floor(0.5 * min(y["cash"] for y in years))),
    )


def _targets(public: Public) -> dict[str, tuple[float, int]]:
    """Best historical value of each ratio (rounded to 4 decimals) and its year index."""
    out: dict[str, tuple[float, int]] = {}
    defs = ratios(last_year(public))
    for name, vals in historical_ratios(public).items():
        pts = [(v, t) for t, v in enumerate(vals) if v is not None]
        if not pts or name not in defs:
            continue
        v, t = max(pts) if defs[name].higher else min(pts)
        out[name] = (round(v, 4), t)
    return out


def _try_draw(config: FinanceConfig, rng: np.random.Generator, attempt: int) -> Problem | None:
    years = _draw_history(rng, config.history_years)
    if years is None:
        return None
    name = str(COMPANIES[int(rng.integers(len(COMPANIES)))])
    public = _public_base(years, config, name)
    targets = _targets(public)
    defs = ratios(last_year(public))
    trend = trend_forecast(public)

    def cond(r: str) -> Condition:
        return Condition(r, targets[r][0], defs[r].higher)

    pair_idx = rng.permutation(len(CONFLICTS))[: config.conflict_pairs]
    required: list[str] = []
    for i in pair_idx:
        for r in CONFLICTS[int(i)]:
            if r not in required:
                required.append(r)
    if any(r not in targets for r in required) or len(required) > config.n_conditions:
        return None
    chosen = [cond(r) for r in required]
    if chosen and solve_forecast_lp(public, chosen, config.margin) is None:
        return None
    # Conditions that every naive forecast misses come first: they make the problem real
    # (and only they earn partial credit).
    rest = [r for r in RATIO_NAMES if r in targets and r not in required]
    order = [rest[int(i)] for i in rng.permutation(len(rest))]
    naive = naive_forecasts(public)

    def naive_meets(r: str) -> bool:
        c = cond(r)
        return any(c.met_by(defs[r].value(f)) for f in naive.values())

    order.sort(key=naive_meets)  # stable: failing ones first, each group in random order
    for r in order:
        if len(chosen) >= config.n_conditions:
            break
        if solve_forecast_lp(public, [*chosen, cond(r)], config.margin) is not None:
            chosen.append(cond(r))
    if len(chosen) < config.n_conditions:
        return None
    credited = {c.ratio: not naive_meets(c.ratio) for c in chosen}
    if sum(credited.values()) < config.min_credited:
        return None
    chosen.sort(key=lambda c: RATIO_NAMES.index(c.ratio))
    public = public.model_copy(
        update={
            "conditions": tuple(
                ConditionSpec(
                    ratio=c.ratio,
                    direction="at_least" if c.higher else "at_most",
                    target=c.target,
                    best_year=public.years[targets[c.ratio][1]],
                    credited=credited[c.ratio],
                )
                for c in chosen
            )
        }
    )
    solution = solve_forecast_lp(public, chosen, config.margin, baseline=trend)
    if solution is None:
        return None
    report = evaluate(public, solution)
    if not (report.valid and report.met == len(chosen)):
        return None
    hidden = Hidden(
        solution=solution,
        solution_margin=config.margin,
        naive_scores={k: round(evaluate(public, f).score(), 4) for k, f in naive.items()},
        attempt=attempt,
    )
    return Problem(public=public.model_dump(mode="json"), hidden=hidden.model_dump(mode="json"))


@lru_cache(maxsize=256)
def _generate_cached(config_json: str, seed: int) -> Problem:
    config = FinanceConfig.model_validate_json(config_json)
    for attempt in range(MAX_ATTEMPTS):
        rng = np.random.default_rng([seed, attempt])
        problem = _try_draw(config, rng, attempt)
        if problem is not None:
            return problem
    raise UnsatisfiableKnobsError(
        f"no solvable finance instance in {MAX_ATTEMPTS} draws for seed {seed}; "
        "loosen the knobs (fewer n_conditions or conflict_pairs, wider band, smaller margin)."
    )


class FinanceGenerator:
    """Draws a company history and a forecasting problem that has a known solution."""

    def generate(self, config: FinanceConfig, seed: int) -> Problem:
        cached = _generate_cached(config.model_dump_json(), seed)
        # Copies, so no caller can mutate the cache.
        return Problem(public=copy.deepcopy(cached.public), hidden=copy.deepcopy(cached.hidden))

    def prompt(self, instance: Instance) -> list[Message]:
        return [system(SYSTEM_PROMPT), user(render_problem(instance.public_as(Public)))]


SYSTEM_PROMPT = (
    "You are a financial analyst. You build next year's financial statements for a company "
    "so that they are internally consistent, plausible and meet stated performance targets. "
    "Use the tools: compute with `linear_program` (or `calculate`), check drafts with "
    "`calculate_metrics`, then submit the final forecast with `submit_forecast`."
)


def render_problem(public: Public) -> str:
    """The user prompt: history, rules, identities, conditions, tools and answer format."""
    years = public.years
    hist = public.history
    fy = public.forecast_year
    w = 12
    lines = [
        f"Company: {public.company}. All amounts in {public.units}.",
        f"Forecast the full financial statements for {fy} (the year after {years[-1]}).",
        "",
        "## Historical statements",
        f"{'line item (key)':<22}" + "".join(f"{y:>{w}}" for y in years) + "   description",
    ]
    for section, items in SECTIONS.items():
        lines.append(f"[{section}]")
        for k in items:
            vals = "".join(f"{num(v):>{w}}" for v in hist[k])
            lines.append(f"{k:<22}{vals}   {LABELS[k]}")
    prev = last_year(public)
    tol = public.tolerance
    lines += [
        "",
        f"## Accounting identities (must hold within ±{tol:g} units; prior year = {years[-1]})",
    ]
    lines += [f"- {ident.text}" for ident in identities(prev)]
    lines += [
        "",
        "## Plausibility bounds (all must hold; inclusive)",
    ]
    lines += [f"- {rule.text}" for rule in rules(public)]
    defs = ratios(prev)
    lines += [
        "",
        f"## Conditions: {len(public.conditions)} ratios must match or beat their best "
        "historical value",
        "Ratios use year-end balances of the same year.",
    ]
    for c in public.conditions:
        op = ">=" if c.direction == "at_least" else "<="
        r = defs[c.ratio]
        tag = "" if c.credited else "  [no partial credit]"
        lines.append(f"- {c.ratio} = {r.formula}  {op} {c.target:.4f}  (best: {c.best_year}){tag}")
    keys = ", ".join(ITEMS)
    drivers = ", ".join(DRIVERS)
    lines += [
        "",
        "## Tools",
        "- calculate_metrics(forecast): checks a complete draft; reports every identity that fails "
        "(with the value it implies), every bound that fails, every ratio, and each condition's "
        "pass/fail and gap. Use it as often as you need.",
        "- linear_program(constraints, objective, goal): solves a linear program over named "
        "variables; constraints are linear equations and inequalities written as text (e.g. "
        "'gross_profit = revenue - cogs', '30000 <= revenue <= 36000', "
        "'gross_profit >= 0.41 * revenue'), and it returns the values that minimize or maximize "
        "the objective. Every identity, bound and condition here is linear once a ratio "
        "condition num / den >= t is written num >= t * den with den > 0. It knows nothing "
        "about the company, and it is not a check.",
        "- calculate(expression), solve_linear(a, b): arithmetic and linear systems on numbers "
        "you give them.",
        "- submit_forecast(forecast): your final answer; ends the episode.",
        "",
        "## Answer format",
        f"`forecast` is a JSON object with a number for each of these {len(ITEMS)} keys: {keys}.",
        f"Tip: choose the drivers ({drivers}) and derive every other item from the identities.",
        "",
        "## Scoring",
        "0 if any identity or plausibility bound is violated. Otherwise 0.6 when every "
        "condition is met, plus 0.3 x the fraction of the credited conditions met (those not "
        "marked [no partial credit]), counted only once every marked condition is met too (a "
        "naive extrapolation of the history already meets each marked one on its own), plus "
        "up to 0.1 for few calculate_metrics calls when every condition is met.",
    ]
    return "\n".join(lines)
