"""The kit's PROVE variant (prove-kit), graduated and ToolRL rewards against hand-computed values on the example tasks.

Helpdesk task: gold = search_tickets(tag) -> get_ticket(48) [dep 0] -> get_user(7) [dep 1],
update_ticket(48, closed) [dep 1]; n_gold = 4, so PROVE's budget B = 4 + ceil(4 * 0.5) = 6.
"""

import math

import pytest

from toolkit.records import CallRecord, Trajectory
from toolkit.rewards import get_reward
from toolkit.rewards.prove_kit import ProveKitReward as ProveReward
from toolkit.rewards.toolrl import multiset_jaccard
from toolkit.study.examples import TOOL_SCHEMAS, abstain_task, count_task, example_gold, helpdesk_task

PROVE = ProveReward(tool_schemas=TOOL_SCHEMAS)
GRAD = get_reward("graduated")
TOOLRL = get_reward("toolrl")
W = 0.5 + 0.5 + 0.15 + 0.2  # applicable PROVE weights on a task with gold calls


def traj_with(task, calls, answer=None, diff=None, parse_errors=0):
    gold = example_gold(task)
    return Trajectory(
        task_id=task.id,
        messages=[],
        calls=calls,
        final_answer=gold.final_answer if answer is None else answer,
        state_diff=gold.state_diff if diff is None else diff,
        n_parse_errors=parse_errors,
    )


def c(name, args, ok=True, error=None):
    return CallRecord(name=name, args=args, ok=ok, error=error)


SEARCH, TICKET = c("search_tickets", {"tag": "billing"}), c("get_ticket", {"ticket_id": 48})
USER, UPDATE = c("get_user", {"user_id": 7}), c("update_ticket", {"ticket_id": 48, "status": "closed"})


@pytest.mark.parametrize("task", [helpdesk_task(), count_task(), abstain_task()], ids=lambda t: t.id)
def test_gold_gets_full_marks(task):
    gold = example_gold(task)
    assert PROVE(task, gold).score == pytest.approx(1.0)
    assert GRAD(task, gold).score == pytest.approx(1.0)
    assert TOOLRL(task, gold).score == pytest.approx(4.0)


def test_wrong_order():
    task = helpdesk_task()
    tr = traj_with(task, [TICKET, SEARCH, USER, UPDATE])
    # coverage: search matched at index 1; get_ticket (dep 0) only at index 0 -> unmatched, so are its dependents
    res = PROVE(task, tr)
    assert res.breakdown["coverage"] == pytest.approx(0.25)
    assert res.score == pytest.approx((0.5 * 1 + 0.5 * 0.25 + 0.15 * 1 + 0.2 * 1) / W)
    g = GRAD(task, tr)
    assert g.breakdown["orchestration"] == pytest.approx(0.25)
    assert g.score == pytest.approx(0.5 * 1.0 + 0.5 * 0.25)
    assert TOOLRL(task, tr).score == pytest.approx(4.0)  # ToolRL ignores order


def test_calls_over_budget_and_duplicates():
    task = helpdesk_task()
    tr = traj_with(task, [SEARCH, TICKET, USER, USER, USER, USER, UPDATE])  # n = 7 > B = 6
    res = PROVE(task, tr)
    assert res.details["budget"] == 6
    assert res.breakdown["efficiency_penalty"] == pytest.approx(-0.5 * 1 / 6)
    assert res.score == pytest.approx(1.0 - 0.5 / 6)
    assert GRAD(task, tr).score == pytest.approx(1.0)  # graduated does not count repeats
    # ToolRL: r_name = 4/7; params 4 x 1; values 1+1+1+2; S_max = 1 + 2+2+2+3 = 10
    assert TOOLRL(task, tr).score == pytest.approx(1 + 6 * (4 / 7 + 4 + 5) / 10 - 3)


def test_hallucinated_unknown_tool():
    task = helpdesk_task()
    tr = traj_with(
        task, [SEARCH, TICKET, c("lookup_everything", {"q": "x"}, False, "unknown_tool"), USER, UPDATE]
    )
    res = PROVE(task, tr)
    assert res.breakdown["validity"] == pytest.approx(4 / 5)
    assert res.breakdown["precision"] == pytest.approx(4 / 5)
    assert res.score == pytest.approx((0.5 * 0.8 + 0.5 + 0.15 * 0.8 + 0.2) / W)
    assert GRAD(task, tr).score == pytest.approx(0.5 * 0.8 + 0.5)
    assert TOOLRL(task, tr).score == pytest.approx(1 + 6 * (4 / 5 + 4 + 5) / 10 - 3)


