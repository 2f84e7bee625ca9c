"""MCP-Atlas's task records as published, read and written (docs/mcp-atlas.md).

Scale publishes the tasks as one Parquet file (the data set), and CSV samples (the harness reads CSV);
the kit also reads JSONL and JSON. A record has ``TASK``, ``ENABLED_TOOLS`` (``<server>_<tool>``
names), ``PROMPT``, ``GTFA_CLAIMS`` (JSON or a Python list literal: both samples exist) and
``TRAJECTORY``: an OpenAI-style message list, assistant messages with ``tool_calls[].function``
(``name``, ``arguments`` as a JSON string) followed by ``role: "tool"`` messages holding the outputs
(``content`` a string or a list of ``{"type": "text", "text"}`` blocks). The kit's older
``[{"tool", "args"}]`` form is still read. Optional: ``GTFA`` (the reference answer's prose),
``REQUIRED_TOOLS``, ``REQUIRED_SERVERS``, ``SPLIT``, and the kit's own ``KIT_SEED`` (the world seed of a
kit task written in the format, so that running it back replays the same data).

Parquet columns may hold the list fields as text (JSON or a literal) or natively: lists of strings,
trajectories as lists of structs (or maps). A Parquet struct has one set of fields for all rows, so a
call's native arguments carry every argument name any call of the column has, absent ones as null:
a null argument of a native trajectory is read as absent.

Claims written as a Python literal are parsed with ``ast.literal_eval``, which reads literals only and
never runs code. Anything wrong names the file, the record (and its line or row) and the field.
"""

from __future__ import annotations

import ast
import csv
import json
import math
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkit.records import RecordError, iter_json_objects

FIELDS = ("TASK", "ENABLED_TOOLS", "PROMPT", "GTFA_CLAIMS", "TRAJECTORY")


class AtlasFormatError(ValueError):
    """A record that is not MCP-Atlas's format: names the file, the record (and line) and the field."""

    def __init__(self, path: str | Path, where: str, field: str | None, problem: str):
        self.path, self.where, self.field = str(path), where, field
        at = f", field {field}" if field else ""
        super().__init__(f"{path}: {where}{at}: {problem}")


@dataclass
class AtlasStep:
    """One reference tool call: the record's name for the tool, its arguments, and the output the
    published trajectory recorded for it (None when the record has none, as in the older form)."""

    tool: str
    args: dict[str, Any]
    output: str | None = None


@dataclass
class AtlasTask:
    task: str
    enabled_tools: list[str]
    prompt: str
    claims: list[str]
    trajectory: list[AtlasStep]
    where: str = ""  # "record N (line L)" in its file
    final_answer: str | None = None  # the recorded final assistant message, else GTFA
    required_servers: list[str] = field(default_factory=list)
    kit_seed: int = 0  # the kit world's seed (KIT_SEED); MCP-Atlas's own records have none


def _blank(value: Any) -> bool:
    return (
        value is None
        or (isinstance(value, float) and math.isnan(value))
        or (isinstance(value, str) and value == "")
    )


def _as_list(value: Any, raise_: Callable[[str], AtlasFormatError]) -> list[Any]:
    """A list field: a list, a JSON array string, or a Python list literal (read as a literal only)."""
    if hasattr(value, "tolist"):  # a numpy array from Parquet
        value = value.tolist()
    if isinstance(value, str):
        text = value.strip()
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                raise raise_(f"not a JSON list or a Python list literal: {text[:80]!r}") from None
    if not isinstance(value, list):
        raise raise_(f"expected a list, got {type(value).__name__}")
    return value


def content_text(content: Any) -> str:
    """A message's content as text: a string, or the text of its ``{"type": "text"}`` blocks."""
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return "" if _blank(content) else str(content)


def _arguments(raw: Any) -> dict[str, Any] | None:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            return None
    return raw if isinstance(raw, dict) else None


