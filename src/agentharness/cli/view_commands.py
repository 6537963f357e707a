"""`bootcamp view`: the local trajectory viewer (registered in cli/main.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentharness.cli.app import app, console, fail

DEFAULT_PORT = 8765  # `bootcamp report --html` links here unless told otherwise


@app.command("view")
def view_command(
    runs: Annotated[
        list[Path],
        typer.Argument(
            help="run directories, or loop directories holding runs", show_default=False
        ),
    ],
    host: Annotated[str, typer.Option(help="interface to listen on")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="TCP port (0 picks a free one)")
    ] = DEFAULT_PORT,
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="open the viewer in a web browser")
    ] = False,
) -> None:
    """Browse every episode of RUNS in a local web page: filter, read transcripts, compare runs."""
    from agentharness.view import ViewerApp, make_server

    app_ = ViewerApp.from_paths(runs, index=False)  # a RunDirError is one line (cli.app)
    try:
        server = make_server(app_, host, port)
    except OSError as e:
        raise fail(
            f"cannot listen on {host}:{port} ({e.strerror or e}); pick another --port"
        ) from e
    app_.index_in_background()  # a 10,000-episode log takes seconds to read; serve meanwhile
    address = f"http://{host}:{server.server_port}/"
    names = ", ".join(app_.runs)
    console.print(f"viewing {len(app_.runs)} run(s) ({names}) at {address} (Ctrl-C stops)")
    if open_browser:
        import webbrowser

        webbrowser.open(address)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
