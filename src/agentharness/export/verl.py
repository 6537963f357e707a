"""verl's tool and interaction config files for an RL export.

verl (``actor_rollout_ref.rollout.multi_turn.tool_config_path`` and
``interaction_config_path``) loads two YAML files, in the layout its docs and
``examples/sglang_multiturn/config`` use::

    tools:
      - class_name: agentharness.train.verl.AgentHarnessTool
        config: {type: native, tasks: [escape_room-v1]}
        tool_schema: {type: function, function: {name: go, description: ..., parameters: ...}}

    interaction:
      - name: agentharness
        class_name: agentharness.train.verl.AgentHarnessInteraction
        config: {}

The interaction config is read only by verl <= 0.7 (``interaction_config_path``); verl 0.8
removed interactions, so the file starts with a comment saying so (newer verl trains through
the tools alone, see :mod:`agentharness.train.verl`).

Every tool of every exported task gets one entry (verl keys tools by function name, so two
tasks may share a name only with identical schemas). The classes are implemented in
``agentharness.train.verl``; ``config.tasks`` names the task ids that define the tool.

verl validates ``tool_schema`` with a strict pydantic model (each parameter needs a string
``type``, ``required`` must be present, ``$ref`` is not resolved), so schemas are normalised:
``$ref``s into ``$defs`` are inlined, ``required: []`` is added where missing and a parameter
given only as ``anyOf``/``oneOf`` gets the first non-null branch's ``type``, and an ``enum``
of non-strings (verl types it ``list[str]``) moves into the description ("One of: 6, 8.").
The other JSON Schema keywords (``items``, bounds, ...) are kept; verl ignores them when it
shows tools to the model.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentharness.export.common import ExportError

TOOL_CLASS = "agentharness.train.verl.AgentHarnessTool"
INTERACTION_CLASS = "agentharness.train.verl.AgentHarnessInteraction"
INTERACTION_NAME = "agentharness"


def _resolve_refs(node: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    if depth > 32:
        raise ExportError("tool schema $ref nesting is too deep (recursive schema?)")
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = defs.get(ref[len("#/$defs/") :])
            if target is None:
                raise ExportError(f"tool schema refers to an unknown definition {ref}")
            merged = {**copy.deepcopy(target), **{k: v for k, v in node.items() if k != "$ref"}}
            return _resolve_refs(merged, defs, depth + 1)
        return {k: _resolve_refs(v, defs, depth + 1) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_resolve_refs(v, defs, depth + 1) for v in node]
    return node


def _property_type(prop: dict[str, Any]) -> str | None:
    t = prop.get("type")
    if isinstance(t, str):
        return t
    if isinstance(t, list):
        return next((x for x in t if x != "null"), None)
    for key in ("anyOf", "oneOf"):
        for branch in prop.get(key) or []:
            if isinstance(branch, dict):
                bt = _property_type(branch)
                if bt is not None and bt != "null":
                    return bt
    return None


def verl_tool_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI function-tool schema in the form verl's ``OpenAIFunctionToolSchema`` accepts."""
    out = copy.deepcopy(schema)
    function = out.setdefault("function", {})
    params = function.get("parameters") or {}
    params = _resolve_refs(params, params.get("$defs") or {})
    params.setdefault("type", "object")
    params.setdefault("properties", {})
    params.setdefault("required", [])
    for name, prop in params["properties"].items():
        if not isinstance(prop, dict):
            raise ExportError(f"tool {function.get('name')!r}: parameter {name!r} has no schema")
        t = _property_type(prop)
        if t is None:
            raise ExportError(
                f"tool {function.get('name')!r}: parameter {name!r} has no JSON type verl can read"
            )
        prop["type"] = t
        enum = prop.get("enum")
        if isinstance(enum, list) and not all(isinstance(e, str) for e in enum):
            # verl types enum as list[str]: state other values in the description instead.
            del prop["enum"]
            allowed = ", ".join(json.dumps(e) for e in enum)
            prop["description"] = f"{prop.get('description') or ''} One of: {allowed}.".strip()
    function["parameters"] = params
    function.setdefault("description", "")
    out["type"] = out.get("type", "function")
    return out


