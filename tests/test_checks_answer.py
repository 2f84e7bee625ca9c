"""Answer grading that requires commitment (toolkit.checks.answer) and the adversarial policies that try to
game it (toolkit.eval.adversarial). Every policy row below passed 50-100% of the answer tasks under the
old check (the expected value anywhere in the answer, pass@t on the score alone)."""

from __future__ import annotations

import json

import pytest

from toolkit.checks.answer import AnswerContext, check_answer, value_kind
from toolkit.checks.leaks import leaked_answer
from toolkit.checks.state import state_verdict
from toolkit.eval.adversarial import POLICIES
from toolkit.paths import DATA_DIR
from toolkit.records import GoldCall, Task, read_jsonl

EVAL = DATA_DIR / "tasks" / "eval.jsonl"


def ok(answer, value, rule="text", **ctx):
    return check_answer(answer, value, rule, 0.0, AnswerContext(**ctx)).passed


# ---- the check, rule by rule -------------------------------------------------------------------------


def test_a_committed_answer_passes_and_context_from_the_reference_is_fine():
    assert ok("The total of order o-5011 is 627.3.", 627.3, "number")
    ref = "(1) #incidents has 11 messages. (2) 18.8% of the 16 deals are proposal."
    expected = [(11, "number"), (18.8, "number")]
    assert ok(ref, 18.8, "number", expected=expected, reference=ref)
    # the 16 is context only because the reference answer states it
    assert not ok(ref, 18.8, "number", expected=expected)


def test_listing_hedging_and_extra_numbers_fail():
    assert not ok(" ".join(str(i) for i in range(101)), 42, "number")
    assert not ok("It is 42, or maybe 17.", 42, "number")
    assert not ok("Maybe 42.", 42, "number")
    assert not ok("The channel is web or email.", "web", outputs=['{"channel": "web", "alt": "email"}'])
    assert not ok("web/email", "web")


def test_digits_of_ids_dates_times_phones_and_list_markers_are_not_numbers():
    assert ok("Sven Jensen (st-004) has 1 pending ticket, t-1017, created 2025-10-01T10:00.", 1, "number")
    assert ok("(1) 3 deals. (2) Done.", 3, "number", request="1. count the deals 2. tag it")
    assert ok("Call +1-555-6174: the count is 2.", 2, "number")
    assert value_kind("t-1022", "text") == "id" and value_kind("Granite Bank", "text") == "text"
    assert not ok("The earliest ticket is t-1022, then t-1030.", "t-1022")


def test_a_value_only_inside_a_longer_value_is_not_stated():
    outputs = ['{"deal": {"name": "Granite Bank - Renewal", "company_id": "co-007"}}']
    assert not ok("Granite Bank - Renewal", "Granite Bank", outputs=outputs)
    assert ok("The company is Granite Bank.", "Granite Bank", outputs=outputs)
    # and a longer expected value is not competed with by the shorter name inside it
    outputs = ['{"items": [{"name": "Granite Bank - Pilot"}, {"company": "Granite Bank"}]}']
    assert ok("The largest deal is Granite Bank - Pilot.", "Granite Bank - Pilot", outputs=outputs)


def test_words_compete_when_the_outputs_offer_them():
    outputs = ['{"id": "t-1033", "channel": "web", "priority": "normal", "status": "open"}']
    assert ok("Ticket t-1033 has channel web.", "web", outputs=outputs, request="channel of t-1033?")
    assert not ok("Ticket t-1033: channel web, priority normal, status open.", "web", outputs=outputs)


def test_a_choice_the_request_offers_is_the_option_named_first():
    outputs = ['{"city": "Berlin", "high_c": 6.4}', '{"city": "Madrid", "high_c": 18.1}']
    request = "Compare the high temperatures of Berlin and Madrid on 2025-11-22. Which city is warmer?"
    ref = "Madrid is warmer on 2025-11-22: Berlin 6.4 C, Madrid 18.1 C."
    ctx = {"outputs": outputs, "request": request, "reference": ref}
    assert ok(ref, "Madrid", **ctx)
    assert not ok("Berlin is warmer; Madrid is not.", "Madrid", **ctx)
    assert not ok("Berlin and Madrid", "Madrid", **ctx) and not ok("Madrid and Berlin", "Madrid", **ctx)
    assert not ok(request, "Madrid", **ctx)


def test_pasted_output_fails_even_when_it_holds_only_the_value():
    out = json.dumps(
        {"items": [{"id": f"t-{i}", "subject": "Order arrived damaged"} for i in range(5)], "total": 5}
    )
    assert not ok(out, 5, "number", outputs=[out])


def test_an_unknown_rule_is_a_malformed_spec():
    with pytest.raises(ValueError):
        check_answer("42", 42, "fuzzy")


# ---- one interpreter of state checks -------------------------------------------------------------------


def test_synthesis_and_the_rubric_read_state_checks_alike():
    from toolkit.synth.replay import state_check_passes

    diff = {"contacts/c-9": {"before": None, "after": {"name": "Ana"}}}
    wildcard = {
        "type": "state",
        "collection": "contacts",
        "key": "*",
        "op": "create",
        "field": "name",
        "value": "Ana",
    }
    assert state_verdict(wildcard, diff)[0] == "pass" and state_check_passes(wildcard, diff)
    wrong = {**wildcard, "value": "Bo"}
    assert state_verdict(wrong, diff)[0] == "partial" and not state_check_passes(wrong, diff)


