"""Three-statement accounting model: identities, plausibility rules, ratios and an LP.

Pure domain code. A *forecast* is a mapping from every line item in :data:`ITEMS` to a
number (USD thousands). The prior year's statements (``prev``) supply the opening
balances the identities and some ratios need.

Every identity, every plausibility rule and every ratio condition with a fixed target
is linear in the forecast's line items (a ratio condition ``num / den >= t`` with
``den > 0`` is ``num - t * den >= 0``), so a forecast meeting all of them is the
solution of a linear programme; :func:`solve_forecast_lp` finds one with
``scipy.optimize.linprog``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from agentharness.tasks.finance.problem import Public

INCOME_STATEMENT: tuple[str, ...] = (
    "revenue",
    "cogs",
    "gross_profit",
    "sga",
    "rnd",
    "depreciation",
    "ebit",
    "interest_expense",
    "pretax_income",
    "tax",
    "net_income",
    "dividends",
)
BALANCE_SHEET: tuple[str, ...] = (
    "cash",
    "receivables",
    "inventory",
    "current_assets",
    "ppe",
    "total_assets",
    "payables",
    "short_term_debt",
    "current_liabilities",
    "long_term_debt",
    "total_liabilities",
    "equity",
)
CASH_FLOW: tuple[str, ...] = ("cfo", "capex", "cff", "net_change_in_cash")
ITEMS: tuple[str, ...] = INCOME_STATEMENT + BALANCE_SHEET + CASH_FLOW
SECTIONS: dict[str, tuple[str, ...]] = {
    "Income statement": INCOME_STATEMENT,
    "Balance sheet (year end)": BALANCE_SHEET,
    "Cash flow statement": CASH_FLOW,
}

LABELS: dict[str, str] = {
    "revenue": "Revenue",
    "cogs": "Cost of goods sold",
    "gross_profit": "Gross profit",
    "sga": "SG&A expense",
    "rnd": "R&D expense",
    "depreciation": "Depreciation",
    "ebit": "EBIT (operating income)",
    "interest_expense": "Interest expense",
    "pretax_income": "Pretax income",
    "tax": "Income tax",
    "net_income": "Net income",
    "dividends": "Dividends paid",
    "cash": "Cash",
    "receivables": "Accounts receivable",
    "inventory": "Inventory",
    "current_assets": "Total current assets",
    "ppe": "PP&E, net",
    "total_assets": "Total assets",
    "payables": "Accounts payable",
    "short_term_debt": "Short-term debt",
    "current_liabilities": "Total current liabilities",
    "long_term_debt": "Long-term debt",
    "total_liabilities": "Total liabilities",
    "equity": "Shareholders' equity",
    "cfo": "Cash from operations",
    "capex": "Capital expenditure (positive = spent)",
    "cff": "Cash from financing",
    "net_change_in_cash": "Net change in cash",
}

# The independent choices of a forecast; every other item follows from these and the
# prior year through the identities.
DRIVERS: tuple[str, ...] = (
    "revenue",
    "cogs",
    "sga",
    "rnd",
    "depreciation",
    "interest_expense",
    "tax",
    "dividends",
    "receivables",
    "inventory",
    "payables",
    "short_term_debt",
    "long_term_debt",
    "capex",
)
# Drivers with an explicit [min, max] range (interest and tax are bounded by rates).
RANGED: tuple[str, ...] = tuple(d for d in DRIVERS if d not in ("interest_expense", "tax"))

# Items the identities need from the prior year.
OPENING: tuple[str, ...] = (
    "cash",
    "receivables",
    "inventory",
    "ppe",
    "payables",
    "short_term_debt",
    "long_term_debt",
    "equity",
)


@dataclass(frozen=True)
class Lin:
    """An affine form ``sum(coef * item) + const`` over the forecast's line items."""

    terms: tuple[tuple[str, float], ...] = ()
    const: float = 0.0

    def value(self, x: Mapping[str, float]) -> float:
        return sum(c * x[k] for k, c in self.terms) + self.const

    @property
    def is_constant(self) -> bool:
        return not self.terms


def lin(const: float = 0.0, **terms: float) -> Lin:
    return Lin(tuple(terms.items()), const)


def num(v: float) -> str:
    """An amount without exponent notation: whole numbers plain, others to 2 decimals."""
    return f"{v:.0f}" if float(v).is_integer() else f"{v:.2f}"


