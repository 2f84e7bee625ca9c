"""BFCL multi-turn environments over MCP: bfcl-eval's 8 stateful API classes as MCP servers.

Each server wraps one fresh instance of a BFCL class (GorillaFileSystem, MathAPI, MessageAPI,
TwitterAPI, TicketAPI, TradingBot, TravelAPI, VehicleControlAPI), loaded from a task's
``initial_config`` exactly as bfcl-eval's executor loads it
(``_load_scenario(deepcopy(config[class]), long_context=...)``), and lists BFCL's own function docs
as the tools' input schemas. A call hands the arguments to the method unchanged (no coercion, as
bfcl-eval's ``eval`` does) and the result text is formatted as bfcl-eval formats it; so the model
sees what BFCL would show it, and BFCL's checker, which re-executes the calls, reaches the same state.
Errors (a raised exception, or the ``{"error": ...}`` dicts the classes return) come back as MCP tool
results with ``isError`` set, which the model sees.

BFCL call strings (``cd(folder='docs')``) are parsed with ``ast`` only (``parse_call``) and rendered
back from parsed values (``render_call``); model text is never evaluated here.
"""

from __future__ import annotations

import ast
import copy
import functools
import importlib
import inspect
import json
import keyword
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent

from toolkit.records import iter_json_objects

if TYPE_CHECKING:
    from toolkit.records import Task

# BFCL class -> MCP server name. The order is BFCL's own listing of the multi-turn classes.
BFCL_SERVERS: dict[str, str] = {
    "GorillaFileSystem": "bfcl_gorilla_file_system",
    "MathAPI": "bfcl_math_api",
    "MessageAPI": "bfcl_message_api",
    "TwitterAPI": "bfcl_twitter_api",
    "TicketAPI": "bfcl_ticket_api",
    "TradingBot": "bfcl_trading_bot",
    "TravelAPI": "bfcl_travel_api",
    "VehicleControlAPI": "bfcl_vehicle_control_api",
}
SERVER_NAMES: list[str] = list(BFCL_SERVERS.values())
CLASS_OF_SERVER: dict[str, str] = {server: cls for cls, server in BFCL_SERVERS.items()}

# bfcl-eval's JSON-ish type names -> JSON Schema types ("any" has no JSON Schema type).
_SCHEMA_TYPES = {"dict": "object", "float": "number", "tuple": "array", "list": "array", "bool": "boolean"}


class BFCLCallError(ValueError):
    """A BFCL call string or call that cannot be parsed or rendered safely."""


# ---------------------------------------------------------------------------------------------------
# bfcl-eval data: classes, function docs, signatures


def bfcl_data_dir() -> Path:
    """The ``data`` folder shipped inside the installed bfcl-eval package."""
    import bfcl_eval

    return Path(bfcl_eval.__file__).resolve().parent / "data"


@functools.cache
def bfcl_class(class_name: str) -> type:
    """The BFCL API class object (imported lazily; bfcl-eval maps class -> module)."""
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

    if class_name not in BFCL_SERVERS:
        raise KeyError(f"not a BFCL multi-turn class: {class_name!r} (known: {sorted(BFCL_SERVERS)})")
    return getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name]), class_name)


@functools.cache
def function_docs(class_name: str) -> tuple[dict[str, Any], ...]:
    """BFCL's function docs (name, description, parameters, response) for one class, in file order."""
    from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING

    bfcl_class(class_name)  # validates the name
    path = bfcl_data_dir() / "multi_turn_func_doc" / MULTI_TURN_FUNC_DOC_FILE_MAPPING[class_name]
    return tuple(doc for _, doc in iter_json_objects(path, what="BFCL function doc"))


@functools.cache
def tool_names(class_name: str) -> tuple[str, ...]:
    """The tool (method) names of one class, in BFCL's doc order."""
    return tuple(doc["name"] for doc in function_docs(class_name))


@functools.cache
def class_of_tool() -> dict[str, str]:
    """Tool name -> BFCL class over all 8 classes (BFCL's method names are unique across them)."""
    return {name: cls for cls in BFCL_SERVERS for name in tool_names(cls)}


