"""Eval metrics: hand-computed values, bootstrap intervals, paired comparison."""

from __future__ import annotations

import json

import numpy as np
import pytest

from toolkit.eval.metrics import (
    TaskResult,
    aggregate,
    bootstrap_ratio,
    paired_bootstrap,
    read_task_results,
    summarize,
)
from toolkit.records import RecordError


def item(cat: str, passed: bool) -> dict:
    return {"id": f"{cat}-{passed}", "category": cat, "essential": True, "passed": passed}


def kit_results() -> list[TaskResult]:
    return [
        TaskResult(
            "t1",
            "kit-eval",
            "lookup",
            1.0,
            atlas_score=1.0,
            n_calls=2,
            n_failed_calls=0,
            stop_reason="finish",
            tool_counts={"get_ticket": 2},
            rubric=[item("tool_selection", True), item("answer_correctness", True)],
        ),
        TaskResult(
            "t2",
            "kit-eval",
            "lookup",
            0.5,
            atlas_score=0.75,
            n_calls=4,
            n_failed_calls=1,
            stop_reason="finish",
            tool_counts={"get_ticket": 3, "search": 1},
            rubric=[item("tool_selection", True), item("answer_correctness", False)],
        ),
        TaskResult(
            "t3",
            "kit-eval",
            "write",
            0.0,
            atlas_score=0.25,
            n_calls=0,
            n_failed_calls=0,
            stop_reason="max_turns",
            rubric=[item("tool_selection", False)],
        ),
        TaskResult(
            "t4",
            "kit-eval",
            "write",
            0.8,
            atlas_score=0.5,
            n_calls=4,
            n_failed_calls=3,
            stop_reason="no_tool_call",
            tool_counts={"update": 4},
            rubric=[item("query_construction", True)],
        ),
    ]


def test_hand_computed_values():
    m = summarize(kit_results(), n_boot=200)
    assert m["coverage"].value == pytest.approx((1.0 + 0.5 + 0.0 + 0.8) / 4)
    assert m["pass@0.50"].value == pytest.approx(3 / 4)  # 0.5 counts as passing 0.50
    assert m["pass@0.75"].value == pytest.approx(2 / 4)
    assert m["tool_calls_per_task"].value == pytest.approx(10 / 4)
    assert m["tool_failure_rate"].value == pytest.approx(4 / 10)  # pooled calls, not a mean of rates
    assert m["finish_rate"].value == pytest.approx(2 / 4)
    assert m["atlas_coverage"].value == pytest.approx(2.5 / 4)
    assert m["atlas_pass@0.75"].value == pytest.approx(2 / 4)
    assert m["rubric/tool_selection"].value == pytest.approx(2 / 3)
    assert m["rubric/answer_correctness"].value == pytest.approx(1 / 2)
    assert m["rubric/query_construction"].value == pytest.approx(1.0)
    assert "accuracy" not in m  # no BFCL verdicts in these results
    for est in m.values():
        assert est.ci_low <= est.value + 1e-12 and est.value <= est.ci_high + 1e-12


def test_calls_over_and_under_the_gold_count():
    # a one-call lookup answered with three calls (2 over), a two-call chain stopped after one (1 under),
    # an abstain task with one call (1 over), and an older result without the gold count (left out)
    res = [
        TaskResult("a", "kit-eval", "lookup", 1.0, n_calls=3, n_gold_calls=1),
        TaskResult("b", "kit-eval", "chain", 0.0, n_calls=1, n_gold_calls=2),
        TaskResult("c", "kit-eval", "abstain", 0.0, n_calls=1, n_gold_calls=0),
        TaskResult("d", "kit-eval", "lookup", 1.0, n_calls=5),
    ]
    m = summarize(res, n_boot=100)
    assert m["calls_over_gold_per_task"].value == pytest.approx(3 / 3)
    assert m["calls_under_gold_per_task"].value == pytest.approx(1 / 3)
    assert m["tool_calls_per_task"].value == pytest.approx(10 / 4)  # every task, as before
    assert "calls_over_gold_per_task" not in summarize(kit_results(), n_boot=50)  # no gold counts known


