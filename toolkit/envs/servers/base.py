"""What every domain server shares: the ``@tool`` marker, pagination, and errors that help a model recover.

A domain server is a class whose ``@tool`` methods are MCP tools: the SDK derives each input schema from
the method signature (pydantic ``Field`` descriptions included) and the description from the docstring.
Building the SDK's ``Tool`` objects (signature inspection, pydantic models) is the costly part, so it
happens once per class; each episode gets an ``MCPServer`` whose tools are those templates re-bound to
its own ``WorldState``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Annotated, Any, ClassVar

from mcp.server.caching import CacheHint
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from toolkit.envs.state import WorldState

__all__ = ["Cursor", "DomainServer", "Limit", "ToolError", "invalid", "not_found", "paginate", "tool"]

Limit = Annotated[int, Field(ge=1, le=50, description="Maximum number of results to return (1-50).")]
Cursor = Annotated[
    str | None,
    Field(description="Pagination cursor: pass the next_cursor of the previous page; omit for page 1."),
]


def tool(*, read_only: bool = False, destructive: bool = False, idempotent: bool | None = None) -> Callable:
    """Mark a method as an MCP tool with its annotations (readOnlyHint, destructiveHint, idempotentHint)."""

    def mark(fn: Callable) -> Callable:
        fn.__mcp_tool__ = ToolAnnotations(  # type: ignore[attr-defined]
            read_only_hint=read_only,
            destructive_hint=None if read_only else destructive,
            idempotent_hint=True if read_only else idempotent,
            open_world_hint=False,
        )
        return fn

    return mark


def not_found(kind: str, key: str, known: Iterable[str], hint: str = "") -> ToolError:
    """A not-found error naming the closest known ids or names, so the model can retry."""
    close = difflib.get_close_matches(str(key), [str(k) for k in known], n=3, cutoff=0.5)
    msg = f"{kind} '{key}' not found."
    if close:
        msg += " Did you mean: " + ", ".join(close) + "?"
    if hint:
        msg += " " + hint
    return ToolError(msg)


def invalid(message: str) -> ToolError:
    """An invalid-argument error (the argument was well typed but makes no sense here)."""
    return ToolError(f"Invalid argument: {message}")


def conflict(message: str) -> ToolError:
    """A conflict with the current state (already exists, wrong status for this action...)."""
    return ToolError(f"Conflict: {message}")


def paginate(items: Sequence[Any], limit: int, cursor: str | None) -> dict[str, Any]:
    """One page of ``items``: ``{"items", "total", "next_cursor"}`` (cursor = offset as a string)."""
    try:
        start = int(cursor) if cursor else 0
    except ValueError:
        raise invalid(
            f"cursor '{cursor}' is not one this tool returned; omit it to start at page 1"
        ) from None
    if start < 0 or start > len(items):
        raise invalid(f"cursor '{cursor}' is out of range (0..{len(items)})")
    end = start + limit
    return {
        "items": list(items[start:end]),
        "total": len(items),
        "next_cursor": str(end) if end < len(items) else None,
    }


def matches(text: str | None, query: str | None) -> bool:
    """Case-insensitive substring match; an empty query matches everything."""
    return not query or (text is not None and query.lower() in text.lower())


_TEMPLATES: dict[type, list[Tool]] = {}
# A server's tool list never changes, so clients may cache it (the SDK's response cache honours this).
STATIC_TOOL_LIST = {"tools/list": CacheHint(ttl_ms=24 * 3600 * 1000, scope="public")}


def _inline(method: Callable[..., dict[str, Any]]) -> Callable[..., Any]:
    """Run a tool inline on the event loop and answer compact one-line JSON.

    The SDK runs sync tools on a worker thread (a thread hop per call, the main cost in-process); ours
    are quick and touch only their episode's state, so they run as coroutines. The text block is one
    line of JSON (the SDK's default is indented), which costs the model fewer tokens. The call runs
    inside ``WorldState.atomic()``: a tool that raises (an error answer) leaves the world as it was.
    """
    server = method.__self__  # type: ignore[attr-defined]

    async def call(**kwargs: Any) -> CallToolResult:
        with server.db.atomic():
            result = method(**kwargs)
        return CallToolResult(
            content=[TextContent(type="text", text=json.dumps(result, ensure_ascii=False, default=str))],
            structured_content=result,
        )

    return call


class DomainServer:
    """Base class of the kit's MCP servers. Subclasses set ``name``/``description`` and add ``@tool`` methods."""

    name: ClassVar[str]
    description: ClassVar[str]

    def __init__(self, db: WorldState | None):
        self.db = db  # type: ignore[assignment]

    @classmethod
    def tool_names(cls) -> list[str]:
        return [t.name for t in cls.templates()]

    @classmethod
    def templates(cls) -> list[Tool]:
        """The SDK Tool objects for this class, built once (bound to a stateless instance)."""
        if cls not in _TEMPLATES:
            proto = cls(None)
            names = [n for n, v in vars(cls).items() if callable(v) and hasattr(v, "__mcp_tool__")]
            _TEMPLATES[cls] = [
                # No output schema: ours would only say "an object", and with one the client re-validates
                # every result with jsonschema. Results still carry structuredContent.
                Tool.from_function(
                    getattr(proto, n),
                    name=n,
                    annotations=getattr(cls, n).__mcp_tool__,
                    structured_output=False,
                )
                for n in names
            ]
        return _TEMPLATES[cls]

    def bound_tools(self, only: set[str] | None = None) -> list[Tool]:
        """This class's SDK tools, re-bound to this instance (and so to its world state)."""
        return [
            t.model_copy(update={"fn": _inline(getattr(self, t.name)), "is_async": True})
            for t in self.templates()
            if only is None or t.name in only
        ]

    def mcp_server(self, only: set[str] | None = None) -> MCPServer:
        """An MCPServer whose tools act on this instance's world state."""
        return MCPServer(
            self.name,
            instructions=self.description,
            tools=self.bound_tools(only),
            cache_hints=STATIC_TOOL_LIST,
        )

    # -- helpers shared by servers --------------------------------------------------------------
    def require(self, coll: str, key: str, kind: str, hint: str = "") -> dict[str, Any]:
        """The record or a not-found ToolError listing close ids."""
        rec = self.db.get(coll, key)
        if rec is None:
            raise not_found(kind, key, self.db.collection(coll), hint)
        return rec

    def next_id(self, coll: str, prefix: str, width: int = 3, start: int = 1) -> str:
        """The next free id like ``t-1041`` in a collection (deterministic)."""
        n = start + len(self.db.collection(coll))
        while f"{prefix}{n:0{width}d}" in self.db.collection(coll):
            n += 1
        return f"{prefix}{n:0{width}d}"
