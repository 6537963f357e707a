"""The server is safe to expose: a token, body and message limits, and budget limits.

Over real HTTP (uvicorn on a free port), for the JSON endpoints, OpenEnv's HTTP and
WebSocket faces, and ``--workers`` processes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from openenv.core.generic_client import GenericEnvClient
from serve_helpers import ServerFactory
from typer.testing import CliRunner

from agentharness.core.task import Budgets
from agentharness.serve import RemoteAuthError, RemoteEnv, RemoteEnvError
from agentharness.serve.guard import (
    DISCARD_FACTOR,
    TOKEN_ENV,
    Guard,
    ServeLimits,
    authorized,
    is_loopback,
    require_token_for,
)
from agentharness.serve.workers import WorkerPool

TOKEN = "s3cret-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


def error(r: httpx.Response, status: int, code: str) -> str:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"detail", "error"} and body["error"] == code, body
    return str(body["detail"])


# -- the token ----------------------------------------------------------------------------
def test_without_the_token_only_health_and_docs_answer(serve: ServerFactory) -> None:
    server = serve(max_sessions=4, token=TOKEN)
    with httpx.Client(base_url=server.base_url, timeout=60) as http:
        assert http.get("/health").status_code == 200
        assert http.get("/openapi.json").status_code == 200
        for method, path, body in [
            ("GET", "/tasks", None),
            ("POST", "/episodes", {"task": "guess"}),
            ("POST", "/reset", {"task": "guess"}),
            ("GET", "/episodes/x", None),
        ]:
            r = http.request(method, path, json=body)
            detail = error(r, 401, "unauthorized")
            assert "no token was sent" in detail and TOKEN_ENV in detail
            assert r.headers["www-authenticate"] == "Bearer"
        r = http.get("/tasks", headers={"Authorization": "Bearer wrong"})
        assert "does not match" in error(r, 401, "unauthorized")
        assert len(server.app.state.sessions) == 0
        assert http.get("/tasks", headers=BEARER).status_code == 200
        assert http.post("/episodes", json={"task": "guess"}, headers=BEARER).status_code == 201


def test_remote_env_sends_the_token_from_an_argument_or_the_environment(
    serve: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve(max_sessions=4, token=TOKEN)
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(RemoteAuthError, match="requires a token"):
        RemoteEnv(server.base_url, "guess").reset(seed=1)
    with RemoteEnv(server.base_url, "guess", difficulty="easy", token=TOKEN) as env:
        with env.reset(seed=1) as ep:
            ep.step("no tool call")
            assert ep.state().turns == 1
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with httpx.Client(timeout=60) as shared:  # a caller's own client gets the header too
        env = RemoteEnv(server.base_url, "guess", difficulty="easy", http=shared)
        with env.reset(seed=2) as ep:
            assert ep.step("hello").messages


def test_openenv_websocket_needs_the_token_which_a_url_can_carry(serve: ServerFactory) -> None:
    server = serve(max_sessions=4, token=TOKEN)
    with pytest.raises(ConnectionError):
        with GenericEnvClient(base_url=server.base_url).sync() as env:
            env.reset(task="guess", seed=1)
    # OpenEnv's client sends no headers, but a URL's user info becomes HTTP Basic auth.
    url = server.base_url.replace("http://", f"http://agent:{TOKEN}@")
    with GenericEnvClient(base_url=url).sync() as env:
        result = env.reset(task="guess", seed=1, difficulty="easy")
        assert result.observation["messages"]
    assert len(server.app.state.sessions) == 0


def test_token_checks() -> None:
    basic = b"Basic " + __import__("base64").b64encode(f"user:{TOKEN}".encode())
    assert authorized([(b"authorization", f"Bearer {TOKEN}".encode())], TOKEN)
    assert authorized([(b"Authorization", basic)], TOKEN)
    assert not authorized([(b"authorization", b"Bearer " + TOKEN.encode() + b"x")], TOKEN)
    assert not authorized([(b"authorization", b"Basic !!!")], TOKEN)
    assert not authorized([], TOKEN)
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "127.1.2.3"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.5", "example.org"))
    require_token_for("127.0.0.1", None)
    with pytest.raises(
        ValueError, match=f"refusing to listen on 0.0.0.0 without a token.*{TOKEN_ENV}"
    ):
        require_token_for("0.0.0.0", None)
    require_token_for("0.0.0.0", TOKEN)


# -- sizes --------------------------------------------------------------------------------
def test_a_body_over_the_limit_is_413_before_the_app_sees_it(serve: ServerFactory) -> None:
    server = serve(max_sessions=4, limits=ServeLimits(max_body_bytes=64 * 1024))
    big = {"task": "guess", "knobs": {"x": "y" * 100_000}}
    with httpx.Client(base_url=server.base_url, timeout=60) as http:
        detail = error(http.post("/episodes", json=big), 413, "too_large")
        assert "at most 65536 bytes" in detail and "--max-body" in detail

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            yield b'{"task": "guess", "knobs": {"x": "'
            for _ in range(20):
                yield b"y" * 10_000
            yield b'"}}'

        error(http.post("/episodes", content=chunks()), 413, "too_large")
        r = http.post("/episodes", json={"task": "guess", "difficulty": "easy"})
        assert r.status_code == 201, r.text
        step = {"turn": "z" * 70_000}
        error(http.post(f"/episodes/{r.json()['episode_id']}/step", json=step), 413, "too_large")
        small_chunks = iter([b'{"task": "guess", ', b'"difficulty": "easy"}'])
        json_type = {"Content-Type": "application/json"}
        r = http.post("/episodes", content=small_chunks, headers=json_type)
        assert r.status_code == 201, r.text


def test_a_websocket_message_over_the_limit_is_refused(serve: ServerFactory) -> None:
    server = serve(max_sessions=4, limits=ServeLimits(max_body_bytes=32 * 1024))
    with GenericEnvClient(base_url=server.base_url).sync() as env:
        env.reset(task="guess", seed=1, difficulty="easy")
        with pytest.raises(Exception, match=r"1009|too big|MESSAGE_TOO_LARGE"):
            env.step({"message": "x" * 40_000})


# -- budgets ------------------------------------------------------------------------------
def test_budgets_above_the_limits_are_422_and_the_rest_are_clamped(serve: ServerFactory) -> None:
    limits = ServeLimits(max_turns=20, max_tool_calls=30, max_wall_clock_s=60.0)
    server = serve(max_sessions=8, limits=limits)
    with httpx.Client(base_url=server.base_url, timeout=60) as http:
        r = http.post("/episodes", json={"task": "guess", "budgets": {"max_turns": 1_000_000}})
        detail = error(r, 422, "over_limit")
        assert "budgets.max_turns 1000000 is above this server's limit of 20" in detail
        r = http.post("/episodes", json={"task": "guess", "budgets": {"wall_clock_s": 3600}})
        assert "wall_clock_s 3600" in error(r, 422, "over_limit")
        r = http.post("/reset", json={"task": "guess", "budgets": {"max_tool_calls": 31}})
        assert r.status_code == 422 and "limit of 30" in r.json()["detail"]
        # Within the limits: as asked; fields left out: clamped (the task's 30 turns -> 20).
        r = http.post("/episodes", json={"task": "guess", "budgets": {"max_turns": 5}})
        assert r.status_code == 201, r.text
        assert r.json()["budgets"]["max_turns"] == 5
        assert r.json()["budgets"]["wall_clock_s"] == 60.0
        budgets = http.post("/episodes", json={"task": "guess"}).json()["budgets"]
        assert budgets["max_turns"] == 20 and budgets["max_tool_calls"] == 30
        assert budgets["wall_clock_s"] == 60.0


def test_limits_clamp_the_task_s_own_budgets() -> None:
    limits = ServeLimits(max_turns=10, max_tool_calls=10)
    own = Budgets(max_turns=300, max_tool_calls=300, max_nudges=50)
    got = limits.budgets(None, own)
    assert (got.max_turns, got.max_tool_calls, got.max_nudges) == (10, 10, 10)
    assert limits.budgets(Budgets(max_turns=3), own).max_turns == 3
    with pytest.raises(ValueError, match="max_nudges 11"):
        limits.budgets(Budgets(max_nudges=11), own)


def _refusal_order(token: str | None, headers: list[tuple[bytes, bytes]], chunks: int) -> list[str]:
    """What a guard (limit 1500 bytes) did, in order, for a POST of ``chunks`` 1000-byte pieces."""
    events: list[str] = []
    sent = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        sent += 1
        events.append(f"read {sent}")
        return {"type": "http.request", "body": b"y" * 1000, "more_body": sent < chunks}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            events.append(f"reply {message['status']}")

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("a refused request must not reach the app")

    scope = {"type": "http", "method": "POST", "path": "/episodes", "headers": headers}
    asyncio.run(Guard(app, token=token, max_body_bytes=1500)(scope, receive, send))
    return events


def test_a_refusal_reads_the_body_first_so_the_client_gets_the_reply_not_a_reset() -> None:
    # Closing a socket with unread bytes makes the kernel send a reset that can overtake the
    # reply; the guard drops the body (up to DISCARD_FACTOR times the limit) before replying.
    declared = [(b"content-length", b"3000")]
    assert _refusal_order(None, declared, 3) == ["read 1", "read 2", "read 3", "reply 413"]
    chunked = _refusal_order(None, [], 5)  # no length: over the limit while counting
    assert chunked == ["read 1", "read 2", "read 3", "read 4", "read 5", "reply 413"]
    too_big = str(DISCARD_FACTOR * 1500 + 1).encode()  # a reset is cheaper than reading it
    assert _refusal_order(None, [(b"content-length", too_big)], 8) == ["reply 413"]
    endless = _refusal_order(None, [], 100)  # chunked and endless: stops at the cap
    reads_at_most = (1500 + DISCARD_FACTOR * 1500) // 1000 + 2
    assert endless[-1] == "reply 413" and len(endless) - 1 <= reads_at_most
    small = [(b"content-length", b"2000")]
    assert _refusal_order(TOKEN, small, 2) == ["read 1", "read 2", "reply 401"]


# -- workers and the command --------------------------------------------------------------
def test_worker_processes_enforce_the_token_and_the_limits() -> None:
    limits = ServeLimits(max_body_bytes=64 * 1024, max_turns=7)
    with pytest.raises(ValueError, match="without a token"):
        WorkerPool("0.0.0.0", 0, 2, limits=limits)
    with WorkerPool("127.0.0.1", 0, 2, max_sessions=4, token=TOKEN, limits=limits) as pool:
        with httpx.Client(base_url=pool.base_url, timeout=60) as http:
            assert http.get("/health").json()["capacity"] == 4
            error(http.post("/episodes", json={"task": "escape_room"}), 401, "unauthorized")
            # Requests are checked before they are forwarded: a foreign id, a huge body.
            r = http.post("/episodes/w1.x/step", json={"turn": "x" * 100_000}, headers=BEARER)
            error(r, 413, "too_large")
            error(http.get("/episodes/w1.x"), 401, "unauthorized")
            r = http.post(
                "/episodes",
                json={"task": "escape_room", "budgets": {"max_turns": 8}},
                headers=BEARER,
            )
            error(r, 422, "over_limit")
        env = RemoteEnv(pool.base_url, "escape_room", difficulty="easy", token=TOKEN)
        episodes = [env.reset(seed=s) for s in range(3)]
        assert {ep.budgets.max_turns for ep in episodes} == {7}
        assert {ep.id.split(".")[0] for ep in episodes} == {"w0", "w1"}
        for ep in episodes:  # each reached through either process
            assert httpx.get(f"{pool.base_url}/episodes/{ep.id}", headers=BEARER).status_code == 200
            ep.close()
        env.close()


def test_serve_command_needs_a_token_off_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    from agentharness.cli.main import app
    from agentharness.cli.serve_commands import TOKEN_ENV as CLI_TOKEN_ENV

    assert CLI_TOKEN_ENV == TOKEN_ENV
    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda asgi, **kw: seen.update(app=asgi, **kw))
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and not seen
    assert "refusing to listen on 0.0.0.0 without a token" in result.stderr
    assert TOKEN_ENV in result.stderr and len(result.stderr.strip().splitlines()) == 1

    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    args = ["serve", "--host", "0.0.0.0", "--max-body", "512k", "--max-turns", "9"]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    state = seen["app"].state
    assert state.token == TOKEN and seen["ws_max_size"] == 512 * 1024
    assert state.limits.max_body_bytes == 512 * 1024 and state.limits.max_turns == 9
    defaults = ServeLimits()
    seen.clear()
    result = CliRunner().invoke(app, ["serve", "--token", "other"], catch_exceptions=False)
    assert result.exit_code == 0 and seen["app"].state.token == "other"
    limits = seen["app"].state.limits
    assert (limits.max_body_bytes, limits.max_turns, limits.max_tool_calls) == (
        defaults.max_body_bytes,
        defaults.max_turns,
        defaults.max_tool_calls,
    )
    result = CliRunner().invoke(app, ["serve", "--max-body", "lots"])
    assert result.exit_code == 2 and "512k or 4M" in result.stderr


def test_remote_env_error_for_a_413_names_the_limit(serve: ServerFactory) -> None:
    server = serve(max_sessions=4, limits=ServeLimits(max_body_bytes=16 * 1024))
    with RemoteEnv(server.base_url, "guess", difficulty="easy") as env:
        ep = env.reset(seed=1)
        with pytest.raises(RemoteEnvError, match=r"413.*too large"):
            ep.step("w" * 20_000)
