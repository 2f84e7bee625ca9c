"""run_eval plumbing with a scripted rollout and scorers (fast), and the gold policy on every suite
through the real agent loop, environments and rewards (integration)."""

from __future__ import annotations

import json

import pytest

from toolkit.eval import suites
from toolkit.records import (
    STOP_REASONS,
    CallRecord,
    GoldCall,
    RewardResult,
    RubricItem,
    Task,
    Trajectory,
    read_jsonl,
    read_task_results,
)


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


def test_a_tasks_file_without_held_out_tasks_is_an_error_not_a_train_set_eval(tmp_path):
    from toolkit.records import write_jsonl

    train_only = tmp_path / "train.jsonl"
    tasks = make_tasks(3)
    for t in tasks:
        t.split = "train"
    write_jsonl(train_only, tasks)
    with pytest.raises(ValueError, match=r"train\.jsonl: no held-out tasks \(split 'eval'\)"):
        suites.get_suite("kit-eval").load_tasks(tasks_file=train_only)


def test_eval_cli_is_registered():
    from toolkit.cli import build_parser

    args = build_parser().parse_args(
        ["eval", "--policy", "gold", "--suite", "bfcl-base", "--out", "x", "--limit", "2"]
    )
    assert (args.policy, args.suite, args.limit, args.adapter) == ("gold", "bfcl-base", 2, None)
    assert args.max_turns is None and args.temperature is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["eval", "--policy", "gold", "--suite", "bogus", "--out", "x"])


# ---- the real pipeline: agent loop (gold policy) -> MCP environments -> rewards ----------------------

BFCL_SUITES = ("bfcl-base", "bfcl-miss-func", "bfcl-miss-param", "bfcl-long-context")


@pytest.mark.parametrize("suite", BFCL_SUITES)
def test_gold_policy_scores_100_percent_on_bfcl(suite, tmp_path):
    summary = suites.run_eval("gold", suite, tmp_path, limit=3, n_boot=100)
    m = summary["aggregate"]["metrics"]
    assert summary["aggregate"]["n_tasks"] == 3
    assert m["accuracy"]["value"] == 1.0, read_task_results(tmp_path / "results.jsonl")
    assert m["error_rate"]["value"] == 0.0
    assert m["tool_calls_per_task"]["value"] > 0


def test_gold_policy_scores_100_percent_on_kit_eval(tmp_path):
    """On the committed held-out tasks when present, else on a few freshly synthesized ones."""
    tasks_file = suites.KIT_EVAL_TASKS
    if not tasks_file.exists():
        from toolkit.records import write_jsonl
        from toolkit.synth.config import SynthConfig
        from toolkit.synth.generate import generate

        tasks_file = tmp_path / "eval.jsonl"
        write_jsonl(tasks_file, generate(SynthConfig(n_train=0, n_eval=8, seed=3)).eval)
    summary = suites.run_eval(
        "gold", "kit-eval", tmp_path / "out", limit=8, tasks_file=tasks_file, n_boot=100
    )
    m = summary["aggregate"]["metrics"]
    bad = [r for r in read_task_results(tmp_path / "out" / "results.jsonl") if r.score < 1.0]
    assert not bad, bad[:2]
    assert summary["aggregate"]["n_tasks"] >= 5
    for name in ("coverage", "pass@0.50", "pass@0.75", "atlas_coverage", "finish_rate"):
        assert m[name]["value"] == 1.0, name
    assert m["error_rate"]["value"] == 0.0
    assert any(k.startswith("rubric/") for k in m)
    # the gold policy makes exactly the gold calls: none over, none under
    assert m["calls_over_gold_per_task"]["value"] == m["calls_under_gold_per_task"]["value"] == 0.0
    assert all(r.n_gold_calls is not None for r in read_task_results(tmp_path / "out" / "results.jsonl"))


def test_bfcl_checker_fails_an_incomplete_trajectory(tmp_path):
    """The suite's BFCL scoring can fail: the gold trajectory with its last call removed is wrong."""
    import asyncio

    from toolkit.envs.episode import open_episode
    from toolkit.synth.bfcl_tasks import replay_gold

    tasks = suites.get_suite("bfcl-base").load_tasks(limit=2)

    def truncated_gold(ts):
        async def one(t):
            short = Task.from_dict({**t.to_dict(), "gold": [g.__dict__ for g in t.gold[:-1]]})
            async with open_episode(short) as ep:
                traj = await replay_gold(short, ep)
            return traj

        async def all_tasks():
            return [await one(t) for t in ts]

        return asyncio.run(all_tasks())

    summary = suites.run_eval("gold", "bfcl-base", tmp_path, tasks=tasks, rollout=truncated_gold, n_boot=50)
    assert summary["aggregate"]["metrics"]["accuracy"]["value"] == 0.0


