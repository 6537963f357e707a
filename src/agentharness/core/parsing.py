"""Parse an assistant turn into tool calls, tolerating what real models write.

Accepted forms, in order of precedence:

* native OpenAI ``tool_calls`` on the message;
* Hermes/Qwen ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (closing tag
  optional at the end of the turn);
* Qwen3-Coder XML ``<function=NAME><parameter=K>V</parameter></function>``;
* JSON in code fences (```json ... ```) or a bare JSON object that looks like a call.

JSON is repaired where the intent is clear: arguments given as a JSON string, trailing
commas, single quotes, Python literals. Nothing here raises: anything that looks like a
call but cannot be read becomes an entry in :attr:`ParsedTurn.errors`.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentharness.core.messages import Message

_TOOL_CALL_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_FUNCTION_XML = re.compile(r"<function=([^>\s]+)\s*>(.*?)(?:</function>|$)", re.DOTALL)
_PARAMETER_XML = re.compile(
    r"<parameter=([^>\s]+)\s*>(.*?)(?:</parameter>|(?=<parameter=)|$)", re.DOTALL
)
_FENCE = re.compile(r"```(?:json|JSON|tool_call|python)?\s*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "args", "parameters", "params", "input")


@dataclass(frozen=True)
class ParsedCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ParsedTurn:
    calls: list[ParsedCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    source: str = "none"  # native | text | none

    @property
    def ok(self) -> bool:
        return not self.errors


# Arguments beyond these are refused: nothing a tool takes is this deep or this large,
# and a log line must stay writable (JSON encoders stop at a few hundred levels).
MAX_ARGUMENT_DEPTH = 32
MAX_ARGUMENT_CHARS = 64_000


def parse_turn(message: Message, call_id_prefix: str = "call") -> ParsedTurn:
    """Tool calls in ``message``; never raises."""
    try:
        if message.tool_calls:
            parsed = _parse_native(message)
        else:
            parsed = _parse_text(message.text, call_id_prefix)
    except Exception as e:  # defensive: a parser bug must not kill an episode
        return ParsedTurn(errors=[f"could not read the tool calls ({type(e).__name__}: {e})"])
    return _within_limits(parsed)


def _within_limits(parsed: ParsedTurn) -> ParsedTurn:
    calls, errors = [], list(parsed.errors)
    for call in parsed.calls:
        if _depth(call.arguments) > MAX_ARGUMENT_DEPTH:
            errors.append(
                f"the arguments of '{call.name}' nest more than {MAX_ARGUMENT_DEPTH} levels "
                "deep; send a flatter JSON object"
            )
            continue
        size = len(json.dumps(call.arguments))
        if size > MAX_ARGUMENT_CHARS:
            errors.append(
                f"the arguments of '{call.name}' are {size} characters; at most "
                f"{MAX_ARGUMENT_CHARS} are read"
            )
            continue
        calls.append(call)
    if len(calls) == len(parsed.calls):
        return parsed
    return ParsedTurn(calls=calls, errors=errors, source=parsed.source)


def _depth(value: Any, limit: int = MAX_ARGUMENT_DEPTH + 1) -> int:
    """Nesting depth of a JSON value, counted up to ``limit`` (iterative: no recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            if level >= limit:
                return level
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, level + 1) for child in children)
    return deepest


def answered_calls(
    messages: Sequence[Message], start: int = 0
) -> Iterator[tuple[ParsedCall, Message]]:
    """Each tool call in ``messages`` with the tool message that answered it, in order.

    Only pairs whose tool message is at index >= ``start`` are yielded, so a caller that
    keeps state can replay just what is new. Calls written as text get the ids the
    episode gave them (``call_<turn>_<i>``); a result whose id is unknown is paired with
    the oldest unanswered call. Scripted experts use this to rebuild the world's state
    from the conversation.
    """
    # Where each assistant turn's replies end: a turn answered wholly before ``start`` is
    # counted but not parsed, so a caller replaying each new turn parses each turn once.
    assistant_at = [i for i, m in enumerate(messages) if m.role == "assistant"]
    replies_end = dict(zip(assistant_at, [*assistant_at[1:], len(messages)], strict=False))
    pending: list[ParsedCall] = []
    turn = 0
    for index, message in enumerate(messages):
        if message.role == "assistant":
            turn += 1
            pending = (
                list(parse_turn(message, call_id_prefix=f"call_{turn}").calls)
                if replies_end[index] > start
                else []
            )
        elif message.role == "tool" and pending:
            match = next((c for c in pending if c.id == message.tool_call_id), pending[0])
            pending.remove(match)
            if index >= start:
                yield match, message


def _parse_native(message: Message) -> ParsedTurn:
    calls: list[ParsedCall] = []
    errors: list[str] = []
    for tc in message.tool_calls or []:
        args = loads_lenient(tc.function.arguments) if tc.function.arguments.strip() else {}
        args = _unwrap_string_args(args)
        if not isinstance(args, dict):
            errors.append(
                f"arguments of '{tc.function.name}' are not a JSON object: {_clip(tc.function.arguments)}"
            )
            continue
        calls.append(ParsedCall(id=tc.id, name=tc.function.name, arguments=args))
    return ParsedTurn(calls=calls, errors=errors, source="native")


