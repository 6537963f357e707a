"""``bootcamp serve --workers N``: one port, N server processes, each episode pinned to one.

Every worker process runs the ordinary app (:func:`~agentharness.serve.app.create_app`),
so the HTTP contract is unchanged; they accept connections on one shared listening
socket, and each also listens on a private Unix socket. Episode ids start with the index
of the process that holds the episode (``w3.<token>``); a request that reaches another
process (clients with several pooled connections do that) is forwarded to the owner
over its Unix socket. Clients that keep one connection, as :class:`RemoteEnv` does, are
served by one process and pay nothing for the routing.

``POST /episodes`` opens the episode where it lands; when that process is full it asks
the next one, and only when all are full does the client get the 429. ``GET /health``
sums every process. Capacity is ``--max-sessions`` in all, split over the processes.
A worker that dies is restarted; the episodes it held are gone (404, as after a restart
of a single server). Every process checks the token and the size limit before it routes
or forwards anything (:mod:`agentharness.serve.guard`), and applies the same budget limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import re
import signal
import socket
import tempfile
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import orjson

from agentharness.serve.guard import Guard, ServeLimits, require_token_for

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Set on a forwarded request: how many processes it has visited (stops forwarding loops).
HOPS_HEADER = b"x-agentharness-hops"
_OWNER = re.compile(r"^/episodes/w(\d+)\.")
_HOP_BY_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"host", b"content-length"}


def worker_prefix(index: int) -> str:
    return f"w{index}."


def socket_path(directory: str, index: int) -> str:
    return os.path.join(directory, f"w{index}.sock")


class PinnedRouter:
    """ASGI middleware in each worker: serve own episodes, forward the others' to their owner."""

    def __init__(self, app: ASGIApp, index: int, workers: int, sockets_dir: str) -> None:
        self.app = app
        self.index = index
        self.workers = workers
        self.sockets_dir = sockets_dir
        self._sessions: dict[int, Any] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, method = scope["path"], scope["method"]
        hops = _hops(scope)
        owner = _OWNER.match(path)
        if owner is not None and hops == 0:
            target = int(owner.group(1))
            if target != self.index and target < self.workers:
                body = await _read_body(receive)
                await self._answer(send, await self._forward(target, scope, body, 1))
                return
        if path == "/health" and method == "GET" and hops == 0:
            await self._answer(send, await self._health(scope))
            return
        if path == "/episodes" and method == "POST" and hops < self.workers - 1:
            await self._open(scope, receive, send, hops)
            return
        await self.app(scope, receive, send)

    async def _open(self, scope: Scope, receive: Receive, send: Send, hops: int) -> None:
        """Open here; if this process is full, pass the request on to the next one."""
        body = await _read_body(receive)
        status, headers, chunks = await _call(self.app, scope, body)
        if status == 429:
            nxt = (self.index + 1) % self.workers
            await self._answer(send, await self._forward(nxt, scope, body, hops + 1))
            return
        await self._answer(send, (status, headers, b"".join(chunks)))

    async def _health(self, scope: Scope) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """This process's health with the sessions, capacity and expiries of all of them."""
        status, headers, chunks = await _call(self.app, scope, b"")
        if status != 200:
            return status, headers, b"".join(chunks)
        mine = orjson.loads(b"".join(chunks))
        others = await asyncio.gather(
            *(self._forward(i, scope, b"", 1) for i in range(self.workers) if i != self.index),
            return_exceptions=True,
        )
        up = 1
        for other in others:
            if isinstance(other, BaseException) or other[0] != 200:
                continue
            data = orjson.loads(other[2])
            up += 1
            for key in ("sessions", "capacity", "expired"):
                mine[key] += data.get(key, 0)
        mine["ok"] = bool(mine.get("ok")) and up == self.workers
        return 200, [(b"content-type", b"application/json")], orjson.dumps(mine)

    async def _forward(
        self, target: int, scope: Scope, body: bytes, hops: int
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        import aiohttp

        session = self._sessions.get(target)
        if session is None or session.closed:
            session = aiohttp.ClientSession(
                connector=aiohttp.UnixConnector(path=socket_path(self.sockets_dir, target)),
                timeout=aiohttp.ClientTimeout(total=None),
                skip_auto_headers=("User-Agent", "Content-Type"),
            )
            self._sessions[target] = session
        headers = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in scope["headers"]
            if k.lower() not in _HOP_BY_HOP and k.lower() != HOPS_HEADER
        ]
        headers.append((HOPS_HEADER.decode(), str(hops)))
        query = scope.get("query_string", b"").decode("latin-1")
        url = f"http://worker{scope['path']}" + (f"?{query}" if query else "")
        try:
            async with session.request(
                scope["method"], url, data=body, headers=headers, allow_redirects=False
            ) as response:
                data = await response.read()
                out = [
                    (k.lower().encode("latin-1"), v.encode("latin-1"))
                    for k, v in response.headers.items()
                    if k.lower().encode("latin-1") not in _HOP_BY_HOP
                ]
                return response.status, out, data
        except (aiohttp.ClientError, OSError) as e:
            detail = (
                f"the server process holding this episode (worker {target}) is not answering "
                f"({type(e).__name__}); it may have restarted, which loses its episodes. "
                "Open a new episode with POST /episodes."
            )
            body = orjson.dumps({"detail": detail, "error": "worker_unavailable"})
            return 503, [(b"content-type", b"application/json")], body

    @staticmethod
    async def _answer(send: Send, response: tuple[int, list[tuple[bytes, bytes]], bytes]) -> None:
        status, headers, body = response
        headers = [*headers, (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _hops(scope: Scope) -> int:
    for k, v in scope["headers"]:
        if k == HOPS_HEADER:
            with contextlib.suppress(ValueError):
                return int(v)
    return 0


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


async def _call(
    app: ASGIApp, scope: Scope, body: bytes
) -> tuple[int, list[tuple[bytes, bytes]], list[bytes]]:
    """Run the app on a buffered request and capture its response."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            await asyncio.Event().wait()  # like a client that keeps the connection open
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    status = 500
    headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []

    async def send(message: Message) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = message["status"]
            headers = [
                (k, v) for k, v in message.get("headers", []) if k.lower() != b"content-length"
            ]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, headers, chunks


# -- processes ---------------------------------------------------------------------------
def _worker_main(
    index: int,
    workers: int,
    listener: socket.socket,
    sockets_dir: str,
    max_sessions: int,
    ttl_s: float,
    log_level: str,
    token: str | None = None,
    limits: ServeLimits | None = None,
) -> None:
    import uvicorn

    from agentharness.serve.app import create_app

    limits = limits or ServeLimits()
    app = create_app(
        max_sessions=max_sessions,
        ttl_s=ttl_s,
        id_prefix=worker_prefix(index),
        token=token,
        limits=limits,
    )
    private = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = socket_path(sockets_dir, index)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    private.bind(path)
    router = PinnedRouter(app, index, workers, sockets_dir)
    # The router reads a body whole before forwarding it: the guard goes in front of it too.
    guarded = Guard(router, token=token, max_body_bytes=limits.max_body_bytes)
    config = uvicorn.Config(
        guarded,
        log_level=log_level,
        lifespan="on",
        backlog=4096,
        ws_max_size=limits.max_body_bytes,
    )
    uvicorn.Server(config).run(sockets=[listener, private])


def share_of(max_sessions: int, workers: int, index: int) -> int:
    """Process ``index``'s part of ``max_sessions`` (they add up to it; each holds at least 1)."""
    return max(1, max_sessions // workers + (1 if index < max_sessions % workers else 0))


class WorkerPool:
    """The worker processes behind one listening socket; restarts any that dies."""

    def __init__(
        self,
        host: str,
        port: int,
        workers: int,
        *,
        max_sessions: int = 256,
        ttl_s: float = 600.0,
        log_level: str = "warning",
        token: str | None = None,
        limits: ServeLimits | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError(f"--workers must be at least 1, got {workers}")
        require_token_for(host, token)
        self.token = token
        self.limits = limits or ServeLimits()
        self.workers = workers
        self.max_sessions = max_sessions
        self.ttl_s = ttl_s
        self.log_level = log_level
        self.listener = socket.create_server((host, port), backlog=4096, reuse_port=False)
        self.host, self.port = host, self.listener.getsockname()[1]
        self.sockets_dir = tempfile.mkdtemp(prefix="agentharness-serve-")
        # spawn, not fork: the parent may hold threads, and every worker imports what it needs.
        self._ctx = multiprocessing.get_context("spawn")
        self.processes: list[Any] = [None] * workers
        self.restarts = 0

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _start(self, index: int) -> None:
        process = self._ctx.Process(
            target=_worker_main,
            args=(
                index,
                self.workers,
                self.listener,
                self.sockets_dir,
                share_of(self.max_sessions, self.workers, index),
                self.ttl_s,
                self.log_level,
                self.token,
                self.limits,
            ),
            name=f"agentharness-serve-{index}",
            daemon=True,
        )
        process.start()
        self.processes[index] = process

    def start(self, timeout_s: float = 120.0) -> WorkerPool:
        """Start every worker and wait until each answers on its socket."""
        for i in range(self.workers):
            self._start(i)
        deadline = time.monotonic() + timeout_s
        for i in range(self.workers):
            path = socket_path(self.sockets_dir, i)
            while not _answers(path):
                if time.monotonic() > deadline or not self.processes[i].is_alive():
                    self.stop()
                    raise RuntimeError(f"server worker {i} did not start (see its log above)")
                time.sleep(0.05)
        return self

    def watch(self, should_stop: Callable[[], bool], poll_s: float = 0.5) -> None:
        """Restart dead workers until ``should_stop()``."""
        while not should_stop():
            for i, process in enumerate(self.processes):
                if process is not None and not process.is_alive() and not should_stop():
                    self.restarts += 1
                    self._start(i)
            time.sleep(poll_s)

    def stop(self) -> None:
        for process in self.processes:
            if process is not None and process.is_alive():
                process.terminate()
        for process in self.processes:
            if process is not None:
                process.join(10)
                if process.is_alive():
                    process.kill()
        self.listener.close()
        for i in range(self.workers):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(socket_path(self.sockets_dir, i))
        with contextlib.suppress(OSError):
            Path(self.sockets_dir).rmdir()

    def __enter__(self) -> WorkerPool:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


def _answers(path: str) -> bool:
    if not os.path.exists(path):
        return False
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as s:
        s.settimeout(1.0)
        s.connect(path)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: worker\r\nx-agentharness-hops: 1\r\n\r\n")
        return s.recv(12).startswith(b"HTTP/1.1 200")
    return False


def serve_workers(
    host: str,
    port: int,
    workers: int,
    *,
    max_sessions: int,
    ttl_s: float,
    log_level: str,
    token: str | None = None,
    limits: ServeLimits | None = None,
) -> None:
    """Run the pool in the foreground until SIGINT or SIGTERM."""
    stop = False

    def on_signal(signum: int, _frame: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    pool = WorkerPool(
        host,
        port,
        workers,
        max_sessions=max_sessions,
        ttl_s=ttl_s,
        log_level=log_level,
        token=token,
        limits=limits,
    ).start()
    try:
        pool.watch(lambda: stop)
    finally:
        pool.stop()
