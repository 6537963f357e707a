"""``mcp:<command or URL>#<module:function>`` — an MCP server's tools as a task.

The address names the server (a command line launched over stdio, or an
``http(s)://`` URL of a streamable-HTTP endpoint) and, after ``#``, the reward callable
``module:function`` with the signature of layer 4: ``(instance, world, trajectory) ->
Reward`` (or a float in [0, 1], success at 1). Its module may also define:

* ``generate(seed: int, difficulty: str) -> dict`` with ``prompt`` (str), ``public`` and
  ``hidden`` (dicts): the instances. Without it every instance asks the server's own
  ``instructions`` (seeds then differ only by number);
* ``DIFFICULTIES``: the names ``generate`` accepts (default: ``("medium",)``);
* ``expert(instance) -> ExpertPolicy``: a solver acting through the tools.

Tools are the server's, discovered with the official ``mcp`` SDK when the task is first
resolved and declared by their JSON schemas (a :class:`~agentharness.core.tools.SchemaWorld`),
plus a final ``submit(answer)`` unless the server has its own ``submit``. Arguments are
validated against each tool's schema before the call; results come back as tool
messages (text, and images as images). Each episode opens its own server session (a
fresh process for a stdio server) on a background event loop, and the episode closes
it when it ends, whatever the reason. A server that dies mid-episode ends the episode
as ``env_error``; a tool that reports an error is a message the agent can act on.
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import io
import json
import shlex
import sys
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.messages import Message, system, user
from agentharness.core.registry import UnknownTaskError
from agentharness.core.reward import Reward
from agentharness.core.task import Budgets, ExpertPolicy, Interaction, Problem, TaskSpec
from agentharness.core.tools import SchemaWorld, ToolError, ToolResult, World

ADAPTER_VERSION = 1
CONNECT_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 25.0  # under the executor's 30 s, so our message wins the race
CLOSE_TIMEOUT_S = 5.0
SUBMIT = {
    "type": "function",
    "function": {
        "name": "submit",
        "description": "Submit your final answer; this ends the episode.",
        "parameters": {
            "type": "object",
            "properties": {"answer": {"type": "string", "description": "the final answer"}},
            "required": ["answer"],
            "additionalProperties": False,
        },
    },
    "final": True,
}


class ServerGone(RuntimeError):
    """The MCP server closed the connection (crashed, exited or was stopped)."""


def _server_params(target: str) -> Any:
    """A URL for streamable HTTP, or stdio parameters for a command line."""
    if target.startswith(("http://", "https://")):
        return target
    from mcp import StdioServerParameters

    argv = shlex.split(target)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable  # the same interpreter (and venv) as the harness
    return StdioServerParameters(command=argv[0], args=argv[1:])


class Connection:
    """One MCP client session, held open on its own event loop thread.

    The SDK's client is an async context manager whose task group must be entered and
    left in one task; a thread with its own loop lets the synchronous World call it.
    """

    def __init__(self, target: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
        self.target = target
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="mcp")
        self.thread.start()
        self.client: Any = None
        self._stop: asyncio.Event | None = None
        self._holder: asyncio.Future[None] | None = None
        self.closed = False
        try:
            self._run(self._open(), timeout_s)
        except BaseException:
            self.close()
            raise

    def _run(self, coro: Any, timeout_s: float) -> Any:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout_s)
        except FutureTimeout:
            future.cancel()
            raise TimeoutError(f"the MCP server did not answer within {timeout_s:g} s") from None

    async def _open(self) -> None:
        ready: asyncio.Future[None] = self.loop.create_future()
        self._stop = asyncio.Event()
        self._holder = asyncio.ensure_future(self._hold(ready))
        await ready

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        from mcp import Client

        try:
            async with Client(_server_params(self.target)) as client:
                self.client = client
                ready.set_result(None)
                assert self._stop is not None
                await self._stop.wait()
        except BaseException as e:
            if not ready.done():
                ready.set_exception(e)

    def call(self, name: str, fn: Callable[[Any], Any], timeout_s: float = CALL_TIMEOUT_S) -> Any:
        """Run ``fn(client)`` (a coroutine) on the session's loop; ServerGone if it died."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        if self.closed:
            raise ServerGone("the session is closed")
        try:
            return self._run(fn(self.client), timeout_s)
        except MCPError as e:
            if e.error.code == CONNECTION_CLOSED:
                raise ServerGone(e.error.message) from e
            raise
        except (ConnectionError, EOFError, OSError) as e:
            raise ServerGone(f"{type(e).__name__}: {e}") from e

    def close(self) -> None:
        """Leave the client context (stops a stdio server), then the loop. Idempotent."""
        if self.closed:
            return
        self.closed = True

        async def stop() -> None:
            if self._stop is not None:
                self._stop.set()
            if self._holder is not None:
                await asyncio.wait({self._holder}, timeout=CLOSE_TIMEOUT_S)

        if self.loop.is_running():
            try:
                self._run(stop(), CLOSE_TIMEOUT_S + 1)
            except Exception:  # a wedged server: the daemon thread dies with the process
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(CLOSE_TIMEOUT_S)


