"""Tools described in the prompt as compact signatures (agents/textformat.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentharness.agents.textformat import tool_signature, tools_system_prompt
from agentharness.core import registry
from agentharness.core.task import TaskSpec

SCHEMA = {
    "type": "function",
    "function": {
        "name": "design",
        "description": "Try a design.",
        "parameters": {
            "$defs": {
                "Pair": {
                    "type": "object",
                    "properties": {"x": {"type": "integer"}, "y": {"type": "number"}},
                    "required": ["x"],
                }
            },
            "type": "object",
            "properties": {
                "thickness": {"type": "number", "minimum": 1, "maximum": 5, "description": "mm."},
                "gap": {"type": "number", "exclusiveMinimum": 0},
                "mode": {"enum": ["fast", "slow"], "default": "fast"},
                "pair": {"$ref": "#/$defs/Pair"},
                "cooling": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None},
                "xyz": {
                    "type": "array",
                    "items": {"type": "number"},
                    "minItems": 3,
                    "maxItems": 3,
                },
                "table": {"type": "object", "additionalProperties": {"type": "number"}},
            },
            "required": ["thickness", "gap", "pair", "xyz", "table"],
        },
    },
}


def test_a_signature_keeps_types_bounds_choices_defaults_and_descriptions() -> None:
    text = tool_signature(SCHEMA)
    head, *notes = text.splitlines()
    assert head == (
        "- design(thickness: number in [1, 5], gap: number > 0, "
        'mode?: "fast"|"slow" = "fast", pair: {x: integer, y?: number}, '
        "cooling?: number | null = null, xyz: [number] (3 items), table: {string: number}): "
        "Try a design."
    )
    assert notes == ["    thickness: mm."]


@pytest.mark.parametrize("spec", registry.all_tasks(), ids=lambda s: s.id)
def test_every_task_tool_is_described_shorter_and_whole(spec: TaskSpec[Any]) -> None:
    tools = spec.world.tool_schemas()
    prompt = tools_system_prompt(tools)
    assert "$ref" not in prompt and "$defs" not in prompt
    for tool in tools:
        function = tool["function"]
        line = next(x for x in prompt.splitlines() if x.startswith(f"- {function['name']}("))
        for name in function["parameters"].get("properties", {}):
            assert f"{name}" in line
    assert len(prompt) < len("\n".join(json.dumps(t) for t in tools)) + 400