@dataclass(frozen=True)
class Identity:
    """``item == rhs``: an accounting identity of the forecast year."""

    name: str
    item: str
    rhs: Lin
    text: str


def identities(prev: Mapping[str, float]) -> list[Identity]:
    """The accounting identities linking the forecast year to itself and the prior year."""
    p = prev
    return [
        Identity(
            "gross_profit", "gross_profit", lin(revenue=1, cogs=-1), "gross_profit = revenue - cogs"
        ),
        Identity(
            "ebit",
            "ebit",
            lin(gross_profit=1, sga=-1, rnd=-1, depreciation=-1),
            "ebit = gross_profit - sga - rnd - depreciation",
        ),
        Identity(
            "pretax_income",
            "pretax_income",
            lin(ebit=1, interest_expense=-1),
            "pretax_income = ebit - interest_expense",
        ),
        Identity(
            "net_income",
            "net_income",
            lin(pretax_income=1, tax=-1),
            "net_income = pretax_income - tax",
        ),
        Identity(
            "current_assets",
            "current_assets",
            lin(cash=1, receivables=1, inventory=1),
            "current_assets = cash + receivables + inventory",
        ),
        Identity(
            "ppe_rollforward",
            "ppe",
            lin(p["ppe"], capex=1, depreciation=-1),
            f"ppe = prior-year ppe ({num(p['ppe'])}) + capex - depreciation",
        ),
        Identity(
            "total_assets",
            "total_assets",
            lin(current_assets=1, ppe=1),
            "total_assets = current_assets + ppe",
        ),
        Identity(
            "current_liabilities",
            "current_liabilities",
            lin(payables=1, short_term_debt=1),
            "current_liabilities = payables + short_term_debt",
        ),
        Identity(
            "total_liabilities",
            "total_liabilities",
            lin(current_liabilities=1, long_term_debt=1),
            "total_liabilities = current_liabilities + long_term_debt",
        ),
        Identity(
            "equity_rollforward",
            "equity",
            lin(p["equity"], net_income=1, dividends=-1),
            f"equity = prior-year equity ({num(p['equity'])}) + net_income - dividends",
        ),
        Identity(
            "balance_sheet",
            "total_assets",
            lin(total_liabilities=1, equity=1),
            "total_assets = total_liabilities + equity",
        ),
        Identity(
            "cfo",
            "cfo",
            lin(
                p["receivables"] + p["inventory"] - p["payables"],
                net_income=1,
                depreciation=1,
                receivables=-1,
                inventory=-1,
                payables=1,
            ),
            "cfo = net_income + depreciation - (receivables - prior receivables)"
            " - (inventory - prior inventory) + (payables - prior payables)",
        ),
        Identity(
            "cff",
            "cff",
            lin(
                -p["short_term_debt"] - p["long_term_debt"],
                short_term_debt=1,
                long_term_debt=1,
                dividends=-1,
            ),
            "cff = (short_term_debt - prior short_term_debt)"
            " + (long_term_debt - prior long_term_debt) - dividends",
        ),
        Identity(
            "net_change_in_cash",
            "net_change_in_cash",
            lin(cfo=1, capex=-1, cff=1),
            "net_change_in_cash = cfo - capex + cff",
        ),
        Identity(
            "cash_rollforward",
            "cash",
            lin(p["cash"], net_change_in_cash=1),
            f"cash = prior-year cash ({num(p['cash'])}) + net_change_in_cash",
        ),
    ]


def complete(drivers: Mapping[str, float], prev: Mapping[str, float]) -> dict[str, float]:
    """The full statements implied by the :data:`DRIVERS` and the prior year."""
    d = {k: float(drivers[k]) for k in DRIVERS}
    x = dict(d)
    x["gross_profit"] = d["revenue"] - d["cogs"]
    x["ebit"] = x["gross_profit"] - d["sga"] - d["rnd"] - d["depreciation"]
    x["pretax_income"] = x["ebit"] - d["interest_expense"]
    x["net_income"] = x["pretax_income"] - d["tax"]
    x["ppe"] = prev["ppe"] + d["capex"] - d["depreciation"]
    x["equity"] = prev["equity"] + x["net_income"] - d["dividends"]
    x["current_liabilities"] = d["payables"] + d["short_term_debt"]
    x["total_liabilities"] = x["current_liabilities"] + d["long_term_debt"]
    x["cfo"] = (
        x["net_income"]
        + d["depreciation"]
        - (d["receivables"] - prev["receivables"])
        - (d["inventory"] - prev["inventory"])
        + (d["payables"] - prev["payables"])
    )
    x["cff"] = (
        d["short_term_debt"]
        - prev["short_term_debt"]
        + d["long_term_debt"]
        - prev["long_term_debt"]
        - d["dividends"]
    )
    x["net_change_in_cash"] = x["cfo"] - d["capex"] + x["cff"]
    x["cash"] = prev["cash"] + x["net_change_in_cash"]
    x["current_assets"] = x["cash"] + d["receivables"] + d["inventory"]
    x["total_assets"] = x["current_assets"] + x["ppe"]
    return {k: x[k] for k in ITEMS}


