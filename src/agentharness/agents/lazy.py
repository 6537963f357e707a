"""Lazy policies: the generic attacks a task's reward must resist.

A reward must pay for solving. These policies never try to solve. They submit at once
with values read off the final tool's schema (its defaults, minima or maxima), echo the
public data into the answer, repeat one constant answer on every instance, or play the
same cheap action every turn. The adversarial check (:mod:`agentharness.conformance`)
runs them on every task, including third parties'; each must earn next to nothing.

They act on what any agent sees — the prompt, the tool schemas and which tool answers —
never on ``instance.hidden``. (``public`` is what the prompt is built from.)
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import Any, Literal

from agentharness.agents.base import AgentTurn
from agentharness.core.instance import Instance
from agentharness.core.messages import ImagePart, ImageURL, Message, ToolCall, assistant
from agentharness.core.registry import get_task
from agentharness.core.task import ExpertPolicy
from agentharness.core.tools import ToolSpec

SubmitMode = Literal["defaults", "minimum", "maximum"]
Answer = dict[str, Any]

# Sizes for values a schema leaves unbounded: lists as long as a template shows, or one.
_DEFAULT_LIST_LENGTH = 1
_MAX_ECHO_VARIANTS = 4
MAX_PASSIVE_VARIANTS = 6


def final_tool(instance: Instance) -> ToolSpec | None:
    """The task's answer tool (``@tool(final=True)``), if it has one."""
    for spec in get_task(instance.task).world.tool_specs().values():
        if spec.final:
            return spec
    return None


