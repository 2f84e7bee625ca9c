"""External MCP servers (any stdio command or streamable-HTTP URL) in the same episode / Toolbox abstraction.

    from toolkit.envs.external import ExternalServer
    memory = ExternalServer("memory", command=["node", ".cache/npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js"])
    async with open_episode(servers=["calculator"], external=[memory]) as tb: ...

A stdio server is started for each episode and stopped when it closes (the SDK's stdio client closes
stdin, waits, then kills the process tree): episodes never share a process, and a server that died is
simply started again by the next episode. Every request is bounded by the episode's timeout, so a hung
server gives ``ToolResult(ok=False, "timeout ...")``. Its state is its own business: ``state_diff`` only
covers the kit's world.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TextIO

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client


@cache
def _devnull() -> TextIO:
    return open(os.devnull, "w")  # noqa: SIM115  (one handle for the whole process)


@dataclass
class ExternalServer:
    """An MCP server the kit does not own: ``command`` (argv, spoken to over stdio) or ``url`` (HTTP)."""

    name: str
    command: list[str] | None = None
    url: str | None = None
    env: dict[str, str] = field(default_factory=dict)  # extra environment variables for a stdio server
    cwd: str | None = None
    show_stderr: bool = False  # the server's stderr goes to ours when True, else it is discarded

    def __post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"external server '{self.name}': give exactly one of command=[...] or url=...")
        if self.command is not None and not self.command:
            raise ValueError(f"external server '{self.name}': command is empty")

    def check(self) -> None:
        """Raise FileNotFoundError with a clear message when a stdio command cannot be found."""
        if (
            self.command is not None
            and shutil.which(self.command[0]) is None
            and not Path(self.command[0]).exists()
        ):
            raise FileNotFoundError(
                f"external server '{self.name}': command '{self.command[0]}' not found on PATH"
            )

    def client(self, timeout: float) -> Client:
        """A fresh MCP client for one episode (spawns the process when entered, for stdio)."""
        if self.url is not None:
            return Client(self.url, cache=None, read_timeout_seconds=timeout)
        self.check()
        params = StdioServerParameters(command=self.command[0], args=self.command[1:], env=self.env or None,
                                       cwd=self.cwd)  # fmt: skip
        errlog: TextIO = sys.stderr if self.show_stderr else _devnull()
        return Client(stdio_client(params, errlog=errlog), cache=None, read_timeout_seconds=timeout)
