"""Check tool-call arguments against the tool's JSON schema, optionally coercing obvious mistakes.

Relaxed validation (Scale's MCP tool-use write-up lists it among the context-management levers that
matter for training): ``"3"`` becomes ``3`` where the schema says integer, ``"true"`` becomes ``True``
for a boolean, a number becomes a string where a string is expected, and a JSON string becomes the
list / object the schema asks for. Whatever still violates the schema is reported back to the model.
"""

from __future__ import annotations

import json
import sys
import threading
from functools import lru_cache
from types import ModuleType
from typing import Any

_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0"}


def check_arguments(
    arguments: dict[str, Any], schema: dict[str, Any], *, relaxed: bool
) -> tuple[dict, str | None]:
    """Return (arguments, error message or None); with ``relaxed`` the arguments are coerced first."""
    if relaxed:
        arguments = coerce(arguments, schema)
    jsonschema = import_jsonschema()  # here, not at the top: importing it costs time

    try:
        validator = _validator(json.dumps(schema, sort_keys=True, default=str))
    except (jsonschema.SchemaError, TypeError, ValueError):
        return arguments, None  # a broken schema is the server's problem, not the model's
    errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    if not errors:
        return arguments, None
    return arguments, "; ".join(_describe(e) for e in errors[:3])


_JSONSCHEMA_IMPORT = threading.Lock()


def import_jsonschema() -> ModuleType:
    """``jsonschema``, first imported without the ``rfc3987_syntax`` package: where it is installed
    (``jupyter-events`` pulls it in), ``jsonschema``'s format checkers compile its Lark grammar at import,
    about 2 s a process on a 2-core AVX2 EPYC (0.3 s without). It only adds the "iri" and "iri-reference"
    format checks, and the kit's validators check no formats. Every process that validates a tool call
    pays the import (``mcp-rl`` commands, the tests' subprocesses)."""
    with _JSONSCHEMA_IMPORT:  # two threads' first calls must not both block and unblock the grammar
        if "jsonschema" not in sys.modules and "rfc3987_syntax" not in sys.modules:
            sys.modules["rfc3987_syntax"] = None  # None there: importing it raises ImportError
            try:
                import jsonschema
            finally:
                sys.modules.pop("rfc3987_syntax", None)
    import jsonschema

    return jsonschema


def coerce(value: Any, schema: dict[str, Any]) -> Any:
    """Coerce value towards schema where the intent is unambiguous; returns value unchanged otherwise."""
    if not isinstance(schema, dict):
        return value
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            if any(_matches_type(value, o) for o in options if isinstance(o, dict)):
                return value
            for option in options:
                coerced = coerce(value, option)
                if coerced is not value and _matches_type(coerced, option):
                    return coerced
            return value
    types = schema.get("type")
    for typ in types if isinstance(types, list) else [types]:
        coerced = _coerce_to(value, typ, schema)
        if coerced is not _NO:
            return coerced
    return value


_NO = object()


def _coerce_to(value: Any, typ: Any, schema: dict[str, Any]) -> Any:
    if typ == "object":
        if isinstance(value, str):
            value = _json_or(value, dict)
        if isinstance(value, dict):
            props = schema.get("properties") or {}
            return {k: coerce(v, props[k]) if isinstance(props.get(k), dict) else v for k, v in value.items()}
        return _NO
    if typ == "array":
        if isinstance(value, str):
            value = _json_or(value, list)
        if isinstance(value, list):
            items = schema.get("items")
            return [coerce(v, items) for v in value] if isinstance(items, dict) else value
        return _NO
    if isinstance(value, bool):  # bool is an int subclass: only string / boolean targets make sense
        if typ == "boolean":
            return value
        return str(value).lower() if typ == "string" else _NO
    if typ == "integer":
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                number = float(value.strip().replace(",", ""))
            except ValueError:
                return _NO
            return int(number) if number.is_integer() and abs(number) < 2**63 else _NO
        return _NO
    if typ == "number":
        if isinstance(value, int | float):
            return value
        if isinstance(value, str):
            try:
                number = float(value.strip().replace(",", ""))
            except ValueError:
                return _NO
            return int(number) if number.is_integer() and abs(number) < 2**63 else number
        return _NO
    if typ == "boolean":
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        return _NO
    if typ == "string":
        if isinstance(value, str):
            return value
        return str(value) if isinstance(value, int | float) else _NO
    if typ == "null":
        return (
            None
            if value is None or (isinstance(value, str) and value.strip().lower() in {"null", "none"})
            else _NO
        )
    return _NO


def _matches_type(value: Any, schema: dict[str, Any]) -> bool:
    types = schema.get("type")
    if types is None:
        return False
    names = types if isinstance(types, list) else [types]
    checks = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "array": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
        "null": lambda v: v is None,
    }
    return any(checks.get(n, lambda v: False)(value) for n in names)


def _json_or(text: str, kind: type) -> Any:
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return decoded if isinstance(decoded, kind) else text


@lru_cache(maxsize=1024)
def _validator(schema_json: str) -> Any:
    jsonschema = import_jsonschema()

    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def _describe(error: Any) -> str:
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message