# -- ratios ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Ratio:
    """``num / den``; undefined when ``den <= 0``. ``higher`` says which way is better."""

    name: str
    formula: str
    num: Lin
    den: Lin
    higher: bool

    def value(self, x: Mapping[str, float]) -> float | None:
        den = self.den.value(x)
        if not math.isfinite(den) or den <= 1e-9:
            return None
        return self.num.value(x) / den


RATIO_NAMES: tuple[str, ...] = (
    "gross_margin",
    "operating_margin",
    "net_margin",
    "roe",
    "roa",
    "asset_turnover",
    "current_ratio",
    "quick_ratio",
    "debt_to_equity",
    "interest_coverage",
    "inventory_turnover",
    "receivables_turnover",
    "sga_to_revenue",
    "rnd_to_revenue",
    "revenue_growth",
    "cash_conversion",
    "fcf_margin",
    "capex_to_depreciation",
    "payout_ratio",
)


def ratios(prev: Mapping[str, float] | None) -> dict[str, Ratio]:
    """Every ratio; ``revenue_growth`` needs the prior year and is absent without it."""
    rev = lin(revenue=1)
    out = [
        Ratio("gross_margin", "gross_profit / revenue", lin(gross_profit=1), rev, True),
        Ratio("operating_margin", "ebit / revenue", lin(ebit=1), rev, True),
        Ratio("net_margin", "net_income / revenue", lin(net_income=1), rev, True),
        Ratio(
            "roe", "net_income / equity (year-end equity)", lin(net_income=1), lin(equity=1), True
        ),
        Ratio(
            "roa",
            "net_income / total_assets (year-end)",
            lin(net_income=1),
            lin(total_assets=1),
            True,
        ),
        Ratio("asset_turnover", "revenue / total_assets", rev, lin(total_assets=1), True),
        Ratio(
            "current_ratio",
            "current_assets / current_liabilities",
            lin(current_assets=1),
            lin(current_liabilities=1),
            True,
        ),
        Ratio(
            "quick_ratio",
            "(cash + receivables) / current_liabilities",
            lin(cash=1, receivables=1),
            lin(current_liabilities=1),
            True,
        ),
        Ratio(
            "debt_to_equity",
            "(short_term_debt + long_term_debt) / equity",
            lin(short_term_debt=1, long_term_debt=1),
            lin(equity=1),
            False,
        ),
        Ratio(
            "interest_coverage",
            "ebit / interest_expense",
            lin(ebit=1),
            lin(interest_expense=1),
            True,
        ),
        Ratio("inventory_turnover", "cogs / inventory", lin(cogs=1), lin(inventory=1), True),
        Ratio("receivables_turnover", "revenue / receivables", rev, lin(receivables=1), True),
        Ratio("sga_to_revenue", "sga / revenue", lin(sga=1), rev, False),
        Ratio("rnd_to_revenue", "rnd / revenue", lin(rnd=1), rev, True),
        Ratio("cash_conversion", "cfo / net_income", lin(cfo=1), lin(net_income=1), True),
        Ratio("fcf_margin", "(cfo - capex) / revenue", lin(cfo=1, capex=-1), rev, True),
        Ratio(
            "capex_to_depreciation", "capex / depreciation", lin(capex=1), lin(depreciation=1), True
        ),
        Ratio("payout_ratio", "dividends / net_income", lin(dividends=1), lin(net_income=1), True),
    ]
    if prev is not None and prev.get("revenue", 0.0) > 0:
        r0 = float(prev["revenue"])
        out.append(
            Ratio(
                "revenue_growth",
                "revenue / prior-year revenue - 1",
                lin(-r0, revenue=1),
                lin(r0),
                True,
            )
        )
    by_name = {r.name: r for r in out}
    return {n: by_name[n] for n in RATIO_NAMES if n in by_name}


