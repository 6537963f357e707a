"""A minimal HTTP/1.1 client for plain-``http://`` model servers on the hot path.

The openai agent spends most of its per-turn CPU on HTTP when it talks to a local
inference server (vLLM, SGLang) over plain HTTP. aiohttp costs ~130 us of CPU per request
here; this client, ~30 us (bench/throughput.py): it keeps one asyncio protocol per
connection, writes a pre-built request head, and parses only what a JSON API answer
needs (status, Content-Length or chunked body, Connection: close). Anything else — TLS,
proxies — goes through aiohttp (see :mod:`agentharness.agents.openai_agent`).

Errors are the ones aiohttp would give the agent's retry logic: :class:`OSError`
subclasses for refused, reset or dropped connections, :class:`asyncio.TimeoutError`
when no complete answer arrives in time, :class:`BadResponse` for a malformed one.
"""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit

# Most bytes of headers accepted before the body starts (a server that sends more is broken).
MAX_HEAD = 64 * 1024
# Most bytes of body accepted: a chat completion is far smaller; more is a broken server,
# refused before it fills the memory.
MAX_BODY = 64 * 1024 * 1024


class BadResponse(OSError):
    """The server's bytes are not an HTTP/1.1 response this client can read."""


class _Connection(asyncio.Protocol):
    """One keep-alive connection; at most one request in flight on it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future[tuple[int, bytes, bool]] | None = None
        self.closed = False
        self.eof = False

    # -- asyncio.Protocol ------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._try_complete()

    def eof_received(self) -> bool:
        self.eof = True
        self._try_complete()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(exc or ConnectionResetError("the server closed the connection"))

    # -- requests -------------------------------------------------------------------------
    def send(self, data: bytes) -> asyncio.Future[tuple[int, bytes, bool]]:
        assert self.transport is not None and self.waiter is None
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        return self.waiter

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _fail(self, exc: BaseException) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def _try_complete(self) -> None:
        if self.waiter is None:
            if self.buffer or self.eof:
                self.close()  # bytes nobody asked for, or the server hung up: not reusable
            return
        try:
            parsed = _parse(self.buffer, self.eof)
        except BadResponse as e:
            self.close()
            self._fail(e)
            return
        if parsed is None:
            if self.eof:
                self._fail(ConnectionResetError("the server closed the connection mid-response"))
            return
        status, body, keep, used = parsed
        del self.buffer[:used]
        waiter, self.waiter = self.waiter, None
        if not keep or self.eof:
            self.closed = True
        if not waiter.done():
            waiter.set_result((status, body, keep))


def _parse(buf: bytearray, eof: bool) -> tuple[int, bytes, bool, int] | None:
    """(status, body, keep-alive, bytes used) of the first complete response, or None."""
    start = 0
    while True:  # skip interim 1xx responses
        end = buf.find(b"\r\n\r\n", start)
        if end < 0:
            if len(buf) - start > MAX_HEAD:
                raise BadResponse("the response headers are too long")
            return None
        lines = bytes(buf[start:end]).split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise BadResponse(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
        status = int(parts[1])
        if 100 <= status < 200:
            start = end + 4
            continue
        break
    length: int | None = None
    chunked = False
    keep = parts[0] == b"HTTP/1.1"
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        value = value.strip()
        if name == b"content-length":
            if not value.isdigit():
                raise BadResponse(f"bad Content-Length {value[:40]!r}")
            length = int(value)
            if length > MAX_BODY:
                raise BadResponse(f"the response body is too long ({length} bytes)")
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif name == b"connection":
            keep = value.lower() != b"close" and (keep or value.lower() == b"keep-alive")
    body_start = end + 4
    if chunked:
        return _parse_chunked(buf, body_start, status, keep)
    if length is not None:
        if len(buf) - body_start < length:
            return None
        return status, bytes(buf[body_start : body_start + length]), keep, body_start + length
    if status in (204, 304):
        return status, b"", keep, body_start
    if not eof:  # the body runs to the end of the connection
        if len(buf) - body_start > MAX_BODY:
            raise BadResponse(f"the response body is longer than {MAX_BODY} bytes")
        return None
    return status, bytes(buf[body_start:]), False, len(buf)


def _parse_chunked(
    buf: bytearray, pos: int, status: int, keep: bool
) -> tuple[int, bytes, bool, int] | None:
    body = bytearray()
    while True:
        line_end = buf.find(b"\r\n", pos)
        if line_end < 0:
            return None
        size_text = bytes(buf[pos:line_end]).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError as e:
            raise BadResponse(f"bad chunk size {size_text[:20]!r}") from e
        pos = line_end + 2
        if len(body) + size > MAX_BODY:
            raise BadResponse(f"the response body is longer than {MAX_BODY} bytes")
        if size == 0:
            trailer_end = buf.find(b"\r\n", pos)  # trailers end with an empty line
            while trailer_end >= 0 and trailer_end != pos:
                pos = trailer_end + 2
                trailer_end = buf.find(b"\r\n", pos)
            if trailer_end < 0:
                return None
            return status, bytes(body), keep, trailer_end + 2
        if len(buf) < pos + size + 2:
            return None
        body += buf[pos : pos + size]
        pos += size + 2


class Http11Pool:
    """Keep-alive connections to one ``http://host:port``, for POSTs of JSON bodies."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"Http11Pool serves plain http:// URLs, got {url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        netloc = self.host if parts.port in (None, 80) else f"{self.host}:{parts.port}"
        if ":" in self.host:  # IPv6 literal
            netloc = f"[{self.host}]" + (f":{parts.port}" if parts.port not in (None, 80) else "")
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        fields = {"Host": netloc, "Accept": "application/json", **headers}
        head = f"POST {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items())
        self._head = head.encode("latin-1") + b"Content-Length: "
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()

    async def post(self, body: bytes, timeout_s: float) -> tuple[int, bytes]:
        loop = asyncio.get_running_loop()
        conn = None
        while self._idle:
            candidate = self._idle.pop()
            if not candidate.closed:
                conn = candidate
                break
            candidate.close()
            self._open.discard(candidate)
        if conn is None:
            conn = await self._connect(timeout_s)
        waiter = conn.send(self._head + str(len(body)).encode() + b"\r\n\r\n" + body)
        timer = loop.call_later(timeout_s, _expire, conn, waiter, timeout_s)
        try:
            status, data, keep = await waiter
        except BaseException:
            conn.close()
            self._open.discard(conn)
            raise
        finally:
            timer.cancel()
        if keep and not conn.closed:
            self._idle.append(conn)
        else:
            conn.close()
            self._open.discard(conn)
        return status, data

    async def _connect(self, timeout_s: float) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(_Connection, self.host, self.port), timeout_s
            )
        except asyncio.TimeoutError:
            raise asyncio.TimeoutError(f"could not connect within {timeout_s:g} s") from None
        self._open.add(conn)
        return conn

    async def close(self) -> None:
        for conn in self._open:
            conn.close()
        self._open.clear()
        self._idle.clear()
        await asyncio.sleep(0)  # let the transports close


def _expire(
    conn: _Connection, waiter: asyncio.Future[tuple[int, bytes, bool]], timeout_s: float
) -> None:
    if not waiter.done():
        with contextlib.suppress(Exception):
            conn.close()
        waiter.set_exception(asyncio.TimeoutError(f"no complete answer within {timeout_s:g} s"))
