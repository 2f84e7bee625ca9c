"""Registry, weighted composition, the TRL adapter and `mcp-rl score`."""

import json

import pytest

from toolkit import cli
from toolkit.records import write_jsonl
from toolkit.rewards import as_trl_reward_func, combine, get_reward, list_rewards
from toolkit.study.examples import TOOL_SCHEMAS, example_gold, example_tasks, helpdesk_task
from toolkit.study.perturb import perturb


def test_registry_names_and_unknown():
    known = {
        "rubric",
        "rubric-judge",
        "rubric-pass",
        "answer",
        "atlas",
        "prove",
        "graduated",
        "toolrl",
        "bfcl",
    }
    assert known <= set(list_rewards())
    with pytest.raises(KeyError, match="unknown reward"):
        get_reward("nope")
    r = get_reward("prove", alpha=0.25, tool_schemas=TOOL_SCHEMAS)
    assert r.name == "prove" and r.alpha == 0.25


def test_combine_weights_and_breakdown():
    task = helpdesk_task()
    tr = perturb(task, example_gold(task), ["swap_calls", "wrong_answer"], seed=3)
    rubric, grad = get_reward("rubric"), get_reward("graduated")
    both = combine([(rubric, 0.7), (grad, 0.3)])
    res = both(task, tr)
    assert res.score == pytest.approx(0.7 * rubric(task, tr).score + 0.3 * grad(task, tr).score)
    assert res.breakdown["graduated"] == grad(task, tr).score
    assert res.breakdown["graduated.orchestration"] == grad(task, tr).breakdown["orchestration"]
    assert both.range == (0.0, 1.0)
    assert [r.score for r in both.batch([task, task], [tr, tr])] == [res.score, res.score]
    with pytest.raises(ValueError, match="unique"):
        combine([(rubric, 1), (rubric, 1)])


def test_trl_reward_func_reads_task_and_trajectory_kwargs():
    tasks = example_tasks()
    trajs = [perturb(t, example_gold(t), ["drop_call"], seed=1) for t in tasks]
    reward = get_reward("prove", tool_schemas=TOOL_SCHEMAS)
    fn = as_trl_reward_func(reward)
    assert fn.__name__ == "reward_prove"  # trl.trainer.utils.get_callable_name reads __name__
    logged = {}
    out = fn(
        prompts=[[{"role": "user", "content": t.prompt}] for t in tasks],
        completions=[[{"role": "assistant", "content": tr.final_answer}] for tr in trajs],
        completion_ids=[[1]] * 3,
        task=[json.dumps(tasks[0].to_dict()), tasks[1].to_dict(), tasks[2].to_dict()],
        trajectory=[tr.to_dict() for tr in trajs],
        log_metric=lambda k, v: logged.__setitem__(k, v),
        trainer_state=None,
    )
    assert out == [reward(t, tr).score for t, tr in zip(tasks, trajs, strict=True)]
    assert "reward_prove/coverage" in logged
    with pytest.raises(KeyError, match="trajectory"):
        fn(prompts=["p"], completions=["c"], task=[tasks[0].to_dict()])


def test_trl_reward_func_returns_none_when_unscorable():
    task = helpdesk_task()
    task.rubric = []
    fn = as_trl_reward_func(get_reward("rubric"))
    assert fn(
        prompts=["p"], completions=["c"], task=[task.to_dict()], trajectory=[example_gold(task).to_dict()]
    ) == [None]


def test_score_cli(tmp_path, capsys):
    tasks = example_tasks()
    trajs = [example_gold(t) for t in tasks] + [perturb(tasks[0], example_gold(tasks[0]), ["empty_answer"])]
    write_jsonl(tmp_path / "tasks.jsonl", tasks)
    write_jsonl(tmp_path / "trajs.jsonl", trajs)
    args = ["score", "--reward", "rubric", "--tasks", str(tmp_path / "tasks.jsonl"),
            "--trajectories", str(tmp_path / "trajs.jsonl")]  # fmt: skip
    assert cli.main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    scores = [row["score"] for row in out["trajectories"]]
    rubric = get_reward("rubric")
    assert scores == [rubric(tasks[i if i < 3 else 0], tr).score for i, tr in enumerate(trajs)]
    assert out["aggregate"]["mean"] == pytest.approx(sum(scores) / 4)
    assert out["aggregate"]["full_marks"] == pytest.approx(3 / 4)
    assert cli.main(args) == 0 and "full marks=75.0%" in capsys.readouterr().out
    (tmp_path / "bad.jsonl").write_text(json.dumps(trajs[0].to_dict()) + "\n{not json\n")
    bad = [*args[:-1], str(tmp_path / "bad.jsonl")]
    assert cli.main(bad) == 1
    assert "bad.jsonl:2" in capsys.readouterr().err


