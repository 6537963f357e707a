"""The calculator tools: arithmetic and linear solves in the open, never eval."""

from __future__ import annotations

import math

import pytest

from agentharness.core import Instance
from agentharness.core.calculator import CalculatorWorld, evaluate
from agentharness.core.tools import ToolError


def _world() -> CalculatorWorld:
    return CalculatorWorld(
        Instance(task="t-v1", seed=0, difficulty="easy", config={}, public={}, hidden={})
    )


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("(41.2 - 38.5) / 0.27", 10.0),
        ("-2 ** 2 + sqrt(16)", 0.0),
        ("atan2(1, 1) * 4", math.pi),
        ("max(1, 7, 3) % 4 + round(2.6) + floor(-0.5)", 5.0),
        ("hypot(3, 4) * e / e", 5.0),
        ("round(2.71828, 2)", 2.72),
    ],
)
def test_arithmetic(expression: str, value: float) -> None:
    assert evaluate(expression) == pytest.approx(value)


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("__import__('os').system('true')", "is not arithmetic"),
        ("(1).__class__", "is not arithmetic"),
        ("x + 1", "is not arithmetic"),
        ("[1, 2]", "is not arithmetic"),
        ("2 ** 10000", "exponents above"),
        ("1 / 0", "division by zero"),
        ("sqrt(-1)", "sqrt"),
        ("1 +", "cannot read"),
        ("1" * 2000, "longer than"),
        ("10.0 ** 300 * 10.0 ** 300", "not a finite number"),
    ],
)
def test_refusals_are_messages(expression: str, says: str) -> None:
    with pytest.raises(ToolError, match=says):
        evaluate(expression)
    result = _world().execute("calculate", {"expression": expression})
    assert result.is_error and says.split()[0] in result.text


def test_solve_linear_through_the_executor() -> None:
    result = _world().execute("solve_linear", {"a": [[2, 1], [1, 3]], "b": [3, 5]})
    assert not result.is_error
    assert result.data["x"] == pytest.approx([0.8, 1.4]) and result.data["rank"] == 2
    over = _world().execute("solve_linear", {"a": [[1], [1]], "b": [1, 3]})
    assert over.data["x"] == [2.0] and over.data["residual"] == 1.41421  # 6 digits
    thirds = _world().execute("solve_linear", {"a": [[3.0]], "b": [1.0]})
    assert thirds.data["x"] == [0.333333] and "0.333333]" in thirds.text
    ragged = _world().execute("solve_linear", {"a": [[1, 2], [1]], "b": [1, 2]})
    assert ragged.is_error and "same length" in ragged.text
    mismatch = _world().execute("solve_linear", {"a": [[1, 2]], "b": [1, 2]})
    assert mismatch.is_error and "must match" in mismatch.text


def test_a_task_world_inherits_the_tools() -> None:
    class Plate(CalculatorWorld):
        pass

    assert {"calculate", "solve_linear"} <= set(Plate.tool_specs())
