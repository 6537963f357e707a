"""Layer 2, tool execution: the per-episode world and the tools the agent calls.

A task's world is a subclass of :class:`World`. Its tools are methods marked with
:func:`tool`; each tool's OpenAI function schema is derived from the method's type
hints and its Google-style docstring (the summary line and the ``Args:`` section).

The executor (:meth:`World.execute`) validates arguments against the schema before the
call, runs the call under a timeout, and turns every failure into a :class:`ToolResult`
with ``is_error=True`` whose text tells the agent what went wrong. It never raises.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import copy
import dataclasses
import inspect
import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from agentharness.core.instance import Instance

DEFAULT_TOOL_TIMEOUT_S = 30.0

# Tool calls run on these threads so a stuck simulator cannot stall the episode loop.
# A call that times out keeps its thread until it returns; the episode is told, the next
# call of that world waits for it (one call at a time per world), and a call given up on
# while it waited never runs.
_TOOL_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix="tool")
# A tool's timeout clock starts when one of those threads takes the call up: time queued
# behind other episodes' calls (many episodes at once) is not the tool's. The queue wait
# has its own, generous bound. Callers look at it only once the first wait of timeout_s
# ran out, so a call that returns in time costs what it did before.
QUEUE_LIMIT_S = 600.0


class _Call:
    """One tool call's race against its timeout, decided once under a lock: either the
    call finished first (its result stands, an answer is recorded) or the caller gave up
    first (the agent is told it timed out, and a final answer it returns later is not
    recorded)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = "running"
        # when a tool thread took the call up (time.monotonic()); sync and async callers wait on it
        self.taken_up: concurrent.futures.Future[float] = concurrent.futures.Future()

    def take_up(self) -> None:
        """A tool thread starts the call: its timeout clock starts now."""
        with contextlib.suppress(concurrent.futures.InvalidStateError):
            self.taken_up.set_result(time.monotonic())

    def time_left(self, timeout_s: float) -> float:
        """Seconds left on a taken-up call's clock."""
        return max(0.0, self.taken_up.result() + timeout_s - time.monotonic())

    @staticmethod
    def queue_left(queued_at: float) -> float:
        """Seconds a call queued at ``queued_at`` may still wait for a tool thread."""
        return max(0.0, queued_at + QUEUE_LIMIT_S - time.monotonic())

    def begin(self) -> bool:
        """The call has the world: True if its caller still waits for it (one given up
        on while it queued for the world never runs)."""
        with self._lock:
            return self._state == "running"

    def finish(self) -> bool:
        """The call returns: True if the caller still waits for it."""
        return self._settle("finished")

    def abandon(self) -> bool:
        """The caller's timeout ran out: True if the call had not finished."""
        return self._settle("abandoned")

    def _settle(self, outcome: str) -> bool:
        with self._lock:
            if self._state == "running":
                self._state = outcome
            return self._state == outcome


def _not_started(spec: ToolSpec) -> ToolResult:
    return _error(
        f"tool '{spec.name}' did not start: every tool thread was busy for {QUEUE_LIMIT_S:g} s "
        "(too many slow calls at once); call it again, or run fewer episodes at once."
    )


def _timed_out(spec: ToolSpec) -> ToolResult:
    answer = " The answer was not recorded; call it again." if spec.final else ""
    return _error(
        f"tool '{spec.name}' timed out after {spec.timeout_s:g} s; try smaller inputs.{answer}"
    )


class ToolError(Exception):
    """Raise from a tool to send a clear, fixable error message to the agent.

    ``data`` (a JSON value) travels with it as the failed call's structured result.
    """

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.data = data