# Pairs of ratios that pull against each other (used to make hard instances).
CONFLICTS: tuple[tuple[str, str], ...] = (
    ("roe", "debt_to_equity"),
    ("current_ratio", "asset_turnover"),
    ("rnd_to_revenue", "operating_margin"),
    ("fcf_margin", "capex_to_depreciation"),
    ("quick_ratio", "roa"),
    ("payout_ratio", "debt_to_equity"),
    ("interest_coverage", "roe"),
)


# -- plausibility rules ---------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """``lo <= num / den <= hi`` with ``den > 0`` (``den`` is 1 for a plain item range)."""

    name: str
    text: str
    num: Lin
    den: Lin
    lo: float | None
    hi: float | None
    is_rate: bool = False


def rules(public: Public) -> list[Rule]:
    """The stated plausibility bounds of an instance's forecast."""
    prev = last_year(public)
    out: list[Rule] = []
    for item, (lo, hi) in public.bounds.items():
        out.append(
            Rule(
                f"{item}_range",
                f"{num(lo)} <= {item} <= {num(hi)}",
                lin(**{item: 1.0}),
                lin(1.0),
                lo,
                hi,
            )
        )
    t_lo, t_hi = public.tax_rate_range
    out.append(
        Rule(
            "tax_rate",
            f"{t_lo:g} <= tax / pretax_income <= {t_hi:g} (pretax_income must be positive)",
            lin(tax=1),
            lin(pretax_income=1),
            t_lo,
            t_hi,
            True,
        )
    )
    r_lo, r_hi = public.interest_rate_range
    d0 = prev["short_term_debt"] + prev["long_term_debt"]
    out.append(
        Rule(
            "interest_rate",
            f"{r_lo:g} <= interest_expense / average total debt <= {r_hi:g}, average total debt = "
            f"(prior-year debt {num(d0)} + short_term_debt + long_term_debt) / 2",
            lin(interest_expense=1),
            lin(0.5 * d0, short_term_debt=0.5, long_term_debt=0.5),
            r_lo,
            r_hi,
            True,
        )
    )
    out.append(
        Rule(
            "min_cash",
            f"cash >= {num(public.min_cash)}",
            lin(cash=1),
            lin(1.0),
            public.min_cash,
            None,
        )
    )
    return out


def last_year(public: Public) -> dict[str, float]:
    """The most recent historical year: the forecast's opening balances."""
    return {k: float(v[-1]) for k, v in public.history.items()}


def history_years(public: Public) -> list[dict[str, float]]:
    hist = public.history
    n = len(hist["revenue"])
    return [{k: float(v[t]) for k, v in hist.items()} for t in range(n)]


def historical_ratios(public: Public) -> dict[str, list[float | None]]:
    """Each ratio for each historical year (``None`` where undefined)."""
    years = history_years(public)
    out: dict[str, list[float | None]] = {n: [] for n in RATIO_NAMES}
    for t, x in enumerate(years):
        defs = ratios(years[t - 1] if t > 0 else None)
        for n in RATIO_NAMES:
            out[n].append(defs[n].value(x) if n in defs else None)
    return out


# -- evaluation -----------------------------------------------------------------------


@dataclass(frozen=True)
class Condition:
    """``ratio`` must reach ``target`` (at least when ``higher``, else at most).

    ``credited`` is False for a condition that a naive extrapolation of the history
    already meets: it is still required for success but earns no partial credit.
    """

    ratio: str
    target: float
    higher: bool
    credited: bool = True

    def met_by(self, value: float | None) -> bool:
        if value is None:
            return False
        gap = (value - self.target) if self.higher else (self.target - value)
        return gap >= -1e-9


def conditions(public: Public) -> list[Condition]:
    return [
        Condition(c.ratio, c.target, c.direction == "at_least", c.credited)
        for c in public.conditions
    ]


# Reward weights (finance-v2): meeting every condition, partial credit for the credited
# conditions met, and an efficiency bonus paid only with success.
SUCCESS_WEIGHT = 0.6
PROGRESS_WEIGHT = 0.3
EFFICIENCY_WEIGHT = 0.1


