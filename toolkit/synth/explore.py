"""Explore an MCP server the kit did not write: list its tools, sort them into reads and writes, and call
the reads breadth first with arguments from their schemas and from values seen in earlier outputs.

- ``classify``: read or write by the tool's annotations (``readOnlyHint``, ``destructiveHint``), else by
  the verbs in its name, else write (an unknown tool is never called while exploring); the user's
  overrides win.
- ``parse_output``: an output as data: structured content, JSON, a Python literal (servers that print
  ``repr``), or plain text (``[FILE] name`` listings, ``Key: value`` blocks, else lines).
- ``explore``: every call runs on two fresh servers at once (separate scratch folders); a value that
  differs between them (a timestamp, a scratch path, a random id) is volatile and never used as an
  argument or an answer. Bounded by ``max_calls`` and ``max_seconds``; an error answer, a timeout or a
  huge output is recorded, never fatal.
"""

from __future__ import annotations

import ast
import json
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolkit.toolbox import ToolSpec

READ_VERBS = {
    "get", "list", "read", "search", "find", "show", "describe", "count", "open", "view", "fetch", "status",
    "log", "diff", "lookup", "stats", "info", "tree", "query", "check", "browse", "inspect",
    "summary", "summarize", "history", "workload", "ratings", "allowed",
}  # fmt: skip
WRITE_VERBS = {
    "create", "add", "append", "insert", "update", "set", "write", "edit", "delete", "remove", "move",
    "rename", "commit", "reset", "checkout", "push", "merge", "submit", "assign", "send", "post", "put",
    "patch", "drop", "clear", "init", "upload", "cancel", "close", "archive", "approve", "execute", "run",
    "save", "store", "modify", "replace", "restore", "book", "pay", "transfer", "invite",
}  # fmt: skip
MAX_OUTPUT_CHARS = 100_000  # a larger output is recorded as too large, not parsed
_LISTING = re.compile(r"^\[(?P<type>[A-Za-z]+)\]\s+(?P<name>\S(?:.*?\S)?)(?:\s{2,}(?P<size>\S.*?))?\s*$")
_KEY_VALUE = re.compile(r"^(?P<key>[A-Za-z][\w .-]{0,40}):\s+(?P<value>\S.*)$")

Path_ = tuple[Any, ...]  # a path into parsed data: dict keys and list indices


