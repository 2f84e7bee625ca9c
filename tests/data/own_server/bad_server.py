"""An MCP stdio server that misbehaves in the ways `mcp-rl synth-own --server` must survive (fixture).

``python bad_server.py``: ``list_items`` works, ``get_item`` answers an error for every name,
``dump_log`` returns a 300 KB output and ``get_report`` never returns. Every start appends this
process's id to the file named by ``BAD_SERVER_PIDS`` (the test checks none is left running).
``python bad_server.py init``: never answers the handshake.
"""

import json
import os
import sys
import time

# the process id first: on a loaded machine importing the MCP SDK can outlast a short start limit,
# and the test must still find (and check the death of) every process it started
if __name__ == "__main__":
    with open(os.environ["BAD_SERVER_PIDS"], "a") as fh:
        fh.write(f"{os.getpid()}\n")

from mcp.server.mcpserver import MCPServer  # noqa: E402

server = MCPServer("bad")


@server.tool()
def list_items() -> str:
    """List the items."""
    return json.dumps({"items": [{"name": "alpha", "size": 3}, {"name": "beta", "size": 5}]})


@server.tool()
def get_item(name: str) -> str:
    """Get one item by name."""
    raise ValueError(f"item {name!r} is broken")


@server.tool()
def dump_log() -> str:
    """Read the whole log."""
    return "x" * 300_000


@server.tool()
def get_report() -> str:
    """Get the report (never returns)."""
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    if sys.argv[1:] == ["init"]:
        time.sleep(3600)
    server.run("stdio")
