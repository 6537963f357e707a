"""A linear program over named variables, written as algebra (finance-v3's solver tool).

The agent states every constraint as text, e.g. ``"gross_profit = revenue - cogs"``,
``"30000 <= revenue <= 36000"`` or ``"gross_profit >= 0.4123 * revenue"``, and an
objective such as ``"net_income"``; :func:`solve` parses them (with :mod:`ast`, never
``eval``), checks that every side is linear (a product needs a number on one side, a
division a number below), and solves the program with ``scipy.optimize.linprog``.

It knows nothing about accounting: it solves exactly the constraints it is given, so the
modelling — which identities, which bounds, each ratio condition ``num / den >= t``
rewritten as ``num >= t * den`` with ``den`` kept positive, the prior-year values, the
margins that survive rounding — stays the agent's work.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentharness.core.tools import ToolError

MAX_CONSTRAINTS = 150
MAX_VARIABLES = 80
MAX_EXPRESSION_CHARS = 600
# Values are reported to this many decimals (cents of the forecast's units).
DECIMALS = 2
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A single "=" (not part of <=, >=, ==, !=) means equality.
_SINGLE_EQ = re.compile(r"(?<![<>=!])=(?!=)")


@dataclass
class Linear:
    """``sum(coef * name) + const``."""

    coefs: dict[str, float] = field(default_factory=dict)
    const: float = 0.0

    @property
    def is_constant(self) -> bool:
        return not any(self.coefs.values())

    def scaled(self, k: float) -> Linear:
        return Linear({n: k * c for n, c in self.coefs.items()}, k * self.const)

    def plus(self, other: Linear, sign: float = 1.0) -> Linear:
        coefs = dict(self.coefs)
        for n, c in other.coefs.items():
            coefs[n] = coefs.get(n, 0.0) + sign * c
        return Linear(coefs, self.const + sign * other.const)


def _linear(node: ast.AST, text: str) -> Linear:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        if isinstance(node.value, bool):
            raise ToolError(f"'{text}': booleans are not numbers")
        return Linear(const=float(node.value))
    if isinstance(node, ast.Name):
        return Linear({node.id: 1.0})
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _linear(node.operand, text)
        return inner.scaled(-1.0) if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp):
        left, right = _linear(node.left, text), _linear(node.right, text)
        if isinstance(node.op, ast.Add):
            return left.plus(right)
        if isinstance(node.op, ast.Sub):
            return left.plus(right, -1.0)
        if isinstance(node.op, ast.Mult):
            if left.is_constant:
                return right.scaled(left.const)
            if right.is_constant:
                return left.scaled(right.const)
            raise ToolError(
                f"'{ast.unparse(node)}' in '{text}' multiplies two variables, which is not "
                "linear; multiply a variable only by a number (rewrite num / den >= t as "
                "num >= t * den)"
            )
        if isinstance(node.op, ast.Div):
            if not right.is_constant:
                raise ToolError(
                    f"'{ast.unparse(node)}' in '{text}' divides by a variable, which is not "
                    "linear; rewrite num / den >= t as num >= t * den (with den kept positive)"
                )
            if right.const == 0.0:
                raise ToolError(f"'{text}' divides by zero")
            return left.scaled(1.0 / right.const)
    raise ToolError(
        f"'{ast.unparse(node)}' in '{text}' is not a linear expression; use numbers, "
        "variable names, + - , a number times an expression and division by a number"
    )


def _parse(text: str) -> ast.expr:
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"'{text[:60]}...' is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        return ast.parse(_SINGLE_EQ.sub("==", text.strip()), mode="eval").body
    except SyntaxError as e:
        raise ToolError(
            f"cannot read '{text}' ({e.msg}); write e.g. 'gross_profit = revenue - cogs' or "
            "'cash >= 1200'"
        ) from None


def parse_expression(text: str) -> Linear:
    """A linear expression (an objective)."""
    node = _parse(text)
    if isinstance(node, ast.Compare):
        raise ToolError(f"'{text}' is a constraint; the objective is an expression")
    return _linear(node, text)


def parse_constraint(text: str) -> list[tuple[Linear, str]]:
    """``(lhs - rhs, op)`` for each comparison in ``text`` (``a <= b <= c`` gives two).

    ``op`` is ``"<="``, ``">="`` or ``"="``; ``<`` and ``>`` are read as ``<=`` and ``>=``.
    """
    node = _parse(text)
    if not isinstance(node, ast.Compare):
        raise ToolError(f"'{text}' has no comparison; write 'lhs = rhs', 'lhs <= rhs' or '>='")
    sides = [node.left, *node.comparators]
    out: list[tuple[Linear, str]] = []
    for op, left, right in zip(node.ops, sides, sides[1:], strict=False):
        if isinstance(op, ast.Eq):
            sign = "="
        elif isinstance(op, ast.LtE | ast.Lt):
            sign = "<="
        elif isinstance(op, ast.GtE | ast.Gt):
            sign = ">="
        else:
            raise ToolError(f"'{text}': only =, <=, >= (and <, >) compare here")
        out.append((_linear(left, text).plus(_linear(right, text), -1.0), sign))
    return out


def solve(goal: str, objective: str, constraints: list[str]) -> dict[str, Any]:
    """Minimise or maximise ``objective`` subject to ``constraints``; the optimal values.

    Every variable is free (give bounds as constraints). :class:`ToolError` says what is
    wrong: a non-linear term, an infeasible or unbounded program.
    """
    from scipy.optimize import linprog

    if len(constraints) > MAX_CONSTRAINTS:
        raise ToolError(f"at most {MAX_CONSTRAINTS} constraints, got {len(constraints)}")
    obj = parse_expression(objective)
    rows: list[tuple[Linear, str]] = []
    for text in constraints:
        rows.extend(parse_constraint(text))
    names: list[str] = []
    for form in [obj, *(r for r, _ in rows)]:
        for n in form.coefs:
            if n not in names:
                names.append(n)
    bad = [n for n in names if not _NAME.match(n)]
    if bad:
        raise ToolError(f"not variable names: {', '.join(bad)}")
    if len(names) > MAX_VARIABLES:
        raise ToolError(f"at most {MAX_VARIABLES} variables, got {len(names)}")
    if not names:
        raise ToolError("the constraints mention no variable")
    index = {n: i for i, n in enumerate(names)}

    def vector(form: Linear) -> np.ndarray:
        v = np.zeros(len(names))
        for n, c in form.coefs.items():
            v[index[n]] += c
        return v

    a_ub, b_ub, a_eq, b_eq = [], [], [], []
    for form, op in rows:
        v = vector(form)
        if op == "=":
            a_eq.append(v)
            b_eq.append(-form.const)
        elif op == "<=":
            a_ub.append(v)
            b_ub.append(-form.const)
        else:
            a_ub.append(-v)
            b_ub.append(form.const)
    sign = -1.0 if goal == "maximize" else 1.0
    res = linprog(
        sign * vector(obj),
        A_ub=np.array(a_ub) if a_ub else None,
        b_ub=np.array(b_ub) if b_ub else None,
        A_eq=np.array(a_eq) if a_eq else None,
        b_eq=np.array(b_eq) if b_eq else None,
        bounds=[(None, None)] * len(names),
        method="highs",
    )
    if res.status == 2:
        raise ToolError(
            "no values satisfy every constraint (the program is infeasible); check the "
            "constraints, or loosen the margins you added"
        )
    if res.status == 3:
        raise ToolError(
            f"the objective can {'grow' if goal == 'maximize' else 'fall'} without limit; "
            "bound the variables it uses"
        )
    if res.status != 0 or res.x is None:
        raise ToolError(f"the linear program did not solve ({res.message})")
    values = {n: _clean(float(x)) for n, x in zip(names, res.x, strict=True)}
    return {
        "status": "optimal",
        "objective": _clean(sum(c * values[n] for n, c in obj.coefs.items()) + obj.const),
        "values": values,
    }


def _clean(v: float) -> float:
    r = round(v, DECIMALS)
    return 0.0 if r == 0 or not math.isfinite(r) else r
