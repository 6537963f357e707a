"""A small OpenAI-compatible chat server that answers with a scripted policy.

For tests and benchmarks of the ``openai`` agent over real HTTP with the real SDK:
it speaks HTTP/1.1 with keep-alive on a raw asyncio socket server, so it can also
misbehave on purpose — inject latency, answer with 500/429, stall past the client's
timeout, or drop the connection without a response.

    with ScriptedOpenAIServer(policy=cycle_tools_policy()) as server:
        agent = OpenAIAgent("scripted", base_url=server.base_url)
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentharness.agents.scripted import sample_from_schema

# A policy maps a chat-completions request body to the assistant message to return.
ServerPolicy = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass
class Faults:
    """Fractions of requests that fail, each drawn independently from a seeded RNG."""

    error_rate: float = 0.0  # HTTP 500 (half of them 429)
    timeout_rate: float = 0.0  # no answer for ``stall_s`` (longer than the client timeout)
    drop_rate: float = 0.0  # close the connection without a response
    stall_s: float = 5.0
    seed: int = 0


def cycle_tools_policy(
    turns: int = 3, text_every: int = 2, final_text: str = "I am done."
) -> ServerPolicy:
    """Calls the request's tools in turn with schema-sampled arguments, then stops.

    Every ``text_every``-th call is written as ``<tool_call>`` text instead of a native
    call, so both paths of the client are exercised.
    """

    def policy(body: dict[str, Any]) -> dict[str, Any]:
        tools = body.get("tools") or []
        t = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        if not tools or t >= turns:
            return {"role": "assistant", "content": final_text}
        fn = tools[t % len(tools)]["function"]
        args = sample_from_schema(random.Random(t), fn.get("parameters", {}))
        if text_every and (t + 1) % text_every == 0:
            call = json.dumps({"name": fn["name"], "arguments": args})
            return {
                "role": "assistant",
                "content": f"Let me use a tool.\n<tool_call>{call}</tool_call>",
            }
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{t}",
                    "type": "function",
                    "function": {"name": fn["name"], "arguments": json.dumps(args)},
                }
            ],
        }

    return policy


@dataclass
class ScriptedOpenAIServer:
    policy: ServerPolicy = field(default_factory=cycle_tools_policy)
    latency_s: float = 0.0
    faults: Faults = field(default_factory=Faults)
    host: str = "127.0.0.1"
    port: int = 0
    keep_requests: int = 1000

    def __post_init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.stats = {"ok": 0, "error": 0, "stalled": 0, "dropped": 0}
        self._rng = random.Random(self.faults.seed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._connections: set[asyncio.Task[Any]] = set()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    # -- lifecycle: async (same loop) or in a background thread ----------------------
    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port, backlog=4096)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    def __enter__(self) -> ScriptedOpenAIServer:
        def serve() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self.start())
            self._ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, daemon=True, name="scripted-openai-server")
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        loop = self._loop
        if loop is None:
            return
        asyncio.run_coroutine_threadsafe(self.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        loop.close()

    # -- HTTP -------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                method, path, body = request
                keep_open = await self._respond(writer, method, path, body)
                if not keep_open:
                    break
        except (
            ConnectionError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            ValueError,
        ):
            pass
        except asyncio.CancelledError:  # server shutting down: end quietly
            pass
        finally:
            writer.close()
            if task is not None:
                self._connections.discard(task)

    async def _respond(
        self, writer: asyncio.StreamWriter, method: str, path: str, body: bytes
    ) -> bool:
        path = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and path == "/v1/models":
            await _write_json(
                writer, 200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]}
            )
            return True
        if method != "POST" or path != "/v1/chat/completions":
            await _write_json(writer, 404, {"error": {"message": f"no route {method} {path}"}})
            return True
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError:
            await _write_json(writer, 400, {"error": {"message": "body is not JSON"}})
            return True
        if len(self.requests) < self.keep_requests:
            self.requests.append(payload)
        if self.latency_s:
            await asyncio.sleep(self.latency_s)
        f = self.faults
        roll = self._rng.random()
        if roll < f.drop_rate:
            self.stats["dropped"] += 1
            return False  # close without a response
        roll -= f.drop_rate
        if roll < f.timeout_rate:
            self.stats["stalled"] += 1
            await asyncio.sleep(f.stall_s)
            return False
        roll -= f.timeout_rate
        if roll < f.error_rate:
            self.stats["error"] += 1
            status = 429 if self._rng.random() < 0.5 else 500
            await _write_json(
                writer, status, {"error": {"message": "injected failure", "type": "server_error"}}
            )
            return True
        message = self.policy(payload)
        self.stats["ok"] += 1
        # ~4 bytes a token: cheap, so the server is not what a benchmark measures.
        prompt_tokens = max(1, len(body) // 4)
        completion_tokens = max(1, len(orjson.dumps(message)) // 4)
        response = {
            "id": f"chatcmpl-{self.stats['ok']}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": payload.get("model", "scripted"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        await _write_json(writer, 200, response)
        return True


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, bytes] | None:
    head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
    if not head:
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    body = await reader.readexactly(length) if length else b""
    return method, path, body


async def _write_json(writer: asyncio.StreamWriter, status: int, obj: Any) -> None:
    data = orjson.dumps(obj)
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests"}.get(
        status, "Error"
    )
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\nConnection: keep-alive\r\n\r\n"
    )
    writer.write(head.encode() + data)
    await writer.drain()


def main() -> None:
    """Serve ``cycle_tools_policy`` until interrupted: ``python -m agentharness.testing.openai_server``."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every answer")
    parser.add_argument("--turns", type=int, default=3, help="tool-calling turns before a final text")
    parser.add_argument("--error-rate", type=float, default=0.0)
    args = parser.parse_args()
    server = ScriptedOpenAIServer(
        policy=cycle_tools_policy(turns=args.turns),
        latency_s=args.latency,
        faults=Faults(error_rate=args.error_rate),
        port=args.port,
    )

    async def serve() -> None:
        await server.start()
        print(f"serving {server.base_url}", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
