"""``bench.lever_rft``: the RFT lever's dev-set difference (paired by task, the claim's groups, kinds and
guards) and the check that a stored warm-start evaluation is this code's before it is reused."""

from __future__ import annotations

import pytest
from test_eval_claim import result  # a greedy result that passes or not, as the claim's tests build it

from bench.lever_rft import check_reproduces, difference, spread, stored_before
from toolkit.records import Task, write_jsonl


def task(tid: str, kind: str, held_out_template: bool) -> Task:
    held = ["template"] if held_out_template else ["phrasing"]
    return Task(
        id=tid,
        split="eval",
        prompt=tid,
        servers=[],
        tools=[],
        seed=0,
        metadata={"held_out": held, "kind": kind},
    )


TASKS = [task(f"t{i}", "write" if i % 2 else "lookup", held_out_template=i >= 6) for i in range(8)]


def test_the_difference_is_paired_by_task_per_group_kind_and_guard():
    before = [result(t.id, passed=i in (0, 6)) for i, t in enumerate(TASKS)]
    # after gains t1, t3 (in-template writes) and loses t6 (held out); answers in another order
    after = [result(t.id, passed=i in (0, 1, 3), calls=2) for i, t in reversed(list(enumerate(TASKS)))]
    d = difference(TASKS, before, after)
    assert d["in_template"]["greedy"]["diff"] == pytest.approx(2 / 6)
    assert d["held_out_templates"]["greedy"]["diff"] == pytest.approx(-1 / 2)
    assert d["all"]["greedy"]["before"] == pytest.approx(2 / 8)
    assert d["all"]["greedy"]["after"] == pytest.approx(3 / 8)
    assert d["per_kind"]["write"]["greedy"]["diff"] == pytest.approx(2 / 4)
    assert d["per_kind"]["lookup"]["greedy"]["diff"] == pytest.approx(-1 / 4)
    assert d["guards"]["calls_per_task"]["diff"] == pytest.approx(1.0)
    g = d["all"]["greedy"]
    assert g["ci_low"] <= g["diff"] <= g["ci_high"] and g["n_tasks"] == 8


def test_a_task_without_a_result_on_either_side_stops_the_measurement():
    before = [result(t.id, True) for t in TASKS]
    with pytest.raises(SystemExit, match="after: no result for 1 of 8 tasks"):
        difference(TASKS, before, before[:-1])


def test_a_stored_before_is_copied_for_the_tasks_and_must_reproduce(tmp_path):
    stored = tmp_path / "stored"
    stored.mkdir()
    write_jsonl(stored / "results.jsonl", [result(t.id, i % 3 == 0) for i, t in enumerate(TASKS)])
    before = tmp_path / "before"
    stored_before(stored, TASKS[:5], before)
    again = tmp_path / "again"
    again.mkdir()
    write_jsonl(again / "results.jsonl", [result(t.id, i % 3 == 0) for i, t in enumerate(TASKS[:3])])
    assert check_reproduces(before, again) == 3
    write_jsonl(again / "results.jsonl", [result("t0", True, calls=2)])  # the same pass, another episode
    with pytest.raises(SystemExit, match="differs from .* on 1 of 1 tasks"):
        check_reproduces(before, again)
    with pytest.raises(SystemExit, match="no result for 1 dev tasks"):
        stored_before(stored, [*TASKS, task("t9", "write", False)], tmp_path / "other")


def test_the_check_spreads_over_the_whole_set():
    """A task file from other synth code differs towards its end (eval-s1-00169 was the first of 32
    changed dev tasks on 2026-11-28): the first 20 tasks would not see it."""
    assert [t.id for t in spread(TASKS, 3)] == ["t0", "t4", "t7"]
    assert spread(TASKS, 20) == TASKS and spread(TASKS, 1) == TASKS[:1]
