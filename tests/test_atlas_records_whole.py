"""MCP-Atlas export and replay never cut a record (or refuse with the reason), replay fidelity compares
what was recorded, and Parquet reads in every form the format allows (issue 51)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolkit.cli import main
from toolkit.eval.atlas_format import read_atlas_tasks
from toolkit.eval.atlas_tasks import Skip, replay_fidelity, to_atlas_record
from toolkit.records import AtlasResultRow, CallRecord, Task, Trajectory, read_jsonl, write_jsonl

ROOT = Path(__file__).resolve().parents[1]
KIT_TASKS = ROOT / "data" / "tasks" / "eval.jsonl"
PUBLISHED = ROOT / "tests" / "data" / "atlas" / "published.csv"
# kit tasks on servers that MCP-Atlas has no server of the same name for: eval-s0-00003 and -00098 each
# have a gold output far over the loop's default 2,048-character budget (7,051 and 3,437 characters)
RUN_BACK = ("eval-s0-00001", "eval-s0-00002", "eval-s0-00003", "eval-s0-00098")


def kit_tasks(tmp_path: Path) -> Path:
    tasks = [t for t in read_jsonl(KIT_TASKS, Task) if t.id in RUN_BACK]
    assert len(tasks) == len(RUN_BACK)
    write_jsonl(tmp_path / "kit.jsonl", tasks)
    return tmp_path / "kit.jsonl"


def test_export_keeps_long_outputs_whole(tmp_path):
    out = tmp_path / "a.jsonl"
    assert main(["atlas", "export", "--tasks", str(kit_tasks(tmp_path)), "--out", str(out)]) == 0
    assert "truncated" not in out.read_text()
    outputs = {r.task: [s.output for s in r.trajectory] for r in read_atlas_tasks(out)}
    assert max(len(o) for o in outputs["eval-s0-00003"]) > 7000
    assert json.loads(outputs["eval-s0-00098"][0])  # the whole JSON reply, not a head of it


@pytest.mark.integration
def test_exported_kit_tasks_run_back_at_full_fidelity(tmp_path, capsys):
    exported = tmp_path / "a.parquet"
    assert main(["atlas", "export", "--tasks", str(kit_tasks(tmp_path)), "--out", str(exported)]) == 0
    run = ["atlas", "run", "--tasks", str(exported), "--standin-judge", "--npm-dir", str(tmp_path)]
    assert main([*run, "--out", str(tmp_path / "run")]) == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert set(summary["run"]) == set(RUN_BACK)
    servers = summary["replay_fidelity"]["servers"]
    assert servers and all(row["matched"] == row["compared"] > 0 for row in servers.values()), servers
    assert all(row["cut"] == 0 for row in servers.values())
    rows = read_jsonl(tmp_path / "run" / "results.jsonl", AtlasResultRow)  # one typed row a graded task
    assert sorted(r.task for r in rows) == sorted(RUN_BACK)
    assert all(r.stop_reason == "finish" and r.calls > 0 == r.failed_calls and r.claims for r in rows)
    assert all(r.passed == (r.coverage >= 0.75) for r in rows)


def test_fidelity_does_not_blame_the_server_for_an_output_the_loop_cut():
    task = Task("t", "eval", "p", ["shop"], ["search_products"], 0)
    task.metadata["atlas"] = {"recorded": [["shop", "search_products", "x" * 3000]]}
    cut = "x" * 2048 + "\n[... truncated: showing 2048 of 3000 characters]"
    traj = Trajectory("t", [], calls=[CallRecord("search_products", {}, True, result=cut)])
    row = replay_fidelity([task], [traj])["servers"]["shop"]
    assert (row["compared"], row["matched"], row["cut"], row["first_mismatch"]) == (0, 0, 1, None)
    whole = Trajectory("t", [], calls=[CallRecord("search_products", {}, True, result="x" * 3000)])
    assert replay_fidelity([task], [whole])["servers"]["shop"]["matched"] == 1


def test_a_cut_replay_is_refused_with_the_reason_not_written():
    task = read_jsonl(KIT_TASKS, Task)[0]
    cut = '{"items": [1, 2\n[... truncated: showing 16 of 900 characters; fields after the cut: "total": 2]'
    traj = Trajectory(
        task.id, [], calls=[CallRecord(g.name, g.arguments, True, result=cut) for g in task.gold]
    )
    rec = to_atlas_record(task, traj, {g.name: task.servers[0] for g in task.gold})
    assert isinstance(rec, Skip) and "output was cut" in rec.reason


def _native_frame():
    """The published sample with every list field a native Parquet list (trajectories: structs)."""
    import pandas as pd

    frame = pd.read_csv(PUBLISHED)
    for name in ("ENABLED_TOOLS", "GTFA_CLAIMS", "REQUIRED_TOOLS", "REQUIRED_SERVERS"):
        frame[name] = [_as_list(v) for v in frame[name]]
    frame["TRAJECTORY"] = [_native_messages(v) for v in frame["TRAJECTORY"]]
    return frame


def _as_list(value):
    import ast

    if not isinstance(value, str):
        return []
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return ast.literal_eval(value)


def _native_messages(text):
    """Messages with content as text blocks everywhere (one Parquet type) and arguments as objects."""
    out = []
    for m in json.loads(text):
        m = dict(m)
        content = m.get("content")
        m["content"] = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        if m.get("tool_calls"):
            m["tool_calls"] = [
                tc | {"function": tc["function"] | {"arguments": json.loads(tc["function"]["arguments"])}}
                for tc in m["tool_calls"]
            ]
        out.append(m)
    return out


def test_parquet_with_native_list_columns_reads_as_the_csv_does(tmp_path):
    frame = _native_frame()
    frame.to_parquet(tmp_path / "native.parquet", index=False)
    want = [
        (r.task, r.trajectory, r.claims, r.final_answer, r.enabled_tools) for r in read_atlas_tasks(PUBLISHED)
    ]
    got = read_atlas_tasks(tmp_path / "native.parquet")
    assert [(r.task, r.trajectory, r.claims, r.final_answer, r.enabled_tools) for r in got] == want
    assert got[1].required_servers == read_atlas_tasks(PUBLISHED)[1].required_servers


def test_parquet_maps_and_the_older_form_as_structs(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    # the older {tool, args} form as structs: a struct has every argument name of the column, so the
    # first call reads back without the second call's "content", not with content=None
    steps = [
        {"tool": "filesystem_write_file", "args": {"path": "n.txt", "content": "hi"}},
        {"tool": "filesystem_read_text_file", "args": {"path": "n.txt"}},
    ]
    table = pa.table(
        {
            "TASK": ["s1"],
            "ENABLED_TOOLS": [["filesystem_write_file", "filesystem_read_text_file"]],
            "PROMPT": ["p"],
            "GTFA_CLAIMS": [["c"]],
            "TRAJECTORY": [steps],
        }
    )
    pq.write_table(table, tmp_path / "structs.parquet")
    (rec,) = read_atlas_tasks(tmp_path / "structs.parquet")
    assert [(s.tool, s.args) for s in rec.trajectory] == [(s["tool"], s["args"]) for s in steps]
    # arguments as a Parquet map
    args = pa.array([[("path", "n.txt")]], type=pa.map_(pa.string(), pa.string()))
    message = pa.StructArray.from_arrays(
        [pa.array(["assistant"]), pa.array(["filesystem_read_text_file"]), args],
        names=["role", "name", "arguments"],
    )
    call = pa.StructArray.from_arrays(
        [
            pa.array(["c1"]),
            pa.StructArray.from_arrays([message.field(1), message.field(2)], ["name", "arguments"]),
        ],
        names=["id", "function"],
    )
    msgs = pa.StructArray.from_arrays(
        [pa.array(["assistant"]), pa.ListArray.from_arrays(pa.array([0, 1], pa.int32()), call)],
        names=["role", "tool_calls"],
    )
    traj = pa.ListArray.from_arrays(pa.array([0, 1], pa.int32()), msgs)
    pq.write_table(table.set_column(4, "TRAJECTORY", traj), tmp_path / "map.parquet")
    (rec,) = read_atlas_tasks(tmp_path / "map.parquet")
    assert [(s.tool, s.args) for s in rec.trajectory] == [("filesystem_read_text_file", {"path": "n.txt"})]
