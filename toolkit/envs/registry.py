"""All MCP servers of the kit by name: the domain servers over the seeded world, plus BFCL's when installed.

``tool_specs()`` needs no episode (synthesis and ``mcp-rl envs list`` use it); ``build_server()`` makes an
``MCPServer`` bound to one episode's state.
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from toolkit.aio import run_sync
from toolkit.envs.domains import DOMAINS
from toolkit.envs.servers import CORE_SERVER_CLASSES
from toolkit.envs.servers.base import DomainServer
from toolkit.envs.state import WorldState
from toolkit.toolbox import ToolSpec

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from toolkit.records import Task


def domain_server(domain: str) -> type[DomainServer]:
    """The DomainServer class named ``domain`` that ``toolkit/domains/<domain>/server.py`` defines."""
    module = importlib.import_module(f"toolkit.domains.{domain}.server")  # a registry loading its members
    (cls,) = [
        c
        for c in vars(module).values()
        if isinstance(c, type) and issubclass(c, DomainServer) and c.__module__ == module.__name__
        if c.name == domain
    ]
    return cls


# The core servers first, then the domains' in DOMAINS order (toolkit/envs/domains.py).
SERVER_CLASSES: list[type[DomainServer]] = [*CORE_SERVER_CLASSES, *map(domain_server, DOMAINS)]
DOMAIN_SERVERS: dict[str, type[DomainServer]] = {cls.name: cls for cls in SERVER_CLASSES}


@cache
def bfcl_module() -> ModuleType | None:
    """``toolkit.envs.bfcl`` when it imports (bfcl-eval installed), else None."""
    try:
        import toolkit.envs.bfcl as bfcl
    except ImportError:
        return None
    return bfcl


def bfcl_server_names() -> list[str]:
    mod = bfcl_module()
    return list(getattr(mod, "SERVER_NAMES", [])) if mod is not None else []


def server_names() -> list[str]:
    """Every server the kit can build: domain servers first, then BFCL's (if installed)."""
    return list(DOMAIN_SERVERS) + bfcl_server_names()


def _unknown(name: str) -> KeyError:
    import difflib

    close = difflib.get_close_matches(name, server_names(), n=3)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    return KeyError(f"unknown server '{name}'.{hint} Known: {', '.join(server_names())}")


def _annotations(ann: Any) -> dict[str, Any]:
    return ann.model_dump(by_alias=True, exclude_none=True) if ann is not None else {}


@cache
def server_of_tool() -> dict[str, str]:
    """Tool name -> server name for the domain servers."""
    return {t.name: t.server for name in DOMAIN_SERVERS for t in _domain_specs(name)}


@cache
def _domain_specs(name: str) -> tuple[ToolSpec, ...]:
    return tuple(
        ToolSpec(
            name=t.name,
            description=t.description,
            input_schema=t.parameters,
            server=name,
            annotations=_annotations(t.annotations),
        )  # fmt: skip
        for t in DOMAIN_SERVERS[name].templates()
    )


@cache
def _bfcl_specs(name: str) -> tuple[ToolSpec, ...]:
    server = bfcl_module().build_server(name, None)  # type: ignore[union-attr]
    tools = run_sync(server.list_tools())
    return tuple(
        ToolSpec(
            name=t.name,
            description=t.description or "",
            input_schema=t.input_schema,
            server=name,
            annotations=_annotations(t.annotations),
        )  # fmt: skip
        for t in tools
    )


def tool_specs(servers: list[str] | None = None) -> list[ToolSpec]:
    """The tools of the given servers (default: all), as ToolSpecs. Needs no episode."""
    out: list[ToolSpec] = []
    for name in servers if servers is not None else server_names():
        if name in DOMAIN_SERVERS:
            out.extend(_domain_specs(name))
        elif name in bfcl_server_names():
            out.extend(_bfcl_specs(name))
        else:
            raise _unknown(name)
    return out


# Idle (DomainServer, MCPServer) pairs per (server, exposed tools): building an MCPServer costs about a
# millisecond, so episodes borrow one, point it at their own state, and give it back when they close.
_POOL: dict[tuple[str, frozenset[str] | None], list[tuple[DomainServer, MCPServer]]] = {}
_POOL_MAX_KEYS = 1024


def _exposed(name: str, task: Task | None) -> frozenset[str] | None:
    if task is None:
        return None
    owner = server_of_tool()
    return frozenset(t for t in task.tools if owner.get(t) == name)


def acquire_server(name: str, state: WorldState, task: Task | None = None) -> tuple[MCPServer, Any]:
    """A pooled domain MCPServer bound to ``state``, and the function that returns it to the pool."""
    key = (name, _exposed(name, task))
    idle = _POOL.get(key)
    if idle:
        inst, server = idle.pop()
    else:
        if len(_POOL) >= _POOL_MAX_KEYS:
            _POOL.clear()
        inst = DOMAIN_SERVERS[name](None)
        server = inst.mcp_server(set(key[1]) if key[1] is not None else None)
    inst.db = state

    def release() -> None:
        inst.db = None  # type: ignore[assignment]
        _POOL.setdefault(key, []).append((inst, server))

    return server, release


def domain_specs(name: str, task: Task | None = None) -> list[ToolSpec]:
    """The ToolSpecs a domain server lists for a task (static per class, so computed once)."""
    exposed = _exposed(name, task)
    return [t for t in _domain_specs(name) if exposed is None or t.name in exposed]


def build_server(name: str, state: WorldState | dict | None, task: Task | None = None) -> MCPServer:
    """An MCPServer for ``name`` bound to one episode's ``state`` (a WorldState, or a world dict to wrap).

    With a task, only the task's tools of this server are exposed.
    """
    only = set(task.tools) if task is not None else None
    if name in DOMAIN_SERVERS:
        if state is None:
            raise ValueError(f"server '{name}' needs a world state (WorldState.from_seed(seed))")
        if not isinstance(state, WorldState):
            state = WorldState(state)
        return DOMAIN_SERVERS[name](state).mcp_server(only)
    if name in bfcl_server_names():
        return bfcl_module().build_server(name, task)  # type: ignore[union-attr]
    raise _unknown(name)
