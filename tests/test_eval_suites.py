"""run_eval plumbing with a scripted rollout and scorers (fast), and the gold policy on every suite
through the real agent loop, environments and rewards (integration)."""

from __future__ import annotations

import json

import pytest

from toolkit.eval import suites
from toolkit.eval.metrics import read_task_results
from toolkit.records import CallRecord, RewardResult, RubricItem, Task, Trajectory, read_jsonl


def make_tasks(n: int) -> list[Task]:
    return [
        Task(
            id=f"task-{i}",
            split="eval",
            prompt=f"How many open tickets does customer {i} have?",
            servers=["helpdesk"],
            tools=["search_tickets"],
            seed=i,
            rubric=[
                RubricItem("r1", "calls search_tickets", "tool_selection", True),
                RubricItem("r2", "answers the count", "answer_correctness", True),
            ],
            metadata={"kind": "lookup" if i % 2 else "aggregate"},
        )
        for i in range(n)
    ]


def scripted_rollout(tasks: list[Task]) -> list[Trajectory]:
    """Odd tasks solved, even tasks: a failed call and no answer. Returned in reverse order on purpose."""
    out = []
    for i, t in enumerate(tasks):
        good = i % 2 == 1
        calls = [
            CallRecord("search_tickets", {"customer": i}, ok=good, error=None if good else "tool_error: x")
        ]
        if good:
            calls.append(CallRecord("finish", {"answer": "3"}, ok=True))
        out.append(
            Trajectory(
                task_id=t.id,
                messages=[{"role": "user", "content": t.prompt}],
                calls=calls,
                final_answer="3" if good else "",
                stop_reason="finish" if good else "max_turns",
            )
        )
    return out[::-1]


def rubric_scorer(task: Task, traj: Trajectory) -> RewardResult:
    ok = traj.final_answer == "3"
    items = [
        {"id": "r1", "verdict": "pass" if traj.calls[0].ok else "partial"},
        {"id": "r2", "verdict": "pass" if ok else "fail"},
    ]
    score = sum(i["verdict"] == "pass" for i in items) / 2
    return RewardResult(score, {"essential": score}, {"items": items})


def atlas_scorer(task: Task, traj: Trajectory) -> RewardResult:
    if task.id == "task-2":
        raise RuntimeError("judge reply unusable")
    return RewardResult(0.75 if traj.final_answer else 0.25)


SCORERS = {"rubric": rubric_scorer, "atlas": atlas_scorer}


def test_run_eval_writes_results_and_config(tmp_path):
    summary = suites.run_eval(
        "gold",
        "kit-eval",
        tmp_path,
        limit=4,
        seed=3,
        tasks=make_tasks(6),
        rollout=scripted_rollout,
        scorers=SCORERS,
        n_boot=200,
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "results.json",
        "results.jsonl",
        "trajectories.jsonl",
        "viewer.html",
    ]
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert on_disk == json.loads(json.dumps(summary))
    cfg = summary["config"]
    assert (cfg["policy"], cfg["seed"], cfg["limit"], cfg["n_tasks"]) == ("gold", 3, 4, 4)
    assert cfg["versions"]["numpy"] and "torch" in cfg["versions"]
    assert summary["aggregate"]["bootstrap"]["seed"] == 3

    results = read_task_results(tmp_path / "results.jsonl")
    trajs = read_jsonl(tmp_path / "trajectories.jsonl", Trajectory)
    # task order is kept and each trajectory is paired with its own task despite the reversed rollout
    assert [r.task_id for r in results] == [t.task_id for t in trajs] == [f"task-{i}" for i in range(4)]
    assert [r.score for r in results] == [0.0, 1.0, 0.0, 1.0]
    assert results[1].n_calls == 1 and results[1].tool_counts == {"search_tickets": 1}  # finish not counted
    assert results[0].n_failed_calls == 1
    assert [i["passed"] for i in results[0].rubric] == [False, False]
    assert (
        results[0].rubric[0]["verdict"] == "partial" and results[0].rubric[0]["category"] == "tool_selection"
    )
    assert results[2].error and "judge reply unusable" in results[2].error and results[2].atlas_score is None
    assert results[1].category == "lookup"

    m = summary["aggregate"]["metrics"]
    assert m["coverage"]["value"] == pytest.approx(0.5)
    assert m["finish_rate"]["value"] == pytest.approx(0.5)
    assert m["tool_failure_rate"]["value"] == pytest.approx(0.5)
    assert m["rubric/answer_correctness"]["value"] == pytest.approx(0.5)
    assert m["error_rate"]["value"] == pytest.approx(0.25)


def test_bfcl_suite_scores_are_binary_accuracy(tmp_path):
    tasks = make_tasks(3)
    summary = suites.run_eval(
        "gold",
        "bfcl-miss-param",
        tmp_path,
        tasks=tasks,
        rollout=scripted_rollout,
        viewer=False,
        scorers={"bfcl": lambda t, tr: RewardResult(1.0 if tr.final_answer else 0.0)},
        n_boot=100,
    )
    m = summary["aggregate"]["metrics"]
    assert m["accuracy"]["value"] == pytest.approx(1 / 3)
    assert m["accuracy/multi_turn_miss_param"]["value"] == pytest.approx(1 / 3)
    assert summary["config"]["bfcl_category"] == "multi_turn_miss_param"
    assert not (tmp_path / "viewer.html").exists()


def test_bad_suite_and_bad_rollout(tmp_path):
    with pytest.raises(KeyError, match="unknown suite"):
        suites.run_eval(
            "gold", "nope", tmp_path, tasks=make_tasks(1), rollout=scripted_rollout, scorers=SCORERS
        )
    with pytest.raises(RuntimeError, match="1 trajectories for 2 tasks"):
        suites.run_eval(
            "gold",
            "kit-eval",
            tmp_path,
            tasks=make_tasks(2),
            rollout=lambda ts: scripted_rollout(ts[:1]),
            scorers=SCORERS,
        )
    with pytest.raises(FileNotFoundError, match="mcp-rl synth"):
        suites.get_suite("kit-eval").load_tasks(tasks_file=tmp_path / "missing.jsonl")


def test_eval_cli_is_registered():
    from toolkit.cli import build_parser

    args = build_parser().parse_args(
        ["eval", "--policy", "gold", "--suite", "bfcl-base", "--out", "x", "--limit", "2"]
    )
    assert (args.policy, args.suite, args.limit, args.adapter) == ("gold", "bfcl-base", 2, None)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["eval", "--policy", "gold", "--suite", "bogus", "--out", "x"])