def _parse_text(text: str, prefix: str) -> ParsedTurn:
    raw: list[tuple[str | None, Any]] = []  # (name or None, payload)
    errors: list[str] = []

    blocks = _TOOL_CALL_BLOCK.findall(text)
    for block in blocks:
        if "<function=" in block:
            raw.extend(_xml_functions(block))
            continue
        obj = loads_lenient(_strip_fence(block))
        if obj is _FAIL:
            errors.append(f"could not parse the JSON inside <tool_call>: {_clip(block)}")
        else:
            raw.extend((None, o) for o in (obj if isinstance(obj, list) else [obj]))

    if not blocks:
        raw.extend(_xml_functions(text))

    if not blocks and not raw:
        candidates = _FENCE.findall(text) or _bare_json_objects(text)
        for cand in candidates:
            obj = loads_lenient(cand)
            objs = obj if isinstance(obj, list) else [obj]
            raw.extend((None, o) for o in objs if _looks_like_call(o))

    calls: list[ParsedCall] = []
    for name, payload in raw:
        call, err = _to_call(name, payload, f"{prefix}_{len(calls)}")
        if call:
            calls.append(call)
        if err:
            errors.append(err)

    if not calls and not errors and ("<tool_call" in text or "<function=" in text):
        errors.append("found a tool-call tag but no call inside it")
    return ParsedTurn(calls=calls, errors=errors, source="text" if calls or errors else "none")


def _xml_functions(text: str) -> list[tuple[str | None, Any]]:
    out: list[tuple[str | None, Any]] = []
    for name, body in _FUNCTION_XML.findall(text):
        params: dict[str, Any] = {}
        for key, value in _PARAMETER_XML.findall(body):
            value = value.strip()
            parsed = loads_lenient(value)
            params[key] = value if parsed is _FAIL else parsed
        out.append((name.strip(), params))
    return out


def _to_call(name: str | None, payload: Any, call_id: str) -> tuple[ParsedCall | None, str | None]:
    if name is not None:
        return ParsedCall(id=call_id, name=name, arguments=payload), None
    if not isinstance(payload, dict):
        return (
            None,
            f"a tool call must be a JSON object with 'name' and 'arguments', got: {_clip(str(payload))}",
        )
    if isinstance(payload.get("function"), dict):  # OpenAI-shaped call written as text
        payload = payload["function"]
    fname = next((payload[k] for k in _NAME_KEYS if isinstance(payload.get(k), str)), None)
    if not fname:
        return None, f"a tool call needs a 'name': {_clip(json.dumps(payload, default=str))}"
    args: Any = next((payload[k] for k in _ARG_KEYS if k in payload), {})
    args = _unwrap_string_args(args)
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None, f"the arguments of '{fname}' must be a JSON object, got: {_clip(str(args))}"
    return ParsedCall(id=call_id, name=fname, arguments=args), None


def _unwrap_string_args(args: Any) -> Any:
    """Arguments sent as a JSON string (possibly twice encoded) become an object."""
    for _ in range(2):
        if isinstance(args, str):
            parsed = loads_lenient(args)
            if parsed is _FAIL:
                return args
            args = parsed
    return args


def _looks_like_call(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    if isinstance(obj.get("function"), dict):
        obj = obj["function"]
    return any(isinstance(obj.get(k), str) for k in _NAME_KEYS) and (
        any(k in obj for k in _ARG_KEYS) or len(obj) == 1
    )


def _strip_fence(block: str) -> str:
    m = _FENCE.search(block)
    return m.group(1) if m else block


def _bare_json_objects(text: str) -> list[str]:
    """Top-level ``{...}`` spans in prose, found by brace matching outside strings."""
    spans: list[str] = []
    depth, start, in_str, esc, quote = 0, -1, False, False, ""
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == quote:
                in_str = False
        elif ch in "\"'" and depth > 0:
            in_str, quote = True, ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
        if len(spans) >= 16:
            break
    return spans


class _Fail:
    def __repr__(self) -> str:
        return "<unparseable>"


_FAIL: Any = _Fail()


def loads_lenient(text: str) -> Any:
    """``json.loads`` with repairs for common model mistakes; ``_FAIL`` if hopeless."""
    text = text.strip()
    if not text:
        return _FAIL
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        pass
    repaired = _TRAILING_COMMA.sub(r"\1", text)
    try:
        return json.loads(repaired)
    except (json.JSONDecodeError, RecursionError):
        pass
    if len(repaired) > 100_000:
        return _FAIL
    try:  # single quotes, True/False/None
        return _pythonish(ast.literal_eval(repaired))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    try:
        py = re.sub(
            r"\btrue\b",
            "True",
            re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", repaired)),
        )
        return _pythonish(ast.literal_eval(py))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _FAIL


def _pythonish(v: Any) -> Any:
    """A Python literal as JSON data; ``ValueError`` for anything JSON cannot hold.

    Only JSON's own types pass: a model's ``[1, ...]`` parses to ``Ellipsis``, which would
    reach the episode log and fail its JSON encoding (it once ended a GRPO run).
    """
    if isinstance(v, tuple | list):
        return [_pythonish(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _pythonish(x) for k, x in v.items()}
    if v is None or isinstance(v, str | bool | int | float):
        return v
    raise ValueError(f"not JSON-like: {type(v).__name__}")


def _clip(s: str, n: int = 160) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 3] + "..."