def tool_parameters(spec: ToolSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    """The tool's parameter properties and ``$defs``, as in its OpenAI schema."""
    params = spec.openai_schema()["function"]["parameters"]
    return params.get("properties", {}), params.get("$defs", {})


# -- values read off a JSON schema ---------------------------------------------------


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = defs.get(schema["$ref"].split("/")[-1], {})
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [_resolve(o, defs) for o in schema[key]]
            non_null = [o for o in options if o.get("type") != "null"]
            merged = {k: v for k, v in schema.items() if k != key}
            return {**(non_null or options)[0], **merged}
    return schema


def schema_value(
    schema: dict[str, Any], mode: SubmitMode, defs: dict[str, Any], template: Any = None
) -> Any:
    """A value for ``schema``: its default, its minimum or its maximum.

    Where the schema leaves a size open (a list without ``minItems``), ``template`` (an
    answer of the same shape, e.g. from another instance) gives it; its values are
    never used.
    """
    schema = _resolve(schema, defs)
    if mode == "defaults" and "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][-1 if mode == "maximum" else 0]
    kind = schema.get("type")
    if kind == "boolean":
        return mode == "maximum"
    if kind in ("integer", "number"):
        return _bound(schema, mode, integer=kind == "integer")
    if kind == "string":
        return "a" * int(schema.get("minLength", 0))
    if kind == "array" or "items" in schema:
        length = len(template) if isinstance(template, list) else None
        if length is None:
            length = int(schema.get("minItems", _DEFAULT_LIST_LENGTH))
        items = schema.get("items", {})
        return [
            schema_value(
                items,
                mode,
                defs,
                template[i] if isinstance(template, list) and i < len(template) else None,
            )
            for i in range(length)
        ]
    if kind == "object" or "properties" in schema:
        tpl = template if isinstance(template, dict) else {}
        required = set(schema.get("required", [])) | set(tpl)
        return {
            k: schema_value(v, mode, defs, tpl.get(k))
            for k, v in schema.get("properties", {}).items()
            if k in required
        }
    return None


def _bound(schema: dict[str, Any], mode: SubmitMode, *, integer: bool) -> float | int:
    step = 1 if integer else 1e-6
    lo = schema.get("minimum")
    if lo is None and "exclusiveMinimum" in schema:
        lo = schema["exclusiveMinimum"] + step
    hi = schema.get("maximum")
    if hi is None and "exclusiveMaximum" in schema:
        hi = schema["exclusiveMaximum"] - step
    if mode == "maximum" and hi is not None:
        value = hi
    elif lo is not None:
        value = lo
    elif hi is not None:
        value = min(0, hi)
    else:
        value = 0
    return math.ceil(value) if integer else float(value)


def submit_answer(spec: ToolSpec, mode: SubmitMode, template: Answer | None = None) -> Answer:
    """The final tool's arguments at their defaults, minima or maxima."""
    props, defs = tool_parameters(spec)
    tpl = template or {}
    return {k: schema_value(v, mode, defs, tpl.get(k)) for k, v in props.items()}


# -- echo: the public data put back as the answer ---------------------------------------


def _walk_public(data: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(data, dict):
        for k, v in data.items():
            sub = f"{path}.{k}" if path else str(k)
            yield sub, v
            yield from _walk_public(v, sub)


def _fits(value: Any, schema: dict[str, Any], defs: dict[str, Any]) -> bool:
    schema = _resolve(schema, defs)
    kind = schema.get("type")
    if "enum" in schema:
        return value in schema["enum"]
    if kind == "array" or "items" in schema:
        return (
            isinstance(value, list)
            and bool(value)
            and _fits(value[0], schema.get("items", {}), defs)
        )
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "object" or "properties" in schema:
        return isinstance(value, dict)
    return False


def echo_answers(spec: ToolSpec, public: Mapping[str, Any]) -> list[Answer]:
    """Answers filled from the public data: same-named values first, then same-shaped.

    Each variant takes the i-th candidate for every parameter (the last one where a
    parameter has fewer), so a task whose answer is "the given data, unchanged" (the
    start configuration, the labels in their given order) is caught.
    """
    props, defs = tool_parameters(spec)
    pool = list(_walk_public(public))
    candidates: dict[str, list[Any]] = {}
    for name, schema in props.items():
        named = [v for p, v in pool if p.rsplit(".", 1)[-1] == name and _fits(v, schema, defs)]
        shaped = [v for p, v in pool if _fits(v, schema, defs) and not any(v is n for n in named)]
        found = named + shaped
        candidates[name] = found or [schema_value(schema, "defaults", defs)]
    width = min(_MAX_ECHO_VARIANTS, max(len(c) for c in candidates.values()) if props else 1)
    return [{k: c[min(i, len(c) - 1)] for k, c in candidates.items()} for i in range(width)]


# -- agents ------------------------------------------------------------------------------


class _SubmitOncePolicy:
    """Calls the final tool once with a fixed answer, then says nothing more."""

    def __init__(self, tool_name: str | None, answer: Answer | None) -> None:
        self.tool_name, self.answer, self.n = tool_name, answer, 0

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn:
        self.n += 1
        if self.n > 1 or self.tool_name is None or self.answer is None:
            return AgentTurn(assistant("I have nothing to add."))
        return AgentTurn(
            assistant(tool_calls=[ToolCall.make(f"lazy_{self.n}", self.tool_name, self.answer)])
        )


class SubmitAgent:
    """Submits at once: the final tool's schema defaults, minima or maxima.

    ``templates`` (per difficulty) only size what the schema leaves open, such as the
    length of a list; their values are never submitted.
    """

    def __init__(self, mode: SubmitMode, templates: Mapping[str, Answer] | None = None) -> None:
        self.mode = mode
        self.templates = dict(templates or {})
        self.name = f"lazy:{mode}"

    def policy(self, instance: Instance, sample: int = 0) -> _SubmitOncePolicy:
        spec = final_tool(instance)
        if spec is None:
            return _SubmitOncePolicy(None, None)
        answer = submit_answer(spec, self.mode, self.templates.get(instance.difficulty))
        return _SubmitOncePolicy(spec.name, answer)

    async def aclose(self) -> None:
        return None


class EchoAgent:
    """Submits at once the public data's values as the answer (variant ``index``)."""

    def __init__(self, index: int = 0) -> None:
        self.index = index
        self.name = f"lazy:echo{index}" if index else "lazy:echo"

    def policy(self, instance: Instance, sample: int = 0) -> _SubmitOncePolicy:
        spec = final_tool(instance)
        if spec is None:
            return _SubmitOncePolicy(None, None)
        variants = echo_answers(spec, instance.public)
        answer = variants[self.index] if self.index < len(variants) else None
        return _SubmitOncePolicy(spec.name, answer)

    async def aclose(self) -> None:
        return None


class ConstantAgent:
    """Submits at once the same answer on every instance of a difficulty."""

    def __init__(self, answers: Mapping[str, Answer], name: str = "lazy:constant") -> None:
        self.answers = dict(answers)
        self.name = name

    def policy(self, instance: Instance, sample: int = 0) -> _SubmitOncePolicy:
        spec = final_tool(instance)
        return _SubmitOncePolicy(spec.name if spec else None, self.answers.get(instance.difficulty))

    async def aclose(self) -> None:
        return None


def passive_actions(instance: Instance) -> list[tuple[str, Answer]]:
    """Cheap non-final actions: each tool at its minimum, once per value of its first enum."""
    actions: list[tuple[str, Answer]] = []
    for spec in get_task(instance.task).world.tool_specs().values():
        if spec.final:
            continue
        props, defs = tool_parameters(spec)
        base = {k: schema_value(v, "minimum", defs) for k, v in props.items()}
        enums = [(k, _resolve(v, defs).get("enum")) for k, v in props.items()]
        enum_param = next(((k, vals) for k, vals in enums if vals), None)
        if enum_param is None:
            actions.append((spec.name, base))
        else:
            k, values = enum_param
            actions.extend((spec.name, {**base, k: v}) for v in values)
    return actions


class _PassivePolicy:
    def __init__(self, actions: list[tuple[str, Answer]], prefer: int) -> None:
        # The preferred action first, then the others in order as fallbacks.
        self.order = [actions[prefer], *actions[:prefer], *actions[prefer + 1 :]] if actions else []
        self.fallback = 0
        self.n = 0

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn:
        self.n += 1
        last = messages[-1] if messages else None
        failed = last is not None and last.role == "tool" and last.text.startswith("Error")
        self.fallback = self.fallback + 1 if failed else 0
        if self.fallback >= len(self.order):
            return AgentTurn(assistant("I pass."))
        name, args = self.order[self.fallback]
        return AgentTurn(assistant(tool_calls=[ToolCall.make(f"lazy_{self.n}", name, args)]))


class PassiveAgent:
    """Plays the same cheap action every turn (e.g. "check, else fold"); never answers.

    ``prefer`` picks the action from :func:`passive_actions`; when it is refused, the
    next turn tries the others in order, and a success returns to the preferred one.
    """

    def __init__(self, prefer: int = 0) -> None:
        self.prefer = prefer
        self.name = f"lazy:passive{prefer}"

    def policy(self, instance: Instance, sample: int = 0) -> _PassivePolicy:
        actions = passive_actions(instance)
        return _PassivePolicy(actions, self.prefer if self.prefer < len(actions) else 0)

    async def aclose(self) -> None:
        return None


# -- blind play: no hidden data, blank images --------------------------------------------


@lru_cache(maxsize=64)
def _blank_png(width: int, height: int) -> str:
    from PIL import Image

    from agentharness.core.messages import PNG_DATA_URL_PREFIX, png_bytes

    blank = Image.new("RGB", (width, height), "white")
    return PNG_DATA_URL_PREFIX + base64.b64encode(png_bytes(blank)).decode()


def blank_image(message: Message) -> Message:
    """``message`` with every inline image replaced by a white one of the same size."""
    from PIL import Image

    if not message.images or not isinstance(message.content, list):
        return message
    parts: list[Any] = []
    for p in message.content:
        png = p.png_bytes() if isinstance(p, ImagePart) else None
        if png is None:
            parts.append(p)
            continue
        width, height = Image.open(io.BytesIO(png)).size
        parts.append(ImagePart(image_url=ImageURL(url=_blank_png(width, height))))
    return message.model_copy(update={"content": parts})


def blank_images(messages: list[Message]) -> list[Message]:
    """The conversation with every inline image replaced by a white one of the same size."""
    return [blank_image(m) for m in messages]


class _BlindPolicy:
    def __init__(self, inner: ExpertPolicy) -> None:
        self.inner = inner
        # A conversation only grows: blank each message once (pairs keep the originals
        # alive, so their ids stay theirs), not the whole history every turn.
        self._blanked: dict[int, tuple[Message, Message]] = {}

    def _blank(self, message: Message) -> Message:
        seen = self._blanked.get(id(message))
        if seen is None or seen[0] is not message:
            seen = self._blanked[id(message)] = (message, blank_image(message))
        return seen[1]

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn:
        return AgentTurn(self.inner.next_turn([self._blank(m) for m in messages]))


class BlindAgent:
    """A scripted policy that sees no hidden data and only blank images.

    Built for a vision task's ``blind_policy``: if it scores, the image is not needed.
    """

    def __init__(self, factory: Callable[[Instance], ExpertPolicy], name: str = "blind") -> None:
        self.factory = factory
        self.name = name

    def policy(self, instance: Instance, sample: int = 0) -> _BlindPolicy:
        return _BlindPolicy(self.factory(instance.model_copy(update={"hidden": {}})))

    async def aclose(self) -> None:
        return None