def parse_trajectory(
    steps: list[Any], raise_: Callable[[str], AtlasFormatError]
) -> tuple[list[AtlasStep], str | None]:
    """(calls with their recorded outputs, the final assistant message) of either trajectory form."""
    if not any(isinstance(s, dict) and "role" in s for s in steps):  # the kit's older {tool, args} form
        out = []
        for i, step in enumerate(steps):
            name = step.get("tool", step.get("name")) if isinstance(step, dict) else None
            args = _arguments(step.get("args", step.get("arguments", {}))) if isinstance(step, dict) else None
            if not isinstance(name, str) or not name or args is None:
                raise raise_(f"step {i} needs a tool name ('tool') and an object of 'args'")
            out.append(AtlasStep(name, args))
        return out, None
    calls: list[AtlasStep] = []
    by_id: dict[str, AtlasStep] = {}
    final: str | None = None
    for i, msg in enumerate(steps):
        if not isinstance(msg, dict) or msg.get("role") not in ("assistant", "tool", "user", "system"):
            raise raise_(f"message {i} is not a chat message with a role (assistant, tool, user, system)")
        if msg["role"] == "assistant":
            tool_calls = msg.get("tool_calls") or []
            if not tool_calls:
                text = content_text(msg.get("content")).strip()
                final = text or final
                continue
            for j, tc in enumerate(tool_calls):
                fn = tc.get("function") if isinstance(tc, dict) else None
                name = fn.get("name") if isinstance(fn, dict) else None
                args = _arguments(fn.get("arguments", {})) if isinstance(fn, dict) else None
                if not isinstance(name, str) or not name or args is None:
                    raise raise_(
                        f"message {i}, tool call {j}: needs function.name and function.arguments "
                        "(a JSON object, or a string holding one)"
                    )
                step = AtlasStep(name, args)
                calls.append(step)
                if tc.get("id"):
                    by_id[str(tc["id"])] = step
        elif msg["role"] == "tool":
            target = by_id.get(str(msg.get("tool_call_id")))
            if target is None:  # no id: the earliest call still waiting for its output
                target = next((c for c in calls if c.output is None), None)
            if target is not None:
                target.output = content_text(msg.get("content"))
    return calls, final


def parse_record(record: Any, path: str | Path, where: str) -> AtlasTask:
    """One record checked field by field."""
    if not isinstance(record, dict):
        raise AtlasFormatError(path, where, None, f"expected an object with {', '.join(FIELDS)}")
    missing = [f for f in FIELDS if f not in record or _blank(record[f])]
    if missing:
        raise AtlasFormatError(path, where, missing[0], f"missing (a record needs {', '.join(FIELDS)})")

    def err(name: str) -> Callable[[str], AtlasFormatError]:
        return lambda problem: AtlasFormatError(path, where, name, problem)

    for name in ("TASK", "PROMPT"):
        if not isinstance(record[name], str | int) or not str(record[name]).strip():
            raise err(name)("must be a non-empty string")
    tools = _as_list(record["ENABLED_TOOLS"], err("ENABLED_TOOLS"))
    # the harness also accepts tool-definition objects: keep their names
    tools = [t.get("name") if isinstance(t, dict) else t for t in tools]
    if not tools or not all(isinstance(t, str) and t for t in tools):
        raise err("ENABLED_TOOLS")("must be a non-empty list of tool names")
    claims = _as_list(record["GTFA_CLAIMS"], err("GTFA_CLAIMS"))
    if not claims or not all(isinstance(c, str) and c.strip() for c in claims):
        raise err("GTFA_CLAIMS")("must be a non-empty list of claim strings")
    steps, final = parse_trajectory(_as_list(record["TRAJECTORY"], err("TRAJECTORY")), err("TRAJECTORY"))
    if final is None and not _blank(record.get("GTFA")):
        final = str(record["GTFA"]).strip() or None
    servers = (
        []
        if _blank(record.get("REQUIRED_SERVERS"))
        else _as_list(record["REQUIRED_SERVERS"], err("REQUIRED_SERVERS"))
    )
    seed = record.get("KIT_SEED")
    if _blank(seed):
        seed = 0
    elif isinstance(seed, str) and seed.strip().lstrip("-").isdigit():
        seed = int(seed)  # a CSV cell
    elif isinstance(seed, float) and seed.is_integer():
        seed = int(seed)  # a column pandas read as floats (another row left it empty)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise err("KIT_SEED")(f"must be an integer, got {seed!r}")
    return AtlasTask(
        str(record["TASK"]), tools, str(record["PROMPT"]), [c.strip() for c in claims], steps, where,
        final, [str(s) for s in servers], seed,
    )  # fmt: skip


