"""Is the expert imitable? Every number it acts on must be visible before it acts.

SFT teaches a model to write what the teacher wrote. When the expert's tool calls carry
numbers computed from privileged data (the hidden solution, an inverse-kinematics solve
nobody saw), the model learns to invent numbers. This check plays the expert and, for
every number in every tool call's arguments, looks for a source among what the policy
saw before that turn: the prompt, the tool schemas, every earlier tool result and the
arguments of its earlier calls (not its free text: narrating a privileged result does
not make it visible). A number is *sourced* when

* a visible number equals it at that number's printed precision (text ``12.35``
  sources ``12.3471``), or
* one operation on two visible numbers gives it exactly (``a + b``, ``a - b``,
  ``a * b``, ``a / b``, or a midpoint ``(a + b) / 2``, to within 1 for integers) — the
  arithmetic a policy can do in its head, or
* it is a small integer (|n| <= 10: counts and indices); small integers also count as
  visible operands (halving, doubling, one more), or
* it is a digit string (a code) whose every digit was written in the conversation.

Numbers written inside text arguments (a ``calculate`` expression, a constraint) are
checked like the others. Anything else a task needs computed (a linear solve, an
optimisation) should come from a tool the expert calls visibly. Vision tasks are not
checked (values may be read off the image).
"""

from __future__ import annotations

import asyncio
import bisect
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agentharness.agents.scripted import ExpertAgent
from agentharness.core.instance import Instance
from agentharness.core.messages import Message
from agentharness.core.parsing import parse_turn
from agentharness.core.task import TaskSpec
from agentharness.rollout.runner import run_one

SMALL_INTEGER = 10
# A number as written; not the digit of an ordinal ("1st", "2nd", "3rd", "4th").
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.(\d+))?(?:[eE][-+]?\d+)?(?!st\b|nd\b|rd\b|th\b)")


@dataclass(frozen=True)
class Unsourced:
    """One number an expert acted on that nothing visible gave it."""

    seed: int
    difficulty: str
    turn: int
    tool: str
    path: str
    value: float


@dataclass
class ImitabilityReport:
    task: str
    actions: int = 0  # tool calls with at least one number in their arguments
    flagged: list[Unsourced] = field(default_factory=list)
    skipped: str | None = None

    @property
    def flagged_actions(self) -> int:
        return len({(u.seed, u.difficulty, u.turn, u.tool) for u in self.flagged})

    def summary(self) -> str:
        if self.skipped:
            return f"not checked: {self.skipped}"
        if not self.flagged:
            return f"every number in {self.actions} expert actions was visible before it was used"
        first = self.flagged[0]
        return (
            f"{self.flagged_actions} of {self.actions} expert actions use numbers nothing visible "
            f"gave (e.g. {first.difficulty} seed {first.seed}, turn {first.turn}: "
            f"{first.tool}.{first.path} = {first.value:g})"
        )


def _numbers_in_text(text: str) -> Iterator[tuple[float, int]]:
    """Each number written in ``text`` with its count of decimals."""
    for m in _NUMBER.finditer(text):
        try:
            value = float(m.group(0))
        except ValueError:
            continue
        if math.isfinite(value):
            yield value, len(m.group(1) or "")


def _numbers_in_args(value: Any, path: str = "") -> Iterator[tuple[str, float | str]]:
    """Every number in tool arguments: JSON numbers as floats, numbers in text as written."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        yield path or "(value)", float(value)
    elif isinstance(value, str):
        # numbers written into text arguments (an expression, a constraint, a code) count too
        for m in _NUMBER.finditer(value):
            yield path or "(value)", m.group(0)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _numbers_in_args(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _numbers_in_args(v, f"{path}[{i}]")


class _Visible:
    """The numbers a policy has seen so far."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self.printed: dict[int, set[float]] = {}  # decimals -> values at that precision
        self.exact: list[float] = []  # sorted
        self.written: set[float] = set()  # numbers that appeared in text, as written
        self.add(json.dumps(tools))
        for n in range(1, SMALL_INTEGER + 1):  # halving, doubling, off by one
            self.add_value(float(n), 0)

    def add(self, text: str) -> None:
        for value, decimals in _numbers_in_text(text):
            self.add_value(value, decimals)
            self.written.add(value)

    def add_value(self, value: float, decimals: int = 12) -> None:
        self.printed.setdefault(decimals, set()).add(round(value, decimals))
        bisect.insort(self.exact, value)

    def _has(self, target: float, slack: float = 0.0) -> bool:
        tol = max(slack, 1e-9 * max(1.0, abs(target)))
        i = bisect.bisect_left(self.exact, target - tol)
        return i < len(self.exact) and self.exact[i] <= target + tol

    def sources(self, number: float | str) -> bool:
        if isinstance(number, str):
            # A code written from digits that were each stated ("the 1st digit is 1")
            # is in the conversation too.
            if number.isdigit() and all(float(d) in self.written for d in number):
                return True
            number = float(number)
        x = number
        if x.is_integer() and abs(x) <= SMALL_INTEGER:
            return True
        if any(round(x, d) in seen for d, seen in self.printed.items()):
            return True
        slack = 2.0 if x.is_integer() else 0.0  # a midpoint of bounds that moved by one
        for a in self.exact:
            partners = [x - a, a - x, x + a, 2 * x - a]
            if a and x:  # x = a * b or x = a / b, with b != 0
                partners += [x / a, a / x]
            if any(self._has(b, slack if b == 2 * x - a else 0.0) for b in partners):
                return True
        return False


def unsourced_numbers(
    messages: list[Message], tools: list[dict[str, Any]]
) -> Iterator[tuple[int, str, str, float]]:
    """(turn, tool, argument path, value) for every tool-call number not visible before it."""
    visible = _Visible(tools)
    turn = 0
    for message in messages:
        if message.role != "assistant":
            visible.add(message.text)
            continue
        turn += 1
        acted: list[float] = []
        for call in parse_turn(message, call_id_prefix=f"call_{turn}").calls:
            for path, number in _numbers_in_args(call.arguments):
                if not visible.sources(number):
                    yield turn, call.name, path, float(number)
                acted.append(float(number))
        for x in acted:  # what it sent is in the conversation from now on
            visible.add_value(x)


def imitability_check(spec: TaskSpec[Any], seeds: int = 3) -> ImitabilityReport:
    """Play the expert on ``seeds`` seeds per difficulty and flag every unsourced number."""
    report = ImitabilityReport(task=spec.id)
    if spec.modality == "vision":
        report.skipped = "a vision task's expert may read values off the image"
        return report

    async def play(instance: Instance) -> list[Message]:
        episode, _ = await run_one(instance, ExpertAgent().policy(instance))
        return episode.messages

    for difficulty in spec.difficulties:
        for seed in range(seeds):
            instance = spec.instance(seed, difficulty)
            messages = asyncio.run(play(instance))
            turns_with_numbers = {
                (i, call.id)
                for i, m in enumerate(messages)
                if m.role == "assistant"
                for call in parse_turn(m, call_id_prefix="x").calls
                if any(True for _ in _numbers_in_args(call.arguments))
            }
            report.actions += len(turns_with_numbers)
            tools = spec.world.tool_schemas()
            report.flagged.extend(
                Unsourced(seed, difficulty, turn, tool, path, x)
                for turn, tool, path, x in unsourced_numbers(messages, tools)
            )
    return report
