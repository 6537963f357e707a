"""A real MCP server for the mcp: source tests, written with the official SDK.

    python mcp_server.py                 # stdio
    python mcp_server.py http PORT       # streamable HTTP on 127.0.0.1:PORT/mcp

``crash`` kills the process mid-episode; ``lookup`` of an unknown key is a tool error.
"""

from __future__ import annotations

import io
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image

server = MCPServer(
    "calculator",
    instructions="A calculator. Use `add` to add numbers; `submit` the final result.",
    log_level="ERROR",
)
TABLE = {"pi": "3.14159", "e": "2.71828"}


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def lookup(key: str) -> str:
    """Look up a named constant (pi or e)."""
    if key not in TABLE:
        raise ToolError(f"no constant named {key!r}; known: {', '.join(TABLE)}")
    return TABLE[key]


@server.tool()
def swatch(red: int, green: int, blue: int) -> Image:
    """A 4x4 image of one colour."""
    from PIL import Image as PILImage

    buf = io.BytesIO()
    PILImage.new("RGB", (4, 4), (red, green, blue)).save(buf, format="PNG")
    return Image(data=buf.getvalue(), format="png")


@server.tool()
def pid() -> int:
    """This server's process id (for tests)."""
    return os.getpid()


@server.tool()
def crash() -> str:
    """Stop the server process at once (for tests)."""
    os._exit(3)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