@dataclass
class Report:
    """The verdict on one complete forecast."""

    identity_errors: list[tuple[Identity, float, float]] = field(
        default_factory=list
    )  # (id, expected, diff)
    rule_errors: list[tuple[Rule, float | None, str]] = field(
        default_factory=list
    )  # (rule, value, why)
    n_identities: int = 0
    n_rules: int = 0
    ratio_values: dict[str, float | None] = field(default_factory=dict)
    results: list[tuple[Condition, float | None, bool, float | None]] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.identity_errors and not self.rule_errors

    @property
    def met(self) -> int:
        return sum(ok for _, _, ok, _ in self.results)

    @property
    def fraction(self) -> float:
        return self.met / len(self.results) if self.results else 0.0

    @property
    def all_met(self) -> bool:
        return bool(self.results) and self.met == len(self.results)

    @property
    def credited(self) -> int:
        """How many conditions earn partial credit (those no naive forecast meets)."""
        return sum(c.credited for c, _, _, _ in self.results)

    @property
    def credited_met(self) -> int:
        return sum(c.credited and ok for c, _, ok, _ in self.results)

    @property
    def uncredited_met(self) -> bool:
        """Whether every condition that a naive forecast already meets is met."""
        return all(ok for c, _, ok, _ in self.results if not c.credited)

    @property
    def progress(self) -> float:
        """Fraction of the credited conditions met, once every uncredited one is met.

        A naive forecast meets each uncredited condition on its own; only a forecast that
        meets all of them together is on its way, and only then do the credited ones
        count. 0 when no condition is credited.
        """
        if not self.credited or not self.uncredited_met:
            return 0.0
        return self.credited_met / self.credited

    def score(self, efficiency: float = 1.0) -> float:
        """The reward of submitting this forecast (finance-v2).

        Zero when an identity or bound is broken; otherwise 0.6 when every condition is
        met, plus 0.3 x :attr:`progress`, plus 0.1 x ``efficiency`` when every condition
        is met.
        """
        if not self.valid:
            return 0.0
        done = float(self.all_met)
        return (
            SUCCESS_WEIGHT * done
            + PROGRESS_WEIGHT * self.progress
            + EFFICIENCY_WEIGHT * efficiency * done
        )


def evaluate(public: Public, forecast: Mapping[str, float]) -> Report:
    """Check a complete forecast: identities, plausibility rules and every condition."""
    missing = [k for k in ITEMS if k not in forecast]
    if missing:
        raise ValueError(f"forecast lacks items: {', '.join(missing)}")
    x = {k: float(forecast[k]) for k in ITEMS}
    bad = [k for k, v in x.items() if not math.isfinite(v)]
    if bad:
        raise ValueError(f"non-finite values for: {', '.join(bad)}")
    prev = last_year(public)
    tol = public.tolerance
    rep = Report()
    ids = identities(prev)
    rep.n_identities = len(ids)
    for ident in ids:
        expected = ident.rhs.value(x)
        diff = x[ident.item] - expected
        if abs(diff) > tol:
            rep.identity_errors.append((ident, expected, diff))
    rs = rules(public)
    rep.n_rules = len(rs)
    for rule in rs:
        den = rule.den.value(x)
        if den <= 0:
            rep.rule_errors.append((rule, None, "denominator must be positive"))
            continue
        v = rule.num.value(x) / den
        eps = 1e-9 * max(1.0, abs(v))
        if rule.lo is not None and v < rule.lo - eps:
            rep.rule_errors.append((rule, v, f"below the minimum by {rule.lo - v:.6g}"))
        elif rule.hi is not None and v > rule.hi + eps:
            rep.rule_errors.append((rule, v, f"above the maximum by {v - rule.hi:.6g}"))
    defs = ratios(prev)
    rep.ratio_values = {n: r.value(x) for n, r in defs.items()}
    for cond in conditions(public):
        rv = rep.ratio_values.get(cond.ratio)
        if rv is None:
            rep.results.append((cond, None, False, None))
            continue
        gap = (rv - cond.target) if cond.higher else (cond.target - rv)
        rep.results.append((cond, rv, cond.met_by(rv), gap))
    return rep


# -- linear programme -----------------------------------------------------------------


