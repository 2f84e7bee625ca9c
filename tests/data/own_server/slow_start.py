"""An MCP stdio server that logs when it starts and when it is ready to serve (fixture).

Appends ``start <pid> <time>`` to the file named by ``SLOW_START_LOG`` as the process starts, then
``ready <pid> <time>`` just before it serves, after ``SLOW_START_S`` seconds (default 0.5) that stand for
a heavy import. ``SLOW_START_HANG_FIRST=1``: the first start (an empty log) never answers the
handshake, the later ones serve, like a start that missed its limit on a busy machine.
"""

import os
import sys
import time
from pathlib import Path

log = Path(os.environ["SLOW_START_LOG"])
first = not log.exists() or not log.read_text().strip()
with log.open("a") as fh:
    fh.write(f"start {os.getpid()} {time.time()}\n")
if first and os.environ.get("SLOW_START_HANG_FIRST") == "1":
    time.sleep(3600)
time.sleep(float(os.environ.get("SLOW_START_S", "0.5")))

from mcp.server.mcpserver import MCPServer  # noqa: E402  (after the log: the import is part of the start)

server = MCPServer("slow")


@server.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


with log.open("a") as fh:
    fh.write(f"ready {os.getpid()} {time.time()}\n")
sys.stdout.flush()
server.run("stdio")