# ---- leaks -----------------------------------------------------------------------------------------------


def test_a_chain_whose_first_hop_states_the_answer_leaks():
    gold = [
        GoldCall("get_deal", {"deal_id": "d-009"}),
        GoldCall("get_company", {"company_id": "co-007"}, [0]),
    ]
    outputs = [
        '{"id": "d-009", "name": "Granite Bank - Renewal", "company_id": "co-007"}',
        '{"name": "Granite Bank"}',
    ]
    check = {"type": "answer", "value": "Granite Bank", "normalize": "text"}
    assert "step 0" in leaked_answer(gold, outputs, [check])
    assert not leaked_answer(gold, ['{"id": "d-009", "name": "Renewal"}', outputs[1]], [check])
    # a listing's paging count is not a statement of the answer
    count = {"type": "answer", "value": 1, "normalize": "number"}
    listing = ['{"items": [{"id": "st-4"}], "total": 1}', '{"items": [{"id": "t-1"}], "total": 1}']
    assert not leaked_answer([gold[0], GoldCall("search", {}, [0])], listing, [count])


def test_the_shipped_tasks_leak_nothing_and_their_gold_gets_full_marks():
    from toolkit.agent.loop import RolloutConfig, rollout
    from toolkit.agent.policies import GoldPolicy
    from toolkit.rewards.rubric import RubricReward

    tasks = read_jsonl(EVAL, Task)
    trajs = rollout(tasks, GoldPolicy(), RolloutConfig(max_concurrent_episodes=8))
    for task, traj in zip(tasks, trajs, strict=True):
        checks = [it.check for it in task.rubric if it.essential and it.check.get("type") == "answer"]
        assert not leaked_answer(task.gold, [c.result or "" for c in traj.calls], checks), task.id
    scores = RubricReward().batch(tasks, trajs)
    assert [t.id for t, r in zip(tasks, scores, strict=True) if r.score < 1] == []


# ---- the adversarial suite: one test per policy, for every reward that grades answers --------------------

ANSWER_GRADED = ("rubric", "rubric-pass", "outcome", "atlas", "rubric-judge")


@pytest.fixture(scope="module")
def table():
    from toolkit.eval.adversarial import make_rewards, run_suite
    from toolkit.rewards.standin import StandInJudge

    tasks = read_jsonl(EVAL, Task)[:90]
    with StandInJudge() as judge:
        return run_suite(tasks, make_rewards(ANSWER_GRADED, judge.base_url))


@pytest.mark.parametrize("policy", [p for p in POLICIES if p != "gold"])
def test_no_adversarial_answer_passes_an_answer_task(table, policy):
    for reward in ANSWER_GRADED:
        cell = table[reward][policy]["answer tasks"]
        limit = 0.10 if reward == "rubric-judge" else 0.05  # the stand-in is a keyword heuristic
        assert cell["pass"] <= limit, (reward, policy, cell)


def test_gold_passes_every_answer_task(table):
    for reward in ("rubric", "rubric-pass", "outcome", "atlas"):
        assert table[reward]["gold"]["answer tasks"]["pass"] == 1.0, reward


def test_pass_at_t_needs_the_answer():
    from toolkit.eval.metrics import metric_components
    from toolkit.records import TaskResult

    item = {"id": "r3", "essential": True, "check": "answer", "verdict": "fail", "passed": False}
    wrong = TaskResult("t", "kit-eval", "chain", score=0.83, rubric=[item])
    right = TaskResult(
        "u", "kit-eval", "chain", score=0.83, rubric=[{**item, "verdict": "pass", "passed": True}]
    )
    comps = metric_components([wrong, right])
    assert list(comps["pass@0.75"][0]) == [0.0, 1.0] and list(comps["coverage"][0]) == [0.83, 0.83]


def test_the_old_check_passed_what_the_new_one_fails(tmp_path):
    """bench.regrade's side-by-side: the same adversarial episodes under the check before issue 48 and now."""
    from bench.regrade import adversarial_before_after

    tasks = [t for t in read_jsonl(EVAL, Task) if t.metadata.get("kind") in ("chain", "aggregate")][:12]
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(t.to_dict()) + "\n" for t in tasks))
    rows = {line.split(" | ")[0].strip("| "): line for line in adversarial_before_after(path).splitlines()}
    old, new = (float(x) for x in rows["hedge"].split(" | ")[1].split(" -> "))
    assert old == 1.0 and new == 0.0  # the gold answer "or maybe" the other values passed every task
    old, new = (float(x) for x in rows["gold"].split(" | ")[1].split(" -> "))
    assert old == new == 1.0


def test_lists_of_words_and_spelled_out_numbers_fail():
    outputs = ['{"channel": "web"}']
    assert ok("The channel is web.", "web", outputs=outputs)
    assert ok("Ticket t-1033 has channel web, as requested.", "web", outputs=outputs)
    for listing in ("web, email, phone", "email, phone, web", "web, email and chat", "It is web and email."):
        assert not ok(listing, "web", outputs=outputs), listing
    assert ok("The latest one closed at 26.38.", 26.38, "number")
    assert not ok("26.38, twenty-seven, twenty-eight", 26.38, "number")
