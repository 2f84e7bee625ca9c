"""MCP-Atlas's public task format, in and out (docs/mcp-atlas.md).

A record has five fields: ``TASK`` (id), ``ENABLED_TOOLS`` (tool names), ``PROMPT``, ``GTFA_CLAIMS``
(claims the final answer must make) and ``TRAJECTORY`` (the reference calls: ``{"tool"|"name",
"args"|"arguments"}``). The public dataset stores the list fields as JSON strings; plain lists are
accepted too. Each claim is judged fulfilled (1), partially fulfilled (0.5) or not (0); a task's
coverage is the mean, and it passes when coverage >= 0.75 (``toolkit.rewards.atlas``).

``read_atlas_tasks`` reads a JSONL file (one record a line) or a JSON file (a list of records, or
``{"tasks": [...]}``) and names the file, the record (and its line) and the field of anything wrong.
``to_kit_task`` turns a record into a kit ``Task`` whose servers are the ones that provide its tools:
the kit's own or external ones (``ExternalServer``); a record whose tools no startable server provides
is reported, not run. ``from_kit_task`` writes a kit task in the format.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.records import GoldCall, RubricItem, Task

FIELDS = ("TASK", "ENABLED_TOOLS", "PROMPT", "GTFA_CLAIMS", "TRAJECTORY")
PASS_THRESHOLD = 0.75


class AtlasFormatError(ValueError):
    """A record that is not MCP-Atlas's format: names the file, the record (and line) and the field."""

    def __init__(self, path: str | Path, where: str, field: str | None, problem: str):
        self.path, self.where, self.field = str(path), where, field
        at = f", field {field}" if field else ""
        super().__init__(f"{path}: {where}{at}: {problem}")


@dataclass
class AtlasTask:
    task: str
    enabled_tools: list[str]
    prompt: str
    claims: list[str]
    trajectory: list[dict[str, Any]]  # {"tool": name, "args": {...}}
    where: str = ""  # "record N (line L)" in its file