# ---- files ----------------------------------------------------------------------------------------


def _csv_records(path: Path) -> Iterator[tuple[Any, str]]:
    csv.field_size_limit(sys.maxsize)  # trajectories are far longer than csv's default field limit
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if not reader.fieldnames:
            return
        start = reader.line_num + 1
        for n, row in enumerate(reader, start=1):
            if None in row:  # more cells than the header has names
                raise AtlasFormatError(path, f"record {n} (line {start})", None, "more cells than columns")
            yield row, f"record {n} (line {start})"
            start = reader.line_num + 1


def _parquet_records(path: Path) -> Iterator[tuple[Any, str]]:
    import pyarrow.parquet as pq

    try:  # plain Python values: lists, dicts for structs and maps, None for nulls
        rows = pq.read_table(path).to_pylist(maps_as_pydicts="strict")
    except Exception as exc:  # pyarrow's errors have many types; all mean "not a Parquet file we can read"
        raise AtlasFormatError(path, "file", None, f"not a readable Parquet file: {exc}") from None
    for n, row in enumerate(rows, start=1):
        if isinstance(row.get("TRAJECTORY"), list):
            row["TRAJECTORY"] = [_native_step(step) for step in row["TRAJECTORY"]]
        yield row, f"record {n} (row {n})"


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _native_step(step: Any) -> Any:
    """A step of a native Parquet trajectory with its arguments' nulls dropped (module docstring: a
    struct column gives every call every argument name of the column)."""
    if not isinstance(step, dict):
        return step
    step = dict(step)
    for key in ("args", "arguments"):  # the older {tool, args} form
        if isinstance(step.get(key), dict):
            step[key] = _without_nulls(step[key])
    calls = []
    for tc in step.get("tool_calls") or []:
        fn = tc.get("function") if isinstance(tc, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("arguments"), dict):
            tc = tc | {"function": fn | {"arguments": _without_nulls(fn["arguments"])}}
        calls.append(tc)
    if calls:
        step["tool_calls"] = calls
    return step


def _json_records(path: Path, text: str) -> Iterator[tuple[Any, str]]:
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
        yield from ((r, f"record {i + 1}") for i, r in enumerate(whole))
        return
    count = 0
    try:
        for lineno, obj in iter_json_objects(path, what="MCP-Atlas"):
            count += 1
            yield obj, f"record {count} (line {lineno})"
    except RecordError as exc:  # "<path>:<line>: ...": the record's number and line, as for CSV
        line = re.match(rf"{re.escape(str(path))}:(\d+):", str(exc))
        cause = exc.__cause__
        problem = f"not JSON: {cause.msg}" if isinstance(cause, json.JSONDecodeError) else str(cause)
        where = f"record {count + 1} (line {line.group(1)})" if line else f"record {count + 1}"
        raise AtlasFormatError(path, where, None, problem) from None


def read_atlas_tasks(path: str | Path) -> list[AtlasTask]:
    """Every record of a Parquet, CSV, JSONL or JSON file; the first bad one raises ``AtlasFormatError``."""
    path = Path(path)
    if not path.is_file():
        raise AtlasFormatError(path, "file", None, "not found")
    if path.stat().st_size == 0:
        raise AtlasFormatError(path, "file", None, "is empty")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        records = list(_parquet_records(path))
    elif suffix == ".csv":
        records = list(_csv_records(path))
    else:
        text = path.read_text(encoding="utf-8")
        if not text.strip():
            raise AtlasFormatError(path, "file", None, "is empty")
        records = list(_json_records(path, text))
    if not records:
        raise AtlasFormatError(path, "file", None, "has no records")
    return [parse_record(r, path, where) for r, where in records]


def write_atlas_records(records: list[dict[str, Any]], out: str | Path) -> Path:
    """Records to ``out``: CSV (what MCP-Atlas's harness reads) when it ends in .csv, Parquet for
    .parquet, else JSONL. List fields are JSON strings, as in the published files."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    suffix = out.suffix.lower()
    if suffix in (".csv", ".parquet"):
        import pandas as pd

        frame = pd.DataFrame(records)
        frame.to_csv(out, index=False) if suffix == ".csv" else frame.to_parquet(out, index=False)
    else:
        with out.open("w", encoding="utf-8") as f:
            for rec in records:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return out
