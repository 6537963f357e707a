"""The scripted expert (finance-v3): write the forecast as a linear program, solve it, check.

Every identity, plausibility bound and ratio condition is linear in the line items once a
condition ``num / den >= t`` is written ``num >= t * den`` (with ``den`` kept positive), so
the expert states them all, as text, from what the prompt shows, and solves them with the
task's ``linear_program`` tool:

* the identities as printed, with the prior-year values (the last column of the history)
  in place of "prior ..." and "prior-year ... (value)";
* the ranges as printed (``lo <= item <= hi``) and ``cash >= min``; the tax and interest
  rates as two inequalities each, ``RATE_MARGIN`` inside their bounds, with a positive
  pretax income;
* each condition ``num >= (t + 0.001 * |t|) * den`` (``<=`` and minus for "at most"), a
  small margin so that rounding the values to cents cannot break it, with ``den >= 1``;
* the objective: the largest net income these allow.

It checks the solution with ``calculate_metrics`` and submits it when it is valid and meets
every condition. If the program is infeasible or the check fails, it solves once more with
ten times the margins, checks and submits the best it checked. Every number it sends is a
value ``linear_program`` returned (and every number in its constraints is printed in the
prompt, or a margin it states); it reads ``instance.hidden`` for nothing. Results are read
as data (``message.outcome``), and its stage from which of its own calls were answered, so
random calls a noisy agent interleaves do not derail it.
"""

from __future__ import annotations

import re
from typing import Any

from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant
from agentharness.core.parsing import answered_calls
from agentharness.tasks.finance.problem import Public
from agentharness.tasks.finance.simulator import ITEMS, Lin, identities, last_year, num, ratios

ID_PREFIX = "fin_"
# Conditions are beaten by this share of their target (at least of 0.01), rates kept this
# far inside their bounds, so that values rounded to cents still satisfy them.
CONDITION_MARGIN = 0.001
RATE_MARGIN = 0.0001
# The second attempt multiplies both margins by this.
RETRY_FACTOR = 10
OBJECTIVE = "net_income"

_PRIOR_YEAR = re.compile(r"prior-year \w+ \(([^)]*)\)")
_PRIOR = re.compile(r"prior (\w+)")


def _g(x: float) -> str:
    return f"{x:g}"


def _lin_text(form: Lin) -> str:
    """An affine form as the prompt would write it: ``cash + receivables``, ``revenue - 1234``."""
    parts: list[str] = []
    for name, coef in form.terms:
        sign = "-" if coef < 0 else "+"
        mag = abs(coef)
        term = name if mag == 1 else f"{_g(mag)} * {name}"
        parts.append(f"{sign} {term}" if parts or sign == "-" else term)
    if form.const:
        parts.append(f"{'-' if form.const < 0 else '+'} {num(abs(form.const))}")
    return " ".join(parts).lstrip("+ ") or "0"


def constraints(public: Public, factor: float = 1.0) -> list[str]:
    """The linear program of the forecast, from the prompt's data, with the margins scaled."""
    prev = last_year(public)
    out: list[str] = []
    for ident in identities(prev):
        text = _PRIOR_YEAR.sub(r"\1", ident.text)
        out.append(_PRIOR.sub(lambda m: num(prev[m.group(1)]), text))
    for item, (lo, hi) in public.bounds.items():
        out.append(f"{num(lo)} <= {item} <= {num(hi)}")
    rate = _g(RATE_MARGIN * factor)
    t_lo, t_hi = public.tax_rate_range
    out += [
        "pretax_income >= 1",
        f"tax >= ({_g(t_lo)} + {rate}) * pretax_income",
        f"tax <= ({_g(t_hi)} - {rate}) * pretax_income",
    ]
    r_lo, r_hi = public.interest_rate_range
    d0 = num(prev["short_term_debt"] + prev["long_term_debt"])
    debt = f"({d0} + short_term_debt + long_term_debt) / 2"
    out += [
        f"interest_expense >= ({_g(r_lo)} + {rate}) * {debt}",
        f"interest_expense <= ({_g(r_hi)} - {rate}) * {debt}",
        f"cash >= {num(public.min_cash)}",
    ]
    defs = ratios(prev)
    margin = _g(CONDITION_MARGIN * factor)
    positive: list[str] = []
    for cond in public.conditions:
        r = defs[cond.ratio]
        t = cond.target
        size = _g(abs(t)) if abs(t) >= 0.01 else "0.01"
        higher = cond.direction == "at_least"
        bound = f"({_g(t)} {'+' if higher else '-'} {margin} * {size})"
        den = _lin_text(r.den)
        rhs = f"{bound} * ({den})" if len(r.den.terms) > 1 else f"{bound} * {den}"
        out.append(f"{_lin_text(r.num)} {'>=' if higher else '<='} {rhs}")
        if r.den.terms and f"{den} >= 1" not in positive:
            positive.append(f"{den} >= 1")
    return out + positive


