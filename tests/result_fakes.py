"""A graded episode as the evaluation writes it (``TaskResult``), for the claim's and the sweeps' tests:
one essential answer item, passed or failed, and the call counts the guards read."""

from __future__ import annotations

from toolkit.records import TaskResult


def result(
    tid: str, passed: bool, *, answer_failed: bool = False, calls: int = 1, gold_calls: int | None = 1
) -> TaskResult:
    item = {"id": "r1", "essential": True, "check": "answer", "verdict": "fail" if answer_failed else "pass"}
    return TaskResult(
        task_id=tid,
        suite="kit-eval",
        category="lookup",
        score=1.0 if passed else 0.0,
        rubric=[item],
        n_calls=calls,
        n_gold_calls=gold_calls,
        stop_reason="finish",
        first_call_well_formed=True,
    )