def _as_list(value: Any, raise_: Callable[[str], AtlasFormatError]) -> list[Any]:
    """A list field: a list, a JSON array string, or a Python list literal (the public CSV has both)."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise raise_(f"not a JSON list: {text[:80]!r}") from None
    if not isinstance(value, list):
        raise raise_(f"expected a list, got {type(value).__name__}")
    return value


def parse_record(record: Any, path: str | Path, where: str) -> AtlasTask:
    """One record checked field by field."""
    if not isinstance(record, dict):
        raise AtlasFormatError(path, where, None, f"expected an object with {', '.join(FIELDS)}")
    missing = [f for f in FIELDS if f not in record]
    if missing:
        raise AtlasFormatError(path, where, missing[0], f"missing (a record needs {', '.join(FIELDS)})")

    def err(field: str) -> Callable[[str], AtlasFormatError]:
        return lambda problem: AtlasFormatError(path, where, field, problem)

    for field in ("TASK", "PROMPT"):
        if not isinstance(record[field], str | int) or not str(record[field]).strip():
            raise err(field)("must be a non-empty string")
    tools = _as_list(record["ENABLED_TOOLS"], err("ENABLED_TOOLS"))
    if not tools or not all(isinstance(t, str) and t for t in tools):
        raise err("ENABLED_TOOLS")("must be a non-empty list of tool names")
    claims = _as_list(record["GTFA_CLAIMS"], err("GTFA_CLAIMS"))
    if not claims or not all(isinstance(c, str) and c.strip() for c in claims):
        raise err("GTFA_CLAIMS")("must be a non-empty list of claim strings")
    steps = []
    for i, step in enumerate(_as_list(record["TRAJECTORY"], err("TRAJECTORY"))):
        name = step.get("tool", step.get("name")) if isinstance(step, dict) else None
        args = step.get("args", step.get("arguments", {})) if isinstance(step, dict) else None
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                args = None
        if not isinstance(name, str) or not isinstance(args, dict):
            raise err("TRAJECTORY")(f"step {i} needs a tool name ('tool') and an object of 'args'")
        steps.append({"tool": name, "args": args})
    return AtlasTask(str(record["TASK"]), tools, str(record["PROMPT"]), claims, steps, where)


def read_atlas_tasks(path: str | Path) -> list[AtlasTask]:
    """Every record of a JSONL or JSON file; the first bad one raises ``AtlasFormatError``."""
    path = Path(path)
    if not path.is_file():
        raise AtlasFormatError(path, "file", None, "not found")
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        raise AtlasFormatError(path, "file", None, "is empty")
    records: list[tuple[Any, str]] = []
    stripped = text.lstrip()
    whole: Any = None
    if stripped.startswith("["):
        try:
            whole = json.loads(text)
        except json.JSONDecodeError as exc:
            raise AtlasFormatError(path, f"line {exc.lineno}", None, f"not JSON: {exc.msg}") from None
    elif stripped.startswith("{") and "\n{" not in stripped.strip():
        try:  # one object: {"tasks": [...]} or a single record
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None
    if isinstance(whole, dict) and isinstance(whole.get("tasks"), list):
        whole = whole["tasks"]
    if isinstance(whole, list):
        records = [(r, f"record {i + 1}") for i, r in enumerate(whole)]
    else:
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            where = f"record {len(records) + 1} (line {n})"
            try:
                records.append((json.loads(line), where))
            except json.JSONDecodeError as exc:
                raise AtlasFormatError(path, where, None, f"not JSON: {exc.msg}") from None
    if not records:
        raise AtlasFormatError(path, "file", None, "has no records")
    return [parse_record(r, path, where) for r, where in records]


# ---- servers --------------------------------------------------------------------------------------


def resolve_tool(name: str, tool_servers: Mapping[str, str]) -> str | None:
    """The tool a record names: itself, or without a ``<server>_`` / ``<server>__`` / ``<server>.``
    prefix (MCP-Atlas names some tools after their server)."""
    if name in tool_servers:
        return name
    for server in sorted({s for s in tool_servers.values()}, key=len, reverse=True):
        m = re.fullmatch(rf"{re.escape(server)}(?:__|_|\.|-)(.+)", name)
        if m and m.group(1) in tool_servers and tool_servers[m.group(1)] == server:
            return m.group(1)
    return None


def to_kit_task(at: AtlasTask, tool_servers: Mapping[str, str]) -> Task | str:
    """A kit Task, or the reason it cannot run here (tools no startable server provides)."""
    resolved = {
        t: resolve_tool(t, tool_servers) for t in [*at.enabled_tools, *(s["tool"] for s in at.trajectory)]
    }
    unknown = sorted(t for t, r in resolved.items() if r is None)
    if unknown:
        return f"no server you can start provides {', '.join(unknown)}"
    tools = sorted({resolved[t] for t in at.enabled_tools})  # type: ignore[type-var]
    return Task(
        id=at.task,
        split="eval",
        prompt=at.prompt,
        servers=sorted({tool_servers[t] for t in tools}),
        tools=tools,
        seed=0,
        gold=[GoldCall(resolved[s["tool"]], s["args"]) for s in at.trajectory],  # type: ignore[arg-type]
        # The reference answer states every claim, so the gold policy answers with them.
        answers={"answer": "; ".join(at.claims)},
        rubric=[
            RubricItem(f"claim{i + 1}", c, "answer_correctness", True, {"type": "claim"})
            for i, c in enumerate(at.claims)
        ],
        metadata={"kind": "atlas", "source": "mcp-atlas", "where": at.where},
    )


def from_kit_task(task: Task) -> dict[str, str]:
    """A kit task as an MCP-Atlas record (list fields as JSON strings, as the public dataset has
    them). Claims: the task's essential rubric items (all items when none is essential)."""
    items = [r for r in task.rubric if r.essential] or list(task.rubric)
    if not items:
        raise ValueError(f"task {task.id}: no rubric items to write as GTFA_CLAIMS")
    trajectory = [{"tool": g.name, "args": g.arguments} for g in task.gold]
    return {
        "TASK": task.id,
        "ENABLED_TOOLS": json.dumps(list(task.tools)),
        "PROMPT": task.prompt,
        "GTFA_CLAIMS": json.dumps([r.text for r in items]),
        "TRAJECTORY": json.dumps(trajectory),
    }


