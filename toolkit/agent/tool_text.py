"""How the tools are described to the model: ``RolloutConfig.tool_format``.

- ``json`` (the default): the chat template renders each tool's OpenAI-format JSON schema in the
  system message (TRL's Qwen2.5 tool template: one JSON object per line inside ``<tools>``).
- ``compact``: one line per tool, ``name(arg: type, opt?: type) - description``, written by the loop
  into the system message with the template's own wording around it; the template gets no ``tools``.
  Argument types are JSON schema types (``string``, ``integer``, ``number``, ``boolean``), enums are
  their values (``"open"|"closed"``), arrays ``type[]``; ``?`` marks an optional argument. Argument
  descriptions, defaults and bounds are left out: on the cpu-demo tasks the listing is most of the
  prompt, and every prompt token costs prefill on every turn of a small model on a CPU.
- ``compact_args``: the same line, then one indented line per argument that has a description
  (``  staff_id: Staff id, e.g. 'st-001'.``). The descriptions carry the id formats and units that
  the types alone do not (docs/cpu-proof/README.md, "Issue 31": without them the warm-started model
  passed company ids to ``get_staff``).

The model calls tools the same way in both formats: a ``<tool_call>`` JSON object, checked against the
server's full schema. For the kit's token-level backends; a chat server (``openai:``) still receives the
tools natively as well.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from toolkit.toolbox import ToolSpec, compact_schema

TOOL_FORMATS = ("json", "compact", "compact_args")

# The Qwen2.5 tool template's text around the listing (TRL's template, rendered with tools=[...]);
# the compact block keeps it word for word, so the two formats differ in the listing alone.
_HEADER = (
    "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
)
_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": '
    "<args-json-object>}\n</tool_call>"
)


def check_tool_format(tool_format: str) -> str:
    if tool_format not in TOOL_FORMATS:
        raise ValueError(f"tool_format must be one of {', '.join(TOOL_FORMATS)}, got {tool_format!r}")
    return tool_format


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def type_text(schema: Any, defs: dict[str, Any] | None = None) -> str:
    """A JSON schema's type in a few characters (see the module docstring)."""
    defs = defs or {}
    if not isinstance(schema, dict):
        return "any"
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        return type_text(defs[name], defs) if name in defs else name
    if "enum" in schema:
        return "|".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return "|".join(type_text(s, defs) for s in schema[key])
    kind = schema.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array":
        items = schema.get("items")
        if not isinstance(items, dict):
            return "array"
        inner = type_text(items, defs)
        return f"({inner})[]" if "|" in inner else f"{inner}[]"
    if kind == "object" and isinstance(schema.get("properties"), dict) and schema["properties"]:
        return "{" + params_text(schema, defs) + "}"
    return str(kind) if kind else "any"


def params_text(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> str:
    """``arg: type, opt?: type`` for an object schema's properties (required ones without ``?``)."""
    required = set(schema.get("required") or [])
    props = schema.get("properties") or {}
    return ", ".join(
        f"{name}{'' if name in required else '?'}: {type_text(sub, defs)}" for name, sub in props.items()
    )


def signature(spec: ToolSpec, *, arg_descriptions: bool = False) -> str:
    """One tool as one line: ``name(arg: type, opt?: type) - description``; with ``arg_descriptions``
    an indented line follows for every argument that has a description."""
    schema = compact_schema(spec.input_schema or {})
    defs = {**(schema.get("definitions") or {}), **(schema.get("$defs") or {})}
    line = f"{spec.name}({params_text(schema, defs)})"
    description = _one_line(spec.description or "")
    line = f"{line} - {description}" if description else line
    if arg_descriptions:
        for name, sub in (schema.get("properties") or {}).items():
            text = _one_line(sub.get("description") or "") if isinstance(sub, dict) else ""
            if text:
                line += f"\n  {name}: {text}"
    return line


def listing(specs: Iterable[ToolSpec], tool_format: str = "compact") -> str:
    """The compact lines of several tools (also how tools revealed in a later user turn are shown)."""
    return "\n".join(signature(s, arg_descriptions=tool_format == "compact_args") for s in specs)


def tools_block(specs: Iterable[ToolSpec], tool_format: str = "compact") -> str:
    """What the compact formats append to the system message: the template's wording around the
    listing."""
    return _HEADER + listing(specs, tool_format) + _FOOTER
