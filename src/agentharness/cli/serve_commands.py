"""`bootcamp serve`: the HTTP environment server (registered in cli/main.py).

The endpoints are documented in :mod:`agentharness.serve.app`; the server itself needs the
``serve`` extra, imported only when the command runs so the rest of the CLI works without it.
"""

from __future__ import annotations

from typing import Annotated

import typer

from agentharness.cli.app import app, console, fail


@app.command("serve")
def serve_command(
    host: Annotated[
        str, typer.Option(help="interface to listen on (0.0.0.0 for other hosts)")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port (0 picks a free one)")] = 8000,
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
) -> None:
    """Serve the tasks over HTTP so trainers in other processes or on other hosts step episodes.

    Clients use agentharness.serve.RemoteEnv, OpenEnv's clients (WebSocket /ws; HTTP /reset,
    /step, /state), or the JSON endpoints listed at /docs.
    """
    try:
        from agentharness.serve.app import create_app  # names the extra when it is missing
    except ImportError as e:
        raise fail(str(e)) from e
    import uvicorn

    console.print(
        f"starting the environment server on {host}:{port} (max {max_sessions} episodes, "
        f"ttl {ttl:g} s{f', {workers} processes' if workers > 1 else ''}); "
        "API docs at /docs once it runs"
    )
    if workers > 1:
        from agentharness.serve.workers import serve_workers

        try:
            serve_workers(
                host, port, workers, max_sessions=max_sessions, ttl_s=ttl, log_level=log_level
            )
        except (OSError, RuntimeError) as e:
            raise fail(f"{type(e).__name__}: {e}") from e
        return
    uvicorn.run(
        create_app(max_sessions=max_sessions, ttl_s=ttl),
        host=host,
        port=port,
        log_level=log_level,
    )