def npm_servers(npm_dir: str | Path) -> dict[str, Callable[[Path], Any]]:
    """The external npm servers found under ``npm_dir`` (``.../node_modules``): name -> a factory
    taking a fresh scratch folder (each episode gets its own: a new filesystem root, a new memory file)."""
    from toolkit.envs.external import ExternalServer

    base = Path(npm_dir).resolve() / "@modelcontextprotocol"
    out: dict[str, Callable[[Path], Any]] = {}
    if shutil.which("node") is None:
        return out
    fs, mem = base / "server-filesystem" / "dist" / "index.js", base / "server-memory" / "dist" / "index.js"
    if fs.exists():
        out["filesystem"] = lambda d: ExternalServer(
            "filesystem", command=["node", str(fs), str(d)], cwd=str(d)
        )
    if mem.exists():
        out["memory"] = lambda d: ExternalServer(
            "memory", command=["node", str(mem)], env={"MEMORY_FILE_PATH": str(d / "memory.jsonl")}
        )
    return out


def parse_externals(specs: Sequence[str]) -> dict[str, Callable[[Path], Any]]:
    """``NAME=COMMAND`` options as server factories (each episode starts the command in a fresh
    scratch folder)."""
    import shlex

    from toolkit.envs.external import ExternalServer

    out: dict[str, Callable[[Path], Any]] = {}
    for spec in specs:
        raw, sep, command = spec.partition("=")
        name, argv = raw.strip(), shlex.split(command)
        if not sep or not name or not argv:
            raise ValueError(f"--external {spec!r}: expected NAME=COMMAND, e.g. time='mcp-server-time'")
        out[name] = lambda d, n=name, a=argv: ExternalServer(n, command=a, cwd=str(d))
    return out


def discover_tools(externals: Mapping[str, Callable[[Path], Any]]) -> dict[str, str]:
    """``{tool: server}`` for the kit's domain servers and each external server (started once to list
    its tools)."""
    import anyio

    from toolkit.envs import open_episode
    from toolkit.envs.registry import DOMAIN_SERVERS, tool_specs

    # An external server replaces the kit's server of the same name (MCP-Atlas's "filesystem" is the
    # npm one), and its tools take precedence over kit tools of the same name.
    out = {s.name: s.server for s in tool_specs([n for n in DOMAIN_SERVERS if n not in externals])}

    async def listing(name: str, factory: Callable[[Path], Any]) -> list[str]:
        with tempfile.TemporaryDirectory() as d:
            async with open_episode(servers=[], external=[factory(Path(d))], timeout=30) as tb:
                return [t.name for t in await tb.list_tools()]

    for name, factory in externals.items():
        for tool in anyio.run(listing, name, factory):
            out[tool] = name
    return out


def episode_opener(externals: Mapping[str, Callable[[Path], Any]]) -> Callable[[Task], Any]:
    """``task -> async context manager``: the task's kit servers plus fresh external processes, each
    with its own scratch folder, removed when the episode ends."""
    from toolkit.envs import open_episode

    @asynccontextmanager
    async def opener(task: Task) -> AsyncIterator[Any]:
        with tempfile.TemporaryDirectory(prefix="atlas-") as d:
            ext = [externals[s](Path(d)) for s in task.servers if s in externals]
            async with open_episode(task, external=ext, timeout=30) as tb:
                yield tb

    return opener


def summarize(results: Sequence[Any], skipped: Mapping[str, str]) -> dict[str, Any]:
    """Coverage (mean over tasks of the mean claim score) and pass rate (coverage >= 0.75)."""
    n = len(results)
    out: dict[str, Any] = {"tasks_run": n, "tasks_skipped": len(skipped), "skipped": dict(skipped)}
    if n:
        out["coverage"] = sum(r.score for r in results) / n
        out["pass_rate"] = sum(r.score >= PASS_THRESHOLD for r in results) / n
        out["ungraded_claims"] = sum(r.details.get("ungraded", 0) for r in results)
    return out