def discover(target: str) -> tuple[list[dict[str, Any]], str | None]:
    """The server's tools as OpenAI function schemas, and its instructions."""
    conn = Connection(target)
    try:
        listed = conn.call("tools/list", lambda c: c.list_tools())
        instructions = conn.client.instructions
    finally:
        conn.close()
    tools = []
    for t in listed.tools:
        schema = dict(t.input_schema or {"type": "object", "properties": {}})
        schema.pop("$schema", None)
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description or t.name,
                    "parameters": schema,
                },
            }
        )
    return tools, instructions


def _content_to_result(result: Any) -> ToolResult:
    """An MCP CallToolResult as a ToolResult: text joined, images as PNG bytes."""
    texts: list[str] = []
    images: list[bytes] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(block.text)
        elif kind == "image":
            images.append(_png(base64.b64decode(block.data), block.mime_type))
        else:  # audio, resources: described, not dropped silently
            texts.append(json.dumps(block.model_dump(mode="json", exclude_none=True))[:2000])
    if not texts and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content))
    text = "\n".join(texts) or ("(an image)" if images else "(no output)")
    if result.is_error:
        return ToolResult(text=f"Error: {text}", is_error=True)
    return ToolResult(text=text, images=tuple(images))


def _png(data: bytes, mime: str) -> bytes:
    if mime == "image/png":
        return data
    from PIL import Image

    from agentharness.core.messages import png_bytes

    return png_bytes(Image.open(io.BytesIO(data)))


class McpWorld(SchemaWorld):
    """The server's tools; one session per episode, closed by :meth:`close`."""

    target: str
    has_own_submit: bool

    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        self.conn: Connection | None = None
        self.failure: str | None = None
        try:
            self.conn = Connection(self.target)
            # Closed even if the episode is dropped without ending (a leak guard).
            weakref.finalize(self, self.conn.close)
        except BaseException as e:
            self.failure = f"could not start the MCP server ({type(e).__name__}: {e})"

    def call_schema_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        if name == "submit" and not self.has_own_submit:
            return ToolResult(text="Answer recorded.")
        if self.conn is None or self.failure is not None:
            return self._gone(self.failure or "the MCP session is closed")
        try:
            result = self.conn.call(name, lambda c: c.call_tool(name, arguments))
        except ServerGone as e:
            self.failure = f"the MCP server stopped ({e})"
            return self._gone(self.failure)
        except TimeoutError as e:
            raise ToolError(f"tool '{name}' got no answer from the MCP server: {e}") from e
        except Exception as e:  # a protocol-level error for this call: the agent may retry
            raise ToolError(f"the MCP server refused '{name}': {e}") from e
        return _content_to_result(result)

    def _gone(self, why: str) -> ToolResult:
        return ToolResult(
            text=f"Error: {why}; the episode cannot continue.",
            is_error=True,
            done=True,
            end_reason="env_error",
        )

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


class McpConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    level: str = Field("medium", description="the difficulty name passed to generate()")


