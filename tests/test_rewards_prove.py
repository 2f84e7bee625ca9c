"""PROVE's reward as published (PROVE, arXiv 2606.03892, section 3.3), against values computed by hand.

R_total = 0.5 V + 0.5 C + 0.15 E + 0.2 N + 0.1 A (validity, coverage, efficiency, name, argument match).
Helpdesk task: gold = search_tickets(tag) -> get_ticket(48) [dep 0] -> get_user(7) [dep 1] and
update_ticket(48, closed) [dep 1]; n_gold = 4, so B = 4 + ceil(4 * 0.5) = 6.
Count task: gold = count_tickets(billing, 2025-10), count_tickets(billing, 2025-11), no dependencies;
B = 2 + ceil(2 * 0.5) = 3.
"""

import pytest

from toolkit.records import CallRecord, Trajectory
from toolkit.rewards import get_reward
from toolkit.rewards.prove import WEIGHTS, ProveReward, json_equal
from toolkit.study.examples import TOOL_SCHEMAS, abstain_task, count_task, example_gold, helpdesk_task
from toolkit.train import config as cfg
from toolkit.train.grpo import reward_funcs

PROVE = ProveReward(tool_schemas=TOOL_SCHEMAS)


def c(name, args, ok=True, error=None):
    return CallRecord(name=name, args=args, ok=ok, error=error)


def traj(task, calls, answer=None):
    gold = example_gold(task)
    return Trajectory(
        task_id=task.id,
        messages=[],
        calls=calls,
        final_answer=gold.final_answer if answer is None else answer,
        state_diff=gold.state_diff,
    )


S, T = c("search_tickets", {"tag": "billing"}), c("get_ticket", {"ticket_id": 48})
U, UP = c("get_user", {"user_id": 7}), c("update_ticket", {"ticket_id": 48, "status": "closed"})
UP_CASE = c("update_ticket", {"ticket_id": 48, "status": "Closed "})
OCT = c("count_tickets", {"tag": "billing", "month": "2025-10"})
NOV = c("count_tickets", {"tag": "billing", "month": "2025-11"})


def parts(res):
    return {k: pytest.approx(v) for k, v in res.breakdown.items()}


def test_published_weights():
    assert WEIGHTS == {"validity": 0.5, "coverage": 0.5, "efficiency": 0.15, "name": 0.2, "arg": 0.1}
    assert (PROVE.alpha, PROVE.beta) == (0.5, 0.5)
    assert PROVE.budget(4) == 6  # the paper's example: a 4-call task has B = 6


def test_gold_trajectory():
    # every component at its best, efficiency 0: 0.5 + 0.5 + 0 + 0.2 + 0.1 = 1.3
    res = PROVE(helpdesk_task(), example_gold(helpdesk_task()))
    assert res.breakdown == parts(res) and res.score == pytest.approx(1.3)
    assert res.breakdown == {"validity": 1.0, "coverage": 1.0, "efficiency": 0.0, "name": 1.0, "arg": 1.0}


def test_order_is_a_factor_not_a_gate():
    task = helpdesk_task()
    res = PROVE(task, traj(task, [T, S, U, UP]))
    # matching by name + keys: search -> call 1, ticket -> call 0, user -> call 2, update -> call 3.
    # o(ticket) = 1[mu(search)=1 < mu(ticket)=0] = 0; o(user) = 1[0 < 2] = 1; o(update) = 1[0 < 3] = 1
    # C = (1 + 0 + 1 + 1) / 4 = 0.75; A over all 4 matched pairs = 1; V = N = 1; E = 0 (4 <= 6)
    # total = 0.5 + 0.5 * 0.75 + 0 + 0.2 + 0.1 = 1.175
    assert res.details["matched"] == {"0": 1, "1": 0, "2": 2, "3": 3}
    assert res.breakdown == {"validity": 1.0, "coverage": 0.75, "efficiency": 0.0, "name": 1.0, "arg": 1.0}
    assert res.score == pytest.approx(1.175)
    # the kit's earlier gated matching: ticket has no call after search's (index 1), so it and its
    # dependents stay unmatched: C = 1/4, A = 1 (search only); 0.5 + 0.125 + 0.2 + 0.1 = 0.925
    gated = ProveReward(tool_schemas=TOOL_SCHEMAS, gate_on_dependencies=True)(task, traj(task, [T, S, U, UP]))
    assert gated.breakdown["coverage"] == 0.25 and gated.score == pytest.approx(0.925)