def name_tokens(name: str) -> list[str]:
    """``git_diff_unstaged`` -> [git, diff, unstaged]; ``listTables`` -> [list, tables]."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return [t for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]


def classify(spec: ToolSpec, override: str | None = None) -> tuple[str, str]:
    """("read" | "write" | "skip", why)."""
    if override is not None:
        return override, "set by the user"
    ann = spec.annotations or {}
    if ann.get("readOnlyHint") is True:
        return "read", "readOnlyHint"
    if ann.get("destructiveHint") is True or ann.get("readOnlyHint") is False:
        return "write", "destructiveHint" if ann.get("destructiveHint") else "readOnlyHint=false"
    tokens = name_tokens(spec.name)
    for t in tokens:
        if t in WRITE_VERBS or t.rstrip("s") in WRITE_VERBS:
            return "write", f"name ('{t}')"
    for t in tokens:
        if t in READ_VERBS or t.rstrip("s") in READ_VERBS:
            return "read", f"name ('{t}')"
    return "write", "unknown: treated as a write, not called while exploring"


# ---- outputs -----------------------------------------------------------------------------------------


def _unquote(value: str) -> Any:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    value = value.replace("\\n", "\n").strip()
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    if re.fullmatch(r"-?\d+\.\d+", value):
        return float(value)
    return value


def parse_text(text: str) -> Any:
    """Plain text as data: a ``[TYPE] name  size`` listing, ``Key: value`` blocks, else its lines."""
    lines = [ln.rstrip() for ln in text.splitlines()]
    body = [ln for ln in lines if ln.strip()]
    if not body:
        return []
    listing = [m for ln in body if (m := _LISTING.match(ln))]
    if listing and len(listing) >= len(body) / 2:
        rows = []
        for m in listing:
            row = {"type": m["type"], "name": m["name"]}
            if m["size"]:
                row["size"] = m["size"]
            rows.append(row)
        return rows
    blocks: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for ln in lines:
        m = _KEY_VALUE.match(ln.strip())
        if m and m["key"] not in current:
            current[m["key"].strip()] = _unquote(m["value"])
        elif not ln.strip() or (m and m["key"] in current):
            if current:
                blocks.append(current)
            current = {m["key"].strip(): _unquote(m["value"])} if m else {}
    if current:
        blocks.append(current)
    n_pairs = sum(len(b) for b in blocks)
    if blocks and n_pairs >= len(body) / 2:
        return blocks[0] if len(blocks) == 1 else blocks
    return body


def parse_output(text: str, structured: Any = None) -> Any:
    """An output as data: structured content (unwrapped from a lone ``content``/``result`` text),
    else JSON, else a Python literal, else ``parse_text``."""
    if isinstance(structured, dict) and len(structured) == 1:
        (only,) = structured.values()
        if isinstance(only, str):
            text, structured = only, None
        elif next(iter(structured)) == "result":
            return only
    if structured is not None:
        return structured
    stripped = text.strip()
    if stripped[:1] in "[{":
        try:
            return json.loads(stripped)
        except ValueError:
            try:
                return ast.literal_eval(stripped)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                pass
    return parse_text(text)


def leaves(data: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every scalar in ``data`` with its path."""
    if isinstance(data, dict):
        for k, v in data.items():
            yield from leaves(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from leaves(v, (*path, i))
    else:
        yield path, data


def get_path(data: Any, path: Path_) -> Any:
    for step in path:
        data = data[step]
    return data


# ---- exploration ---------------------------------------------------------------------------------------


@dataclass
class Observation:
    """One read call made while exploring, on both fresh servers."""

    id: int
    tool: str
    args: dict[str, Any]
    ok: bool
    text: str = ""
    data: Any = None
    # leaf paths that differed between the two servers, and the paths of lists whose length differed
    # (every leaf under such a list is in the set too)
    volatile: set[Path_] = field(default_factory=set)
    stable: bool = True  # the whole output was the same on both servers
    fed: dict[str, tuple[int, Path_]] = field(default_factory=dict)  # argument -> (observation, path)
    error: str = ""

    def stable_leaves(self) -> Iterator[tuple[Path_, Any]]:
        for path, value in leaves(self.data):
            if path not in self.volatile:
                yield path, value


@dataclass
class PoolValue:
    value: Any
    key: str  # the dict key it was found under ("name", "id", "path"), or "" in a list of strings
    obs: int
    path: Path_


@dataclass
class Exploration:
    server: str
    specs: dict[str, ToolSpec]
    kinds: dict[str, tuple[str, str]]  # tool -> (read|write|skip, why)
    observations: list[Observation] = field(default_factory=list)
    pool: list[PoolValue] = field(default_factory=list)
    seconds: float = 0.0
    stopped: str = ""  # why exploration ended: "done", "call budget", "time budget", a server failure
    uncallable: dict[str, str] = field(default_factory=dict)  # read tool -> why it was never called

    def constants(self) -> dict[str, Any]:
        """Arguments every successful read that takes them was called with one same value (a
        ``repo_path="."``): the server's context, reused as is by writes."""
        seen: dict[str, set[str]] = {}
        uses: dict[str, int] = {}
        for o in self.observations:
            if o.ok:
                for k, v in o.args.items():
                    seen.setdefault(k, set()).add(json.dumps(v, sort_keys=True))
                    uses[k] = uses.get(k, 0) + 1
        return {k: json.loads(next(iter(v))) for k, v in seen.items() if len(v) == 1 and uses[k] >= 2}

    def summary(self) -> dict[str, Any]:
        ok = [o for o in self.observations if o.ok]
        return {
            "tools": len(self.specs),
            "reads": sorted(t for t, (k, _) in self.kinds.items() if k == "read"),
            "writes": sorted(t for t, (k, _) in self.kinds.items() if k == "write"),
            "skipped": sorted(t for t, (k, _) in self.kinds.items() if k == "skip"),
            "why": {t: w for t, (_, w) in sorted(self.kinds.items())},
            "calls": len(self.observations),
            "ok_calls": len(ok),
            "unstable_outputs": sum(not o.stable for o in ok),
            "errors": len(self.observations) - len(ok),
            "values_seen": len(self.pool),
            "uncallable": dict(self.uncallable),
            "seconds": round(self.seconds, 1),
            "stopped": self.stopped,
        }


_PATHLIKE = {"path", "file", "filename", "dir", "directory", "folder", "source", "destination"}
_TEXTLIKE = {"query", "q", "search", "pattern", "text", "term", "keyword", "keywords", "filter"}


def _param_tokens(name: str) -> set[str]:
    return set(name_tokens(name))


def _match_score(param: str, key: str) -> int:
    """How well a value found under ``key`` suits an argument ``param`` (0: not at all)."""
    if not key:
        return 1 if _param_tokens(param) & _TEXTLIKE else 0
    p, k = _param_tokens(param), _param_tokens(key)
    if param.lower() == key.lower():
        return 5
    if p == {"names"} and k == {"name"} or param.rstrip("s") == key:
        return 4
    if k and k <= p:
        return 3
    if p & {"name", "names"} and k & {"name"}:
        return 2
    if {t.rstrip("s") for t in p} & _PATHLIKE and k & {"name", "path", "file", "filename"}:
        return 3
    if p & _TEXTLIKE and k & {"name", "title", "subject"}:
        return 2
    return 0


def _scalar_candidates(
    param: str, schema: dict[str, Any], pool: Sequence[PoolValue], obs_by_id: dict[int, Observation]
) -> list[tuple[Any, tuple[int, Path_] | None]]:
    """Values to try for one scalar argument: schema enum, default, examples, then matching seen values."""
    out: list[tuple[Any, tuple[int, Path_] | None]] = []
    options = [schema, *[s for s in schema.get("anyOf", []) if isinstance(s, dict)]]
    for s in options:
        for v in s.get("enum", []) or []:
            out.append((v, None))
        for v in s.get("examples", []) or []:
            out.append((v, None))
        if "default" in s and s["default"] is not None:
            out.append((s["default"], None))
    types = {s.get("type") for s in options if s.get("type")}
    raw_description = schema.get("description") or ""
    description = raw_description.lower()
    tokens = _param_tokens(param)
    if "string" in types or not types:
        if {t.rstrip("s") for t in tokens} & _PATHLIKE or param.lower().endswith("path"):
            out.append((".", None))
        sql = "sql" in description or "select" in description
        # values quoted in the description ("e.g. 't-1001'", "'local', 'remote' or 'all'") are examples
        if not sql:
            out.extend(
                (v, None) for v in re.findall(r"['\u2018\"`]([\w.:/-]{1,40})['\u2019\"`]", raw_description)
            )
        scored = []
        for pv in pool:
            if not isinstance(pv.value, str) or not (0 < len(pv.value) <= 120) or "\n" in pv.value:
                continue
            if not pv.key and (len(pv.value) > 40 or pv.value.rstrip().endswith(":")):
                continue  # a line of text: only short ones make sensible search terms
            if sql:
                src = obs_by_id[pv.obs]
                # table names come from a listing: a *table* tool called without arguments
                if "table" in src.tool and not src.args and pv.key in ("name", "table_name", "table"):
                    scored.append((3, f"SELECT * FROM {pv.value}", (pv.obs, pv.path)))
                continue
            score = _match_score(param, pv.key)
            if score and {t.rstrip("s") for t in tokens} & _PATHLIKE:
                src = obs_by_id[pv.obs]
                base = next((v for k, v in src.args.items() if _param_tokens(k) & _PATHLIKE), None)
                value = pv.value if base in (None, ".", "") else f"{str(base).rstrip('/')}/{pv.value}"
                scored.append((score, value, (pv.obs, pv.path)))
            elif score:
                scored.append((score, pv.value, (pv.obs, pv.path)))
        if not scored and not sql:  # nothing fits by name: values under identifier-like keys
            for pv in pool:
                ident = _param_tokens(pv.key) & {"id", "commit", "hash", "sha", "ref", "key", "name"}
                if ident and isinstance(pv.value, str) and 0 < len(pv.value) <= 80 and "\n" not in pv.value:
                    scored.append((1, pv.value, (pv.obs, pv.path)))
        scored.sort(key=lambda s: -s[0])
        out.extend((v, src) for _, v, src in scored)
    elif types & {"integer", "number"}:
        lo = schema.get("minimum", 1)
        out.append((max(1, int(lo)) if isinstance(lo, int | float) else 1, None))
    elif "boolean" in types:
        out.extend([(False, None), (True, None)])
    seen: set[str] = set()
    unique = []
    for v, src in out:
        key = json.dumps(v, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            unique.append((v, src))
    return unique


def argument_sets(
    spec: ToolSpec,
    pool: Sequence[PoolValue],
    obs_by_id: dict[int, Observation],
    examples: Sequence[dict[str, Any]] = (),
    per_tool: int = 40,
) -> Iterator[tuple[dict[str, Any], dict[str, tuple[int, Path_]]]]:
    """Argument dicts for a read tool: the user's examples, then each required argument filled from
    its candidates (one argument varied at a time, the others at their first candidate), then each
    optional enum value once."""
    for ex in examples:
        yield dict(ex), {}
    schema = spec.input_schema or {}
    props: dict[str, Any] = schema.get("properties", {}) or {}
    required = [p for p in schema.get("required", []) if p in props]
    cands: dict[str, list[tuple[Any, tuple[int, Path_] | None]]] = {}
    for p in required:
        s = props[p] if isinstance(props[p], dict) else {}
        if s.get("type") == "array":
            item = s.get("items", {}) if isinstance(s.get("items"), dict) else {}
            if item.get("type") not in (None, "string"):
                return  # arrays of objects: not guessed for reads
            cands[p] = [([v], src) for v, src in _scalar_candidates(p, item, pool, obs_by_id)]
        elif s.get("type") == "object":
            return
        else:
            cands[p] = _scalar_candidates(p, s, pool, obs_by_id)
        if not cands[p]:
            return
    base = {p: c[0] for p, c in cands.items()}
    n = 0

    def pack(choice: dict[str, tuple[Any, Any]]) -> tuple[dict[str, Any], dict[str, tuple[int, Path_]]]:
        return {p: v for p, (v, _) in choice.items()}, {p: s for p, (_, s) in choice.items() if s is not None}

    yield pack(base)
    n += 1
    for p in required:
        for c in cands[p][1:]:
            if n >= per_tool:
                return
            yield pack({**base, p: c})
            n += 1
    for p, s in props.items():
        if p in required or not isinstance(s, dict):
            continue
        for v, _ in _scalar_candidates(p, s, [], obs_by_id)[:6]:
            if "enum" in json.dumps(s) and n < per_tool:
                yield pack({**base, p: (v, None)})
                n += 1


def _resized_lists(a: Any, b: Any, path: Path_ = ()) -> Iterator[Path_]:
    """Paths of the lists whose lengths differ between two outputs (outermost only)."""
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            yield path
            return
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from _resized_lists(x, y, (*path, i))
    elif isinstance(a, dict) and isinstance(b, dict):
        for k in a.keys() & b.keys():
            yield from _resized_lists(a[k], b[k], (*path, k))


def _volatile(a: Any, b: Any) -> tuple[set[Path_], bool]:
    """Leaf paths whose values differ between two outputs, and whether the outputs are identical.

    A list whose length differs is volatile as a whole, whichever server saw more: its own path and
    every leaf under it, in both outputs. Comparing leaf by leaf is not enough there: the count, a sum
    or an ordinal pick would still pass on the items both happen to share."""
    la, lb = dict(leaves(a)), dict(leaves(b))
    diff = {p for p in la.keys() | lb.keys() if la.get(p, object()) != lb.get(p, object())}
    for lst in _resized_lists(a, b):
        diff.add(lst)
        diff |= {p for p in la.keys() | lb.keys() if p[: len(lst)] == lst}
    return diff, not diff


async def explore(
    server: str,
    boxes: Sequence[Any],
    *,
    overrides: dict[str, str] | None = None,
    examples: dict[str, list[dict[str, Any]]] | None = None,
    max_calls: int = 300,
    max_seconds: float = 120.0,
    per_tool: int = 40,
) -> Exploration:
    """Explore the read tools on two fresh toolboxes of the same server (``boxes``)."""
    start = time.perf_counter()
    overrides, examples = overrides or {}, examples or {}
    specs = {s.name: s for s in await boxes[0].list_tools()}
    kinds = {n: classify(s, overrides.get(n)) for n, s in specs.items()}
    exp = Exploration(server, specs, kinds)
    reads = [n for n in specs if kinds[n][0] == "read"]
    done: set[str] = set()
    by_id: dict[int, Observation] = {}
    tried: dict[str, int] = {n: 0 for n in reads}
    progress = True
    exp.stopped = "done"
    while progress:
        progress = False
        for tool in reads:  # one round: every read tool gets its next untried argument sets
            budget_hit = len(exp.observations) >= max_calls or time.perf_counter() - start > max_seconds
            if budget_hit:
                exp.stopped = "call budget" if len(exp.observations) >= max_calls else "time budget"
                break
            batch = []
            for args, fed in argument_sets(specs[tool], exp.pool, by_id, examples.get(tool, []), per_tool):
                key = tool + json.dumps(args, sort_keys=True, default=str)
                if key in done:
                    continue
                done.add(key)
                batch.append((args, fed))
                if len(batch) >= 4:
                    break
            if not batch and tried[tool] == 0 and tool not in exp.uncallable:
                exp.uncallable[tool] = "no value for a required argument (give one with --example)"
            for args, fed in batch:
                tried[tool] += 1
                exp.uncallable.pop(tool, None)
                obs = await _observe(len(exp.observations), tool, args, boxes)
                obs.fed = fed
                exp.observations.append(obs)
                by_id[obs.id] = obs
                progress = True
                if obs.ok:
                    _add_to_pool(exp.pool, obs)
            if any(getattr(b, "dead_servers", None) for b in boxes):
                exp.stopped = "server failed: " + "; ".join(
                    f"{k}: {v}" for b in boxes for k, v in (getattr(b, "dead_servers", None) or {}).items()
                )
                progress = False
                break
        if exp.stopped != "done":
            break
    exp.seconds = time.perf_counter() - start
    return exp


_ERROR_TEXT = re.compile(r"^\W*(error\b|[\w ]{0,30}\berror:|exception\b|traceback\b)", re.I)


def _error_text(text: str) -> bool:
    """An error some servers send as a normal result ("Database error: no such table")."""
    return len(text) < 2000 and bool(_ERROR_TEXT.match(text))


async def _observe(i: int, tool: str, args: dict[str, Any], boxes: Sequence[Any]) -> Observation:
    results = [await box.call_tool(tool, dict(args)) for box in boxes]
    first = results[0]
    if not all(r.ok and not _error_text(r.text) for r in results):
        bad = next(r for r in results if not r.ok or _error_text(r.text))
        return Observation(i, tool, args, False, bad.text[:500], error=bad.text[:200])
    if any(len(r.text) > MAX_OUTPUT_CHARS for r in results):
        return Observation(
            i, tool, args, False, first.text[:500], error=f"output too large ({len(first.text)} chars)"
        )
    datas = [parse_output(r.text, r.structured) for r in results]
    volatile: set[Path_] = set()
    stable = True
    for other in datas[1:]:
        v, same = _volatile(datas[0], other)
        volatile |= v
        stable = stable and same and results[0].text == results[1].text
    return Observation(i, tool, args, True, first.text, datas[0], volatile, stable)


def _add_to_pool(pool: list[PoolValue], obs: Observation) -> None:
    seen = {(p.value, p.key) for p in pool if isinstance(p.value, str | int | float)}
    for path, value in obs.stable_leaves():
        if isinstance(value, bool) or value is None:
            continue
        # the nearest dict key: a field's name, or for an item of a list of scalars the list's ("tags");
        # "" for a top-level list of lines
        key = next((str(s) for s in reversed(path) if isinstance(s, str)), "")
        if (value, key) in seen:
            continue
        seen.add((value, key))
        pool.append(PoolValue(value, key, obs.id, path))
