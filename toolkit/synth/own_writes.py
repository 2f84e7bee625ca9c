"""Write tasks for your own MCP server, each checked by a read afterwards (a *probe*).

For a write tool, argument sets are built from its schema: values seen while exploring for arguments
that name existing things, fresh values for the rest (``new text 1``), the user's examples first. Each
set is tried on a fresh server: the candidate probes (read calls whose arguments come from the write's
arguments, read tools without required arguments, and explored reads that share a value with the write)
run before and after the write; a probe whose output changed shows the write. The task records the
smallest such probe and its output after the write; the episode reruns it after every write
(``toolkit.envs.recipe.ProbedToolbox``) and the rubric's ``state`` check compares.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from toolkit.envs.recipe import canonical
from toolkit.synth.base import Draft, Step, dress
from toolkit.synth.explore import Exploration, _match_score, _scalar_candidates, leaves, name_tokens
from toolkit.synth.own_tasks import fmt, human

MAX_PROBE_CHARS = 4000
MAX_PROBES = 12
_FRESH_WORDS = ("alpha", "bravo", "cedar", "delta", "ember", "fjord", "garnet", "harbor")


def _fresh(param: str, k: int) -> str:
    word = _FRESH_WORDS[k % len(_FRESH_WORDS)]
    tokens = set(name_tokens(param))
    if tokens & {"path", "file", "filename", "destination"}:
        return f"new-{word}-{k}.txt"
    if tokens & {"branch"}:
        return f"feature-{word}-{k}"
    return f"{human(param)} {word} {k}"


_ALWAYS_FRESH = {"destination", "dest", "new", "content", "contents", "body", "text", "message", "description",
                 "observations", "insight", "comment", "note", "title"}  # fmt: skip


def _value(param: str, schema: dict[str, Any], exp: Exploration, k: int, existing: bool) -> Any:
    """One argument value: an existing one when asked and one fits, else a fresh one."""
    constants = exp.constants()
    if param in constants:
        return constants[param]
    existing = existing and not set(name_tokens(param)) & _ALWAYS_FRESH
    t = schema.get("type")
    if t == "array":
        item = schema.get("items", {}) if isinstance(schema.get("items"), dict) else {}
        return [_value(param, item, exp, k, existing)]
    if t == "object":
        props = schema.get("properties", {}) or {}
        keys = list(props)
        return {p: _value(p, props[p] if isinstance(props[p], dict) else {}, exp, k, existing) for p in keys}
    if schema.get("enum"):
        return schema["enum"][k % len(schema["enum"])]
    if "default" in schema and schema["default"] is not None and t != "string":
        return schema["default"]
    if t in ("integer", "number"):
        return 1 + k
    if t == "boolean":
        return True
    if existing:
        fits = [p for p in exp.pool if isinstance(p.value, str) and _match_score(param, p.key) >= 2
                and "\n" not in p.value and len(p.value) <= 60]  # fmt: skip
        if fits:
            return fits[k % len(fits)].value
    return _fresh(param, k)


def write_argument_sets(
    tool: str, exp: Exploration, examples: Sequence[dict[str, Any]], n: int
) -> list[dict[str, Any]]:
    spec = exp.specs[tool]
    schema = spec.input_schema or {}
    props = schema.get("properties", {}) or {}
    required = [p for p in schema.get("required", []) if p in props]
    out = [dict(e) for e in examples]
    for k in range(n):
        args = {
            p: _value(p, props[p] if isinstance(props[p], dict) else {}, exp, k, existing=k % 2 == 0)
            for p in required
        }
        if args not in out:
            out.append(args)
    return out[: max(n, len(examples))]


def probe_candidates(tool_args: dict[str, Any], exp: Exploration) -> list[dict[str, Any]]:
    """Read calls that could show what a write with ``tool_args`` changed."""
    values = {json.dumps(v, sort_keys=True) for v in _flat_values(tool_args)}
    out: list[dict[str, Any]] = []
    for name, (kind, _) in exp.kinds.items():
        if kind != "read":
            continue
        schema = exp.specs[name].input_schema or {}
        props = schema.get("properties", {}) or {}
        required = [p for p in schema.get("required", []) if p in props]
        if not required:
            out.append({"tool": name, "arguments": {}})
            continue
        args: dict[str, Any] = {}
        for p in required:  # an argument of the write with the same name, or a path-like one
            s = props[p] if isinstance(props[p], dict) else {}
            hit = _from_write(p, s, tool_args)
            if hit is None:
                cands = _scalar_candidates(p, s, [], {})
                hit = cands[0][0] if cands else None
            if hit is None:
                break
            args[p] = hit
        else:
            out.append({"tool": name, "arguments": args})
    for o in exp.observations:  # explored reads that share a value with the write
        if o.ok and len(o.text) <= MAX_PROBE_CHARS and o.args:
            if {json.dumps(v, sort_keys=True) for v in _flat_values(o.args)} & values:
                out.append({"tool": o.tool, "arguments": dict(o.args)})
    small = sorted((o for o in exp.observations if o.ok and o.stable and len(o.text) <= MAX_PROBE_CHARS
                    and any(True for _ in leaves(o.data))),  # an empty answer ("[]") shows nothing
                   key=lambda o: len(o.text))  # fmt: skip
    out += [{"tool": o.tool, "arguments": dict(o.args)} for o in small]  # any small read may show it
    unique, seen = [], set()
    for p in out:
        key = json.dumps(p, sort_keys=True)
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return unique[:MAX_PROBES]


def _flat_values(data: Any) -> list[Any]:
    if isinstance(data, dict):
        return [x for v in data.values() for x in _flat_values(v)]
    if isinstance(data, list):
        return [x for v in data for x in _flat_values(v)]
    return [data]


def _from_write(param: str, schema: dict[str, Any], write_args: dict[str, Any]) -> Any:
    """A value for a read's argument taken from the write's arguments (same name, or a name inside)."""
    found: list[tuple[int, Any]] = []

    def walk(d: Any) -> None:
        if isinstance(d, dict):
            for k, v in d.items():
                score = 5 if k == param else _match_score(param, k)
                if score >= 3 and isinstance(v, str | int | float):
                    found.append((score, v))
                walk(v)
        elif isinstance(d, list):
            for v in d:
                walk(v)

    walk(write_args)
    if not found:
        return None
    found.sort(key=lambda f: -f[0])
    value = found[0][1]
    return [value] if schema.get("type") == "array" else value


OpenFresh = Callable[[], Any]  # () -> async context manager yielding one fresh Toolbox of the server


async def try_write(
    tool: str, args: dict[str, Any], probes: list[dict[str, Any]], open_fresh: OpenFresh
) -> tuple[dict[str, Any] | None, str]:
    """Run the write between two probe snapshots on a fresh server: (the chosen probe with its op and
    its output after, or None, why)."""
    async with open_fresh() as box:
        before = [await box.call_tool(p["tool"], dict(p["arguments"])) for p in probes]
        res = await box.call_tool(tool, dict(args))
        if not res.ok:
            return None, f"the write answered an error: {res.text[:120]}"
        after = [await box.call_tool(p["tool"], dict(p["arguments"])) for p in probes]
    changed = []
    for p, b, a in zip(probes, before, after, strict=True):
        bt = canonical(b.text) if b.ok else None
        at = canonical(a.text) if a.ok else None
        if bt != at and (at is None or len(at) <= MAX_PROBE_CHARS):
            op = "create" if bt is None else "delete" if at is None else "update"
            changed.append((len(at or ""), {**p, "op": op, "after": at}))
    if not changed:
        return None, "no read showed a change"
    changed.sort(key=lambda c: c[0])
    return changed[0][1], ""


def write_draft(tool: str, args: dict[str, Any], probe: dict[str, Any], rng: Any) -> Draft:
    """The task: the write, a tool-args item, and a state item on the probe's output afterwards."""
    arg_text = ", ".join(f"{human(k)} {fmt(v)}" for k, v in args.items())
    prompt = dress(rng, f"please {human(tool)}{' with ' + arg_text if arg_text else ''}.")
    shown = f"{human(probe['tool'])}" + (
        f" ({', '.join(f'{k}={fmt(v)}' for k, v in probe['arguments'].items())})"
        if probe["arguments"]
        else ""
    )
    check: dict[str, Any] = {
        "type": "state",
        "collection": f"probe:{probe['tool']}",
        "key": "p0",
        "op": probe["op"],
    }
    if probe["after"] is not None:
        check.update(field="output", value=probe["after"])
    d = Draft(template="own_write", kind="write", prompt=prompt,
              steps=[Step(tool, dict(args), purpose=f"{human(tool)}")],
              state_changes=[(f"After the episode, {shown} must show the change the write makes.", check)],
              reference_answer=f"Done: {human(tool)}.", read_only=False)  # fmt: skip
    d.metadata = {"answer_from": [], "probes": [{"tool": probe["tool"], "arguments": probe["arguments"]}]}
    return d


async def write_drafts(
    exp: Exploration,
    open_fresh: OpenFresh,
    examples: dict[str, list[dict[str, Any]]],
    rng: Any,
    per_tool: int = 4,
    deadline: Callable[[], bool] = lambda: False,
) -> tuple[list[Draft], dict[str, int]]:
    """Write drafts for every write tool; ``drops`` counts why candidates were not kept."""
    drafts: list[Draft] = []
    drops: dict[str, int] = {}
    for tool, (kind, _) in exp.kinds.items():
        if kind != "write":
            continue
        for args in write_argument_sets(tool, exp, examples.get(tool, []), per_tool):
            if deadline():
                drops["time budget"] = drops.get("time budget", 0) + 1
                continue
            probes = probe_candidates(args, exp)
            try:
                probe, why = await try_write(tool, args, probes, open_fresh)
            except Exception as exc:  # a server that fails on this write: the candidate goes, not the run
                probe, why = None, f"server failed: {type(exc).__name__}"
            if probe is None:
                key = why.split(":")[0]
                drops[key] = drops.get(key, 0) + 1
                continue
            drafts.append(write_draft(tool, args, probe, rng))
    return drafts, drops