class _Generator:
    def __init__(self, module: Any, instructions: str | None) -> None:
        self.module = module
        self.instructions = instructions

    def generate(self, config: McpConfig, seed: int) -> Problem:
        make = getattr(self.module, "generate", None)
        if make is None:
            text = self.instructions or "Complete the task with the server's tools, then submit."
            return Problem(public={"prompt": text}, hidden={})
        out = make(seed, config.level)
        public = {"prompt": str(out["prompt"]), **out.get("public", {})}
        return Problem(public=public, hidden=dict(out.get("hidden", {})))

    def prompt(self, instance: Instance) -> list[Message]:
        about = f"\n\n{self.instructions}" if self.instructions else ""
        return [
            system(
                "You have the tools of an MCP server. Call them to do the task; when done, "
                f"call `submit` with your final answer.{about}"
            ),
            user(instance.public["prompt"]),
        ]


class _Reward:
    def __init__(self, fn: Callable[..., Any], ref: str) -> None:
        self.fn, self.ref = fn, ref

    def __call__(self, instance: Instance, world: World, trajectory: Trajectory) -> Reward:
        try:
            out = self.fn(instance, world, trajectory)
        except Exception as e:  # outside code: its bug scores 0 and says so
            return Reward.zero(f"reward callable {self.ref} raised {type(e).__name__}: {e}")
        if isinstance(out, Reward):
            return out
        value = min(1.0, max(0.0, float(out)))
        return Reward(total=value, success=value >= 1.0, explanation=f"{self.ref} = {value:g}")


def _load_callable(ref: str) -> tuple[Any, Callable[..., Any]]:
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise UnknownTaskError(
            f"'{ref}' is not a reward callable; write it as module:function after '#'"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise UnknownTaskError(f"cannot import the reward module '{module_name}': {e}") from e
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise UnknownTaskError(f"{module_name} has no callable '{attr}' to use as the reward")
    return module, fn


def load(rest: str) -> TaskSpec:
    """The task for ``mcp:<command or URL>#<module:function>``."""
    target, sep, ref = rest.rpartition("#")
    if not sep or not target.strip():
        raise UnknownTaskError(
            f"'mcp:{rest}' needs a server and a reward callable: "
            "mcp:<command or URL>#<module:function>, e.g. 'mcp:python -m my_server#my_rewards:score'"
        )
    target = target.strip()
    module, fn = _load_callable(ref.strip())
    try:
        tools, instructions = discover(target)
    except Exception as e:
        raise UnknownTaskError(
            f"could not list the tools of MCP server '{target}' ({type(e).__name__}: {e}); "
            "check the command or URL"
        ) from e
    own_submit = any(t["function"]["name"] == "submit" for t in tools)
    declared = tuple(
        {**t, "final": True} if t["function"]["name"] == "submit" else t for t in tools
    ) + (() if own_submit else (SUBMIT,))
    world = type(
        "McpWorld_" + "".join(ch if ch.isalnum() else "_" for ch in target)[:40],
        (McpWorld,),
        {"target": target, "has_own_submit": own_submit, "schema_tools": declared},
    )
    names = tuple(getattr(module, "DIFFICULTIES", ("medium",)))
    expert: Callable[[Instance], ExpertPolicy] | None = getattr(module, "expert", None)
    server = target if len(target) < 60 else target[:57] + "..."
    return TaskSpec(
        name="mcp_" + "".join(ch if ch.isalnum() else "_" for ch in target.lower())[:40],
        version=ADAPTER_VERSION,
        modality="text",
        description=f"MCP server {server} ({len(tools)} tools), scored by {ref.strip()}",
        config_model=McpConfig,
        difficulties={name: {"level": name} for name in names},
        generator=_Generator(module, instructions),
        world=world,
        interaction=Interaction(Budgets(max_turns=20, max_tool_calls=40)),
        reward=_Reward(fn, ref.strip()),
        expert=expert,
        tags=("mcp", "text"),
        address=f"mcp:{rest}",
    )