def solve_forecast_lp(
    public: Public,
    conds: Sequence[Condition],
    margin: float,
    baseline: Mapping[str, float] | None = None,
) -> dict[str, float] | None:
    """A forecast meeting every identity, rule and condition (with a relative ``margin``).

    Each condition must be beaten by ``margin * max(|target|, 0.01)``; rule ranges are
    shrunk a little so the drivers can be rounded to cents safely. With a ``baseline``
    the forecast stays as close to it as possible (sum of relative driver deviations);
    without, any feasible point is returned. ``None`` when infeasible.
    """
    from scipy.optimize import linprog

    prev = last_year(public)
    idx = {k: i for i, k in enumerate(ITEMS)}
    nx = len(ITEMS)
    aux = list(DRIVERS) if baseline is not None else []
    nv = nx + len(aux)
    a_eq: list[np.ndarray] = []
    b_eq: list[float] = []
    a_ub: list[np.ndarray] = []
    b_ub: list[float] = []

    def row(form: Lin, scale: float = 1.0) -> np.ndarray:
        r = np.zeros(nv)
        for k, c in form.terms:
            r[idx[k]] += c * scale
        return r

    def geq(num: Lin, den: Lin, t: float) -> None:
        # num - t * den >= 0  ->  -(num - t den) <= 0
        r = row(num) - row(den, t)
        a_ub.append(-r)
        b_ub.append(num.const - t * den.const)

    def leq(num: Lin, den: Lin, t: float) -> None:
        r = row(num) - row(den, t)
        a_ub.append(r)
        b_ub.append(-(num.const - t * den.const))

    for ident in identities(prev):
        r = row(ident.rhs)
        r = -r
        r[idx[ident.item]] += 1.0
        a_eq.append(r)
        b_eq.append(ident.rhs.const)

    one = lin(1.0)
    for rule in rules(public):
        shrink = 1e-4 if rule.is_rate else 0.05
        if not rule.den.is_constant:
            geq(rule.den, one, 1.0)
        if rule.lo is not None:
            geq(rule.num, rule.den, rule.lo + shrink)
        if rule.hi is not None:
            leq(rule.num, rule.den, rule.hi - shrink)
    for k in (
        "net_income",
        "equity",
        "total_assets",
        "current_liabilities",
        "inventory",
        "receivables",
    ):
        geq(lin(**{k: 1.0}), one, 1.0)

    defs = ratios(prev)
    for cond in conds:
        ratio = defs[cond.ratio]
        step = margin * max(abs(cond.target), 0.01)
        if not ratio.den.is_constant:
            geq(ratio.den, one, 1.0)
        if cond.higher:
            geq(ratio.num, ratio.den, cond.target + step)
        else:
            leq(ratio.num, ratio.den, cond.target - step)

    c = np.zeros(nv)
    if baseline is not None:
        for j, k in enumerate(aux):
            scale = max(abs(float(baseline[k])), 1.0)
            u = nx + j
            c[u] = 1.0 / scale
            r = np.zeros(nv)
            r[idx[k]], r[u] = 1.0, -1.0  # x - u <= base
            a_ub.append(r)
            b_ub.append(float(baseline[k]))
            r = np.zeros(nv)
            r[idx[k]], r[u] = -1.0, -1.0  # -x - u <= -base
            a_ub.append(r)
            b_ub.append(-float(baseline[k]))

    bounds = [(None, None)] * nx + [(0.0, None)] * len(aux)
    res = linprog(
        c,
        A_ub=np.array(a_ub),
        b_ub=np.array(b_ub),
        A_eq=np.array(a_eq),
        b_eq=np.array(b_eq),
        bounds=bounds,
        method="highs",
    )
    if res.status != 0 or res.x is None:
        return None
    drivers = {k: round(float(res.x[idx[k]]), 2) for k in DRIVERS}
    return complete(drivers, prev)


def trend_forecast(public: Public) -> dict[str, float]:
    """A naive, internally consistent forecast: last year's ratios carried forward.

    Revenue grows at its average historical rate; costs and working capital keep last
    year's share of revenue; debt, depreciation and capex stay flat; interest and tax
    use the middle of their allowed rates; the payout ratio is last year's. Drivers are
    clipped to their stated ranges.
    """
    years = history_years(public)
    last = years[-1]
    growth = [years[t]["revenue"] / years[t - 1]["revenue"] - 1 for t in range(1, len(years))]
    g = float(np.mean(growth)) if growth else 0.0
    bounds = public.bounds

    def clip(k: str, v: float) -> float:
        lo, hi = bounds[k]
        return round(min(max(v, lo), hi), 2)

    rev = clip("revenue", last["revenue"] * (1 + g))
    f = rev / last["revenue"]
    d: dict[str, float] = {"revenue": rev}
    for k in ("cogs", "sga", "rnd", "receivables", "inventory", "payables"):
        d[k] = clip(k, last[k] * f)
    for k in ("depreciation", "capex", "short_term_debt", "long_term_debt"):
        d[k] = clip(k, last[k])
    r_mid = sum(public.interest_rate_range) / 2
    t_mid = sum(public.tax_rate_range) / 2
    avg_debt = (
        last["short_term_debt"]
        + last["long_term_debt"]
        + d["short_term_debt"]
        + d["long_term_debt"]
    ) / 2
    d["interest_expense"] = round(r_mid * avg_debt, 2)
    pretax = rev - d["cogs"] - d["sga"] - d["rnd"] - d["depreciation"] - d["interest_expense"]
    d["tax"] = round(max(pretax, 0.0) * t_mid, 2)
    ni = pretax - d["tax"]
    payout = last["dividends"] / last["net_income"] if last["net_income"] > 0 else 0.0
    d["dividends"] = clip("dividends", max(ni, 0.0) * payout)
    return complete(d, last)


