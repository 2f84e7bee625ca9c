"""One reader and writer per file format (issue 50): the rows of the rollout log, the prescreen pool,
metrics, sampled and MCP-Atlas results are typed records in ``toolkit.records`` that round-trip through
JSON; a bad line in any format names its file and line; toolkit/ parses JSONL line by line in one place
(``records.iter_json_objects``); and each writer of a row's file writes that row's type."""

from __future__ import annotations

import ast
import gzip
import json
import subprocess
from pathlib import Path

import pytest

from toolkit.paths import PACKAGE_DIR
from toolkit.records import (
    AtlasResultRow,
    CallRecord,
    MetricsRow,
    PoolRow,
    RecordError,
    RolloutRecord,
    SampleRow,
    Task,
    Trajectory,
    iter_json_objects,
    read_jsonl,
    write_jsonl,
)

ROOT = PACKAGE_DIR.parent


def trajectory() -> Trajectory:
    call = CallRecord("add", {"a": 2, "b": 3}, ok=True, result="5", latency=0.1)
    messages = [{"role": "user", "content": "Add 2 and 3."}, {"role": "assistant", "content": "5"}]
    return Trajectory("t1", messages, [call], final_answer="5", stop_reason="finish", completion_ids=[1, 2])


ROWS = {
    RolloutRecord: RolloutRecord.from_trajectory(7, trajectory(), round_=1, kept=False),
    PoolRow: PoolRow("t1", kept=True, kind="lookup", mean=0.5, spread=0.25),
    MetricsRow: MetricsRow(3, "grpo", 1, 12.5, {"loss": 0.25, "kinds/lookup/reward_mean": None}),
    SampleRow: SampleRow("t1", 0.75, category="write", answer_failed=False, stop_reason="finish"),
    AtlasResultRow: AtlasResultRow("a1", 0.5, False, "finish", 2, 1, [{"claim": "c", "verdict": "pass"}]),
}
# the one field whose value, written as another JSON type, each format refuses
WRONG_TYPE = {
    RolloutRecord: "step",
    PoolRow: "kept",
    MetricsRow: "loss",
    SampleRow: "score",
    AtlasResultRow: "calls",
}


@pytest.mark.parametrize("kind", list(ROWS), ids=lambda k: k.__name__)
def test_each_row_type_round_trips_through_a_file(kind, tmp_path):
    path = tmp_path / "rows.jsonl"
    write_jsonl(path, [ROWS[kind], ROWS[kind]])
    assert read_jsonl(path, kind) == [ROWS[kind], ROWS[kind]]
    assert kind.from_dict(json.loads(json.dumps(ROWS[kind].to_dict()))) == ROWS[kind]


@pytest.mark.parametrize("kind", [Task, Trajectory, *ROWS], ids=lambda k: k.__name__)
def test_a_bad_line_in_each_format_names_file_and_line(kind, tmp_path):
    good = (
        json.dumps(ROWS[kind].to_dict())
        if kind in ROWS
        else (Path(ROOT / "data" / "tasks" / "eval.jsonl").read_text().splitlines()[0])
        if kind is Task
        else json.dumps(trajectory().to_dict())
    )
    path = tmp_path / "f.jsonl"
    path.write_text(f"{good}\n\n{{not json\n{good}\n")
    with pytest.raises(RecordError, match=rf"f\.jsonl:3: not a valid {kind.__name__} record"):
        read_jsonl(path, kind)
    if kind in WRONG_TYPE:  # a line that is JSON but not this record
        row = ROWS[kind].to_dict() | {WRONG_TYPE[kind]: "seven"}
        path.write_text(f"{good}\n{json.dumps(row)}\n")
        with pytest.raises(RecordError, match=rf"f\.jsonl:2: not a valid {kind.__name__} record"):
            read_jsonl(path, kind)


def test_a_log_forgives_a_torn_last_line_only(tmp_path):
    line = json.dumps(ROWS[MetricsRow].to_dict())
    path = tmp_path / "metrics.jsonl"
    path.write_text(f"{line}\n{line[:20]}")  # a killed run stopped mid-line
    assert len(read_jsonl(path, MetricsRow, torn_tail=True)) == 1
    with pytest.raises(RecordError, match=r"metrics\.jsonl:2"):
        read_jsonl(path, MetricsRow)
    path.write_text(f"{line}\n{line[:20]}\n{line}\n")  # resumed after it: the file is damaged
    with pytest.raises(RecordError, match=r"metrics\.jsonl:2"):
        read_jsonl(path, MetricsRow, torn_tail=True)
    assert [n for n, _ in iter_json_objects(path, skip_bad=True)] == [1, 3]


def test_a_gzipped_file_reads_as_its_text_and_a_bad_line_names_the_gz_file(tmp_path):
    line = json.dumps(ROWS[MetricsRow].to_dict())
    path = tmp_path / "metrics.jsonl.gz"
    path.write_bytes(gzip.compress(f"{line}\n\n{line}\n".encode()))
    assert len(read_jsonl(path, MetricsRow)) == 2
    path.write_bytes(gzip.compress(f"{line}\nnot json\n".encode()))
    with pytest.raises(RecordError, match=r"metrics\.jsonl\.gz:2"):
        read_jsonl(path, MetricsRow)