def test_trl_reward_func_pickles():
    import pickle

    fn = pickle.loads(pickle.dumps(as_trl_reward_func(get_reward("graduated"), name="grad")))
    task = helpdesk_task()
    assert fn.__name__ == "grad"
    assert fn(
        prompts=["p"], completions=["c"], task=[task.to_dict()], trajectory=[example_gold(task).to_dict()]
    ) == [1.0]


def test_binarize_and_zero_variance_share():
    from toolkit.rewards import binarize
    from toolkit.study.comparisons import zero_variance_table

    task = helpdesk_task()
    gold = example_gold(task)
    half = perturb(task, gold, ["wrong_answer"])  # rubric 3/5
    none = perturb(task, gold, ["empty_answer"])  # rubric 3/5 as well (r3, r4 fail)
    rubric = get_reward("rubric")
    binary = binarize(rubric, name="binary")
    assert [binary(task, t).score for t in (gold, half)] == [1.0, 0.0]
    assert binary(task, half).breakdown["rubric"] == pytest.approx(0.6)
    groups = [(task, [half, none]), (task, [gold, half])]  # group 1 flat for both rewards; group 2 not
    zv = zero_variance_table(groups, {"rubric": rubric, "binary": binary})
    assert zv.loc["rubric", "zero_variance_share"] == 0.5 and zv.loc["binary", "zero_variance_share"] == 0.5
    assert zv.loc["binary", "mean_group_std"] == pytest.approx((0 + 0.5) / 2)


def test_rubric_pass_is_the_per_episode_pass_at_threshold():
    task = helpdesk_task()
    gold = example_gold(task)
    wrong = perturb(task, gold, ["wrong_answer"])  # 3 of the 5 essential items
    strict, loose = get_reward("rubric-pass"), get_reward("rubric-pass", threshold=0.5)
    assert strict.name == "rubric-pass" and strict.range == (0.0, 1.0)
    assert [strict(task, t).score for t in (gold, wrong)] == [1.0, 0.0]
    # 0.6 of the items reach the loose threshold, but a wrong answer never passes (the pass@t gate)
    assert loose(task, wrong).score == 0.0 and loose(task, wrong).details["answer_failed"] == 2
    right_answer_wrong_order = perturb(task, gold, ["swap_calls"])
    assert loose(task, right_answer_wrong_order).score == 1.0
    assert strict(task, wrong).breakdown["rubric"] == pytest.approx(0.6)
    assert as_trl_reward_func(strict).__name__ == "reward_rubric_pass"
    with pytest.raises(ValueError, match="threshold"):
        get_reward("rubric-pass", threshold=0.0)


def test_answer_scores_the_answer_items_only_and_skips_tasks_without_them():
    import dataclasses

    task = helpdesk_task()
    gold = example_gold(task)
    wrong = perturb(task, gold, ["wrong_answer"])  # every call right, the stated values wrong
    answer, rubric = get_reward("answer"), get_reward("rubric")
    assert answer.name == "answer" and answer.range == (0.0, 1.0)
    assert answer(task, gold).score == 1.0 and answer(task, wrong).score == 0.0
    assert rubric(task, wrong).score == pytest.approx(0.6)  # the full rubric barely notices
    assert set(answer(task, wrong).breakdown) == {"essential", "essential.answer_correctness"}
    calls_only = dataclasses.replace(
        task, rubric=[it for it in task.rubric if it.category != "answer_correctness"]
    )
    assert answer(calls_only, gold).details["unscorable"]
    reward_func = as_trl_reward_func(answer)
    assert reward_func.__name__ == "reward_answer"
    assert reward_func(
        prompts=[None, None], completions=[None, None], task=[task, calls_only], trajectory=[wrong, gold]
    ) == [0.0, None]


def test_finished_pays_for_a_reply_not_for_running_out_of_turns():
    import dataclasses

    task = helpdesk_task()
    gold = example_gold(task)
    finished = get_reward("finished")
    scores = {
        reason: finished(task, dataclasses.replace(gold, stop_reason=reason)).score
        for reason in ("finish", "no_tool_call", "max_turns", "length", "error")
    }
    assert scores == {"finish": 1.0, "no_tool_call": 1.0, "max_turns": 0.0, "length": 0.0, "error": 0.0}
    fn = as_trl_reward_func(finished)
    cut = dataclasses.replace(gold, stop_reason="max_turns").to_dict()
    assert fn(
        prompts=["p"] * 2, completions=["c"] * 2, task=[task.to_dict()] * 2, trajectory=[gold, cut]
    ) == [1.0, 0.0]