@functools.cache
def method_parameters(tool_name: str) -> tuple[str, ...]:
    """Parameter names of a BFCL method in signature order (maps positional gold arguments)."""
    method = getattr(bfcl_class(class_of_tool()[tool_name]), tool_name)
    params = list(inspect.signature(method).parameters.values())[1:]  # drop self
    return tuple(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def to_json_schema(bfcl_schema: Mapping[str, Any]) -> dict[str, Any]:
    """BFCL's parameter schema as JSON Schema: ``dict`` -> ``object``, ``float`` -> ``number``,
    ``"None"`` defaults -> ``null``; descriptions, required lists, items and defaults kept."""
    out: dict[str, Any] = {}
    for key, value in bfcl_schema.items():
        if key == "type":
            if value != "any":
                out["type"] = _SCHEMA_TYPES.get(value, value)
        elif key == "properties":
            out["properties"] = {name: to_json_schema(sub) for name, sub in value.items()}
        elif key == "items":
            out["items"] = to_json_schema(value)
        elif key == "default":
            out["default"] = None if value == "None" else value
        else:
            out[key] = value
    if out.get("type") == "object":
        out.setdefault("properties", {})
    return out


@functools.cache
def _validator(tool_name: str) -> Any:
    from toolkit.envs.schema import import_jsonschema

    jsonschema = import_jsonschema()
    doc = next(d for d in function_docs(class_of_tool()[tool_name]) if d["name"] == tool_name)
    return jsonschema.Draft202012Validator(to_json_schema(doc["parameters"]))


def schema_problem(tool_name: str, arguments: Mapping[str, Any]) -> str | None:
    """Why ``arguments`` do not fit the tool's BFCL schema (JSON Schema check), or None when they fit.
    BFCL itself validates nothing; a few ground truths break their own docs (a string ticket id)."""
    error = next(iter(_validator(tool_name).iter_errors(dict(arguments))), None)
    return None if error is None else f"{'.'.join(map(str, error.path)) or 'arguments'}: {error.message}"


def initial_config(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The ``initial_config`` of a task's ``metadata["bfcl"]``: stored as JSON text, because BFCL's
    classes depend on key order (the file system's root is the first key of ``root``, ``ls`` lists in
    insertion order) and the kit's JSONL files sort dict keys; a dict is accepted too."""
    value = meta.get("initial_config")
    if isinstance(value, str):
        return json.loads(value)
    return dict(value or {})


def new_instance(
    class_name: str, initial_config: Mapping[str, Any] | None, long_context: bool = False
) -> Any:
    """A fresh BFCL instance, initialised as bfcl-eval's executor does it (stateless classes are not
    loaded; others get a deep copy of their part of ``initial_config``)."""
    from bfcl_eval.constants.executable_backend_config import STATELESS_CLASSES

    instance = bfcl_class(class_name)()
    if class_name not in STATELESS_CLASSES:
        config = (initial_config or {}).get(class_name, {})
        instance._load_scenario(copy.deepcopy(config), long_context=long_context)
    return instance


# ---------------------------------------------------------------------------------------------------
# Executing a call the way bfcl-eval does (minus eval)


def call_method(instance: Any, name: str, arguments: Mapping[str, Any]) -> tuple[str, bool, Any]:
    """Run ``instance.name(**arguments)``; return (text, is_error, structured).

    The text is what bfcl-eval's executor records: strings as they are, dicts as JSON (``str`` when
    not serialisable), anything else through ``str``, an exception as ``Error during execution: ...``.
    ``is_error`` is set for exceptions and for the ``{"error": ...}`` dicts BFCL classes return.
    """
    if name.startswith("_") or name not in tool_names(type(instance).__name__):
        return f"Error during execution: unknown function {name!r}", True, None
    try:
        # A fresh copy, as bfcl-eval's eval of a literal makes: BFCL methods keep argument lists in their
        # state (post_tweet's tags) and later calls mutate them, which must not reach the caller's dict.
        result = getattr(instance, name)(**copy.deepcopy(dict(arguments)))
    except Exception as exc:  # the model's mistake (bad argument, wrong type): shown to the model
        return f"Error during execution: {exc}", True, None
    if isinstance(result, str):
        return result, False, None
    if isinstance(result, dict):
        is_error = "error" in result
        try:
            return json.dumps(result), is_error, result
        except (TypeError, ValueError):
            return str(result), is_error, None
    return str(result), False, None


class _BFCLTool(Tool):
    """A BFCL method as an MCP tool: BFCL's schema is advertised, the arguments go to the method of the
    serving ``BFCLServer``'s instance unchanged. One tool object serves every episode's server."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        server = context.mcp_server
        text, is_error, structured = call_method(server.instance, self.name, arguments)
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=structured, is_error=is_error
        )


_PASS_THROUGH = FuncMetadata(arg_model=ArgModelBase)


@functools.cache
def _tools(class_name: str) -> tuple[_BFCLTool, ...]:
    cls = bfcl_class(class_name)
    return tuple(
        _BFCLTool(
            fn=getattr(cls, doc["name"]),
            name=doc["name"],
            description=doc["description"],
            parameters=to_json_schema(doc["parameters"]),
            fn_metadata=_PASS_THROUGH,
            is_async=True,
            meta={"bfcl_class": class_name, "bfcl_response": doc.get("response", {})},
        )
        for doc in function_docs(class_name)
    )


class BFCLServer(MCPServer):
    """An MCP server over one BFCL instance. ``instance`` is the episode's live state (the checker
    does not need it: it re-executes the recorded calls), ``bfcl_class`` its class name."""

    def __init__(self, class_name: str, instance: Any) -> None:
        super().__init__(
            name=BFCL_SERVERS[class_name],
            instructions=f"BFCL multi-turn environment {class_name} (bfcl-eval), one instance per episode.",
            tools=list(_tools(class_name)),
        )
        self.bfcl_class = class_name
        self.instance = instance

    def snapshot(self) -> dict[str, Any]:
        """The instance's public state as JSON-able records ``{attribute: {"value": ...}}``."""
        return {key: {"value": _jsonable(value)} for key, value in public_state(self.instance).items()}


def build_server(name: str, task: Task | None = None) -> BFCLServer:
    """The MCP server ``name`` (one of ``SERVER_NAMES``) with a fresh instance loaded from the task's
    ``metadata["bfcl"]`` (``initial_config``, ``long_context``); without a task, the class defaults."""
    if name not in CLASS_OF_SERVER:
        raise KeyError(f"unknown BFCL server {name!r} (known: {SERVER_NAMES})")
    class_name = CLASS_OF_SERVER[name]
    meta = (task.metadata.get("bfcl") or {}) if task is not None else {}
    instance = new_instance(class_name, initial_config(meta), bool(meta.get("long_context", False)))
    return BFCLServer(class_name, instance)


def public_state(instance: Any) -> dict[str, Any]:
    """The attributes BFCL's state checker compares (every attribute not starting with ``_``)."""
    return {key: value for key, value in vars(instance).items() if not key.startswith("_")}


def _jsonable(value: Any, depth: int = 0) -> Any:
    """A JSON-able view of BFCL state (file-system objects become nested dicts, parents dropped)."""
    if depth > 50:
        return repr(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v, depth + 1) for v in value]
    if hasattr(value, "__dict__"):
        return {
            k: _jsonable(v, depth + 1)
            for k, v in vars(value).items()
            if not k.startswith("_") and k != "parent"
        }
    return str(value)