class FinanceExpert:
    """Linear program, check, submit (a second program with wider margins if needed)."""

    def __init__(self, instance: Instance) -> None:
        self.public = instance.public_as(Public)
        self.turn = 0
        self.mine: dict[str, str] = {}  # my call ids -> what they were for

    def _call(self, text: str, kind: str, name: str, args: dict[str, Any]) -> Message:
        self.turn += 1
        call_id = f"{ID_PREFIX}{self.turn}_{kind}"
        self.mine[call_id] = kind
        return assistant(text, tool_calls=[ToolCall.make(call_id, name, args)])

    def next_turn(self, messages: list[Message]) -> Message:
        # My calls' results in order: (kind, data or None for a failed call).
        done: list[tuple[str, dict[str, Any] | None]] = []
        for call, m in answered_calls(messages):
            if call.id in self.mine:
                ok = m.outcome is not None and not m.outcome.is_error
                data = m.outcome.data if ok and m.outcome is not None else None
                done.append((self.mine[call.id], data if isinstance(data, dict) else None))
        solves = [d for k, d in done if k.startswith("solve")]
        checks = [(k, d) for k, d in done if k.startswith("check")]
        if not solves:
            return self._solve(1)
        latest = solves[-1]
        if latest is not None and f"check{len(solves)}" not in {k for k, _ in checks}:
            return self._check(latest["values"], len(solves))
        if checks:
            _, report = checks[-1]
            if report is not None and report["valid"] and self._all_met(report):
                return self._submit(
                    latest["values"] if latest is not None else {},
                    f"The forecast is valid and meets {report['conditions_met']}/"
                    f"{report['conditions_total']} conditions. I submit it.",
                )
        if len(solves) < 2:
            return self._solve(RETRY_FACTOR)
        return self._submit_best(solves, checks)

    @staticmethod
    def _all_met(report: dict[str, Any]) -> bool:
        return bool(report["conditions_met"] == report["conditions_total"])

    def _solve(self, factor: int) -> Message:
        if factor == 1:
            text = (
                "Every identity, bound and condition is linear in the line items once each "
                "ratio condition num / den >= t is written as num >= t * den, keeping den "
                "positive. I write them all down for linear_program: the identities as "
                "printed, with the prior-year values from the last column of the history; the "
                "ranges and the cash floor as printed; the tax and interest rates as two "
                f"inequalities each, {_g(RATE_MARGIN)} inside their bounds; each condition "
                f"beating its target by {_g(CONDITION_MARGIN)} x the target (so that rounding "
                "to cents cannot break it), with its denominator at least 1. Among the "
                "forecasts that satisfy all of it I take the one with the largest net income."
            )
        else:
            text = (
                "That did not work out, so I solve again with margins ten times wider: rates "
                f"{_g(RATE_MARGIN * factor)} inside their bounds and conditions beaten by "
                f"{_g(CONDITION_MARGIN * factor)} x their targets."
            )
        args = {
            "constraints": constraints(self.public, factor),
            "objective": OBJECTIVE,
            "goal": "maximize",
        }
        return self._call(text, f"solve{factor}", "linear_program", args)

    def _forecast(self, values: dict[str, Any]) -> dict[str, float]:
        return {k: float(values[k]) for k in ITEMS if k in values}

    def _check(self, values: dict[str, Any], n: int) -> Message:
        return self._call(
            "The linear program gives a value for every line item. I check the forecast with "
            "calculate_metrics before submitting it.",
            f"check{n}",
            "calculate_metrics",
            {"forecast": self._forecast(values)},
        )

    def _submit(self, values: dict[str, Any], text: str) -> Message:
        return self._call(text, "submit", "submit_forecast", {"forecast": self._forecast(values)})

    def _submit_best(
        self,
        solves: list[dict[str, Any] | None],
        checks: list[tuple[str, dict[str, Any] | None]],
    ) -> Message:
        scored = [
            (float(report["score_if_submitted"]), int(kind.removeprefix("check")))
            for kind, report in checks
            if report is not None
        ]
        if not scored:
            return assistant(
                "Neither linear program found a forecast that satisfies every constraint, and I "
                "have nothing checked to submit; I stop here."
            )
        score, n = max(scored)
        values = solves[n - 1]
        if values is None:
            return assistant("I have no forecast to submit; I stop here.")
        return self._submit(
            values["values"],
            f"Neither forecast meets everything; I submit the better checked one (score "
            f"{score:.3f} if submitted).",
        )
