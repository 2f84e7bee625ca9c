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


def test_rollout_appends_each_finished_trajectory_before_the_run_ends(tmp_path, monkeypatch, capsys):
    from toolkit.agent import policies
    from toolkit.agent.testing import ScriptedPolicy
    from toolkit.cli.rollout import partial_path

    tasks = tmp_path / "tasks.jsonl"
    write_jsonl(tasks, [calc_task("quick", "1 + 1", 2), calc_task("slow", "2 * 3", 6)])
    out = tmp_path / "trajs.jsonl"
    seen_mid_run: list[list[str]] = []

    def script(req):
        if req.task.id == "quick":
            return "2"
        if req.step == 0:
            return '<tool_call>{"name": "calculate", "arguments": {"expression": "2 * 3"}}</tool_call>'
        # "quick" has finished; what another process would read now, then the run dies
        seen_mid_run.append([t.task_id for t in read_jsonl(partial_path(out), Trajectory)])
        raise RuntimeError("killed")

    monkeypatch.setattr(policies, "make_policy", lambda *a, **k: ScriptedPolicy(script))
    argv = ["rollout", "--policy", "scripted", "--tasks", str(tasks), "--out", str(out), "--no-progress"]
    assert main(argv) == 1
    assert seen_mid_run == [["quick"]]
    assert not out.exists()
    (kept,) = read_jsonl(partial_path(out), Trajectory)
    assert kept.task_id == "quick" and kept.final_answer == "2"
    assert str(partial_path(out)) in capsys.readouterr().err

    # a run that completes leaves only <out>, in task order
    monkeypatch.setattr(policies, "make_policy", lambda *a, **k: ScriptedPolicy(lambda req: req.task.id))
    assert main(argv + ["--n", "2"]) == 0
    assert [t.final_answer for t in read_jsonl(out, Trajectory)] == ["quick", "quick", "slow", "slow"]
    assert not partial_path(out).exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "tasks.jsonl",
        "trajs.jsonl",
    ]
