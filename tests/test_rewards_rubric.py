"""Programmatic rubric grading and the rubric / MCP-Atlas rewards, hand-computed on the example tasks."""

import pytest

from toolkit.records import CallRecord, RubricItem, Task, Trajectory
from toolkit.rewards import get_reward
from toolkit.rewards.atlas import aggregate
from toolkit.rewards.rubric import ProgrammaticGrader, check_item
from toolkit.study.examples import HELPDESK_DIFF, abstain_task, count_task, example_gold, helpdesk_task

RUBRIC, ATLAS = get_reward("rubric"), get_reward("atlas")


def c(name, args, ok=True):
    return CallRecord(name=name, args=args, ok=ok)


def traj(task, calls, answer, diff=None):
    return Trajectory(task_id=task.id, messages=[], calls=calls, final_answer=answer, state_diff=diff or {})


def verdicts(task, tr):
    return {g.id: g.verdict for g in ProgrammaticGrader().grade(task, tr)}


@pytest.mark.parametrize("task", [helpdesk_task(), count_task(), abstain_task()], ids=lambda t: t.id)
def test_gold_passes_every_item(task):
    gold = example_gold(task)
    assert set(verdicts(task, gold).values()) == {"pass"}
    assert RUBRIC(task, gold).score == 1.0
    assert ATLAS(task, gold).score == 1.0


def test_partial_helpdesk_trajectory():
    task = helpdesk_task()
    # searched and read the ticket, never closed it; named the requester but not the date
    tr = traj(
        task,
        [c("search_tickets", {"tag": "billing"}), c("get_ticket", {"ticket_id": 48})],
        "It was Tan, Mei.",
    )
    v = verdicts(task, tr)
    assert v == {"r1": "pass", "r2": "pass", "r3": "pass", "r4": "fail", "r5": "fail", "r6": "fail"}
    res = RUBRIC(task, tr)
    assert res.score == pytest.approx(3 / 5)
    assert res.breakdown["optional"] == 0.0
    assert res.breakdown["essential.multi_step_planning"] == pytest.approx(1 / 2)  # r3 pass, r5 fail
    # coverage 0.6 reaches 0.50, but a value the answer must state (the date) is missing: no pass
    assert ATLAS(task, tr).score == pytest.approx(3 / 5) and ATLAS(task, tr).details["answer_failed"] == 1
    assert ATLAS(task, tr).breakdown["pass@0.50"] == 0.0 and ATLAS(task, tr).breakdown["pass@0.75"] == 0.0


def test_partial_verdicts_give_atlas_half_credit():
    task = count_task()
    oct_call = c("count_tickets", {"tag": "billing", "month": "2025-10"})
    tr = traj(task, [oct_call, oct_call], "Change: -25.0 %")
    assert verdicts(task, tr) == {"c1": "pass", "c2": "partial", "c3": "pass"}
    assert RUBRIC(task, tr).score == pytest.approx(2 / 3)  # partial is not a pass
    assert ATLAS(task, tr).score == pytest.approx((1 + 0.5 + 1) / 3)


def test_failed_calls_do_not_count():
    task = count_task()
    calls = [c("count_tickets", {"tag": "billing", "month": "2025-11"}, ok=False)]
    v = verdicts(task, traj(task, calls, "-25%"))
    assert v["c1"] == "partial" and v["c2"] == "fail" and v["c3"] == "pass"


