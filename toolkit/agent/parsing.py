"""Parse tool calls out of a model turn: Qwen / Hermes ``<tool_call>{json}</tool_call>`` blocks.

Small models get the format wrong in a handful of recurring ways; each is repaired here rather than
counted as a failure, because a call whose intent is unambiguous is a call:

- trailing text after the JSON object, or several calls in one turn (one block each, or a JSON list);
- a missing ``</tool_call>`` (the block runs to the next ``<tool_call>`` or the end of the turn);
- the JSON wrapped in a Markdown code fence, or a turn that is *only* a fenced / bare call object;
- Python-style literals (single quotes, True/False/None), parsed with ``ast.literal_eval`` (never
  ``eval``), and one or two missing closing braces; arguments holding what JSON cannot (a set, bytes,
  a non-string key) are a ``bad_json`` error, not a call;
- ``arguments`` given as a JSON string, or named ``parameters`` / ``args`` / ``input``; the OpenAI
  ``{"type": "function", "function": {...}}`` wrapper.

What cannot be repaired becomes a :class:`ParsedCall` with ``error`` set (kind ``bad_json``); the loop
sends that error back to the model as a tool message. A turn with no ``<tool_call>`` block that still
tries to call a tool in another format (``{...}</tool_call>``, ``<TOOL_CALL>``, ``<tool-call>``,
``<function=...>``, ``[TOOL_CALLS]``, ``<|python_tag|>``, or a ``{"name": ..., "arguments": ...}`` object
inside prose) gets one such error naming the expected format, rather than passing silently as the
final answer. No input string makes :func:`parse_turn` raise.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
_LITERAL_EVAL_MAX_CHARS = 20_000  # literal_eval on huge or deeply nested text is slow; skip the repair

# A block runs from <tool_call> to </tool_call>, the next <tool_call>, or the end of the turn.
_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.DOTALL)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)(?:```|\Z)", re.DOTALL)


@dataclass
class ParsedCall:
    """One tool call as the model wrote it. ``arguments`` is None and ``error`` set when unparseable."""

    name: str
    arguments: dict[str, Any] | None
    error: str | None = None  # "bad_json: <why>"
    raw: str = ""


@dataclass
class ParsedTurn:
    """A model turn split into the visible text (the answer candidate) and the tool calls."""

    content: str
    calls: list[ParsedCall] = field(default_factory=list)


def parse_turn(text: str) -> ParsedTurn:
    """Split a model turn into content and tool calls; repairs common format mistakes, never raises."""
    if not isinstance(text, str):
        text = str(text)
    blocks = [m.group(1) for m in _BLOCK.finditer(text)]
    if blocks:
        content = _BLOCK.sub("", text).replace(CLOSE_TAG, "").strip()
        calls = [call for body in blocks for call in _parse_block(body)]
        return ParsedTurn(content=content, calls=calls)
    # No tags: accept a turn that is nothing but a (fenced) call object, e.g. ```json {"name": ...}```.
    bare = _bare_call(text)
    if bare is not None:
        return ParsedTurn(content="", calls=bare)
    attempt = unrecognised_call(text)
    if attempt is not None:
        return ParsedTurn(content=text.strip(), calls=[attempt])
    return ParsedTurn(content=text.strip(), calls=[])


EXPECTED_FORMAT = '<tool_call>{"name": ..., "arguments": {...}}</tool_call>'
# Call formats of other model families, and misspellings of ours. Only tag-like text counts (angle or
# square brackets), so prose that mentions "tool calls" stays an answer.
_FOREIGN_MARKER = re.compile(
    r"<\s*/?\s*tool[\s_-]*calls?\s*>"  # </tool_call> alone, <TOOL_CALL>, <tool-call>, <tool_calls>
    r"|<\s*/?\s*function(?:[\s_-]*calls?)?\s*[=>]"  # <function=add>, <function_call>
    r"|\[\s*TOOL_CALLS?\s*\]"  # Mistral
    r"|<\|python_tag\|>",  # Llama 3
    re.IGNORECASE,
)
# A call object written inside prose: an object with a "name" key and an arguments key ("input" is left
# out here: it is too common a key in data a model may quote in its answer).
_NAME_KEY = re.compile(r"""[{,]\s*["']name["']\s*:""")
_ARGUMENTS_KEY = re.compile(r"""["'](?:arguments?|parameters|args)["']\s*(?::|$)""", re.MULTILINE)
_FUNCTION_TAG_NAME = re.compile(r"<function=([A-Za-z0-9_.\-]{1,100})>")


def unrecognised_call(text: str) -> ParsedCall | None:
    """A ``bad_json`` error call for a turn that tries to call a tool in a format the parser does not
    accept (see the module docstring); None for a turn that does not look like a call attempt."""
    marker = _FOREIGN_MARKER.search(text)
    if marker is not None:
        found = f"the marker {marker.group(0)[:40]!r}"
    elif _NAME_KEY.search(text) and _ARGUMENTS_KEY.search(text):
        found = "a call object outside <tool_call> tags"
    else:
        return None
    tag_name = _FUNCTION_TAG_NAME.search(text)
    name = tag_name.group(1) if tag_name else _guess_name(text)
    error = f"bad_json: tool call not recognised ({found}); write each call as {EXPECTED_FORMAT}"
    return ParsedCall(name, None, error, text.strip()[:2000])


def normalize_call(obj: Any, raw: str = "") -> list[ParsedCall]:
    """Turn a decoded call object (or a list of them) into ParsedCalls, repairing key-name mistakes."""
    if isinstance(obj, list):
        if not obj:
            return [ParsedCall("", None, "bad_json: empty list of calls", raw)]
        return [call for item in obj for call in normalize_call(item, raw)]
    if not isinstance(obj, dict):
        return [ParsedCall("", None, f"bad_json: expected an object, got {type(obj).__name__}", raw)]
    if isinstance(obj.get("function"), dict):  # OpenAI wrapper {"type": "function", "function": {...}}
        obj = {**obj, **obj["function"]}
    name = obj.get("name", obj.get("tool_name", obj.get("function")))
    if not isinstance(name, str) or not name.strip():
        return [ParsedCall("", None, 'bad_json: the call has no "name" string', raw)]
    name = name.strip()
    arg_key = next((k for k in ARGUMENT_KEYS if k in obj), None)
    arguments, error = parse_arguments(obj[arg_key] if arg_key else {})
    return [ParsedCall(name, arguments, error, raw)]


def parse_arguments(value: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Arguments as a dict; a JSON (or Python-literal) string is decoded. Returns (args, error)."""
    if value is None:
        return {}, None
    if isinstance(value, str):
        if not value.strip():
            return {}, None
        decoded = _decode_object(value)
        if decoded is None:
            return None, f"bad_json: arguments string is not a JSON object: {value[:80]!r}"
        value = decoded
    if not isinstance(value, dict):
        return None, f"bad_json: arguments must be an object, got {type(value).__name__}"
    odd = _not_json(value)
    if odd is not None:  # a Python literal can hold what JSON cannot (sets, bytes, non-string keys)
        return None, f"bad_json: arguments must be JSON values, got {odd}"
    return value, None


def _not_json(value: Any) -> str | None:
    """What in a decoded value JSON cannot hold (e.g. ``"a set"``), or None when all of it is JSON."""
    if value is None or isinstance(value, str | bool | int | float):
        return None
    if isinstance(value, list | tuple):
        return next((odd for item in value if (odd := _not_json(item)) is not None), None)
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            return "a non-string key"
        return next((odd for item in value.values() if (odd := _not_json(item)) is not None), None)
    return f"a {type(value).__name__}"


def format_call(name: str, arguments: dict[str, Any]) -> str:
    """The canonical text of one call, exactly as the Qwen2.5 tool template renders it."""
    return f'{OPEN_TAG}\n{{"name": "{name}", "arguments": {json.dumps(arguments, ensure_ascii=False)}}}\n{CLOSE_TAG}'


def _parse_block(body: str) -> list[ParsedCall]:
    raw = body.strip()
    fenced = _FENCE.search(raw)
    candidate = fenced.group(1) if fenced else raw
    obj = _decode_object(candidate, allow_list=True)
    if obj is None:
        return [ParsedCall(_guess_name(candidate), None, f"bad_json: could not parse {raw[:80]!r}", raw)]
    return normalize_call(obj, raw)


def _bare_call(text: str) -> list[ParsedCall] | None:
    stripped = text.strip()
    fenced = _FENCE.fullmatch(stripped)
    candidate = fenced.group(1).strip() if fenced else stripped
    if not candidate.startswith(("{", "[")):
        return None
    obj = _decode_object(candidate, allow_list=True, allow_trailing=False)
    items = obj if isinstance(obj, list) else [obj]
    if not items or not all(isinstance(o, dict) and "name" in o and _has_arguments(o) for o in items):
        return None
    return normalize_call(obj, stripped)


def _has_arguments(obj: dict[str, Any]) -> bool:
    return any(k in obj for k in ARGUMENT_KEYS)


def _decode_object(text: str, *, allow_list: bool = False, allow_trailing: bool = True) -> Any:
    """Decode the first JSON object (or list) in text, with repairs; None when nothing works."""
    starts = [i for i in (text.find("{"), text.find("[") if allow_list else -1) if i >= 0]
    if not starts:
        return None
    start = min(starts)
    closer = "}" if text[start] == "{" else "]"
    body = text[start:]
    decoder = json.JSONDecoder()
    for attempt in (body, body + closer, body + closer + closer):
        try:
            obj, end = decoder.raw_decode(attempt)
        except (ValueError, RecursionError):
            continue
        if allow_trailing or not attempt[end:].strip():
            return obj
        return None
    # Python-style literal (single quotes, True/None); the span up to the last closing bracket.
    last = body.rfind(closer)
    if 0 < last < _LITERAL_EVAL_MAX_CHARS:
        span = body[: last + 1]
        if not allow_trailing and body[last + 1 :].strip():
            return None
        try:
            obj = ast.literal_eval(span)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
        if isinstance(obj, dict | list):
            return obj
    return None


_NAME_HINT = re.compile(r"""["']name["']\s*:\s*["']([^"']{1,100})["']""")


def _guess_name(text: str) -> str:
    """The tool name of an unparseable call, when it is legible, so the error names the tool."""
    match = _NAME_HINT.search(text)
    return match.group(1).strip() if match else ""
