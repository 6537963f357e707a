"""`bootcamp serve`: the HTTP environment server (registered in cli/main.py).

The endpoints are documented in :mod:`agentharness.serve.app`; the server itself needs the
``serve`` extra, imported only when the command runs so the rest of the CLI works without it.
"""

from __future__ import annotations

from typing import Annotated

import typer

from agentharness.cli.app import app, console, fail

# The defaults of agentharness.serve.guard, repeated so the CLI starts without importing it.
TOKEN_ENV = "AGENTHARNESS_SERVE_TOKEN"


def _size(text: str) -> int:
    """Bytes from ``4194304``, ``512k``, ``4M`` or ``1G`` (powers of 1024)."""
    text = text.strip()
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(text[-1:].lower(), 1)
    number = text[:-1] if scale > 1 else text
    try:
        value = int(float(number) * scale)
    except ValueError:
        raise typer.BadParameter(
            f"a size in bytes, e.g. 4194304, 512k or 4M; got {text!r}"
        ) from None
    if value < 1024:
        raise typer.BadParameter(f"at least 1k, got {text!r}")
    return value


@app.command("serve")
def serve_command(
    host: Annotated[
        str, typer.Option(help="interface to listen on (0.0.0.0 for other hosts)")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="TCP port (0 picks a free one)")
    ] = 8000,
    max_sessions: Annotated[
        int, typer.Option(help="most episodes held at once; more get 429 + Retry-After", min=1)
    ] = 256,
    ttl: Annotated[
        float, typer.Option(help="idle seconds after which an episode is dropped", min=0.001)
    ] = 600.0,
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "info",
    workers: Annotated[
        int,
        typer.Option(
            help="server processes on the one port; each episode stays in the one that opened it",
            min=1,
        ),
    ] = 1,
    token: Annotated[
        str | None,
        typer.Option(
            help=f"require this bearer token of every client (default: ${TOKEN_ENV}); "
            "needed on any host but loopback",
            show_default=False,
        ),
    ] = None,
    max_body: Annotated[
        str, typer.Option(help="largest request body or WebSocket message (bytes, or 512k, 4M)")
    ] = "4M",
    max_turns: Annotated[
        int, typer.Option(help="most assistant turns an episode may be given", min=1)
    ] = 500,
    max_tool_calls: Annotated[
        int, typer.Option(help="most tool calls an episode may be given", min=1)
    ] = 1000,
    max_wall_clock: Annotated[
        float | None,
        typer.Option(help="most seconds an episode may run (default: no limit)", min=0.001),
    ] = None,
) -> None:
    """Serve the tasks over HTTP so trainers in other processes or on other hosts step episodes.

    Clients use agentharness.serve.RemoteEnv, OpenEnv's clients (WebSocket /ws; HTTP /reset,
    /step, /state), or the JSON endpoints listed at /docs. With a token (--token or
    $AGENTHARNESS_SERVE_TOKEN; required on any host but loopback) every request but /health
    must send it as `Authorization: Bearer <token>`.
    """
    from agentharness.serve.guard import ServeLimits, require_token_for, token_from_env

    token = token_from_env(token)
    try:
        require_token_for(host, token)
        limits = ServeLimits(
            max_body_bytes=_size(max_body),
            max_turns=max_turns,
            max_tool_calls=max_tool_calls,
            max_wall_clock_s=max_wall_clock,
        )
    except (ValueError, typer.BadParameter) as e:
        raise fail(str(e)) from e
    try:
        from agentharness.serve.app import create_app  # names the extra when it is missing
    except ImportError as e:
        raise fail(str(e)) from e
    import uvicorn

    console.print(
        f"starting the environment server on {host}:{port} (max {max_sessions} episodes, "
        f"ttl {ttl:g} s{f', {workers} processes' if workers > 1 else ''}, "
        f"{'token required' if token else 'no token: loopback only'}); "
        "API docs at /docs once it runs"
    )
    if workers > 1:
        from agentharness.serve.workers import serve_workers

        try:
            serve_workers(
                host,
                port,
                workers,
                max_sessions=max_sessions,
                ttl_s=ttl,
                log_level=log_level,
                token=token,
                limits=limits,
            )
        except (OSError, RuntimeError) as e:
            raise fail(f"{type(e).__name__}: {e}") from e
        return
    uvicorn.run(
        create_app(max_sessions=max_sessions, ttl_s=ttl, token=token, limits=limits),
        host=host,
        port=port,
        log_level=log_level,
        ws_max_size=limits.max_body_bytes,
    )
