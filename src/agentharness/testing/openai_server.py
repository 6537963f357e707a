"""A small OpenAI-compatible chat server that answers with a scripted policy.

For tests and benchmarks of the ``openai`` agent over real HTTP: it speaks HTTP/1.1 with
keep-alive on a raw asyncio socket server, so it can also misbehave on purpose (see
:class:`Faults`) — inject latency, answer with 500/429, stall past the client's timeout,
drop the connection with no response or half of one, answer 200 with a body that is not
a usable reply (truncated or invalid JSON, an HTML page, no message), or put an image
with malformed base64 data in a reply.

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
    """Fractions of requests that fail, one draw per request from a seeded RNG.

    The kinds are exclusive (their rates add up to the share of requests that misbehave).
    """

    error_rate: float = 0.0  # HTTP 500 (half of them 429)
    timeout_rate: float = 0.0  # no answer for ``stall_s`` (longer than the client timeout)
    drop_rate: float = 0.0  # close the connection without a response
    stall_s: float = 5.0
    seed: int = 0
    malformed_json_rate: float = 0.0  # 200 with truncated (half the reply) or invalid JSON
    html_rate: float = 0.0  # 200 with an HTML error page (a proxy in front of the server)
    missing_message_rate: float = 0.0  # 200 JSON with usage but no message (or no choices)
    bad_image_rate: float = 0.0  # a good reply plus an image part whose base64 is malformed
    truncate_rate: float = 0.0  # the head and half the body, then the connection closes
    slow_rate: float = 0.0  # a good reply after ``slow_s`` (shorter than the client timeout)
    slow_s: float = 0.5

    @classmethod
    def every_kind(
        cls, rate: float, *, stall_s: float = 5.0, slow_s: float = 0.5, seed: int = 0
    ) -> Faults:
        """``rate`` of the requests misbehave, spread evenly over every kind."""
        kinds = [name for name in cls.__dataclass_fields__ if name.endswith("_rate")]
        each = rate / len(kinds)
        return cls(**{k: each for k in kinds}, stall_s=stall_s, slow_s=slow_s, seed=seed)


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
        self.stats = {
            "ok": 0,
            "error": 0,
            "stalled": 0,
            "dropped": 0,
            "malformed_json": 0,
            "html": 0,
            "missing_message": 0,
            "bad_image": 0,
            "truncated": 0,
            "slow": 0,
        }
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
        roll -= f.error_rate
        fault = None
        for kind in ("malformed_json", "html", "missing_message", "bad_image", "truncate", "slow"):
            rate = getattr(f, f"{kind}_rate")
            if roll < rate:
                fault = kind
                break
            roll -= rate
        if fault == "slow":
            self.stats["slow"] += 1
            await asyncio.sleep(f.slow_s)
        message = self.policy(payload)
        # ~4 bytes a token: cheap, so the server is not what a benchmark measures.
        prompt_tokens = max(1, len(body) // 4)
        completion_tokens = max(1, len(orjson.dumps(message)) // 4)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if fault == "bad_image":
            self.stats["bad_image"] += 1
            text = message.get("content")
            parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            bad = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg"  # cut: bad padding
            parts.append({"type": "image_url", "image_url": {"url": bad}})
            message = {**message, "content": parts}
        response = {
            "id": f"chatcmpl-{sum(self.stats.values()) + 1}",
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
            "usage": usage,
        }
        if fault == "missing_message":
            self.stats["missing_message"] += 1
            choices = [] if self._rng.random() < 0.5 else [{"index": 0, "finish_reason": "stop"}]
            await _write_json(writer, 200, {**response, "choices": choices})
            return True
        if fault == "malformed_json":
            self.stats["malformed_json"] += 1
            data = orjson.dumps(response)
            raw = data[: len(data) // 2] if self._rng.random() < 0.5 else b"{'choices': [oops]}"
            await _write_raw(writer, 200, "application/json", raw)
            return True
        if fault == "html":
            self.stats["html"] += 1
            page = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
            await _write_raw(writer, 200, "text/html", page)
            return True
        if fault == "truncate":
            self.stats["truncated"] += 1
            data = orjson.dumps(response)
            head = (
                f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\nConnection: keep-alive\r\n\r\n"
            )
            writer.write(head.encode() + data[: len(data) // 2])
            await writer.drain()
            return False  # close mid-body
        if fault is None:
            self.stats["ok"] += 1
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
    await _write_raw(writer, status, "application/json", orjson.dumps(obj))


async def _write_raw(
    writer: asyncio.StreamWriter, status: int, content_type: str, data: bytes
) -> None:
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests"}.get(
        status, "Error"
    )
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n"
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
    parser.add_argument(
        "--turns", type=int, default=3, help="tool-calling turns before a final text"
    )
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