def test_malformed_arguments():
    task = helpdesk_task()
    bad = c("get_ticket", None, False, "bad_json")
    tr = traj_with(task, [SEARCH, bad, USER, UPDATE], parse_errors=1)
    res = PROVE(task, tr)
    assert res.breakdown["validity"] == pytest.approx((3 + 1 / 3) / 4)  # name only for the bad call
    assert res.breakdown["coverage"] == pytest.approx(0.25)  # get_ticket unmatched, dependents too
    assert res.score == pytest.approx((0.5 * (3 + 1 / 3) / 4 + 0.5 * 0.25 + 0.15 + 0.2) / W)
    g = GRAD(task, tr)  # bad call: name 1/3, no structure/values, not executed -> atomic 1/6
    assert g.breakdown["atomic"] == pytest.approx((3 + 1 / 6) / 4)
    assert g.breakdown["atomic.name"] == 1.0 and g.breakdown["atomic.values"] == pytest.approx(3 / 4)
    assert g.breakdown["atomic.execution"] == pytest.approx(3 / 4)
    assert g.score == pytest.approx(0.5 * (3 + 1 / 6) / 4 + 0.5 * 1.0)
    t = TOOLRL(task, tr)
    assert t.breakdown["format"] == 0.0
    assert t.score == pytest.approx(6 * (1 + 2 + 2 + 3) / 10 - 3)


def test_no_calls_and_empty_answer():
    task = helpdesk_task()
    tr = traj_with(task, [], answer="", diff={})
    assert PROVE(task, tr).score == 0.0
    assert GRAD(task, tr).score == 0.0
    assert TOOLRL(task, tr).score == -3.0  # format 0 (nothing produced), correctness -3


def test_argument_values_and_required_types():
    task = count_task()  # gold: count_tickets(billing, 2025-10), count_tickets(billing, 2025-11); B = 3
    oct_call = c("count_tickets", {"tag": "billing", "month": "2025-10"})
    tr = traj_with(task, [oct_call, oct_call, c("count_tickets", {"tag": 5, "month": "2025-10"})])
    res = PROVE(task, tr)
    # third call: required params present but tag has the wrong type -> 2/3 dropped to 1/3
    assert res.breakdown["validity"] == pytest.approx((1 + 1 + 1 / 3) / 3)
    assert res.breakdown["coverage"] == 1.0  # keys are enough for coverage
    assert res.breakdown["arg_match"] == pytest.approx((1 + 0.5) / 2)
    g = GRAD(task, tr)
    # atomic per call: oct calls match the oct step fully (1); wrong-typed call: name 1/3 + structure
    # (2/2 keys, 1/2 typed) / 3 = 1/6, values 0 -> AST 1/2, executed -> (1/2 + 1) / 2
    assert g.breakdown["atomic"] == pytest.approx((1 + 1 + 0.75) / 3)


def test_abstention_task():
    task = abstain_task()
    tr = traj_with(task, [c("get_weather", {"city": "Paris"})], answer="Here you go.")
    res = PROVE(task, tr)
    assert res.breakdown["abstention"] == 0.0
    assert res.score == pytest.approx(0.0 - 0.5 * 1 / 1)  # B = 0 -> divided by 1
    assert GRAD(task, tr).score == 0.0
    assert TOOLRL(task, tr).score == pytest.approx(1 - 3)


def test_prove_config_and_raw_mode():
    task = helpdesk_task()
    tr = traj_with(task, [SEARCH, TICKET])
    raw = ProveReward(tool_schemas=TOOL_SCHEMAS, normalize=False, weights={"precision": 0.0}, alpha=1.0)
    res = raw(task, tr)
    assert res.breakdown["coverage"] == 0.5
    assert res.score == pytest.approx(0.5 * 1 + 0.5 * 0.5 + 0.2 * 1)
    with pytest.raises(ValueError, match="unknown PROVE weight"):
        ProveReward(weights={"speed": 1.0})
    assert math.isinf(PROVE.range[0])


def test_multiset_jaccard():
    assert multiset_jaccard(["a", "a", "b"], ["a", "b", "b"]) == pytest.approx(2 / 4)
    assert multiset_jaccard([], []) == 1.0