# ---------------------------------------------------------------------------------------------------
# BFCL call strings: parse with ast, render from values


def _literal_value(node: ast.expr, text: str) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise BFCLCallError(f"argument is not a literal in {text!r}: {ast.unparse(node)[:80]}") from exc


def _call_from_node(node: ast.expr, text: str) -> tuple[str, dict[str, Any]]:
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise BFCLCallError(f"not a function call: {text[:120]!r}")
    name = node.func.id
    args: dict[str, Any] = {}
    if node.args:
        if name not in class_of_tool():
            raise BFCLCallError(f"positional arguments to unknown function {name!r}")
        params = method_parameters(name)
        if len(node.args) > len(params):
            raise BFCLCallError(f"too many positional arguments for {name}: {text[:120]!r}")
        for param, arg in zip(params, node.args, strict=False):
            if isinstance(arg, ast.Starred):
                raise BFCLCallError(f"starred argument in {text[:120]!r}")
            args[param] = _literal_value(arg, text)
    for kw in node.keywords:
        if kw.arg is None:
            raise BFCLCallError(f"**kwargs in {text[:120]!r}")
        if kw.arg in args:
            raise BFCLCallError(f"argument {kw.arg!r} given twice in {text[:120]!r}")
        args[kw.arg] = _literal_value(kw.value, text)
    return name, args


def parse_call(text: str) -> tuple[str, dict[str, Any]]:
    """``"mv(source='a', destination='b')"`` -> ``("mv", {"source": "a", "destination": "b"})``.

    Uses ``ast`` only: the callee must be a plain name, arguments must be literals; positional
    arguments are mapped to keyword names through the BFCL method's signature.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise BFCLCallError(f"not valid call syntax: {text[:120]!r}") from exc
    return _call_from_node(tree.body, text)


def parse_call_list(text: str) -> list[tuple[str, dict[str, Any]]]:
    """BFCL's Python-style output, ``"[f(a=1), g(b='x')]"`` or a single call, as (name, args) pairs."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise BFCLCallError(f"not valid call syntax: {text[:120]!r}") from exc
    nodes = tree.body.elts if isinstance(tree.body, ast.List | ast.Tuple) else [tree.body]
    return [_call_from_node(node, text) for node in nodes]


def _literal_source(value: Any) -> str:
    if value is None or isinstance(value, bool | int | str):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
    if isinstance(value, list):
        return "[" + ", ".join(_literal_source(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + "".join(_literal_source(v) + ", " for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal_source(k)}: {_literal_source(v)}" for k, v in value.items()) + "}"
    raise BFCLCallError(f"argument value of type {type(value).__name__} cannot be rendered")


def _plain_identifier(text: str) -> bool:
    # ASCII only: Python NFKC-normalises identifiers ("ª" parses as "a"), so a non-ASCII name could
    # reach the checker as a different function than the one recorded. BFCL's names are all ASCII.
    return text.isascii() and text.isidentifier() and not keyword.iskeyword(text)


def render_call(name: str, arguments: Mapping[str, Any]) -> str:
    """``("mv", {"source": "a"})`` -> ``"mv(source='a')"``: BFCL's call-string form of a parsed call.

    Only identifiers are accepted for the name and argument keys, and values are rendered as
    Python literals (JSON types, plus tuples), so the string holds nothing but one call of ``name``
    with literal arguments; ``parse_call`` reads it back to the same values.
    """
    if not _plain_identifier(name):
        raise BFCLCallError(f"not a function name: {name!r}")
    parts = []
    for key, value in arguments.items():
        if not isinstance(key, str) or not _plain_identifier(key):
            raise BFCLCallError(f"not an argument name: {key!r}")
        parts.append(f"{key}={_literal_source(value)}")
    return f"{name}({', '.join(parts)})"