def test_the_rollout_record_is_the_episode_without_its_token_view():
    traj = trajectory()
    record = ROWS[RolloutRecord]
    assert "completion_ids" not in record.to_dict() and record.to_dict()["calls"][0]["name"] == "add"
    back = record.to_trajectory()
    assert back.calls == traj.calls and back.final_answer == "5" and back.turn_answers == ["5"]
    assert back.metadata == {"round": 1, "kept": False} and back.completion_ids == []


def test_metrics_rows_are_flat_on_disk():
    row = MetricsRow.from_dict({"step": 4, "phase": "sft", "loss": 1.5, "grad_norm": None})
    assert row.values == {"loss": 1.5, "grad_norm": None} and row.phase_step is None
    assert row.to_dict() == {"step": 4, "phase": "sft", "loss": 1.5, "grad_norm": None}


def test_the_run_writers_write_their_rows(tmp_path):
    """The trainer's rollout log, its metrics callback and the prescreen write their row types: read back
    typed, each file holds what was logged (the metrics row built from TRL's log dict, NaN as null)."""
    from types import SimpleNamespace

    from toolkit.train.callbacks import MetricsJsonlCallback
    from toolkit.train.prescreen import PoolScreen
    from toolkit.train.rollout import RolloutLog

    rollouts = tmp_path / "rollouts.jsonl"
    RolloutLog(rollouts).append(SimpleNamespace(state=SimpleNamespace(global_step=7)), [ROWS[RolloutRecord]])
    assert read_jsonl(rollouts, RolloutRecord, torn_tail=True) == [ROWS[RolloutRecord]]
    metrics = tmp_path / "metrics.jsonl"
    state = SimpleNamespace(is_world_process_zero=True, global_step=1)
    MetricsJsonlCallback(metrics, "sft", step_offset=2).on_log(
        None, state, None, logs={"loss": 0.5, "x": "s"}
    )
    MetricsJsonlCallback(metrics, "grpo").on_log(None, state, None, logs={"kl": float("nan")})
    (sft, grpo) = read_jsonl(metrics, MetricsRow)
    assert (sft.step, sft.phase, sft.phase_step, sft.values) == (3, "sft", 1, {"loss": 0.5})
    assert (grpo.step, grpo.phase, grpo.values) == (1, "grpo", {"kl": None}) and grpo.elapsed_s is not None
    pool = tmp_path / "pool.jsonl"
    PoolScreen([ROWS[PoolRow], PoolRow("t2", kept=False)]).write(pool)
    assert read_jsonl(pool, PoolRow) == [ROWS[PoolRow], PoolRow("t2", kept=False)]


def test_every_committed_run_file_reads_as_its_record():
    kinds = {"metrics.jsonl": MetricsRow, "pool.jsonl": PoolRow, "samples.jsonl": SampleRow}
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    read = 0
    for name in files:
        kind = next((k for suffix, k in kinds.items() if name.endswith(suffix)), None)
        if kind is not None:
            rows = read_jsonl(ROOT / name, kind)
            assert rows, name
            read += 1
            raw = [obj for _, obj in iter_json_objects(ROOT / name)]
            assert [kind.from_dict(r.to_dict()) for r in rows] == [kind.from_dict(o) for o in raw]
    assert read >= 3 or not files  # a checkout without git history has nothing to read


LINE_SOURCES = ("splitlines", "readlines", "open(")


def line_parsers(source: str) -> list[str]:
    """The functions of ``source`` that call json.loads once per line of a file: in a loop or
    comprehension over ``.splitlines()``, ``.readlines()``, ``open(...)`` or a file opened by ``with``."""
    found = set()
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        files = {
            item.optional_vars.id
            for node in ast.walk(fn)
            if isinstance(node, ast.With | ast.AsyncWith)
            for item in node.items
            if isinstance(item.optional_vars, ast.Name) and "open(" in ast.unparse(item.context_expr)
        }
        for node in ast.walk(fn):
            loops = [node.iter] if isinstance(node, ast.For | ast.AsyncFor) else []
            if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp):
                loops = [g.iter for g in node.generators]
            over_lines = any(
                any(s in ast.unparse(it) for s in LINE_SOURCES)
                or any(isinstance(n, ast.Name) and n.id in files for n in ast.walk(it))
                for it in loops
            )
            loads = any(
                isinstance(c, ast.Call) and ast.unparse(c.func) == "json.loads" for c in ast.walk(node)
            )
            if over_lines and loads:
                found.add(fn.name)
    return sorted(found)


def test_the_line_parser_finder_finds_the_usual_shapes():
    shapes = [
        "def a(p):\n    return [json.loads(x) for x in p.read_text().splitlines() if x.strip()]",
        "def b(p):\n    with p.open() as fh:\n        return tuple(json.loads(x) for x in fh)",
        "def c(p):\n    for n, line in enumerate(open(p), 1):\n        rows.append(json.loads(line))",
    ]
    assert [line_parsers(s) for s in shapes] == [["a"], ["b"], ["c"]]
    assert line_parsers("def d(p):\n    return json.loads(p.read_text())") == []


def test_toolkit_has_one_line_by_line_jsonl_parser():
    parsers = [
        f"{path.relative_to(ROOT)}:{name}"
        for path in sorted(PACKAGE_DIR.rglob("*.py"))
        for name in line_parsers(path.read_text(encoding="utf-8"))
    ]
    assert parsers == ["toolkit/records.py:iter_json_objects"], (
        f"read JSONL through toolkit.records.iter_json_objects, not: {parsers}"
    )
