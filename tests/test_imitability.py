"""The imitability check: numbers an expert acts on must be visible before it acts."""

from __future__ import annotations

import dataclasses

import pytest
from toy_task import GUESS

from agentharness.conformance import check_task
from agentharness.core import registry
from agentharness.core.messages import Message, ToolCall, assistant, system, tool_message, user
from agentharness.imitability import imitability_check, unsourced_numbers


def _act(call_id: str, **args: object) -> Message:
    return assistant("I will try.", [ToolCall.make(call_id, "set", args)])


def _flagged(messages: list[Message]) -> list[tuple[str, float]]:
    return [(path, x) for _, _, path, x in unsourced_numbers(messages, [])]


def test_copied_derived_and_small_numbers_are_sourced() -> None:
    messages = [
        system("Control the plate."),
        user("Targets: 41.25 and 60.5 degrees."),
        _act("a", t=41.2503, sum=101.75, half=30.25, n=3),  # copy, a+b, b/2, small int
        tool_message("a", "set", "measured 38.125"),
        _act("b", t=38.125, twice=76.25, again=101.75),  # a tool result, 2*b, an earlier arg
    ]
    assert _flagged(messages) == []


def test_privileged_numbers_are_flagged_even_when_narrated() -> None:
    messages = [
        user("Reach the target at (0.35, 1.2)."),
        assistant(
            "From inverse kinematics I get 100.14 and -73.366.",
            [ToolCall.make("a", "reach", {"angles": [100.14, -73.366], "steps": 2})],
        ),
        tool_message("a", "reach", "distance 0.001"),
        assistant(tool_calls=[ToolCall.make("b", "submit", {"angles": [100.14, -73.366]})]),
    ]
    # the narration does not source them; once sent, reusing them is fine
    assert _flagged(messages) == [("angles[0]", 100.14), ("angles[1]", -73.366)]


def test_the_check_passes_an_imitable_expert_and_names_a_privileged_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert imitability_check(GUESS, seeds=3).flagged == []

    class Cheat:
        def __init__(self, instance: object) -> None:
            self.secret = GUESS.instance(0, "easy").hidden["secret"] * 7.3 + 0.01

        def next_turn(self, messages: list[Message]) -> Message:
            return assistant(
                tool_calls=[ToolCall.make("c", "probe", {"guess": round(self.secret)})]
            )

    registry.all_tasks()
    cheat = dataclasses.replace(GUESS, name="guess_cheat", expert=Cheat)
    monkeypatch.setitem(registry._REGISTRY, cheat.id, cheat)
    found = imitability_check(cheat, seeds=1)
    assert found.flagged and "nothing visible gave" in found.summary()
    result = {r.name: r for r in check_task(cheat, seeds=1, adversarial_seeds=0).results}
    assert not result["imitable"].passed and "imitable=False" in result["imitable"].detail
    declared = dataclasses.replace(cheat, imitable=False)
    result = {r.name: r for r in check_task(declared, seeds=1, adversarial_seeds=0).results}
    assert result["imitable"].passed and result["imitable"].detail.startswith("declared not")


def test_vision_tasks_are_not_checked() -> None:
    vision = dataclasses.replace(GUESS, modality="vision")
    assert imitability_check(vision).skipped is not None


def test_numbers_inside_text_arguments_are_checked_too() -> None:
    messages = [
        user("Targets 41.25 and 60.5. The 1st digit of the code is 4, the 2nd is 7."),
        _act("a", expression="(41.25 - 38.5) / 0.27"),
        _act("b", code="47", other="(41.25 + 60.5) / 2"),
        _act("c", code="4721"),
    ]
    assert _flagged(messages) == [
        ("expression", 38.5),
        ("expression", 0.27),
        ("code", 4721.0),
    ]