def test_eval_cli_end_to_end(tmp_path, capsys):
    from toolkit.cli import main

    assert (
        main(["eval", "--policy", "gold", "--suite", "bfcl-base", "--limit", "2", "--out", str(tmp_path)])
        == 0
    )
    assert "accuracy" in capsys.readouterr().out
    assert (
        json.loads((tmp_path / "results.json").read_text())["aggregate"]["metrics"]["accuracy"]["value"]
        == 1.0
    )


@pytest.mark.integration
def test_model_policy_with_adapter_runs_and_records_its_config(tmp_path):
    """A real (tiny, random) model with a LoRA adapter through the whole eval path: the scores are
    whatever they are, the run must finish, be scored and say which model and adapter it used."""
    from peft import LoraConfig, get_peft_model

    from toolkit.models import load_policy

    model, _ = load_policy("tiny-random")
    adapter = tmp_path / "adapter"
    get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj", "v_proj"])).save_pretrained(adapter)

    summary = suites.run_eval(
        "tiny-random",
        "kit-eval",
        tmp_path / "out",
        adapter=str(adapter),
        limit=1,
        seed=5,
        n_boot=50,
        loop_config={"max_turns": 1, "max_new_tokens": 8},
    )
    cfg = summary["config"]
    assert (cfg["model"], cfg["adapter"], cfg["seed"]) == ("tiny-random", str(adapter), 5)
    assert cfg["loop_config"]["temperature"] == 0.0 and cfg["loop_config"]["max_new_tokens"] == 8
    assert summary["label"] == "tiny-random+adapter"
    (result,) = read_task_results(tmp_path / "out" / "results.jsonl")
    assert result.error is None and 0.0 <= result.score <= 1.0 and result.rubric
    (traj,) = read_jsonl(tmp_path / "out" / "trajectories.jsonl", Trajectory)
    assert traj.metadata["policy"].startswith("tiny-random") and traj.stop_reason in STOP_REASONS
    assert traj.completion_ids  # the model generated


def test_loop_settings_layering():
    bfcl, kit = suites.get_suite("bfcl-base"), suites.get_suite("kit-eval")
    assert (
        suites.loop_settings(None, 3, bfcl)["max_context_tokens"] == 8192
    )  # BFCL prompts reach ~4.2k tokens
    assert suites.loop_settings(None, 3, kit)["max_context_tokens"] == 4096
    s = suites.loop_settings({"max_context_tokens": 5000, "temperature": 0.7}, 3, bfcl)
    assert (s["max_context_tokens"], s["temperature"], s["seed"]) == (5000, 0.7, 3)
    assert suites.loop_settings(None, 0)["temperature"] == 0.0  # greedy unless asked


def test_compare_cli_fills_in_gold_call_counts_of_older_results(tmp_path, capsys):
    """`mcp-rl compare BEFORE AFTER --tasks` on results written before they recorded the gold call count:
    the count comes from the tasks file, so the over/under split appears; a wrong tasks file is named."""
    from toolkit.cli import main
    from toolkit.records import TaskResult, write_jsonl

    tasks = make_tasks(4)
    for t in tasks:
        t.gold = [GoldCall("search_tickets", {"customer": 1})] * (1 if t.metadata["kind"] == "lookup" else 2)
    write_jsonl(tmp_path / "tasks.jsonl", tasks)
    # before: one call everywhere (the two-call aggregates are one short); after: two calls everywhere
    # (the aggregates complete, the one-call lookups one over)
    for name, calls in (("before", 1), ("after", 2)):
        (tmp_path / name).mkdir()
        write_jsonl(
            tmp_path / name / "results.jsonl",
            [TaskResult(t.id, "kit-eval", t.metadata["kind"], 0.5, n_calls=calls) for t in tasks],
        )
    assert main(["compare", str(tmp_path / "before"), str(tmp_path / "after"), "--json"]) == 0
    assert "calls_over_gold_per_task" not in json.loads(capsys.readouterr().out)  # counts unknown
    args = [
        "compare",
        str(tmp_path / "before"),
        str(tmp_path / "after"),
        "--tasks",
        str(tmp_path / "tasks.jsonl"),
    ]
    assert main([*args, "--json"]) == 0
    diffs = json.loads(capsys.readouterr().out)
    assert diffs["calls_under_gold_per_task"]["before"] == pytest.approx(0.5)  # 2 of 4 tasks one short
    assert diffs["calls_under_gold_per_task"]["after"] == pytest.approx(0.0)
    assert diffs["calls_over_gold_per_task"]["diff"] == pytest.approx(0.5)  # the lookups, one over each
    assert diffs["tool_calls_per_task"]["diff"] == pytest.approx(1.0)
    assert main(args) == 0
    assert "calls_over_gold_per_task" in capsys.readouterr().out

    write_jsonl(tmp_path / "other.jsonl", make_tasks(2))
    wrong = [
        "compare",
        str(tmp_path / "before"),
        str(tmp_path / "after"),
        "--tasks",
        str(tmp_path / "other.jsonl"),
    ]
    assert main(wrong) == 1
    assert "other.jsonl: no task 'task-2'" in capsys.readouterr().err