# The "optimistic" naive forecasts: drivers pushed to the favourable end of their stated
# ranges (revenue up, costs and working capital down, ...), the rest kept flat.
OPTIMISTIC: dict[str, dict[str, str]] = {
    "optimistic_margins": {"revenue": "max", "cogs": "min", "sga": "min", "rnd": "min"},
    "optimistic": {
        "revenue": "max",
        "cogs": "min",
        "sga": "min",
        "rnd": "min",
        "depreciation": "min",
        "receivables": "min",
        "inventory": "min",
        "payables": "max",
        "short_term_debt": "min",
        "long_term_debt": "min",
        "dividends": "min",
    },
    "optimistic_invest": {
        "revenue": "max",
        "cogs": "min",
        "sga": "min",
        "rnd": "max",
        "depreciation": "min",
        "capex": "max",
        "receivables": "min",
        "inventory": "min",
        "payables": "max",
        "short_term_debt": "min",
        "long_term_debt": "min",
        "dividends": "max",
    },
}


def _mid_rates(
    public: Public, drivers: Mapping[str, float], last: Mapping[str, float]
) -> dict[str, float]:
    """``drivers`` with interest and tax at the middle of their allowed rates."""
    d = dict(drivers)
    avg_debt = (
        last["short_term_debt"]
        + last["long_term_debt"]
        + d["short_term_debt"]
        + d["long_term_debt"]
    ) / 2
    d["interest_expense"] = sum(public.interest_rate_range) / 2 * avg_debt
    pretax = d["revenue"] - d["cogs"] - d["sga"] - d["rnd"] - d["depreciation"]
    pretax -= d["interest_expense"]
    d["tax"] = max(pretax, 0.0) * sum(public.tax_rate_range) / 2
    return d


def naive_forecasts(public: Public) -> dict[str, dict[str, float]]:
    """Forecasts anyone can write without working on the conditions, by name.

    Each extrapolates the history's drivers one naive way and derives the other items
    through the identities: ``trend`` (:func:`trend_forecast`), ``flat`` (last year's
    drivers), ``flat_rates`` (last year's drivers, interest and tax at mid rates),
    ``average`` (the historical mean of each driver), ``cagr`` (each driver at its own
    compound growth), ``last_growth`` (each driver at its last year's growth),
    ``scaled`` (every driver at the average revenue growth), and the last four with their
    drivers clipped to the stated ranges (``..._clipped``), and the optimistic ones of
    :data:`OPTIMISTIC` (drivers at the favourable end of their ranges, interest and tax at
    mid rates). A condition that any of them meets (valid or not) earns no partial credit.
    """
    years = history_years(public)
    last = years[-1]
    n = len(years) - 1
    growth = [years[t]["revenue"] / years[t - 1]["revenue"] - 1 for t in range(1, len(years))]
    g = float(np.mean(growth)) if growth else 0.0

    def grown(k: str, rate: float) -> float:
        return last[k] * (1.0 + rate)

    def own_rate(k: str, first: Mapping[str, float], periods: int) -> float:
        a, b = first[k], last[k]
        if a <= 0 or b <= 0 or periods < 1:
            return 0.0
        return float((b / a) ** (1.0 / periods) - 1.0)

    prior = years[-2] if len(years) >= 2 else last
    drafts: dict[str, dict[str, float]] = {
        "flat": {k: last[k] for k in DRIVERS},
        "average": {k: float(np.mean([y[k] for y in years])) for k in DRIVERS},
        "cagr": {k: grown(k, own_rate(k, years[0], n)) for k in DRIVERS},
        "last_growth": {k: grown(k, own_rate(k, prior, 1)) for k in DRIVERS},
        "scaled": {k: grown(k, g) for k in DRIVERS},
    }
    flat_rates = _mid_rates(public, drafts["flat"], last)
    drafts["flat_rates"] = flat_rates
    bounds = public.bounds

    def clipped(d: Mapping[str, float]) -> dict[str, float]:
        out = dict(d)
        for k, (lo, hi) in bounds.items():
            out[k] = min(max(out[k], lo), hi)
        return out

    for name in ("average", "cagr", "last_growth", "scaled"):
        drafts[f"{name}_clipped"] = clipped(drafts[name])
    for name, ends in OPTIMISTIC.items():
        d = dict(flat_rates)
        for k, end in ends.items():
            d[k] = bounds[k][1] if end == "max" else bounds[k][0]
        drafts[name] = _mid_rates(public, d, last)
    out = {"trend": trend_forecast(public)}
    for name, d in drafts.items():
        out[name] = complete({k: round(v, 2) for k, v in d.items()}, last)
    return out