@dataclass(frozen=True)
class ToolResult:
    """What a tool call returns to the episode.

    ``done`` ends the episode (``end_reason`` says why: ``answered`` for a final answer,
    ``completed`` when the world itself finished, e.g. a poker session ran out of hands).
    ``data`` is the result as a JSON value, for scripted policies and analysis (a tool
    returning a ``dict`` or ``list`` gets it set to that); ``text`` is what the model
    reads and must say the same.
    """

    text: str
    data: Any = None
    images: tuple[bytes, ...] = ()
    step_reward: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    is_error: bool = False
    done: bool = False
    end_reason: str | None = None


F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ToolSpec:
    """One tool: typed (``params_model``, from a method's signature) or declared by a
    JSON schema (``parameters``, for tools discovered at run time; see :class:`SchemaWorld`;
    their ``params_model`` is :class:`SchemaArgs`, and the schema is what validates)."""

    name: str
    description: str
    params_model: type[BaseModel]
    method_name: str
    final: bool
    timeout_s: float
    parameters: dict[str, Any] | None = None

    def openai_schema(self) -> dict[str, Any]:
        if self.parameters is not None:
            params = copy.deepcopy(self.parameters)
        else:
            params = _clean_schema(self.params_model.model_json_schema())
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }


def tool(
    fn: F | None = None,
    *,
    final: bool = False,
    name: str | None = None,
    timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
) -> Any:
    """Mark a :class:`World` method as a tool.

    ``final=True`` marks the answer tool: a successful call records the validated
    arguments in ``world.final_answer`` and ends the episode as ``answered``.
    """

    def mark(f: F) -> F:
        meta = {"final": final, "name": name or f.__name__, "timeout_s": timeout_s}
        setattr(f, "__agentharness_tool__", meta)  # noqa: B010
        return f

    return mark(fn) if fn is not None else mark


_RESERVED = frozenset(
    {
        "instance",
        "final_answer",
        "tool_calls_made",
        "execute",
        "aexecute",
        "tool_specs",
        "tool_schemas",
        "close",
        "call_schema_tool",
        "wait_idle",
        "await_idle",
        "settled",
    }
)