def test_bfcl_accuracy_per_category_and_overall():
    res = [
        TaskResult(f"b{i}", "bfcl", "multi_turn_base", float(c), correct=c)
        for i, c in enumerate([1, 1, 0, 1])
    ]
    res += [
        TaskResult(f"m{i}", "bfcl", "multi_turn_miss_func", float(c), correct=c) for i, c in enumerate([0, 1])
    ]
    m = summarize(res, n_boot=200)
    assert m["accuracy"].value == pytest.approx(4 / 6)
    assert m["accuracy/multi_turn_base"].value == pytest.approx(3 / 4)
    assert m["accuracy/multi_turn_miss_func"].value == pytest.approx(1 / 2)
    assert m["accuracy/multi_turn_base"].n == 4


def test_bootstrap_is_seeded_and_has_the_expected_width():
    rng = np.random.default_rng(1)
    x = (rng.random(400) < 0.3).astype(float)
    a, b = bootstrap_ratio(x, seed=7), bootstrap_ratio(x, seed=7)
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)
    y = rng.random(50)  # continuous scores: another seed gives other resamples, so other endpoints
    assert bootstrap_ratio(y, seed=7).ci_low != bootstrap_ratio(y, seed=8).ci_low
    p = x.mean()
    normal_width = 2 * 1.96 * np.sqrt(p * (1 - p) / x.size)
    assert a.ci_high - a.ci_low == pytest.approx(normal_width, rel=0.15)
    assert a.ci_low < p < a.ci_high
    # more tasks, narrower interval
    small = bootstrap_ratio(x[:40], seed=7)
    assert small.ci_high - small.ci_low > 2 * (a.ci_high - a.ci_low)


def test_bootstrap_edge_cases():
    empty = bootstrap_ratio([])
    assert empty.n == 0 and np.isnan(empty.value)
    const = bootstrap_ratio([1.0] * 10)
    assert (const.value, const.ci_low, const.ci_high) == (1.0, 1.0, 1.0)
    assert np.isnan(bootstrap_ratio([0.0, 0.0], [0.0, 0.0]).value)  # no calls: failure rate undefined
    with pytest.raises(ValueError):
        bootstrap_ratio([1.0, 2.0], [1.0])


def test_paired_bootstrap_detects_a_real_improvement_and_not_noise():
    rng = np.random.default_rng(0)
    base = rng.random(120)
    before = [TaskResult(f"t{i}", "s", "c", float(s)) for i, s in enumerate(base)]
    better = [TaskResult(f"t{i}", "s", "c", float(min(1.0, s + 0.2))) for i, s in enumerate(base)]
    noisy = [
        TaskResult(f"t{i}", "s", "c", float(np.clip(s + rng.normal(0, 0.05), 0, 1)))
        for i, s in enumerate(base)
    ]

    up = paired_bootstrap(before, list(reversed(better)))  # order does not matter: matched by task id
    assert up["coverage"].diff > 0.1 and up["coverage"].outside_ci
    assert up["coverage"].ci_low > 0
    assert up["coverage"].n_pairs == 120

    same = paired_bootstrap(before, before)
    assert same["coverage"].diff == 0 and not same["coverage"].outside_ci

    flat = paired_bootstrap(before, noisy)
    assert not flat["coverage"].outside_ci
    # the paired interval is much tighter than the spread of either run alone
    single = summarize(before)["coverage"]
    assert flat["coverage"].ci_high - flat["coverage"].ci_low < 0.5 * (single.ci_high - single.ci_low)


def test_paired_bootstrap_needs_common_tasks():
    with pytest.raises(ValueError, match="no task ids"):
        paired_bootstrap([TaskResult("a", "s", "c", 1.0)], [TaskResult("b", "s", "c", 1.0)])


