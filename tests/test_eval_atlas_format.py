"""MCP-Atlas's published format: read as published (Parquet, CSV, JSONL; message-list trajectories;
Python-literal claims; `<server>_<tool>` names), every record run or skipped with its reason, replay
fidelity per server, the judge as MCP-Atlas judges, and kit tasks exported so the upstream rules read them."""

import ast
import json
import shutil
from pathlib import Path

import pytest

from toolkit.cli import main
from toolkit.eval.atlas_tasks import (
    AmbiguousTool,
    AtlasFormatError,
    ServerPool,
    Skip,
    discover_servers,
    parse_maps,
    read_atlas_tasks,
    replay_fidelity,
    summarize,
    to_kit_task,
)
from toolkit.records import CallRecord, RewardResult, Trajectory, read_jsonl

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "data" / "atlas" / "sample.jsonl"  # the kit's older {tool, args} form
PUBLISHED = ROOT / "tests" / "data" / "atlas" / "published.csv"  # make_published.py beside it
NPM = ROOT / ".cache" / "npm" / "node_modules"
HAVE_NPM = shutil.which("node") is not None and all(
    (NPM / "@modelcontextprotocol" / s / "dist" / "index.js").exists()
    for s in ("server-filesystem", "server-memory")
)
GOOD = {"TASK": "t1", "ENABLED_TOOLS": ["a"], "PROMPT": "p", "GTFA_CLAIMS": ["c"], "TRAJECTORY": []}
POOL = ServerPool(
    tools={"filesystem": {"read_text_file", "write_file"}, "helpdesk": {"view_ticket"}},
    kit={"helpdesk": "helpdesk"},
    failed={"broken": "MCPError: Connection closed"},
)


def _mcp(name="t1", **fields):
    return GOOD | {"TASK": name} | fields


def test_published_csv_reads_without_conversion():
    recs = {r.task: r for r in read_atlas_tasks(PUBLISHED)}
    fs = recs["fs-1"]
    assert [(s.tool, s.args, s.output) for s in fs.trajectory] == [
        (
            "filesystem_write_file",
            {"path": "notes.txt", "content": "hello atlas"},
            "Successfully wrote to notes.txt",
        ),
        ("filesystem_read_text_file", {"path": "notes.txt"}, "hello atlas"),
    ]
    assert fs.final_answer == "The file notes.txt says:\nhello atlas"  # the last assistant message
    assert fs.claims == ['The file notes.txt contains "hello atlas".']  # a Python list literal
    assert recs["mem-1"].claims[1] == "Its observation says 'customer since 2023'."  # JSON
    assert fs.where == "record 1 (line 2)" and recs["mem-1"].required_servers == ["memory"]


def test_parquet_and_jsonl_read_the_same_records(tmp_path):
    import pandas as pd

    frame = pd.read_csv(PUBLISHED)
    frame.to_parquet(tmp_path / "p.parquet", index=False)
    frame.to_json(tmp_path / "p.jsonl", orient="records", lines=True)
    want = [(r.task, r.trajectory, r.claims, r.final_answer) for r in read_atlas_tasks(PUBLISHED)]
    for name in ("p.parquet", "p.jsonl"):
        got = read_atlas_tasks(tmp_path / name)
        assert [(r.task, r.trajectory, r.claims, r.final_answer) for r in got] == want
    assert read_atlas_tasks(tmp_path / "p.parquet")[2].where == "record 3 (row 3)"


def test_the_older_tool_args_form_still_reads():
    recs = read_atlas_tasks(SAMPLE)
    assert recs[2].trajectory[0].tool == "view_ticket" and recs[2].trajectory[0].args == {
        "ticket_id": "t-1001"
    }
    assert recs[2].trajectory[0].output is None and recs[2].final_answer is None


