"""Call-level matching shared by the PROVE, graduated and ToolRL rewards: JSON-schema type checks,
tool schemas, and dependency-ordered matching of model calls to gold steps."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from toolkit.records import CallRecord, GoldCall

_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (
        isinstance(v, int) and not isinstance(v, bool) or isinstance(v, float) and v.is_integer()
    ),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def matches_schema_type(value: Any, schema: Mapping[str, Any] | None) -> bool:
    """Whether ``value`` has a type the JSON-schema fragment allows (``type``, a list of types, or
    ``anyOf``/``oneOf`` alternatives). A fragment without type information accepts anything."""
    if not schema:
        return True
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if alternatives:
        return any(matches_schema_type(value, alt) for alt in alternatives)
    types = schema.get("type")
    if types is None:
        return True
    if isinstance(types, str):
        types = [types]
    return any(_JSON_TYPES.get(t, lambda v: True)(value) for t in types)


def same_json_type(a: Any, b: Any) -> bool:
    """Type compatibility of two values as JSON sees it (int and float interchangeable)."""
    num = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    if isinstance(a, num) and isinstance(b, num):
        return True
    return type(a) is type(b)


def required_params_ok(args: Mapping[str, Any] | None, schema: Mapping[str, Any] | None) -> bool:
    """Every required parameter present with a compatible type (no schema: any dict of args passes)."""
    if args is None:
        return False
    if not schema:
        return True
    props = schema.get("properties", {}) or {}
    return all(k in args and matches_schema_type(args[k], props.get(k)) for k in schema.get("required", []))


def schemas_from(specs: Any) -> dict[str, dict[str, Any]]:
    """``{tool name: input_schema}`` from a mapping of schemas or a list of ToolSpec-like objects/dicts."""
    if specs is None:
        return {}
    if isinstance(specs, Mapping):
        return {str(k): dict(getattr(v, "input_schema", v) or {}) for k, v in specs.items()}
    out = {}
    for s in specs:
        if isinstance(s, Mapping):
            fn = s.get("function", s)  # OpenAI tool format or ToolSpec-as-dict
            out[fn["name"]] = dict(fn.get("parameters") or fn.get("input_schema") or {})
        else:
            out[s.name] = dict(s.input_schema or {})
    return out


def default_tool_schemas() -> dict[str, dict[str, Any]]:
    """The kit's own tool schemas, from ``toolkit.envs.registry.tool_specs`` when the envs area is
    installed; an empty mapping otherwise (validity then falls back to the task's tool list)."""
    try:
        from toolkit.envs.registry import tool_specs
    except ImportError:
        return {}
    try:
        return schemas_from(tool_specs())
    except Exception:  # a broken registry must not take the reward down
        return {}


def dependency_match(
    gold: Sequence[GoldCall],
    calls: Sequence[CallRecord],
    matches: Callable[[GoldCall, CallRecord], bool],
) -> dict[int, int]:
    """Match gold steps to model calls in gold order: step j takes the earliest unused call that
    ``matches`` it and comes after the calls matched to every step in ``gold[j].depends_on``. A step
    whose dependency is unmatched stays unmatched. Returns ``{gold index: call index}``."""
    matched: dict[int, int] = {}
    used: set[int] = set()
    for j, step in enumerate(gold):
        deps = [d for d in step.depends_on if 0 <= d < len(gold)]
        if any(d not in matched for d in deps):
            continue
        after = max((matched[d] for d in deps), default=-1)
        for i in range(after + 1, len(calls)):
            if i not in used and matches(step, calls[i]):
                matched[j] = i
                used.add(i)
                break
    return matched
