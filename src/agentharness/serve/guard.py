"""What makes the environment server safe to expose: a token, size limits, budget limits.

* **Token.** With a token set, every request but ``GET /health`` and the API docs must carry
  it, as ``Authorization: Bearer <token>`` or as the password of HTTP Basic auth (what a
  ``http://user:<token>@host`` URL sends, so OpenEnv's WebSocket client, which takes no
  headers, can log in too). Others get 401 (a WebSocket is refused before it opens).
  ``bootcamp serve`` reads the token from ``--token`` or :data:`TOKEN_ENV` and refuses to
  listen on anything but a loopback address without one.
* **Size.** A request body over ``max_body_bytes`` is refused with 413 before the app sees
  it, and so is a WebSocket message over the same size (an error message; the server's own
  frame limit closes the connection beyond it).
* **Refusing cleanly.** Before a refusal (401, 413) the guard reads and discards the
  request's body, up to :data:`DISCARD_FACTOR` times ``max_body_bytes``: a socket closed
  with unread bytes in it makes the kernel send a reset, which can reach the client before
  the reply and leave it with "connection reset" instead of the reason. A body beyond that
  is not read; its sender may see the reset.
* **Budgets.** A client may choose an episode's budgets; :class:`ServeLimits` caps them. A
  budget asked for above a cap is a 422 that names the cap; the task's own budgets and the
  fields a client left out are clamped to the caps.

:class:`Guard` is plain ASGI middleware, so it stands in front of the app and, with
``--workers``, in front of the router that forwards requests between processes.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import os
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import orjson

from agentharness.core.task import Budgets

TOKEN_ENV = "AGENTHARNESS_SERVE_TOKEN"
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
# A refused request's body is read and dropped up to this many times the limit (see above).
DISCARD_FACTOR = 4
# Served without the token: liveness for load balancers and the (static) API docs.
OPEN_PATHS = frozenset({"/health", "/docs", "/docs/oauth2-redirect", "/openapi.json", "/redoc"})

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def token_from_env(token: str | None = None) -> str | None:
    """``token``, else :data:`TOKEN_ENV` from the environment, else ``None`` (empty is none)."""
    return token or os.environ.get(TOKEN_ENV) or None


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (``localhost``, 127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def require_token_for(host: str, token: str | None) -> None:
    """Refuse (``ValueError``, one line) to serve on a non-loopback ``host`` without a token."""
    if token is None and not is_loopback(host):
        raise ValueError(
            f"refusing to listen on {host} without a token: anyone who can reach it could open "
            f"and drive episodes. Set one with `export {TOKEN_ENV}=$(python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))')` (or --token) and give clients the same "
            f"{TOKEN_ENV}, or listen on 127.0.0.1"
        )


@dataclass(frozen=True)
class ServeLimits:
    """Server-side caps on what one client may ask for."""

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_turns: int = 500
    max_tool_calls: int = 1000
    max_nudges: int = 10
    max_format_errors: int = 20
    max_wall_clock_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_turns", "max_tool_calls"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_wall_clock_s is not None and not self.max_wall_clock_s > 0:
            raise ValueError(f"max_wall_clock_s must be positive, got {self.max_wall_clock_s}")

    def budgets(self, requested: Budgets | None, default: Budgets) -> Budgets:
        """The budgets an episode gets: ``requested`` (or the task's) within the caps.

        Raises:
            BudgetLimitError: ``requested`` sets a field above its cap.
        """
        caps: dict[str, float | None] = {
            "max_turns": self.max_turns,
            "max_tool_calls": self.max_tool_calls,
            "max_nudges": self.max_nudges,
            "max_format_errors": self.max_format_errors,
            "wall_clock_s": self.max_wall_clock_s,
        }
        if requested is not None:
            over = [
                f"budgets.{name} {getattr(requested, name)} is above this server's limit of {cap:g}"
                for name, cap in caps.items()
                if cap is not None
                and name in requested.model_fields_set
                and (getattr(requested, name) is None or getattr(requested, name) > cap)
            ]
            if over:
                raise BudgetLimitError(
                    f"{'; '.join(over)}. Ask for no more (or leave the field out to get the "
                    "task's own, within the limits); the server's operator sets the limits "
                    "with `bootcamp serve --max-turns/--max-tool-calls/--max-wall-clock`."
                )
        chosen = requested or default
        clamped: dict[str, Any] = {}
        for name, cap in caps.items():
            value = getattr(chosen, name)
            if cap is not None and (value is None or value > cap):
                clamped[name] = int(cap) if name != "wall_clock_s" else cap
        return chosen.model_copy(update=clamped) if clamped else chosen


class BudgetLimitError(ValueError):
    """A client asked for budgets above the server's caps (answered with 422)."""


def authorized(headers: list[tuple[bytes, bytes]], token: str) -> bool:
    """Whether the request's ``Authorization`` header carries ``token`` (Bearer or Basic)."""
    expected = token.encode()
    for name, value in headers:
        if name.lower() != b"authorization":
            continue
        scheme, _, credentials = value.partition(b" ")
        credentials = credentials.strip()
        if scheme.lower() == b"bearer":
            return hmac.compare_digest(credentials, expected)
        if scheme.lower() == b"basic":
            try:
                decoded = base64.b64decode(credentials, validate=True)
            except (binascii.Error, ValueError):
                return False
            return hmac.compare_digest(decoded.partition(b":")[2], expected)
    return False


class Guard:
    """ASGI middleware: the token check and the body-size limit, before anything else runs."""

    def __init__(self, app: ASGIApp, *, token: str | None, max_body_bytes: int) -> None:
        self.app = app
        self.token = token
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if self.token is not None and scope["path"] not in OPEN_PATHS:
            if not authorized(scope.get("headers", []), self.token):
                if kind == "websocket":
                    # Refused before the handshake completes: the client sees HTTP 403.
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await self._refuse(scope, receive, send, 401, "unauthorized", _unauthorized(scope))
                return
        if kind == "http":
            length = _content_length(scope)
            if length is not None and length > self.max_body_bytes:
                await self._refuse(scope, receive, send, 413, "too_large", self._too_large(length))
                return
            if length is None and scope.get("method") not in ("GET", "HEAD", "DELETE", "OPTIONS"):
                # No length given (chunked): read up to the limit before the app sees it.
                body, over = await _read_limited(receive, self.max_body_bytes)
                if over:
                    detail = self._too_large(None)
                    await self._refuse(scope, receive, send, 413, "too_large", detail)
                    return
                receive = _replay(body, receive)
        await self.app(scope, receive, send)

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, status: int, error: str, detail: str
    ) -> None:
        """Reply ``status`` after discarding what fits of the body (see "Refusing cleanly")."""
        cap = DISCARD_FACTOR * self.max_body_bytes
        length = _content_length(scope)
        if length is None or length <= cap:
            await _discard(receive, cap)
        await _reply(send, status, error, detail, bearer=status == 401)

    def _too_large(self, length: int | None) -> str:
        size = f"{length} bytes" if length is not None else "more than that"
        return (
            f"the request body is too large ({size}; this server takes at most "
            f"{self.max_body_bytes} bytes). A step holds one assistant turn; the server's "
            "operator sets the limit with `bootcamp serve --max-body`."
        )


def _unauthorized(scope: Scope) -> str:
    has = any(k.lower() == b"authorization" for k, _ in scope.get("headers", []))
    what = "the token sent does not match" if has else "no token was sent"
    return (
        f"this server requires a token and {what}: send `Authorization: Bearer <token>` "
        f"(RemoteEnv(..., token=...) or {TOKEN_ENV} in the client's environment does it)"
    )


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _read_limited(receive: Receive, limit: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"", True
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks), False


async def _discard(receive: Receive, cap: int) -> None:
    """Read and drop the request body until it ends, the client leaves, or ``cap`` bytes."""
    size = 0
    while size <= cap:
        message = await receive()
        if message["type"] != "http.request":
            return
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            return


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _reply(send: Send, status: int, error: str, detail: str, *, bearer: bool = False) -> None:
    body = orjson.dumps({"detail": detail, "error": error})
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if bearer:
        headers.append((b"www-authenticate", b"Bearer"))
    if status == 413:
        headers.append((b"connection", b"close"))  # the unread body must not be taken for a request
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
