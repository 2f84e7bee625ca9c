"""MCP-Atlas's public task format: read, run against the kit's and the npm servers, judged by claim;
written back from kit tasks; bad records named by file, record (line) and field."""

import json
import shutil
from pathlib import Path

import pytest

from toolkit.cli import main
from toolkit.eval.atlas_tasks import (
    AtlasFormatError,
    from_kit_task,
    parse_record,
    read_atlas_tasks,
    resolve_tool,
    summarize,
    to_kit_task,
)
from toolkit.records import RewardResult, Trajectory, read_jsonl
from toolkit.rewards.examples import helpdesk_task

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "data" / "atlas" / "sample.jsonl"
NPM = ROOT / ".cache" / "npm" / "node_modules"
HAVE_NPM = shutil.which("node") is not None and all(
    (NPM / "@modelcontextprotocol" / s / "dist" / "index.js").exists()
    for s in ("server-filesystem", "server-memory")
)
GOOD = {"TASK": "t1", "ENABLED_TOOLS": ["a"], "PROMPT": "p", "GTFA_CLAIMS": ["c"], "TRAJECTORY": []}


def test_sample_reads_in_both_list_encodings():
    recs = read_atlas_tasks(SAMPLE)
    assert [r.task for r in recs] == ["atlas-fs-1", "atlas-memory-1", "atlas-kit-1", "atlas-github-1"]
    assert recs[0].enabled_tools[0] == "filesystem_write_file"  # from a JSON string
    assert recs[1].claims[1] == "Its observation says 'customer since 2023'."  # from a list
    assert recs[2].trajectory == [{"tool": "view_ticket", "args": {"ticket_id": "t-1001"}}]  # name/arguments
    assert recs[2].where == "record 3 (line 3)"


