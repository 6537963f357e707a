"""Calculator tools a task can give its agent, so that computing happens in the open.

A policy cannot invert a matrix in its head. When a task's expert needs arithmetic
beyond that, it should do it through a tool the model can call too, so its trajectories
show where every number came from (the imitability check holds experts to this). A task
gets these tools by subclassing :class:`CalculatorWorld` instead of
:class:`~agentharness.core.tools.World`:

* ``calculate(expression)`` — arithmetic on numbers: ``+ - * / // % **``, parentheses,
  and ``sqrt, exp, log, log10, sin, cos, tan, asin, acos, atan, atan2, hypot, degrees,
  radians, abs, min, max, round, floor, ceil`` with ``pi`` and ``e``. It is parsed, never
  ``eval``-ed: names, attributes, calls of anything else and huge powers are refused.
* ``solve_linear(a, b)`` — the least-squares solution x of ``a @ x = b`` (exact when
  ``a`` is square and invertible), with its residual.

Results are rounded (10 significant digits for ``calculate``, 6 for ``solve_linear``) so
the numbers a model copies from them into its next call stay short.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from agentharness.core.tools import ToolError, World, tool

MAX_EXPRESSION_CHARS = 1_000
MAX_EXPONENT = 1_000
MAX_MATRIX_SIZE = 64
# Results are rounded here: far finer than any task's tolerance, short enough to copy.
SIGNIFICANT_DIGITS = 6

_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_FUNCTIONS: dict[str, Callable[..., float]] = {
    name: getattr(math, name)
    for name in (
        "sqrt", "exp", "log", "log10", "sin", "cos", "tan", "asin", "acos", "atan",
        "atan2", "hypot", "degrees", "radians", "floor", "ceil",
    )
}  # fmt: skip
_FUNCTIONS.update(abs=abs, min=min, max=max, round=round)
_CONSTANTS = {"pi": math.pi, "e": math.e}


def evaluate(expression: str) -> float:
    """The value of an arithmetic expression; :class:`ToolError` says what is not allowed."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as e:
        raise ToolError(f"cannot read the expression ({e.msg}); write e.g. (2.5 + 4) * 3") from None
    value = _eval(tree.body)
    if not math.isfinite(value):
        raise ToolError("the result is not a finite number")
    return float(value)


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        if isinstance(node.value, bool):
            raise ToolError("booleans are not numbers here")
        return float(node.value)
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _eval(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ToolError(f"exponents above {MAX_EXPONENT} are not computed")
        try:
            return float(_BINARY[type(node.op)](left, right))
        except ZeroDivisionError:
            raise ToolError("division by zero") from None
        except (OverflowError, ValueError) as e:
            raise ToolError(f"cannot compute it: {e}") from None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        args: list[float | int] = [_eval(a) for a in node.args]
        if node.func.id == "round" and len(args) == 2 and float(args[1]).is_integer():
            args[1] = int(args[1])  # round(x, 2): the digits are a count
        try:
            return float(_FUNCTIONS[node.func.id](*args))
        except (TypeError, ValueError, OverflowError) as e:
            raise ToolError(f"{node.func.id}: {e}") from None
    allowed = ", ".join(sorted(_FUNCTIONS))
    raise ToolError(
        f"'{ast.unparse(node)}' is not arithmetic this calculator does; use numbers, "
        f"+ - * / // % **, parentheses, pi, e and {allowed}"
    )


Matrix = Annotated[
    list[Annotated[list[float], Field(min_length=1, max_length=MAX_MATRIX_SIZE)]],
    Field(min_length=1, max_length=MAX_MATRIX_SIZE),
]
Vector = Annotated[list[float], Field(min_length=1, max_length=MAX_MATRIX_SIZE)]


def least_squares(a: list[list[float]], b: list[float]) -> dict[str, Any]:
    """x minimising |a @ x - b|, its residual norm and the rank of ``a``."""
    if len({len(row) for row in a}) != 1:
        raise ToolError("every row of a must have the same length")
    if len(b) != len(a):
        raise ToolError(f"b has {len(b)} entries but a has {len(a)} rows; they must match")
    matrix, rhs = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    x, *_ = np.linalg.lstsq(matrix, rhs, rcond=None)
    return {
        "x": [significant(float(v)) for v in x],
        "residual": significant(float(np.linalg.norm(matrix @ x - rhs))),
        "rank": int(np.linalg.matrix_rank(matrix)),
    }


def significant(value: float, digits: int = SIGNIFICANT_DIGITS) -> float:
    """``value`` to ``digits`` significant digits: numbers a model can copy, not 17 digits."""
    return float(f"{value:.{digits}g}")


class CalculatorWorld(World):
    """A World with ``calculate`` and ``solve_linear`` among its tools."""

    @tool
    def calculate(self, expression: str) -> dict[str, float]:
        """Evaluate an arithmetic expression, e.g. (41.2 - 38.5) / 0.27 + sqrt(2).

        Args:
            expression: numbers, + - * / // % **, parentheses, pi, e, and sqrt, exp, log,
                log10, sin, cos, tan, asin, acos, atan, atan2, hypot, degrees, radians,
                abs, min, max, round, floor, ceil.
        """
        return {"value": significant(evaluate(expression), 10)}

    @tool
    def solve_linear(self, a: Matrix, b: Vector) -> dict[str, Any]:
        """Solve a @ x = b for x (least squares when a is not square or not invertible).

        Args:
            a: the matrix, as a list of rows.
            b: the right-hand side, one entry per row of a.
        """
        return least_squares(a, b)
