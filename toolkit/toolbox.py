"""The interface between the agent loop and an episode's MCP servers.

An episode is one isolated world plus MCP client sessions to the servers a task enables. The agent
loop, the gold replay and the synthesis validator only ever talk to a ``Toolbox``; how the calls
travel (in-process MCP session, stdio, HTTP, an external server) is the environment's business.

``toolkit.envs.open_episode(task)`` returns an async context manager yielding a Toolbox.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

_MAPS_OF_SCHEMAS = ("properties", "patternProperties", "$defs", "definitions")


def compact_schema(schema: Any) -> Any:
    """The same JSON schema with less to read: no ``title`` annotations, ``Optional[X]``'s
    ``anyOf: [X, {"type": "null"}]`` written as X, no ``"default": null``.

    Pydantic-generated schemas (the MCP SDK's FastMCP tools) spend many of their tokens on these (the
    cpu-demo prompts: 786 -> 660 tokens on average), and on a small model every prompt token costs
    prefill on every turn. Only what the model reads is
    compacted: arguments are still validated against the server's full schema. An optional argument
    stays optional (it is not in ``required``), so leaving it out means null as before."""
    if isinstance(schema, list):
        return [compact_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value is None:
            continue
        if key in _MAPS_OF_SCHEMAS and isinstance(value, dict):
            out[key] = {name: compact_schema(sub) for name, sub in value.items()}  # names kept
        else:
            out[key] = compact_schema(value)
    options = out.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1 and len(options) == 2 and isinstance(kept[0], dict):
            del out["anyOf"]
            out = {**kept[0], **out}
    return out


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
        the model does not need (``compact_schema`` below)."""
        parameters = compact_schema(self.input_schema) if compact else self.input_schema
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


def strip_enums(schema: Any) -> Any:
    """The same JSON schema without its ``enum`` lists: the model must find the allowed values another
    way (PROVE strips them from 30% of its schemas; ``toolkit.synth.prove_mix``)."""
    if isinstance(schema, list):
        return [strip_enums(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    return {k: strip_enums(v) for k, v in schema.items() if k != "enum"}
