"""A well-behaved MCP stdio server whose process can die mid-episode (fault-injection fixture).

Tools: ``echo(text)``, ``pid()`` (so a test can SIGKILL it from outside) and ``crash()`` (the process
exits at once, in the middle of answering the call).
"""

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("crashy")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def crash() -> str:
    """Exit the process without answering."""
    os._exit(3)


if __name__ == "__main__":
    server.run("stdio")