def test_over_budget_and_exact_values():
    task = helpdesk_task()
    tr = traj(task, [S, T, U, U, U, U, UP_CASE])
    # n = 7 > B = 6: E = -0.5 * (7 - 6) / 6 = -1/12. V = 1 (all valid and ok), N = 7/7, C = 1.
    # A: search 1, ticket 1, user 1, update: ticket_id equal, "Closed " != "closed" -> 1/2; A = 3.5 / 4
    # total = 0.5 + 0.5 + 0.15 * (-1/12) + 0.2 + 0.1 * 0.875 = 1.275
    res = PROVE(task, tr)
    assert res.breakdown["efficiency"] == pytest.approx(-1 / 12)
    assert res.breakdown["arg"] == pytest.approx(0.875)
    assert res.score == pytest.approx(1.275)
    # lenient values (a kit variant): "Closed " matches "closed", A = 1: 1.3 - 0.0125 = 1.2875
    lenient = ProveReward(tool_schemas=TOOL_SCHEMAS, lenient_values=True)(task, tr)
    assert lenient.breakdown["arg"] == 1.0 and lenient.score == pytest.approx(1.2875)


def test_malformed_call_leaves_dependents_matched_but_out_of_order():
    task = helpdesk_task()
    tr = traj(task, [S, c("get_ticket", None, False, "bad_json"), U, UP])
    # V: the bad call has its name in the schema only -> 1/3; V = (1 + 1/3 + 1 + 1) / 4 = 5/6
    # matching: ticket unmatched (no args); user -> call 2, update -> call 3 are still matched,
    # but o = 0 for both (their dependency, ticket, has no matched call): C = (1 + 0 + 0 + 0) / 4
    # A over the 3 matched pairs = 1; N = 4/4 (get_ticket is a gold name); E = 0
    # total = 0.5 * 5/6 + 0.5 * 0.25 + 0 + 0.2 + 0.1 = 0.841666...
    res = PROVE(task, tr)
    assert res.details["matched"] == {"0": 0, "2": 2, "3": 3}
    assert res.breakdown == {
        "validity": pytest.approx(5 / 6),
        "coverage": 0.25,
        "efficiency": 0.0,
        "name": 1.0,
        "arg": 1.0,
    }
    assert res.score == pytest.approx(0.5 * 5 / 6 + 0.125 + 0.3)


def test_argument_values_and_types():
    task = count_task()
    tr = traj(task, [OCT, OCT, c("count_tickets", {"tag": 5, "month": "2025-10"})])
    # V: third call has tag of the wrong type -> 1/3; V = (1 + 1 + 1/3) / 3 = 7/9
    # matching: step 0 -> call 0, step 1 -> call 1 (keys suffice); C = 1
    # A: step 0 / call 0 = 2/2, step 1 / call 1 = 1/2 (month differs) -> 0.75; N = 1; n = 3 = B -> E = 0
    # total = 0.5 * 7/9 + 0.5 + 0 + 0.2 + 0.075 = 1.163888...
    res = PROVE(task, tr)
    assert res.breakdown == {
        "validity": pytest.approx(7 / 9),
        "coverage": 1.0,
        "efficiency": 0.0,
        "name": 1.0,
        "arg": 0.75,
    }
    assert res.score == pytest.approx(0.5 * 7 / 9 + 0.775)


