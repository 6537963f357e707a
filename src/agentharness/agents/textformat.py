"""Tools described in the prompt, for models that write tool calls as text.

Used by the ``local`` agent and by the ``openai`` agent with ``tool_format="text"``
(for servers started without a tool-call parser). The episode parses the calls back
out of the text, in any of the formats :mod:`agentharness.core.parsing` reads.
"""

from __future__ import annotations

import json
from typing import Any

from agentharness.core.messages import Message, TextPart

TOOL_INSTRUCTIONS = """# Tools

You can call these functions (name(arguments): what it does; "?" marks an optional argument):
<tools>
{tools}
</tools>

To call a function, write a JSON object with the function name and arguments inside
<tool_call></tool_call> tags, for example:
<tool_call>
{{"name": "function_name", "arguments": {{"arg": "value"}}}}
</tool_call>"""

# What a text-only model sees where an image was: the same words at inference and in training.
IMAGE_PLACEHOLDER = "[image omitted: this model cannot see images]"


def tools_system_prompt(tools: list[dict[str, Any]]) -> str:
    """The tool instructions for a system prompt, one compact signature per tool.

    A small model reads every prompt token on every episode: the JSON schemas as the
    OpenAI API sends them repeat their ``$defs`` and constraint keywords and took about
    half of each system prompt, so they are written as signatures instead (types, bounds,
    choices and descriptions kept; see :func:`tool_signature`).
    """
    return TOOL_INSTRUCTIONS.format(tools="\n".join(tool_signature(t) for t in tools))


def tool_signature(tool: dict[str, Any]) -> str:
    """One tool as ``- name(arg: type, opt?: type = default): description``.

    Argument descriptions follow on indented lines. ``tool`` is an OpenAI function-tool
    dict; every ``$ref`` is resolved against the schema's ``$defs``.
    """
    function = tool.get("function", tool)
    params = function.get("parameters") or {}
    defs = params.get("$defs", {})
    required = set(params.get("required", []))
    args, notes = [], []
    for name, schema in (params.get("properties") or {}).items():
        schema = _resolve(schema, defs)
        arg = f"{name}{'' if name in required else '?'}: {_type(schema, defs)}"
        if "default" in schema:
            arg += f" = {json.dumps(schema['default'])}"
        args.append(arg)
        if schema.get("description"):
            notes.append(f"    {name}: {schema['description']}")
    head = f"- {function['name']}({', '.join(args)})"
    if function.get("description"):
        head += f": {function['description']}"
    return "\n".join([head, *notes])


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref.removeprefix("#/$defs/"), {})
        return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _type(schema: dict[str, Any], defs: dict[str, Any]) -> str:
    """A JSON schema as a short type: ``number in [0, 60]``, ``[string]``, ``{a: integer}``."""
    schema = _resolve(schema, defs)
    if "enum" in schema:
        return "|".join(json.dumps(v) for v in schema["enum"])
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return " | ".join(_type(o, defs) for o in options)
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return " | ".join(_type({**schema, "type": k}, defs) for k in kind)
    if kind == "array":
        inner = _type(schema.get("items", {}), defs)
        lo, hi = schema.get("minItems"), schema.get("maxItems")
        count = f" ({lo} items)" if lo is not None and lo == hi else ""
        return f"[{inner}]{count}"
    if kind == "object":
        props = schema.get("properties")
        if props:
            need = set(schema.get("required", []))
            fields = ", ".join(
                f"{k}{'' if k in need else '?'}: {_type(v, defs)}" for k, v in props.items()
            )
            return "{" + fields + "}"
        values = schema.get("additionalProperties")
        if isinstance(values, dict):
            return "{string: " + _type(values, defs) + "}"
        return "object"
    if kind in ("number", "integer"):
        return kind + _bounds(schema)
    return str(kind)


def _bounds(schema: dict[str, Any]) -> str:
    lo = schema.get("minimum", schema.get("exclusiveMinimum"))
    hi = schema.get("maximum", schema.get("exclusiveMaximum"))
    left = "(" if "exclusiveMinimum" in schema else "["
    right = ")" if "exclusiveMaximum" in schema else "]"
    if lo is not None and hi is not None:
        return f" in {left}{lo}, {hi}{right}"
    if lo is not None:
        return f" {'>' if left == '(' else '>='} {lo}"
    if hi is not None:
        return f" {'<' if right == ')' else '<='} {hi}"
    return ""


def with_tools_in_prompt(messages: list[Message], tools: list[dict[str, Any]]) -> list[Message]:
    """Messages with the tool instructions appended to the system prompt (or prepended)."""
    if not tools:
        return messages
    instructions = tools_system_prompt(tools)
    if messages and messages[0].role == "system":
        merged = f"{messages[0].text}\n\n{instructions}"
        return [Message(role="system", content=merged), *messages[1:]]
    return [Message(role="system", content=instructions), *messages]


def as_plain_text(message: Message, *, image_placeholder: str = "[image]") -> Message:
    """A text-only copy: images become placeholders, tool calls become ``<tool_call>`` text.

    For models that see neither images nor native tool calls.
    """
    content = message.content
    if isinstance(content, list):
        content = "\n".join(
            p.text if isinstance(p, TextPart) else image_placeholder for p in content
        )
    if message.role == "assistant" and message.tool_calls:
        calls = "\n".join(
            f'<tool_call>\n{{"name": {json.dumps(c.function.name)}, '
            f'"arguments": {c.function.arguments or "{}"}}}\n</tool_call>'
            for c in message.tool_calls
        )
        content = f"{content}\n{calls}" if content else calls
    if message.role == "tool":
        return Message(role="user", content=f"<tool_response>\n{content or ''}\n</tool_response>")
    return Message(role=message.role, content=content or "")