def test_aggregate_and_round_trip(tmp_path):
    res = kit_results()
    agg = aggregate(res, n_boot=100)
    assert agg["n_tasks"] == 4
    assert agg["stop_reasons"] == {"finish": 2, "max_turns": 1, "no_tool_call": 1}
    assert agg["tool_usage"]["calls_per_tool"] == {"get_ticket": 5, "update": 4, "search": 1}
    assert agg["tool_usage"]["calls_per_task_histogram"] == {"0": 1, "2": 1, "4": 2}
    json.dumps(agg)  # serialisable as is
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(json.dumps(r.to_dict()) for r in res) + "\n")
    assert read_task_results(path) == res
    path.write_text(json.dumps(res[0].to_dict()) + "\n{broken\n")
    with pytest.raises(RecordError, match=r"r.jsonl:2"):
        read_task_results(path)


def test_first_call_well_formed_per_episode_and_as_a_metric():
    """The warm start's bar (issue 31): the first model turn is a tool call that parses and names an
    offered tool. Wrong arguments still count; bad JSON, an unknown tool, plain text or a turn cut at
    the token cap do not."""
    from toolkit.agent.loop import RolloutConfig, rollout
    from toolkit.agent.testing import ScriptedPolicy, fake_opener, turns
    from toolkit.eval.metrics import first_call_well_formed
    from toolkit.models import load_tokenizer
    from toolkit.records import Task

    def call(name: str, args: str) -> str:
        return f'<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>'

    scripts = {
        "good": (call("add", '{"a": 2, "b": 3}'), True),
        "wrong_args": (call("add", '{"a": "two"}'), True),
        "finish": (call("finish", '{"answer": "5"}'), True),
        "bad_json": ('<tool_call>\n{"name": "add", "arguments": {"a": 2,\n</tool_call>', False),
        "unknown": (call("subtract", '{"a": 2, "b": 3}'), False),
        "text": ("The sum is 5.", False),
        "cut": (call("add", '{"a": 2, "b": 3}') + " and more" * 40, False),
    }
    tok = load_tokenizer("tiny-random")
    loop = RolloutConfig(max_turns=2, max_new_tokens=48, max_context_tokens=2048)
    verdicts = {}
    for name, (text, _) in scripts.items():
        task = Task(id=name, split="eval", prompt="Add 2 and 3.", servers=["calc"], tools=["add"], seed=0)
        (traj,) = rollout([task], ScriptedPolicy(turns(text), tok), loop, open_episode=fake_opener())
        verdicts[name] = first_call_well_formed(traj)
    assert verdicts == {name: expected for name, (_, expected) in scripts.items()}
    results = [
        TaskResult(n, "kit-eval", "lookup", 0.0, first_call_well_formed=v) for n, v in verdicts.items()
    ]
    results.append(TaskResult("old", "kit-eval", "lookup", 0.0))  # an older results file: not counted
    metric = summarize(results)["first_call_well_formed"]
    assert metric.value == pytest.approx(3 / 7) and metric.n == 7
    assert "first_call_well_formed" not in summarize([TaskResult("old", "kit-eval", "lookup", 0.0)])


def test_exact_interval_matches_clopper_pearson_and_says_how_high_a_zero_rate_can_be():
    from toolkit.eval.metrics import exact_interval

    # published Clopper-Pearson values (e.g. R's binom.test): 5/20 and 50/100
    assert exact_interval(5, 20) == pytest.approx((0.08657, 0.49105), abs=1e-5)
    assert exact_interval(50, 100) == pytest.approx((0.39832, 0.60168), abs=1e-5)
    # 0 of n: the bootstrap says [0, 0]; the exact bound is 1 - 0.025**(1/n)
    assert exact_interval(0, 30) == pytest.approx((0.0, 1 - 0.025 ** (1 / 30)), abs=1e-9)
    assert exact_interval(30, 30)[1] == 1.0
    with pytest.raises(ValueError, match="k=3, n=2"):
        exact_interval(3, 2)
