"""`mcp-rl rollout` end to end: gold replay over the real MCP environment, JSONL in and out."""

from __future__ import annotations

from toolkit.cli import main
from toolkit.records import GoldCall, Task, Trajectory, read_jsonl, write_jsonl


def calc_task(task_id: str, expression: str, value: float) -> Task:
    return Task(
        id=task_id,
        split="eval",
        prompt=f"What is {expression}?",
        servers=["calculator"],
        tools=["calculate", "percent_of"],
        seed=0,
        gold=[GoldCall("calculate", {"expression": expression})],
        answers={"result": value},
    )


def test_rollout_gold_over_mcp_writes_trajectories(tmp_path, capsys):
    tasks = tmp_path / "tasks.jsonl"
    write_jsonl(tasks, [calc_task("a", "2 + 3", 5), calc_task("b", "6 * 7", 42), calc_task("c", "1 - 1", 0)])
    out = tmp_path / "out" / "trajs.jsonl"
    code = main(
        ["rollout", "--policy", "gold", "--tasks", str(tasks), "--out", str(out), "--n", "2", "--limit", "2"]
        + ["--no-progress"]
    )
    assert code == 0
    trajs = read_jsonl(out, Trajectory)
    assert [t.task_id for t in trajs] == ["a", "a", "b", "b"]
    for traj, value in zip(trajs, [5, 5, 42, 42], strict=True):
        (call,) = traj.calls
        assert call.ok and call.name == "calculate" and str(value) in call.result
        assert traj.stop_reason == "finish" and traj.final_answer == f"result: {value}"
    assert "4 trajectories" in capsys.readouterr().err


def test_rollout_reports_a_bad_tasks_file_by_line(tmp_path, capsys):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "x"}\n')
    code = main(["rollout", "--policy", "gold", "--tasks", str(tasks), "--out", str(tmp_path / "o.jsonl")])
    assert code == 1
    assert "tasks.jsonl:1" in capsys.readouterr().err
