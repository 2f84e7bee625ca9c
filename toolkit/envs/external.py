"""External MCP servers (any stdio command or streamable-HTTP URL) in the same episode / Toolbox abstraction.

    from toolkit.envs.external import ExternalServer
    memory = ExternalServer("memory", command=["node", ".cache/npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js"])
    async with open_episode(servers=["calculator"], external=[memory]) as tb: ...

By default a stdio server is started for each episode and stopped when it closes (the SDK's stdio client
closes stdin, waits, then kills the process tree): episodes never share a process, and a server that died
is simply started again by the next episode. Starting a process costs from a fraction of a second to
seconds, so for training ``reuse=True`` keeps one process (one MCP session, owned by a background thread
with its own event loop) for all episodes of this Python process; when it dies, the next episode starts a
new one (also after a timeout: a hung process is not kept). The connect and every request are bounded
by the episode's timeout: a server that never answers the handshake is one ``ConnectionError``, a hung
call gives ``ToolResult(ok=False, "timeout: ...")``, and after a timeout or a transport failure the
episode stops calling that server (``Episode.environment_error``). The server's state is its own business (with ``reuse=True``
episodes share it): ``state_diff`` only covers the kit's world.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import sys
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from toolkit.reaper import watch


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
    reuse: bool = False  # one process for all episodes (restarted when it died) instead of one per episode
    # Process start + MCP handshake limit. None: max(the episode's call timeout, 20 s), because starting
    # a Python or node server takes seconds on a busy CPU even when the per-call timeout is short.
    startup_timeout: float | None = None

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

    def startup_limit(self, call_timeout: float) -> float:
        """Seconds allowed for starting the server and its handshake."""
        return self.startup_timeout if self.startup_timeout is not None else max(call_timeout, 20.0)

    def client(self, timeout: float) -> Client | SharedHandle:
        """The MCP client for one episode: a fresh one (spawning the process when entered), or with
        ``reuse=True`` a handle on the shared session (restarted first if its process died)."""
        if self.reuse:
            return SharedHandle(self, timeout)
        return self.new_client(timeout)

    def new_client(self, timeout: float) -> Client:
        """A fresh MCP client (spawns the process when entered, for stdio)."""
        if self.url is not None:
            return Client(self.url, cache=None, read_timeout_seconds=timeout)
        self.check()
        # the run's marker: the SDK passes on only a few variables, and the watchdog finds the process by it
        params = StdioServerParameters(command=self.command[0], args=self.command[1:], env=self.env | watch(),
                                       cwd=self.cwd)  # fmt: skip
        errlog: TextIO = sys.stderr if self.show_stderr else _devnull()
        return Client(stdio_client(params, errlog=errlog), cache=None, read_timeout_seconds=timeout)


class SharedSession:
    """One long-lived MCP session to an external server, owned by a background thread's event loop.

    Episodes use it like a ``Client`` (``async with``, ``list_tools``, ``call_tool``); their calls are
    handed to the owner loop, so the SDK's task groups stay in the task that opened them.
    """

    def __init__(self, server: ExternalServer, timeout: float):
        self.server, self.timeout = server, timeout
        self.client: Client | None = None
        self.dead = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp-{server.name}", daemon=True)
        self._thread.start()
        self._stop: asyncio.Event | None = None
        ready = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        try:
            ready.result(server.startup_limit(timeout))  # the whole start: process and handshake
        except BaseException:
            self.close()
            raise

    async def _start(self) -> None:
        opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()

        async def hold() -> None:
            try:
                async with self.server.new_client(self.timeout) as client:
                    self.client = client
                    opened.set_result(None)
                    await self._stop.wait()
            except BaseException as exc:  # start failure, or the process went away
                if not opened.done():
                    opened.set_exception(exc)
            finally:
                self.client, self.dead = None, True

        self._holder = asyncio.create_task(hold())
        await opened

    async def _run(self, make: Callable[[Client], Awaitable[Any]]) -> Any:
        async def on_owner_loop() -> Any:
            if self.client is None:
                raise ConnectionError(f"external server '{self.server.name}' is not running")
            return await make(self.client)

        try:
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(on_owner_loop(), self._loop))
        except (ConnectionError, OSError):
            self.dead = True
            raise
        except MCPError as exc:
            if exc.error.code == CONNECTION_CLOSED:  # the process is gone: the next episode restarts it
                self.dead = True
            raise

    def close(self) -> None:
        """Stop the session (the SDK then stops the process) and the owner thread."""
        if self._stop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._stop.set)
            holder = getattr(self, "_holder", None)
            if holder is not None:
                if self.client is None:  # still in the handshake (a server that never answers): stop it
                    self._loop.call_soon_threadsafe(holder.cancel)
                done = asyncio.run_coroutine_threadsafe(asyncio.wait({holder}, timeout=10), self._loop)
                try:
                    done.result(15)
                except Exception:
                    pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)


class SharedHandle:
    """What an episode holds for a ``reuse=True`` server: enters by finding (or starting) the shared session."""

    def __init__(self, server: ExternalServer, timeout: float):
        self.server, self.timeout = server, timeout
        self.session: SharedSession | None = None

    async def __aenter__(self) -> SharedHandle:
        # Starting a process blocks, so it happens on a worker thread, not on the episode's event loop.
        self.session = await anyio.to_thread.run_sync(_shared_session, self.server, self.timeout)
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    def mark_dead(self) -> None:
        """The episode saw this server time out or fail: the next episode starts a new process."""
        if self.session is not None:
            self.session.dead = True

    async def list_tools(self, cursor: str | None = None) -> Any:
        return await self.session._run(lambda c: c.list_tools(cursor=cursor))  # type: ignore[union-attr]

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        return await self.session._run(lambda c: c.call_tool(name, arguments))  # type: ignore[union-attr]


# id(server) -> (server, session); the server is kept so its id cannot be reused by another object.
_SHARED: dict[int, tuple[ExternalServer, SharedSession]] = {}
_SHARED_LOCK = threading.Lock()


def _shared_session(server: ExternalServer, timeout: float) -> SharedSession:
    """The live shared session of ``server``, started (or restarted after a death) when needed."""
    with _SHARED_LOCK:
        entry = _SHARED.get(id(server))
        if entry is not None and entry[1].dead:
            entry[1].close()
            entry = None
        if entry is None:
            entry = _SHARED[id(server)] = (server, SharedSession(server, timeout))
        return entry[1]


def close_shared_sessions() -> None:
    """Stop every reused external server process (also done at interpreter exit)."""
    with _SHARED_LOCK:
        for _, session in _SHARED.values():
            session.close()
        _SHARED.clear()


atexit.register(close_shared_sessions)
