"""Corrupted and truncated task / trajectory JSONL: one clear error naming the file and the line,
from the library (``records.RecordError``) and through the CLI (one line on stderr, exit code 1,
no traceback)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from toolkit.paths import REPO_ROOT
from toolkit.records import CallRecord, RecordError, Task, Trajectory, read_jsonl, write_jsonl

GOOD_TASKS = REPO_ROOT / "tests" / "data" / "train_tasks.jsonl"


def good_lines(kind: str) -> list[str]:
    if kind == "task":
        return GOOD_TASKS.read_text(encoding="utf-8").splitlines()[:4]
    trajs = [
        Trajectory(
            task_id=f"t{k}",
            messages=[{"role": "user", "content": "hi"}],
            calls=[CallRecord("add", {"a": 1}, True, result="2")],
            final_answer="2",
            stop_reason="finish",
        )
        for k in range(4)
    ]
    return [json.dumps(t.to_dict()) for t in trajs]


# Each corruption: (name, function of the good lines -> file bytes, the 1-based line that is bad).
def _replace(lines: list[str], i: int, new: str) -> bytes:
    return ("\n".join(lines[:i] + [new] + lines[i + 1 :]) + "\n").encode()


CORRUPTIONS = [
    ("truncated_last_line", lambda ls: ("\n".join(ls[:3]) + "\n" + ls[3][: len(ls[3]) // 2]).encode(), 4),
    ("truncated_mid_file", lambda ls: _replace(ls, 1, ls[1][:40]), 2),
    ("not_utf8", lambda ls: _replace(ls, 2, "").replace(b"\n\n", b'\n{"id": "\xff\xfe\xfa"}\n', 1), 3),
    ("nul_bytes", lambda ls: _replace(ls, 1, "\x00" * 20), 2),
    ("json_array", lambda ls: _replace(ls, 2, "[1, 2, 3]"), 3),
    ("json_string", lambda ls: _replace(ls, 0, '"just a string"'), 1),
    ("missing_field", lambda ls: _replace(ls, 1, json.dumps({k: v for k, v in json.loads(ls[1]).items() if k not in ("prompt", "messages")})), 2),
    ("unknown_field", lambda ls: _replace(ls, 3, json.dumps({**json.loads(ls[3]), "surprise": 1})), 4),
    ("nested_wrong_shape", lambda ls: _replace(ls, 1, json.dumps({**json.loads(ls[1]), "gold": [1], "calls": [1]})), 2),
    ("html_error_page", lambda ls: _replace(ls, 0, "<html><body>404</body></html>"), 1),
    ("merge_conflict", lambda ls: _replace(ls, 2, "<<<<<<< HEAD"), 3),
]  # fmt: skip


@pytest.mark.parametrize("kind", ["task", "trajectory"])
@pytest.mark.parametrize(("name", "corrupt", "bad_line"), CORRUPTIONS, ids=[c[0] for c in CORRUPTIONS])
def test_bad_file_error_names_file_and_line(tmp_path, kind, name, corrupt, bad_line):
    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(corrupt(good_lines(kind)))
    record = Task if kind == "task" else Trajectory
    with pytest.raises(RecordError) as err:
        read_jsonl(path, record)
    message = str(err.value)
    assert message.startswith(f"{path}:{bad_line}: "), message
    assert "\n" not in message and len(message) < 600  # one clear line, not a dump of the record


def test_good_files_still_load(tmp_path):
    tasks = read_jsonl(GOOD_TASKS, Task)
    assert len(tasks) >= 4
    write_jsonl(tmp_path / "t.jsonl", [Trajectory.from_dict(json.loads(s)) for s in good_lines("trajectory")])
    assert len(read_jsonl(tmp_path / "t.jsonl", Trajectory)) == 4


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "toolkit.cli", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


@pytest.mark.integration
def test_cli_reports_one_line_naming_file_and_line(tmp_path):
    bad_tasks = tmp_path / "tasks.jsonl"
    lines = good_lines("task")
    bad_tasks.write_bytes(("\n".join(lines[:2]) + "\n" + lines[2][:50] + "\n").encode())
    bad_trajs = tmp_path / "trajs.jsonl"
    bad_trajs.write_bytes(
        ("\n".join(good_lines("trajectory")[:1]) + '\n{"task_id": "x", "messages": \n').encode()
    )

    runs = {
        "rollout": _cli("rollout", "--policy", "gold", "--tasks", str(bad_tasks), "--out", str(tmp_path / "o.jsonl"), "--no-progress", cwd=tmp_path),
        "score-tasks": _cli("score", "--reward", "rubric", "--tasks", str(bad_tasks), "--trajectories", str(bad_trajs), cwd=tmp_path),
        "score-trajs": _cli("score", "--reward", "rubric", "--tasks", str(GOOD_TASKS), "--trajectories", str(bad_trajs), cwd=tmp_path),
    }  # fmt: skip
    expected = {
        "rollout": f"{bad_tasks}:3:",
        "score-tasks": f"{bad_tasks}:3:",
        "score-trajs": f"{bad_trajs}:2:",
    }
    for name, proc in runs.items():
        assert proc.returncode == 1, (name, proc.stdout, proc.stderr)
        err_lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(err_lines) == 1, (name, proc.stderr)
        assert err_lines[0].startswith(f"mcp-rl {name.split('-')[0]}: error: {expected[name]}"), (
            name,
            err_lines,
        )
        assert "Traceback" not in proc.stderr
    assert not (tmp_path / "o.jsonl").exists()  # nothing half-written


@pytest.mark.integration
def test_cli_empty_tasks_or_trajectories_file_is_a_one_line_error(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")  # a blank line is still no records
    good_trajs = tmp_path / "trajs.jsonl"
    good_trajs.write_text("\n".join(good_lines("trajectory")) + "\n", encoding="utf-8")
    runs = {
        "rollout": (_cli("rollout", "--policy", "gold", "--tasks", str(empty), "--out", str(tmp_path / "o.jsonl"), "--no-progress", cwd=tmp_path), "tasks"),
        "score-trajs": (_cli("score", "--reward", "rubric", "--tasks", str(GOOD_TASKS), "--trajectories", str(empty), cwd=tmp_path), "trajectories"),
        "score-tasks": (_cli("score", "--reward", "rubric", "--tasks", str(empty), "--trajectories", str(good_trajs), cwd=tmp_path), "tasks"),
    }  # fmt: skip
    for name, (proc, what) in runs.items():
        assert proc.returncode == 1, (name, proc.stdout, proc.stderr)
        err_lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert err_lines == [
            f"mcp-rl {name.split('-')[0]}: error: {empty}: no {what} in the file (it is empty)"
        ]
    assert not (tmp_path / "o.jsonl").exists()