class World:
    """Per-episode state and tools. Subclass it per task; one instance per episode.

    Subclasses implement ``__init__(self, instance)`` (calling ``super().__init__``)
    and tools as methods marked with :func:`tool`. A tool returns ``str``, a
    JSON-serializable ``dict``/``list`` or a :class:`ToolResult`, and raises
    :class:`ToolError` for problems the agent should fix. A world that holds an outside
    resource (a server session, a subprocess) releases it in :meth:`close`.
    """

    _specs_cache: ClassVar[dict[type, dict[str, ToolSpec]]] = {}
    _schemas_cache: ClassVar[dict[type, str]] = {}

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.final_answer: dict[str, Any] | None = None
        self.tool_calls_made = 0
        self._lock = threading.Lock()

    # -- schema ---------------------------------------------------------------------
    @classmethod
    def tool_specs(cls) -> dict[str, ToolSpec]:
        if cls not in World._specs_cache:
            specs: dict[str, ToolSpec] = {}
            for attr in dir(cls):
                fn = getattr(cls, attr, None)
                meta = getattr(fn, "__agentharness_tool__", None)
                if meta is None or fn is None:
                    continue
                if attr in _RESERVED:
                    raise TypeError(
                        f"{cls.__name__}.{attr}: a tool may not be named like a World attribute"
                    )
                spec = _spec_from_function(fn, meta["name"], meta["final"], meta["timeout_s"])
                specs[spec.name] = spec
            World._specs_cache[cls] = specs
        return World._specs_cache[cls]

    @classmethod
    def tool_schemas(cls) -> list[dict[str, Any]]:
        """OpenAI function schemas of the tools (a fresh copy; built once per class)."""
        if cls not in World._schemas_cache:
            schemas = [s.openai_schema() for s in cls.tool_specs().values()]
            World._schemas_cache[cls] = json.dumps(schemas)
        # Decoding the cached JSON is a deep copy ~30x faster than copy.deepcopy, and every
        # episode takes one.
        return list(json.loads(World._schemas_cache[cls]))

    def close(self) -> None:
        """Release per-episode resources. The episode calls it once when it ends, after
        the reward is computed (so the reward may still use the world); it must not raise."""

    # -- settling -------------------------------------------------------------------
    def wait_idle(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for a tool call still running (one whose caller gave
        up on it: a tool or episode timeout) to return; True when no call runs."""
        if self._lock.acquire(timeout=max(0.0, timeout_s)):
            self._lock.release()
            return True
        return False

    async def await_idle(self, timeout_s: float) -> bool:
        """:meth:`wait_idle` without blocking the event loop."""
        import asyncio

        if self._lock.acquire(blocking=False):
            self._lock.release()
            return True
        return await asyncio.to_thread(self.wait_idle, timeout_s)

    @contextlib.contextmanager
    def settled(self, timeout_s: float) -> Iterator[bool]:
        """Hold the world still while a reward reads it: no tool call runs inside. Yields
        False when a call given up on still ran after ``timeout_s`` (the world may change
        under the reader, so it should not score it)."""
        held = self._lock.acquire(timeout=max(0.0, timeout_s))
        try:
            yield held
        finally:
            if held:
                self._lock.release()

    # -- execution ------------------------------------------------------------------
    def execute(self, name: str, arguments: dict[str, Any] | str) -> ToolResult:
        """Validate, run under the tool's timeout, and report; never raises."""
        prepared = self._prepare(name, arguments)
        if isinstance(prepared, ToolResult):
            return prepared
        spec, args = prepared
        call = _Call()
        queued_at = time.monotonic()
        future = _TOOL_POOL.submit(self._call_locked, spec, args, call)
        wait = spec.timeout_s
        while True:
            try:
                return future.result(timeout=wait)
            except concurrent.futures.TimeoutError:
                pass
            if not call.taken_up.done():  # still queued for a thread: its clock has not started
                try:
                    call.taken_up.result(timeout=call.queue_left(queued_at))
                except concurrent.futures.TimeoutError:
                    if call.abandon():
                        return _not_started(spec)
            wait = call.time_left(spec.timeout_s)
            if wait > 0:
                continue
            if not call.abandon():  # it finished as the clock ran out: its result stands
                return future.result()
            return _timed_out(spec)

    async def aexecute(self, name: str, arguments: dict[str, Any] | str) -> ToolResult:
        import asyncio

        prepared = self._prepare(name, arguments)
        if isinstance(prepared, ToolResult):
            return prepared
        spec, args = prepared
        call = _Call()
        queued_at = time.monotonic()
        result = asyncio.wrap_future(_TOOL_POOL.submit(self._call_locked, spec, args, call))
        wait = spec.timeout_s
        try:
            while True:
                try:
                    return await asyncio.wait_for(asyncio.shield(result), wait)
                except asyncio.TimeoutError:
                    pass
                if not call.taken_up.done():
                    # shielded: giving up on the wait must not cancel the call's clock
                    taken_up = asyncio.shield(asyncio.wrap_future(call.taken_up))
                    try:
                        await asyncio.wait_for(taken_up, call.queue_left(queued_at))
                    except asyncio.TimeoutError:
                        if call.abandon():
                            return _not_started(spec)
                wait = call.time_left(spec.timeout_s)
                if wait > 0:
                    continue
                if not call.abandon():
                    return await result
                return _timed_out(spec)
        except asyncio.CancelledError:  # the episode was stopped (its own timeout, shutdown)
            call.abandon()
            raise

    def _prepare(
        self, name: str, arguments: dict[str, Any] | str
    ) -> tuple[ToolSpec, dict[str, Any]] | ToolResult:
        specs = self.tool_specs()
        spec = specs.get(name)
        if spec is None:
            return _error(f"unknown tool '{name}'. Available tools: {', '.join(sorted(specs))}.")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as e:
                return _error(
                    f"arguments for '{name}' are not valid JSON ({e.msg}); send a JSON object."
                )
        if not isinstance(arguments, dict):
            return _error(
                f"arguments for '{name}' must be a JSON object, got {type(arguments).__name__}."
            )
        if spec.parameters is not None:
            problem = _schema_problem(spec.parameters, arguments)
            if problem is not None:
                return _error(f"invalid arguments for '{name}': {problem}")
            return spec, dict(arguments)
        try:
            validated = spec.params_model.model_validate(arguments)
        except ValidationError as e:
            return _error(f"invalid arguments for '{name}': {_describe_validation(e)}")
        return spec, {k: getattr(validated, k) for k in spec.params_model.model_fields}

    def _call_locked(self, spec: ToolSpec, args: dict[str, Any], call: _Call) -> ToolResult:
        call.take_up()
        # One call at a time per world: tools mutate episode state.
        with self._lock:
            if not call.begin():  # its caller gave up while it queued: the world stays as is
                return _timed_out(spec)
            self.tool_calls_made += 1
            start = time.perf_counter()
            result = self._run(spec, args)
            # The agent was told a call that outran its timeout failed: its answer is not kept.
            if call.finish() and spec.final and not result.is_error:
                self.final_answer = {k: _jsonable(v) for k, v in args.items()}
                if not result.done:
                    result = ToolResult(
                        **{**result.__dict__, "done": True, "end_reason": "answered"}
                    )
            if "latency_s" not in result.metrics:
                result.metrics["latency_s"] = time.perf_counter() - start
            return result

    def _run(self, spec: ToolSpec, args: dict[str, Any]) -> ToolResult:
        """The tool's result, or the error message its failure gives the agent."""
        try:
            if spec.parameters is not None:
                out = self.call_schema_tool(spec.name, args)
            else:
                out = getattr(self, spec.method_name)(**args)
            result = _as_result(out)
            if result.data is not None and not isinstance(out, dict | list):
                # numpy scalars and arrays, models: plain JSON before they reach a log
                result = dataclasses.replace(result, data=_jsonable(result.data))
            return result
        except ToolError as e:
            return _error(str(e), _jsonable(e.data) if e.data is not None else None)
        except Exception as e:  # a tool bug or simulator failure is feedback, not a crash
            return _error(f"{type(e).__name__}: {e}")

    def call_schema_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run a JSON-schema tool (:class:`SchemaWorld`); typed tools never come here."""
        raise ToolError(f"{type(self).__name__} has no schema tool '{name}'")


class SchemaArgs(BaseModel):
    """The arguments of a JSON-schema tool: any object (its JSON schema validates them)."""

    model_config = ConfigDict(extra="allow")


class SchemaWorld(World):
    """A world whose tools are declared as JSON schemas instead of typed methods.

    For tools known only at run time: an MCP server's tools, a Gymnasium action space.
    Subclasses (usually built per task with ``type(...)``) set :attr:`schema_tools` to
    OpenAI function schemas, optionally with ``"final": True`` on the answer tool, and
    implement :meth:`call_schema_tool`. Arguments are validated against the schema
    (``jsonschema``) before the call, so the tool sees only well-formed input. Typed
    ``@tool`` methods may sit beside them.
    """

    schema_tools: ClassVar[tuple[dict[str, Any], ...]] = ()
    schema_tool_timeout_s: ClassVar[float] = DEFAULT_TOOL_TIMEOUT_S

    @classmethod
    def tool_specs(cls) -> dict[str, ToolSpec]:
        if cls not in World._specs_cache:
            specs = dict(super().tool_specs())
            for declared in cls.schema_tools:
                fn = declared.get("function", declared)
                params = dict(fn.get("parameters") or {"type": "object", "properties": {}})
                params.setdefault("type", "object")
                params.setdefault("properties", {})
                specs[fn["name"]] = ToolSpec(
                    name=fn["name"],
                    description=fn.get("description") or fn["name"],
                    params_model=SchemaArgs,
                    method_name="call_schema_tool",
                    final=bool(declared.get("final", False)),
                    timeout_s=cls.schema_tool_timeout_s,
                    parameters=params,
                )
            World._specs_cache[cls] = specs
        return World._specs_cache[cls]


def _schema_problem(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """What is wrong with ``arguments`` under a JSON schema, in one line, or None."""
    import jsonschema

    validator_cls = jsonschema.validators.validator_for(schema)
    errors = sorted(validator_cls(schema).iter_errors(arguments), key=lambda e: list(e.path))
    if not errors:
        return None
    parts = []
    for e in errors[:5]:
        loc = ".".join(str(p) for p in e.absolute_path) or "(arguments)"
        parts.append(f"{loc}: {e.message}")
    more = f" (+{len(errors) - 5} more)" if len(errors) > 5 else ""
    return "; ".join(parts) + more


def _error(text: str, data: Any = None) -> ToolResult:
    return ToolResult(text=f"Error: {text}", data=data, is_error=True)


def _as_result(out: Any) -> ToolResult:
    if isinstance(out, ToolResult):
        return out
    if isinstance(out, str):
        return ToolResult(text=out)
    data = _jsonable(out)
    return ToolResult(text=json.dumps(data, sort_keys=False), data=data)


def _jsonable(v: Any) -> Any:
    if isinstance(v, BaseModel):
        return v.model_dump()
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if hasattr(v, "tolist"):  # numpy scalars and arrays
        return _jsonable(v.tolist())
    return v


def _describe_validation(e: ValidationError) -> str:
    parts = []
    for err in e.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unexpected argument"
        parts.append(f"{loc}: {msg}")
    more = f" (+{len(e.errors()) - 5} more)" if len(e.errors()) > 5 else ""
    return "; ".join(parts) + more


_ARG_LINE = re.compile(r"^\s{2,}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Summary and per-argument descriptions from a Google-style docstring."""
    doc = inspect.cleandoc(doc or "")
    summary_lines: list[str] = []
    args: dict[str, str] = {}
    section = "summary"
    current: str | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            section = "args"
            continue
        if stripped.endswith(":") and stripped[:-1] in (
            "Returns",
            "Raises",
            "Example",
            "Examples",
            "Note",
        ):
            section = "other"
            continue
        if section == "summary":
            summary_lines.append(line)
        elif section == "args":
            m = _ARG_LINE.match(line)
            if m:
                current = m.group(1)
                args[current] = m.group(2).strip()
            elif current and stripped:
                args[current] += " " + stripped
    summary = " ".join(" ".join(summary_lines).split())
    return summary, args


def _spec_from_function(
    fn: Callable[..., Any], name: str, final: bool, timeout_s: float
) -> ToolSpec:
    from pydantic import Field

    summary, arg_docs = _parse_docstring(fn.__doc__ or "")
    hints = get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    for pname, param in inspect.signature(fn).parameters.items():
        if pname == "self":
            continue
        if pname not in hints:
            raise TypeError(f"tool {fn.__qualname__}: parameter '{pname}' needs a type hint")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (hints[pname], Field(default, description=arg_docs.get(pname) or None))
    model = create_model(
        f"{name}_args",
        __config__=ConfigDict(extra="forbid", allow_inf_nan=False),
        **fields,
    )
    return ToolSpec(
        name=name,
        description=summary or name,
        params_model=model,
        method_name=fn.__name__,
        final=final,
        timeout_s=timeout_s,
    )


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's titles: they cost prompt tokens and tell the model nothing."""

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                k: walk(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))
            }
        if isinstance(node, list):
            return [walk(x) for x in node]
        return node

    cleaned = walk(schema)
    cleaned.setdefault("properties", {})
    cleaned["additionalProperties"] = False
    return cleaned