@pytest.mark.parametrize(
    ("text", "where", "field"),
    [
        (json.dumps({k: v for k, v in GOOD.items() if k != "PROMPT"}), "record 1 (line 1)", "PROMPT"),
        (json.dumps(GOOD) + "\n" + json.dumps(_mcp(GTFA_CLAIMS="oops")), "record 2 (line 2)", "GTFA_CLAIMS"),
        (json.dumps(_mcp(GTFA_CLAIMS=[])), "record 1 (line 1)", "GTFA_CLAIMS"),
        (json.dumps(_mcp(ENABLED_TOOLS="[1, 2]")), "record 1 (line 1)", "ENABLED_TOOLS"),
        (json.dumps(_mcp(TRAJECTORY=[{"args": {}}])), "record 1 (line 1)", "TRAJECTORY"),
        (
            json.dumps(
                _mcp(TRAJECTORY=[{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}])
            ),
            "record 1 (line 1)",
            "TRAJECTORY",
        ),
        ("\n" + json.dumps(GOOD) + "\n{not json", "record 2 (line 3)", None),
        (json.dumps([GOOD, _mcp(TASK="")]), "record 2", "TASK"),
        # code in a claims literal is refused, never run
        (json.dumps(_mcp(GTFA_CLAIMS="__import__('os').getcwd()")), "record 1 (line 1)", "GTFA_CLAIMS"),
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


def test_a_bad_csv_row_names_its_line(tmp_path):
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(PUBLISHED.read_text())))
    rows[2]["GTFA_CLAIMS"] = ""  # the third record's claims emptied
    out = io.StringIO()
    writer = csv.DictWriter(out, list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    (tmp_path / "bad.csv").write_text(out.getvalue())
    with pytest.raises(AtlasFormatError) as err:
        read_atlas_tasks(tmp_path / "bad.csv")
    # the line its record starts on: the header, then two records whose cells span several lines each
    first_lines = out.getvalue().splitlines()
    line = next(i for i, text in enumerate(first_lines, start=1) if text.startswith("mem-1,"))
    assert (err.value.field, err.value.where) == ("GTFA_CLAIMS", f"record 3 (line {line})")
    assert line > 4


def test_empty_and_missing_files(tmp_path):
    (tmp_path / "e.jsonl").write_text("\n")
    with pytest.raises(AtlasFormatError, match="is empty"):
        read_atlas_tasks(tmp_path / "e.jsonl")
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(AtlasFormatError, match="is empty"):
        read_atlas_tasks(tmp_path / "e.csv")
    (tmp_path / "h.csv").write_text("TASK,PROMPT\n")
    with pytest.raises(AtlasFormatError, match="has no records"):
        read_atlas_tasks(tmp_path / "h.csv")
    with pytest.raises(AtlasFormatError, match="not found"):
        read_atlas_tasks(tmp_path / "none.jsonl")


def test_server_prefixed_names_resolve_and_ambiguous_ones_name_both_servers():
    assert POOL.resolve("filesystem_read_text_file") == ("filesystem", "read_text_file")
    assert POOL.resolve("view_ticket") == ("helpdesk", "view_ticket")
    assert POOL.resolve("helpdesk_read_text_file") is None  # wrong server
    two = ServerPool(tools={"filesystem": {"read_file"}, "files": {"read_file"}})
    with pytest.raises(AmbiguousTool, match="'files'.*'filesystem'|'filesystem'.*'files'"):
        two.resolve("read_file")
    assert two.resolve("files_read_file") == ("files", "read_file")


def test_distractors_without_a_server_are_dropped_and_gold_needs_decide():
    recs = {r.task: r for r in read_atlas_tasks(PUBLISHED)}
    task = to_kit_task(recs["fs-1"], POOL)
    assert task.tools == ["read_text_file", "write_file"] and task.servers == ["filesystem"]
    dropped = task.metadata["atlas"]["dropped_tools"]
    assert set(dropped) == {"brave-search_brave_web_search", "calculator_calculate"}
    assert "'brave-search'" in dropped["brave-search_brave_web_search"]
    assert task.metadata["reference_answer"] == "The file notes.txt says:\nhello atlas"  # not the claims
    gh = to_kit_task(recs["gh-1"], POOL)
    assert isinstance(gh, Skip) and "needs server 'github'" in gh.reason
    broken = to_kit_task(recs["broken-1"], POOL)
    assert isinstance(broken, Skip) and "'broken' failed to start: MCPError" in broken.reason


def test_no_kit_server_stands_in_for_an_atlas_server_unless_mapped():
    plain = discover_servers({})
    assert "calculator" not in plain.tools and "filesystem" not in plain.tools and "helpdesk" in plain.tools
    mapped = discover_servers({}, parse_maps(["calculator=calculator"]))
    assert "calculate" in mapped.tools["calculator"]
    assert (
        mapped.kit["calculator"] == "calculator"
        and "--map calculator=calculator" in mapped.stand_ins["calculator"]
    )
    with pytest.raises(ValueError, match="ATLAS_SERVER=KIT_SERVER"):
        parse_maps(["calculator=nope"])


def test_replay_fidelity_shows_missing_data_as_a_mismatch():
    rec = next(r for r in read_atlas_tasks(PUBLISHED) if r.task == "fs-2")
    task = to_kit_task(rec, POOL)
    denied = CallRecord(name="read_text_file", args={}, ok=False, error="tool_error: Access denied")
    traj = Trajectory(task_id=task.id, messages=[], calls=[denied], final_answer="x")
    fid = replay_fidelity([task], [traj])
    row = fid["servers"]["filesystem"]
    assert (row["compared"], row["matched"], row["match_rate"]) == (1, 0, 0.0)
    assert (
        row["first_mismatch"]["recorded"].startswith("Week,Profit")
        and "Access denied" in row["first_mismatch"]["replayed"]
    )
    same = CallRecord(name="read_text_file", args={}, ok=True, result="Week,Profit\n1,6000\n2,6500\n3,6446.2")
    assert replay_fidelity([task], [Trajectory(task_id=task.id, messages=[], calls=[same])])["tasks"][
        task.id
    ] == {
        "compared": 1,
        "matched": 1,
    }


def test_the_claim_judge_sees_one_claim_and_the_final_answer_only():
    from toolkit.rewards.atlas import AtlasReward
    from toolkit.rewards.standin import ChatServer, StandInJudge, grade_request

    task = to_kit_task(next(r for r in read_atlas_tasks(PUBLISHED) if r.task == "kit-1"), POOL)
    secret = CallRecord(name="view_ticket", args={}, ok=True, result="status closed priority high")
    traj = Trajectory(task_id=task.id, messages=[], calls=[secret], final_answer="Ticket t-1001 is 'closed'.")
    seen = []

    def respond(messages):
        seen.append(messages)
        return grade_request(messages)

    with ChatServer(respond, model="m") as server:
        res = AtlasReward(grader="claim-judge", judge=server.judge_config())(task, traj)
    assert len(seen) == 2 and all("status closed priority high" not in m[-1]["content"] for m in seen)
    assert res.score == 0.5  # status stated, priority not: 1 and 0
    with ChatServer(lambda m: "not json at all", model="m") as broken:  # counted, not fatal
        res = AtlasReward(grader="claim-judge", judge=broken.judge_config() | {"max_retries": 0})(task, traj)
    assert res.details["ungraded"] == 2 and res.score == 0.0
    with StandInJudge() as judge:
        res = AtlasReward(grader="claim-judge", judge=judge.judge_config())(task, traj)
    assert res.score == 0.5


def test_summary_accounts_for_every_record():
    res = [RewardResult(s, {}, {}) for s in (1.0, 0.75, 0.5, 0.0)]
    out = summarize(res, [Skip("x", "no server")], errors={"y": "environment error: died"})
    assert out["coverage"] == pytest.approx(0.5625) and out["pass_rate"] == 0.5
    assert out["tasks_skipped"] == 2 and out["skipped"] == {"x": "no server", "y": "environment error: died"}


def _upstream_read(path: Path) -> list[dict]:
    """The export read back by MCP-Atlas's own rules: pandas.read_csv; ENABLED_TOOLS with json.loads
    (run_eval.parse_enabled_tools); GTFA_CLAIMS with json.loads, else ast.literal_eval
    (score_claims.extract_claims); TRAJECTORY turns as extract_enriched_trajectory builds them
    (assistant tool_calls[].function name/arguments, the following role-tool messages by tool_call_id)."""
    import pandas as pd

    rows = []
    for row in pd.read_csv(path).to_dict(orient="records"):
        text = row["GTFA_CLAIMS"]
        try:
            claims = json.loads(text)
        except json.JSONDecodeError:
            claims = ast.literal_eval(text)
        calls, msgs = [], json.loads(row["TRAJECTORY"])
        by_id = {}
        for m in msgs:
            for tc in m.get("tool_calls") or []:
                entry = {
                    "name": tc["function"]["name"],
                    "parameters": json.loads(tc["function"]["arguments"]),
                }
                entry["status"] = "no_response"
                by_id[tc["id"]] = entry
                calls.append(entry)
            if m.get("role") == "tool" and m.get("tool_call_id") in by_id:
                content = m["content"]
                text = " ".join(c.get("text", "") for c in content) if isinstance(content, list) else content
                by_id[m["tool_call_id"]]["status"] = "success"
                by_id[m["tool_call_id"]]["output"] = text
        rows.append(
            {"tools": json.loads(row["ENABLED_TOOLS"]), "claims": claims, "calls": calls, "gtfa": row["GTFA"]}
        )
    return rows


def test_export_reads_back_under_the_upstream_rules(tmp_path, capsys):
    from toolkit.records import Task, write_jsonl

    tasks = read_jsonl(ROOT / "data" / "tasks" / "eval.jsonl", Task)[:12]
    write_jsonl(tmp_path / "kit.jsonl", tasks)
    assert (
        main(["atlas", "export", "--tasks", str(tmp_path / "kit.jsonl"), "--out", str(tmp_path / "a.csv")])
        == 0
    )
    rows = _upstream_read(tmp_path / "a.csv")
    with_answers = [t for t in tasks if t.answers]
    assert len(rows) == len(with_answers) and "not written" in capsys.readouterr().out
    for row, task in zip(rows, with_answers, strict=True):
        assert row["calls"] and all(c["status"] == "success" and c.get("output") for c in row["calls"])
        assert all("_" in name and name.split("_", 1)[0] in task.servers for name in row["tools"])
        assert all(c["name"] in row["tools"] for c in row["calls"])
        assert row["claims"] and not any("must" in c for c in row["claims"])  # facts, not process rules
        assert all(c.split('"')[1] in row["gtfa"] for c in row["claims"])  # stated by the final answer
    # and the kit reads its own export back as published records
    assert [r.task for r in read_atlas_tasks(tmp_path / "a.csv")] == [t.id for t in with_answers]


def test_external_server_options_are_server_recipes(tmp_path):
    from toolkit.envs.recipe import parse_server

    recipe = parse_server("time=mcp-server-time --local-timezone UTC", "--external")
    ext = recipe.server(tmp_path)
    assert ext.name == "time" and ext.command == ["mcp-server-time", "--local-timezone", "UTC"]
    assert ext.cwd == str(tmp_path)  # started in its scratch folder
    with pytest.raises(ValueError, match="--external 'time': expected NAME=COMMAND"):
        parse_server("time", "--external")
    assert (
        main(["atlas", "run", "--tasks", str(PUBLISHED), "--out", str(tmp_path / "o"), "--external", "x"])
        == 2
    )


@pytest.mark.integration
@pytest.mark.skipif(not HAVE_NPM, reason="node or the npm filesystem/memory servers missing from .cache/npm")
def test_published_records_run_or_skip_with_reasons(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "run"
    args = ["atlas", "run", "--tasks", str(PUBLISHED), "--standin-judge", "--external", "broken=false"]
    assert main([*args, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["run"]) == {"fs-1", "fs-2", "mem-1", "kit-1"}
    assert (
        summary["run"]["fs-1"]["recorded_answer"]
        and "calculator_calculate" in summary["run"]["fs-1"]["dropped_tools"]
    )
    assert set(summary["skipped"]) == {"gh-1", "calc-1", "broken-1"}
    assert "failed to start" in summary["skipped"]["broken-1"] and summary["servers_failed"]["broken"]
    assert summary["judge"].startswith("stand-in") and summary["stand_ins"] == {}
    fid = summary["replay_fidelity"]["servers"]
    assert (fid["filesystem"]["compared"], fid["filesystem"]["matched"]) == (3, 2)  # fs-2's data is not here
    assert fid["memory"]["match_rate"] == 1.0 and fid["helpdesk"]["match_rate"] == 1.0
    trajs = {t.task_id: t for t in read_jsonl(out / "trajectories.jsonl", Trajectory)}
    assert "hello atlas" in trajs["fs-1"].calls[1].result  # the real npm server
    assert trajs["fs-1"].final_answer == "The file notes.txt says:\nhello atlas"
    # the kit's calculator answers for MCP-Atlas's only when mapped, and the summary says so
    assert main([*args, "--map", "calculator=calculator", "--out", str(tmp_path / "m")]) == 0
    mapped = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert "calc-1" in mapped["run"] and "calculator" in mapped["stand_ins"]


@pytest.mark.integration
def test_nothing_runnable_exits_non_zero(tmp_path):
    rec = {"TASK": "g", "ENABLED_TOOLS": ["github_x"], "PROMPT": "p", "GTFA_CLAIMS": ["c c c c"]}
    rec["TRAJECTORY"] = [{"tool": "github_x", "args": {}}]
    (tmp_path / "t.jsonl").write_text(json.dumps(rec) + "\n")
    args = [
        "atlas",
        "run",
        "--tasks",
        str(tmp_path / "t.jsonl"),
        "--standin-judge",
        "--npm-dir",
        str(tmp_path),
    ]
    assert main([*args, "--out", str(tmp_path / "o")]) == 1
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["skipped"]["g"].endswith(
        "not available here"
    )