def naive_meets(public: Public, cond: Condition) -> bool:
    """Whether any naive forecast meets ``cond`` (validity aside)."""
    ratio = ratios(last_year(public))[cond.ratio]
    return any(cond.met_by(ratio.value(f)) for f in naive_forecasts(public).values())


# -- input normalisation --------------------------------------------------------------

MAX_ABS_VALUE = 1e10

ALIASES: dict[str, str] = {
    "cost_of_goods_sold": "cogs",
    "cost_of_sales": "cogs",
    "sg_a": "sga",
    "sganda": "sga",
    "r_d": "rnd",
    "randd": "rnd",
    "research_and_development": "rnd",
    "interest": "interest_expense",
    "ebt": "pretax_income",
    "income_tax": "tax",
    "taxes": "tax",
    "accounts_receivable": "receivables",
    "accounts_payable": "payables",
    "pp_e": "ppe",
    "net_ppe": "ppe",
    "std": "short_term_debt",
    "ltd": "long_term_debt",
    "shareholders_equity": "equity",
    "total_equity": "equity",
    "operating_cash_flow": "cfo",
    "cash_from_operations": "cfo",
    "capital_expenditure": "capex",
    "capital_expenditures": "capex",
    "cash_from_financing": "cff",
    "net_change_cash": "net_change_in_cash",
}


def _key(raw: str) -> str:
    k = raw.strip().lower().replace("&", "_").replace("'", "")
    for ch in " -./()":
        k = k.replace(ch, "_")
    while "__" in k:
        k = k.replace("__", "_")
    k = k.strip("_")
    return ALIASES.get(k, k)


def normalize_forecast(raw: Mapping[str, float]) -> tuple[dict[str, float], list[str]]:
    """Map the agent's keys onto :data:`ITEMS`; ``ValueError`` says what to fix.

    Keys are matched case-insensitively with spaces or dashes read as underscores, and a
    few common synonyms are accepted (reported back as notes).
    """
    import difflib

    out: dict[str, float] = {}
    notes: list[str] = []
    unknown: list[str] = []
    dupes: list[str] = []
    for raw_key, value in raw.items():
        k = _key(str(raw_key))
        if k not in ITEMS:
            near = difflib.get_close_matches(k, ITEMS, n=1, cutoff=0.6)
            unknown.append(f"'{raw_key}'" + (f" (did you mean '{near[0]}'?)" if near else ""))
            continue
        if k in out:
            dupes.append(f"'{raw_key}' (= {k})")
            continue
        v = float(value)
        if not math.isfinite(v) or abs(v) > MAX_ABS_VALUE:
            raise ValueError(
                f"value of '{raw_key}' must be a finite number with |value| <= {MAX_ABS_VALUE:g}."
            )
        if k != raw_key:
            notes.append(f"read '{raw_key}' as '{k}'")
        out[k] = v
    problems: list[str] = []
    if unknown:
        problems.append("unknown keys: " + ", ".join(unknown))
    if dupes:
        problems.append("duplicate keys: " + ", ".join(dupes))
    missing = [k for k in ITEMS if k not in out]
    if missing:
        problems.append(f"missing {len(missing)} of {len(ITEMS)} items: " + ", ".join(missing))
    if problems:
        raise ValueError(
            "; ".join(problems) + f". The forecast needs exactly these keys: {', '.join(ITEMS)}."
        )
    return out, notes