def verl_schema_problems(schema: dict[str, Any]) -> list[str]:
    """What verl's ``OpenAIFunctionToolSchema`` would reject in ``schema`` (empty when valid)."""
    problems: list[str] = []
    if not isinstance(schema.get("type"), str):
        problems.append("type is not a string")
    fn = schema.get("function")
    if not isinstance(fn, dict):
        return [*problems, "function is missing"]
    for key in ("name", "description"):
        if not isinstance(fn.get(key), str):
            problems.append(f"function.{key} is not a string")
    params = fn.get("parameters")
    if not isinstance(params, dict):
        return [*problems, "function.parameters is missing"]
    if not isinstance(params.get("type"), str):
        problems.append("parameters.type is not a string")
    required = params.get("required")
    if not (isinstance(required, list) and all(isinstance(r, str) for r in required)):
        problems.append("parameters.required is not a list of strings")
    props = params.get("properties")
    if not isinstance(props, dict):
        return [*problems, "parameters.properties is not an object"]
    for name, prop in props.items():
        if not isinstance(prop, dict) or not isinstance(prop.get("type"), str):
            problems.append(f"parameter {name!r} has no string type")
            continue
        if "description" in prop and not isinstance(prop["description"], str | None):
            problems.append(f"parameter {name!r} description is not a string")
        enum = prop.get("enum")
        if enum is not None and not all(isinstance(e, str) for e in enum):
            problems.append(f"parameter {name!r} enum holds non-strings")
    return problems


def collect_tools(
    task_tools: Iterable[tuple[str, list[dict[str, Any]]]],
) -> dict[str, dict[str, Any]]:
    """``{tool name: {"schema": ..., "tasks": [...]}}`` over (task id, tool schemas) pairs.

    Raises :class:`ExportError` when two tasks define the same tool name differently:
    verl keys tools by function name, so they cannot share one config.
    """
    tools: dict[str, dict[str, Any]] = {}
    for task, schemas in task_tools:
        for schema in schemas:
            name = schema.get("function", {}).get("name")
            if not isinstance(name, str):
                raise ExportError(f"task {task}: a tool schema has no function name")
            entry = tools.get(name)
            if entry is None:
                tools[name] = {"schema": schema, "tasks": [task]}
            elif entry["schema"] != schema:
                raise ExportError(
                    f"tasks {entry['tasks'][0]} and {task} both define a tool {name!r} with different "
                    "schemas; verl keys tools by name, so export these tasks to separate files"
                )
            elif task not in entry["tasks"]:
                entry["tasks"].append(task)
    return tools


def tool_config(tools: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """verl's tool config (as a dict) for :func:`collect_tools` output."""
    return {
        "tools": [
            {
                "class_name": TOOL_CLASS,
                "config": {"type": "native", "tasks": entry["tasks"]},
                "tool_schema": verl_tool_schema(entry["schema"]),
            }
            for entry in tools.values()
        ]
    }


def interaction_config() -> dict[str, Any]:
    """verl's interaction config (as a dict): one interaction, named :data:`INTERACTION_NAME`."""
    return {
        "interaction": [{"name": INTERACTION_NAME, "class_name": INTERACTION_CLASS, "config": {}}]
    }


def dump_yaml(data: dict[str, Any]) -> str:
    """YAML text for ``data`` (PyYAML when installed; JSON, itself valid YAML, otherwise)."""
    try:
        import yaml
    except ImportError:
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100))


def config_paths(out: Path) -> tuple[Path, Path]:
    """Where the tool and interaction configs of an export to ``out`` go."""
    stem = out.with_suffix("")
    return stem.with_name(stem.name + ".tools.yaml"), stem.with_name(
        stem.name + ".interaction.yaml"
    )


INTERACTION_NOTE = (
    "# For verl <= 0.7 only (actor_rollout_ref.rollout.multi_turn.interaction_config_path).\n"
    "# verl 0.8 removed interactions and never reads this file: train through the tools\n"
    "# (tool_config_path) instead.\n"
)


def write_configs(tools: dict[str, dict[str, Any]], out: Path) -> tuple[Path, Path]:
    """Write the tool and interaction YAML next to ``out``; returns their paths."""
    tools_path, interaction_path = config_paths(out)
    tools_path.parent.mkdir(parents=True, exist_ok=True)
    tools_path.write_text(dump_yaml(tool_config(tools)), encoding="utf-8")
    interaction_path.write_text(
        INTERACTION_NOTE + dump_yaml(interaction_config()), encoding="utf-8"
    )
    return tools_path, interaction_path