@pytest.mark.parametrize(
    ("text", "where", "field"),
    [
        (json.dumps({k: v for k, v in GOOD.items() if k != "PROMPT"}), "record 1 (line 1)", "PROMPT"),
        (
            json.dumps(GOOD) + "\n" + json.dumps(GOOD | {"GTFA_CLAIMS": "oops"}),
            "record 2 (line 2)",
            "GTFA_CLAIMS",
        ),
        (json.dumps(GOOD | {"GTFA_CLAIMS": []}), "record 1 (line 1)", "GTFA_CLAIMS"),
        (json.dumps(GOOD | {"ENABLED_TOOLS": "[1, 2]"}), "record 1 (line 1)", "ENABLED_TOOLS"),
        (json.dumps(GOOD | {"TRAJECTORY": [{"args": {}}]}), "record 1 (line 1)", "TRAJECTORY"),
        ("\n" + json.dumps(GOOD) + "\n{not json", "record 2 (line 3)", None),
        (json.dumps([GOOD, GOOD | {"TASK": ""}]), "record 2", "TASK"),
    ],
)
def test_bad_records_name_file_record_and_field(tmp_path, text, where, field, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(AtlasFormatError) as err:
        read_atlas_tasks(path)
    assert (err.value.where, err.value.field) == (where, field)
    assert str(path) in str(err.value)
    assert main(["atlas", "run", "--tasks", str(path), "--out", str(tmp_path / "o"), "--standin-judge"]) == 2
    message = capsys.readouterr().err
    assert str(path) in message and where in message and (field or "not JSON") in message


def test_empty_and_missing_files(tmp_path):
    (tmp_path / "e.jsonl").write_text("\n")
    with pytest.raises(AtlasFormatError, match="is empty"):
        read_atlas_tasks(tmp_path / "e.jsonl")
    with pytest.raises(AtlasFormatError, match="not found"):
        read_atlas_tasks(tmp_path / "none.jsonl")


def test_tool_names_resolve_with_or_without_a_server_prefix():
    servers = {"read_text_file": "filesystem", "view_ticket": "helpdesk"}
    assert resolve_tool("filesystem_read_text_file", servers) == "read_text_file"
    assert resolve_tool("view_ticket", servers) == "view_ticket"
    assert resolve_tool("helpdesk_read_text_file", servers) is None  # wrong server
    assert resolve_tool("github_search", servers) is None
    rec = parse_record(GOOD | {"ENABLED_TOOLS": ["github_search"]}, "f", "record 1")
    assert "github_search" in to_kit_task(rec, servers)


def test_kit_tasks_written_in_the_format_read_back():
    task = helpdesk_task()
    rec = from_kit_task(task)
    assert set(rec) == {"TASK", "ENABLED_TOOLS", "PROMPT", "GTFA_CLAIMS", "TRAJECTORY"}
    back = parse_record(rec, "mem", "record 1")
    assert back.enabled_tools == task.tools and back.prompt == task.prompt
    assert back.claims == [r.text for r in task.rubric if r.essential]
    assert [(s["tool"], s["args"]) for s in back.trajectory] == [(g.name, g.arguments) for g in task.gold]


def test_export_command(tmp_path):
    from toolkit.records import write_jsonl

    write_jsonl(tmp_path / "kit.jsonl", [helpdesk_task()])
    assert (
        main(["atlas", "export", "--tasks", str(tmp_path / "kit.jsonl"), "--out", str(tmp_path / "a.jsonl")])
        == 0
    )
    assert read_atlas_tasks(tmp_path / "a.jsonl")[0].task == "ex-helpdesk"


def test_summary_coverage_and_pass_rate():
    res = [RewardResult(s, {}, {}) for s in (1.0, 0.75, 0.5, 0.0)]
    out = summarize(res, {"x": "no server"})
    assert out["coverage"] == pytest.approx(0.5625) and out["pass_rate"] == 0.5 and out["tasks_skipped"] == 1


@pytest.mark.integration
@pytest.mark.skipif(not HAVE_NPM, reason="node or the npm filesystem/memory servers missing from .cache/npm")
def test_sample_runs_end_to_end_against_the_npm_servers(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "run"
    assert (
        main(
            ["atlas", "run", "--tasks", str(SAMPLE), "--policy", "gold", "--standin-judge", "--out", str(out)]
        )
        == 0
    )
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["tasks_run"], summary["tasks_skipped"]) == (3, 1)
    assert "github_search_repositories" in summary["skipped"]["atlas-github-1"]
    assert summary["coverage"] == 1.0 and summary["pass_rate"] == 1.0
    trajs = {t.task_id: t for t in read_jsonl(out / "trajectories.jsonl", Trajectory)}
    fs = trajs["atlas-fs-1"]
    assert [c.name for c in fs.calls if c.name != "finish"] == ["write_file", "read_text_file"]
    assert all(c.ok for c in fs.calls) and "hello atlas" in fs.calls[1].result  # the real npm server
    mem = trajs["atlas-memory-1"].calls[1]
    assert mem.name == "search_nodes" and "customer since 2023" in mem.result
    assert "closed" in trajs["atlas-kit-1"].calls[0].result  # the kit's own helpdesk server


@pytest.mark.integration
def test_claims_not_made_are_not_fulfilled():
    from toolkit.rewards.atlas import AtlasReward
    from toolkit.rewards.standin import StandInJudge

    rec = read_atlas_tasks(SAMPLE)[2]
    task = to_kit_task(rec, {"view_ticket": "helpdesk", "search_tickets": "helpdesk"})
    empty = Trajectory(task_id=task.id, messages=[], final_answer="I could not find it.")
    with StandInJudge() as judge:
        res = AtlasReward(grader="judge", judge=judge.judge_config())(task, empty)
    assert res.score == 0.0 and res.breakdown["pass@0.75"] == 0.0


def test_external_server_options(tmp_path):
    from toolkit.eval.atlas_tasks import parse_externals

    servers = parse_externals(["time=mcp-server-time --local-timezone UTC"])
    ext = servers["time"](tmp_path)
    assert ext.name == "time" and ext.command == ["mcp-server-time", "--local-timezone", "UTC"]
    with pytest.raises(ValueError, match="NAME=COMMAND"):
        parse_externals(["time"])
