"""One isolated episode: a world state, MCP client sessions to the enabled servers, a Toolbox over them.

Every call goes through an MCP ``Client`` session (the SDK's in-process transport for the kit's own
servers, stdio or streamable HTTP for external ones), never through the Python functions directly.
Tool-level problems (unknown tool, bad arguments, MCP tool errors, timeouts, a dead server) come back
as ``ToolResult(ok=False, text=...)`` so the agent loop can show them to the model and go on.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
import os
import weakref
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Literal

import anyio
from mcp import Client
from mcp.client import CacheConfig, InMemoryResponseCacheStore
from mcp.shared.exceptions import MCPError as McpError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolkit.envs import recipe, registry
from toolkit.envs.state import WorldState, base_world
from toolkit.toolbox import ToolResult, ToolSpec

if TYPE_CHECKING:
    from toolkit.envs.external import ExternalServer
    from toolkit.records import Task

Transport = Literal["inprocess", "jsonrpc"]
DEFAULT_TIMEOUT = 30.0
_PYDANTIC_URL = "For further information visit https://errors.pydantic.dev"
_LIST_CACHE = InMemoryResponseCacheStore()  # tools/list results of the kit's own servers, shared by episodes

# The SDK logs every tool error at INFO; the model sees them as results, so keep the console quiet.
logging.getLogger("mcp.server.mcpserver.server").setLevel(logging.WARNING)

# Stdio servers starting at once (process start + handshake), per event loop: one per CPU. Starting a
# Python or node server is CPU-bound for seconds, and 64 episodes starting theirs together on 2 cores
# made most of them miss the handshake limit (issue 51). Episodes wait for a slot before their clock runs.
MAX_STARTS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
# Tries for a server start that missed the handshake limit (a busy machine); other failures are final.
START_ATTEMPTS = 2
_START_SLOTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def _start_slots() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    if loop not in _START_SLOTS:
        _START_SLOTS[loop] = asyncio.Semaphore(max(1, MAX_STARTS))
    return _START_SLOTS[loop]


class ExternalServerError(ConnectionError, RuntimeError):
    """An external server could not be started or reached when the episode opened (also a RuntimeError,
    which this was before)."""


class ServerStartTimeout(ExternalServerError):
    """An external server gave no answer to the handshake within its startup limit."""


def _leaf(exc: BaseException | None) -> BaseException | None:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _leaf_message(exc: BaseException) -> str:
    leaf = _leaf(exc)
    if isinstance(leaf, McpError) and leaf.error.code == REQUEST_TIMEOUT:
        return f"no answer to the handshake ({leaf.error.message})"
    return f"{type(leaf).__name__}: {leaf}"


def _result_text(result: Any) -> str:
    parts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    text = "\n".join(parts)
    if result.is_error and _PYDANTIC_URL in text:  # argument errors: drop the docs links, keep the message
        text = "\n".join(line for line in text.splitlines() if _PYDANTIC_URL not in line)
    return text


class Episode:
    """The Toolbox of one episode (see ``toolkit.toolbox.Toolbox``)."""

    def __init__(self, state: WorldState | None, allowed: set[str] | None, timeout: float):
        self.state = state
        self.timeout = timeout
        self._allowed = allowed
        self._clients: dict[str, Client] = {}
        self._external: dict[str, float] = {}  # servers in another process -> their startup limit (s)
        self._spawned: set[str] = set()  # external servers whose process this episode starts
        self._route: dict[str, str] = {}  # tool name -> server name
        self._specs: list[ToolSpec] = []
        self._stack = AsyncExitStack()
        self._dead: dict[str, str] = {}  # external server -> why it stopped being called
        self._holders: anyio.abc.TaskGroup | None = None  # owns the external clients' sessions
        self._closing = anyio.Event()
        self.environment_error: str | None = None  # first external server failure of the episode

    @property
    def dead_servers(self) -> dict[str, str]:
        """External servers that failed during this episode (name -> reason); they fail fast."""
        return dict(self._dead)

    def _mark_dead(self, server: str, reason: str) -> None:
        self._dead.setdefault(server, reason)
        mark_dead = getattr(self._clients.get(server), "mark_dead", None)
        if mark_dead is not None:  # a reused process (external.SharedHandle) is restarted next episode
            mark_dead()
        if self.environment_error is None:
            self.environment_error = f"server '{server}' is unavailable: {reason}"

    async def _connect_external(self, name: str, client: Any, limit: float) -> None:
        """Enter an external server's client in a task of its own, the whole handshake bounded by timeout.

        The SDK's client opens task groups that must stay in the task that entered them, so a holder task
        keeps the session open until the episode closes; here only its readiness is awaited, which is
        what the timeout can bound. Any failure becomes one ``ConnectionError`` naming the server.
        """
        if self._holders is None:
            self._holders = await self._stack.enter_async_context(anyio.create_task_group())
            self._stack.callback(self._closing.set)  # runs before the task group waits for its holders
        settled = anyio.Event()  # set once the session is open, or the attempt ended
        scope = anyio.CancelScope()
        state: dict[str, Any] = {}

        async def hold() -> None:
            try:
                with scope:
                    async with client:
                        state["open"] = True
                        settled.set()
                        await self._closing.wait()
            except Exception as exc:  # never let it reach the task group: it would cancel the episode
                state["error"] = exc
            finally:
                settled.set()

        spawns = name in self._spawned
        async with _start_slots() if spawns else nullcontext():  # the clock starts once the start may run
            self._holders.start_soon(hold)
            with anyio.move_on_after(limit):
                await settled.wait()
        if not state.get("open"):
            scope.cancel()  # stops the process (the SDK's shielded shutdown) if it is still starting
            error = state.get("error")
            if error is None or isinstance(_leaf(error), TimeoutError):
                message = f"external server '{name}': no answer to the handshake within {limit:g} s"
                raise ServerStartTimeout(message) from _leaf(error)
            raise ExternalServerError(f"external server '{name}': {_leaf_message(error)}") from _leaf(error)

    def _add_tools(self, server: str, specs: list[ToolSpec]) -> None:
        for spec in specs:
            if self._allowed is not None and spec.name not in self._allowed:
                continue
            if spec.name in self._route:
                other = self._route[spec.name]
                raise ValueError(f"tool name collision: '{spec.name}' is on servers '{other}' and '{server}'")
            self._route[spec.name] = server
            self._specs.append(spec)

    async def _connect(self, name: str, client: Client, specs: list[ToolSpec] | None = None) -> None:
        """Enter a client session; list its tools through the protocol unless ``specs`` are known already.

        The kit's own servers list the same static tools for every episode, so their specs come from
        the registry (a test checks they equal what the protocol lists); BFCL and external servers
        are listed here.
        """
        # Entering the client opens task groups that outlive this call, so it cannot sit inside a
        # cancel scope: the kit's own servers are entered here (their read timeout bounds the handshake),
        # external ones in a holder task whose readiness is awaited under the timeout.
        if name in self._external:
            await self._connect_external(name, client, self._external[name])
        else:
            await self._stack.enter_async_context(client)
        self._clients[name] = client
        if specs is not None:
            # Prime the session with the tool listing (it needs one before the first call). The kit's
            # servers mark their static lists cacheable, so after the first episode this is a hit in
            # the shared response cache rather than a round trip.
            with anyio.fail_after(self.timeout):
                await client.list_tools()
        else:
            specs = []
            with anyio.fail_after(self.timeout):
                cursor = None
                while True:
                    page = await client.list_tools(cursor=cursor)
                    for t in page.tools:
                        ann = (
                            t.annotations.model_dump(by_alias=True, exclude_none=True)
                            if t.annotations
                            else {}
                        )
                        specs.append(ToolSpec(t.name, t.description or "", t.input_schema, name, ann))
                    cursor = page.next_cursor
                    if not cursor:
                        break
        self._add_tools(name, specs)

    async def list_tools(self) -> list[ToolSpec]:
        return list(self._specs)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        server = self._route.get(name)
        if server is None:
            close = difflib.get_close_matches(name, list(self._route), n=3)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            return ToolResult(
                False, f"Unknown tool '{name}'.{hint} Available tools: {', '.join(sorted(self._route))}"
            )
        if not isinstance(arguments, dict):
            return ToolResult(
                False, f"Arguments for '{name}' must be a JSON object, got {type(arguments).__name__}."
            )
        if server in self._dead:
            return ToolResult(
                False, f"server '{server}' is unavailable: {self._dead[server]}", error_kind="unavailable"
            )
        timeout = f"timeout: '{name}' on server '{server}' did not answer within {self.timeout:g} s"
        client = self._clients[server]
        try:
            # Every client carries read_timeout_seconds (the SDK then answers REQUEST_TIMEOUT). An external
            # process can also stall before that clock starts (a blocked write), so it gets an outer bound.
            if server in self._external:
                with anyio.fail_after(self.timeout + 1):
                    result = await client.call_tool(name, arguments)
            else:
                result = await client.call_tool(name, arguments)
        except TimeoutError:
            return self._failed(server, timeout, "timeout")
        except McpError as exc:
            if exc.error.code == REQUEST_TIMEOUT:
                return self._failed(server, timeout, "timeout")
            text = f"Error calling '{name}' on server '{server}': {exc.error.message}"
            if exc.error.code == CONNECTION_CLOSED:
                return self._failed(server, text, "transport")
            return ToolResult(False, text)  # a JSON-RPC error answer: the server itself is fine
        except Exception as exc:  # protocol errors, a dead server: the episode goes on
            text = f"Error calling '{name}' on server '{server}': {type(exc).__name__}: {exc}"
            return self._failed(server, text, "transport")
        return ToolResult(not result.is_error, _result_text(result), result.structured_content)

    def _failed(self, server: str, text: str, kind: str) -> ToolResult:
        """A timeout or transport failure. An external server is then dead for the rest of the episode:
        a hung or crashed process would only make every later call wait out the timeout again."""
        if server in self._external:
            self._mark_dead(server, text)
        return ToolResult(False, text, error_kind=kind)

    def state_diff(self) -> dict[str, Any]:
        return self.state.diff() if self.state is not None else {}

    async def aclose(self) -> None:
        await self._stack.aclose()


@asynccontextmanager
async def open_episode(
    task: Task | None = None,
    *,
    servers: list[str] | None = None,
    seed: int | None = None,
    state: dict | WorldState | None = None,
    transport: Transport = "inprocess",
    external: list[ExternalServer] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> AsyncIterator[Episode]:
    """Open one isolated episode and yield its Toolbox.

    Args:
        task: if given, its servers, seed and tools (only ``task.tools`` are exposed).
        servers: servers to enable (default: the task's, else every domain server).
        seed: world seed (default: the task's, else 0). Ignored when ``state`` is given.
        state: start from this world snapshot (a ``{collection: {key: record}}`` dict; never mutated).
        transport: "inprocess" (the SDK's direct in-memory dispatcher, the fast path) or "jsonrpc"
            (in-memory streams with full JSON-RPC framing and the initialize handshake).
        external: external MCP servers (stdio command or URL) to add to the episode. Without it, a
            task whose servers are not the kit's (``Task.server_recipes``, ``toolkit.envs.recipe``)
            starts them itself.
        timeout: seconds allowed for every connect, list and call.
    """
    recipes = recipe.task_recipes(task) if task is not None and external is None else []
    if recipes:
        # A task whose servers are not the kit's (own, MCP-Atlas, npm, PyPI): start them fresh, each in
        # a seeded scratch folder of its own.
        own = task.metadata.get(recipe.OWN_KEY) or {}  # type: ignore[union-attr]
        async with recipe.scratch_servers(recipes) as ext:
            async with open_episode(task, servers=servers, external=ext, timeout=timeout) as episode:
                toolbox: Any = episode
                if own.get("probes"):  # an own server's writes, seen through its read calls
                    toolbox = recipe.ProbedToolbox(episode, own["probes"], own.get("read_tools", []))
                    await toolbox.start()
                yield toolbox
        return
    names = (
        servers
        if servers is not None
        else (list(task.servers) if task is not None else list(registry.DOMAIN_SERVERS))
    )
    if seed is None:
        seed = task.seed if task is not None else 0
    world = (
        state
        if isinstance(state, WorldState)
        else WorldState(state if state is not None else base_world(seed))
    )
    allowed = set(task.tools) if task is not None else None
    episode = Episode(world, allowed, timeout)
    # In-process: pin the modern protocol version, which skips the per-connection server/discover probe
    # (the server is ours, so the version is known); "jsonrpc" keeps the classic initialize handshake.
    mode = "legacy" if transport == "jsonrpc" else MODERN_PROTOCOL_VERSIONS[-1]
    try:
        for name in names:
            if name in [e.name for e in external or []]:
                continue
            client_args = {"mode": mode, "cache": None, "read_timeout_seconds": timeout}
            if name in registry.DOMAIN_SERVERS:
                server, release = registry.acquire_server(name, world, task)
                episode._stack.callback(release)  # runs after the client below has closed
                exposed = registry.domain_specs(name, task)
                target = f"mcp-rl-kit/{name}/" + ",".join(t.name for t in exposed)
                cache = CacheConfig(
                    store=_LIST_CACHE, partition="mcp-rl-kit", target_id=target, share_public=True
                )
                await episode._connect(name, Client(server, **{**client_args, "cache": cache}), exposed)
            else:
                await episode._connect(name, Client(registry.build_server(name, world, task), **client_args))
        for ext in external or []:
            episode._external[ext.name] = ext.startup_limit(timeout)
            if ext.command is not None and not ext.reuse:
                episode._spawned.add(ext.name)
            for attempt in range(1, START_ATTEMPTS + 1):
                try:
                    await episode._connect(ext.name, ext.client(timeout))
                    break
                except ServerStartTimeout as exc:
                    if attempt == START_ATTEMPTS:
                        raise ServerStartTimeout(f"{exc} ({attempt} tries)") from exc.__cause__
                except ExternalServerError:
                    raise
                except (OSError, TimeoutError, McpError) as exc:  # a missing command, or listing failed
                    raise ExternalServerError(f"external server '{ext.name}': {_leaf_message(exc)}") from exc
        yield episode
    finally:
        await episode.aclose()
