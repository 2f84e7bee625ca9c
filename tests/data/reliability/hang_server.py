"""An MCP stdio server that hangs (fault-injection fixture).

``python hang_server.py call``: answers the handshake and tools/list, then ``hang()`` never returns
(the whole process blocks, as a deadlocked server does); ``echo`` works until then.
``python hang_server.py init``: never answers anything (stuck before the handshake).
"""

import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("hangy")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
def hang() -> str:
    """Block forever."""
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    if sys.argv[1:] == ["init"]:
        while True:
            time.sleep(3600)
    server.run("stdio")
