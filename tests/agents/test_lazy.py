"""The lazy policies: values read off schemas, echoes, passive play and blind play."""

from __future__ import annotations

import asyncio
import dataclasses
import io
from typing import Annotated, Literal

import pytest
from PIL import Image
from pydantic import Field
from toy_task import GUESS, GuessWorld

from agentharness.agents import make_agent
from agentharness.agents.lazy import (
    BlindAgent,
    EchoAgent,
    PassiveAgent,
    SubmitAgent,
    blank_images,
    echo_answers,
    final_tool,
    passive_actions,
    schema_value,
    submit_answer,
)
from agentharness.core import Instance, ToolError, World, registry, tool
from agentharness.core.messages import Message, assistant, user
from agentharness.core.registry import all_tasks
from agentharness.core.tools import ToolSpec
from agentharness.rollout.runner import run_one


class Table(World):
    """A world whose tools cover the schema shapes the lazy policies read."""

    @tool
    def act(self, action: Literal["check", "fold", "call"], amount: int = 0) -> str:
        """Act at the table.

        Args:
            action: what to do.
            amount: chips.
        """
        if action == "check" and self.tool_calls_made % 2 == 1:
            raise ToolError("you cannot check: there is a bet to call")
        return f"you {action}"

    @tool(final=True)
    def answer(
        self,
        powers: Annotated[list[Annotated[float, Field(ge=0.5, le=2.0)]], Field(min_length=1)],
        labels: list[str],
        level: Annotated[int, Field(ge=3, le=9)] = 5,
        fast: bool = False,
    ) -> str:
        """Answer.

        Args:
            powers: one power per heater.
            labels: the order.
            level: a level.
            fast: a flag.
        """
        return "ok"


TABLE = dataclasses.replace(GUESS, name="lazy_table", world=Table)


@pytest.fixture(autouse=True)
def _table_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    # Registered for these tests only: the conformance test must not see it.
    all_tasks()
    monkeypatch.setitem(registry._REGISTRY, TABLE.id, TABLE)


def _final() -> ToolSpec:
    spec = Table.tool_specs()["answer"]
    assert spec.final
    return spec


def test_submit_answers_read_defaults_minima_and_maxima_off_the_schema() -> None:
    template = {"powers": [9.0, 9.0, 9.0], "labels": ["x", "y"]}
    low = submit_answer(_final(), "minimum", template)
    assert low == {"powers": [0.5, 0.5, 0.5], "labels": ["", ""], "level": 3, "fast": False}
    high = submit_answer(_final(), "maximum", template)
    assert high == {"powers": [2.0, 2.0, 2.0], "labels": ["", ""], "level": 9, "fast": True}
    default = submit_answer(_final(), "defaults")
    # no template: lists take their minimum length; defaults where the schema has them
    assert default == {"powers": [0.5], "labels": [""], "level": 5, "fast": False}


def test_schema_value_handles_refs_unions_enums_and_exclusive_bounds() -> None:
    defs = {"Mode": {"enum": ["a", "b", "c"]}}
    assert schema_value({"$ref": "#/$defs/Mode"}, "maximum", defs) == "c"
    assert (
        schema_value(
            {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 4}]}, "minimum", {}
        )
        == 4
    )
    assert schema_value({"type": "number", "exclusiveMaximum": 1.0}, "maximum", {}) < 1.0
    assert schema_value({"type": "integer", "exclusiveMinimum": 2}, "minimum", {}) == 3
    assert schema_value({"type": "number", "maximum": -3.0}, "minimum", {}) == -3.0


def test_echo_answers_prefer_same_named_public_values_then_same_shaped() -> None:
    public = {"labels": ["A", "B", "C"], "map": {"powers": [1.0, 1.5]}, "names": ["q"]}
    first, second = echo_answers(_final(), public)[:2]
    assert first["powers"] == [1.0, 1.5] and first["labels"] == ["A", "B", "C"]
    assert second["labels"] == ["q"]  # the next list of strings in the public data


def test_passive_play_prefers_one_action_and_falls_back_on_refusal() -> None:
    inst = TABLE.instance(0, "easy")
    actions = passive_actions(inst)
    assert [a["action"] for _, a in actions] == ["check", "fold", "call"]
    ep, _ = asyncio.run(run_one(inst, PassiveAgent(0).policy(inst)))
    called = [(c.arguments["action"], c.is_error) for c in ep.tool_calls[:4]]
    # check is refused every other call; the next turn folds, then checks again
    assert called == [("check", True), ("fold", False), ("check", True), ("fold", False)]
    assert ep.world.final_answer is None


def test_submit_and_echo_agents_answer_once_then_stop() -> None:
    inst = TABLE.instance(0, "easy")
    ep, _ = asyncio.run(run_one(inst, SubmitAgent("maximum").policy(inst)))
    assert ep.end_reason == "answered" and ep.world.final_answer is not None
    assert ep.world.final_answer["level"] == 9 and len(ep.tool_calls) == 1
    guess = GUESS.instance(0, "easy")
    assert final_tool(guess) is not None
    ep, _ = asyncio.run(run_one(guess, EchoAgent().policy(guess)))
    # the only public value is the range's top, echoed as the guess
    assert ep.world.final_answer == {"number": guess.public["high"]}


def test_lazy_agents_by_name() -> None:
    assert make_agent("lazy:maximum").name == "lazy:maximum"
    assert make_agent("lazy:echo2").name == "lazy:echo2"
    assert make_agent("lazy:passive").name == "lazy:passive0"
    with pytest.raises(ValueError, match="lazy:passive"):
        make_agent("lazy:cheat")


def _png(color: str, size: tuple[int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


def test_blank_images_keep_size_and_text() -> None:
    messages = [user("see", images=[_png("red", (30, 20))]), assistant("ok")]
    blanked = blank_images(messages)
    assert blanked[0].text == "see" and blanked[1] == messages[1]
    png = blanked[0].images[0].png_bytes()
    assert png is not None
    image = Image.open(io.BytesIO(png)).convert("RGB")
    assert image.size == (30, 20) and image.getcolors() == [(600, (255, 255, 255))]


def test_blind_agent_sees_no_hidden_data_and_only_blank_images() -> None:
    seen: list[tuple[Instance, list[Message]]] = []

    class Spy:
        def __init__(self, instance: Instance) -> None:
            self.instance = instance

        def next_turn(self, messages: list[Message]) -> Message:
            seen.append((self.instance, messages))
            return assistant("nothing")

    inst = GUESS.instance(0, "easy")
    policy = BlindAgent(Spy).policy(inst)
    asyncio.run(policy.act([user("x", images=[_png("black", (4, 4))])], []))
    instance, messages = seen[0]
    assert instance.hidden == {} and instance.public == inst.public
    png = messages[0].images[0].png_bytes()
    assert png is not None and Image.open(io.BytesIO(png)).getpixel((0, 0)) == (255, 255, 255)


def test_guess_world_has_a_final_tool() -> None:
    assert [s.name for s in GuessWorld.tool_specs().values() if s.final] == ["answer"]
