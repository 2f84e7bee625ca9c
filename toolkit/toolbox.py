"""The interface between the agent loop and an episode's MCP servers.

An episode is one isolated world plus MCP client sessions to the servers a task enables. The agent
loop, the gold replay and the synthesis validator only ever talk to a ``Toolbox``; how the calls
travel (in-process MCP session, stdio, HTTP, an external server) is the environment's business.

``toolkit.envs.open_episode(task)`` returns an async context manager yielding a Toolbox.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass
class ToolSpec:
    """A tool as MCP lists it, plus the server it lives on."""

    name: str
    description: str
    input_schema: dict[str, Any]
    server: str = ""
    annotations: dict[str, Any] = field(default_factory=dict)  # readOnlyHint, destructiveHint, ...

    def to_openai(self, *, compact: bool = False) -> dict[str, Any]:
        """The OpenAI / Hugging Face chat-template tool format; ``compact`` strips schema annotations
        the model does not need (``toolkit.agent.schema.compact_schema``)."""
        parameters = self.input_schema
        if compact:
            from toolkit.agent.schema import compact_schema

            parameters = compact_schema(parameters)
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": parameters},
        }


@dataclass
class ToolResult:
    """What a tool call returned: ``ok`` False for MCP tool errors (isError) and transport failures.

    ``error_kind`` says why a failed call failed when it was not the tool's own error: "timeout" (no
    answer in time), "transport" (the server died or spoke broken JSON-RPC) or "unavailable" (the
    server failed earlier in the episode and is no longer called). None for successes and tool errors.
    """

    ok: bool
    text: str
    structured: Any = None
    error_kind: str | None = None


@runtime_checkable
class Toolbox(Protocol):
    async def list_tools(self) -> list[ToolSpec]: ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult: ...

    def state_diff(self) -> dict[str, Any]:
        """Changes to the world since the episode started (format in toolkit.records)."""
        ...

    async def aclose(self) -> None: ...