def test_state_checks():
    task = helpdesk_task()
    r5 = task.rubric[4]
    wrong_value = {"tickets/48": {"before": {"status": "open"}, "after": {"status": "pending"}}}
    deleted = {"tickets/48": {"before": {"status": "open"}, "after": None}}
    assert check_item(r5, task, traj(task, [], "", HELPDESK_DIFF)).verdict == "pass"
    assert check_item(r5, task, traj(task, [], "", wrong_value)).verdict == "partial"
    assert check_item(r5, task, traj(task, [], "", deleted)).verdict == "partial"
    assert check_item(r5, task, traj(task, [], "", {})).verdict == "fail"
    any_created = RubricItem("s", "creates a ticket", "answer_correctness", True,
                             {"type": "state", "collection": "tickets", "key": None, "op": "create"})  # fmt: skip
    created = {"tickets/99": {"before": None, "after": {"status": "new"}}}
    assert check_item(any_created, task, traj(task, [], "", created)).verdict == "pass"
    assert check_item(any_created, task, traj(task, [], "", HELPDESK_DIFF)).verdict == "partial"


def test_order_abstention_clarification_checks():
    task = helpdesk_task()
    wrong = traj(
        task,
        [c("update_ticket", {"ticket_id": 48, "status": "closed"}), c("get_ticket", {"ticket_id": 48})],
        "",
    )
    assert verdicts(task, wrong)["r6"] == "partial"
    clar = RubricItem("q", "asks", "answer_correctness", True, {"type": "clarification"})
    assert check_item(clar, task, traj(task, [], "Which ticket do you mean?")).verdict == "pass"
    assert check_item(clar, task, traj(task, [], "Which one?", HELPDESK_DIFF)).verdict == "partial"
    assert check_item(clar, task, traj(task, [], "Done.")).verdict == "fail"
    ab = abstain_task()
    assert RUBRIC(ab, traj(ab, [c("get_weather", {"city": "Oslo"})], "Sunny.")).score == pytest.approx(1 / 2)


def test_edge_cases_empty_answer_no_calls_duplicates():
    task = helpdesk_task()
    assert RUBRIC(task, traj(task, [], "")).score == 0.0
    gold = example_gold(task)
    gold.final_answer, gold.turn_answers = "", []
    assert verdicts(task, gold)["r3"] == "fail" and verdicts(task, gold)["r4"] == "fail"
    dup = example_gold(task)
    dup.calls = dup.calls + dup.calls  # repeating every call does not hurt the rubric
    assert RUBRIC(task, dup).score == 1.0


def test_answers_in_earlier_turns_count():
    task = helpdesk_task()
    tr = example_gold(task)
    tr.turn_answers, tr.final_answer = ["requester: Mei Tan", "last login 2025-10-15"], "Closed it."
    assert RUBRIC(task, tr).score == 1.0


def test_unknown_or_broken_specs_are_ungraded_not_fatal():
    task = helpdesk_task()
    task.rubric = [
        RubricItem("u1", "judge only", "tool_selection", True, {}),
        RubricItem(
            "u2", "broken", "query_construction", True, {"type": "answer", "value": 1, "normalize": "fuzzy"}
        ),
        RubricItem(
            "ok", "search", "tool_selection", True, {"type": "tool_called", "tools": ["search_tickets"]}
        ),
    ]
    res = RUBRIC(task, example_gold(task))
    assert res.details["ungraded"] == 2
    assert res.score == 1.0  # the one graded essential item passed
    task.rubric = task.rubric[:2]
    res = RUBRIC(task, example_gold(task))
    assert res.details.get("unscorable") is True and res.score == 0.0


def test_no_rubric_is_unscorable():
    task = Task("t", "eval", "p", [], [], 0)
    assert RUBRIC(task, traj(task, [], "x")).details["unscorable"] is True


def test_atlas_aggregate():
    task = helpdesk_task()
    results = ATLAS.batch(
        [task] * 3,
        [
            example_gold(task),
            traj(task, [], ""),
            traj(task, [c("search_tickets", {"tag": "billing"})], "Mei Tan on 2025-10-15"),
        ],
    )
    # coverages: 1.0, 0.0, 3/5
    agg = aggregate(results)
    assert agg["coverage"] == pytest.approx((1 + 0 + 0.6) / 3)
    assert agg["pass@0.50"] == pytest.approx(2 / 3) and agg["pass@0.75"] == pytest.approx(1 / 3)