def test_name_precision_and_penalty():
    task = count_task()
    tr = traj(task, [OCT, NOV, c("get_weather", {"city": "Paris"}), OCT, OCT])
    # n = 5, B = 3: E = -0.5 * 2 / 3 = -1/3; N = 4/5 (get_weather is not a gold name); V = 1; C = A = 1
    # total = 0.5 + 0.5 + 0.15 * (-1/3) + 0.2 * 0.8 + 0.1 = 1.21
    res = PROVE(task, tr)
    assert res.breakdown["efficiency"] == pytest.approx(-1 / 3)
    assert res.breakdown["name"] == pytest.approx(0.8)
    assert res.score == pytest.approx(1.21)


def test_no_calls_scores_zero():
    task = helpdesk_task()
    res = PROVE(task, traj(task, [], answer=""))
    assert res.score == 0.0 and set(res.breakdown.values()) == {0.0}


def test_abstention_is_one_or_zero():
    task = abstain_task()
    assert PROVE(task, example_gold(task)).score == 1.0
    one_call = PROVE(task, traj(task, [c("get_weather", {"city": "Paris"})], answer="Here."))
    assert one_call.score == 0.0 and one_call.breakdown == {"abstention": 0.0}
    two_calls = PROVE(task, traj(task, [c("get_weather", {"city": "Paris"})] * 2, answer="Here."))
    assert two_calls.score == 0.0


def test_json_equality():
    assert json_equal(2, 2.0) and json_equal({"a": [1, "x"]}, {"a": [1.0, "x"]})
    assert not json_equal(True, 1) and not json_equal("closed", "Closed ") and not json_equal("3", 3)


def test_registry_names_and_options():
    assert get_reward("prove", tool_schemas=TOOL_SCHEMAS).range == (float("-inf"), 1.3)
    kit = get_reward("prove-kit", tool_schemas=TOOL_SCHEMAS)
    assert kit.name == "prove-kit" and kit.range[1] == 1.0
    with pytest.raises(ValueError, match="unknown PROVE weight"):
        ProveReward(weights={"precision": 1.0})


def test_cpu_demo_recipe_scores_are_unchanged():
    """The cpu-demo recipe's reward (rubric + 0.5 * prove-kit with beta 0, the registry's schemas) on
    fixed trajectories, against the values the kit's `prove` gave before the published formula took
    that name (computed with the earlier code, same calls)."""
    h, k, a = helpdesk_task(), count_task(), abstain_task()
    cases = [
        (h, example_gold(h)),
        (h, traj(h, [T, S, U, UP])),
        (h, traj(h, [S, T, U, U, U, U, UP_CASE])),
        (h, traj(h, [S, c("get_ticket", None, False, "bad_json"), U, UP])),
        (k, traj(k, [OCT, OCT, NOV, OCT])),
        (k, traj(k, [OCT], answer="")),
        (a, example_gold(a)),
        (a, traj(a, [c("get_weather", {"city": "Paris"})], answer="Here.")),
    ]
    before = [1.407407407407, 1.268518518519, 1.180224867725, 1.037654320988, 1.046296296296, 0.222222222222]
    before += [1.5, 0.25]
    recipe = cfg.load_recipe("cpu-demo")
    assert recipe.reward == ["rubric", "prove-kit"] and recipe.reward_config == {"prove-kit": {"beta": 0.0}}
    funcs = reward_funcs(recipe.reward, recipe.reward_config)
    weights = recipe.grpo["reward_weights"]
    tasks, trajs = [t for t, _ in cases], [tr for _, tr in cases]
    per_func = [f([None] * len(cases), [None] * len(cases), task=tasks, trajectory=trajs) for f in funcs]
    got = [sum(w * col[i] for w, col in zip(weights, per_func, strict=True)) for i in range(len(cases))]
    assert got == pytest.approx(before, abs=1e-9)
