"""BFCL reward: gold replays through the kit's MCP episodes score 1, wrong calls 0, scorings isolated."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import anyio
import pytest

from toolkit.envs import open_episode
from toolkit.envs.bfcl import initial_config
from toolkit.records import CallRecord, Task, Trajectory, read_jsonl, write_jsonl
from toolkit.rewards.base import get_reward
from toolkit.rewards.bfcl import BFCLReward, decode_trajectory
from toolkit.synth.bfcl_tasks import BFCL_CATEGORIES, first_turn_only, load_bfcl_tasks, replay_gold

# A few entries per category: the first ones, multi-class entries, and miss_func_49 whose ground truth
# calls a held-out tool before its turn. The full sweep over all 800 is `python -m bench.bench_bfcl`.
SAMPLE = {
    "base": ["multi_turn_base_0", "multi_turn_base_100", "multi_turn_base_199"],
    "miss_func": ["multi_turn_miss_func_0", "multi_turn_miss_func_49"],
    "miss_param": ["multi_turn_miss_param_3", "multi_turn_miss_param_150"],
    "long_context": ["multi_turn_long_context_0", "multi_turn_long_context_120"],
}


def _task(task_id):
    category = next(c for c in BFCL_CATEGORIES if task_id.startswith(f"multi_turn_{c}_"))
    return next(t for t in load_bfcl_tasks(category) if t.id == task_id)


async def _gold(task):
    async with open_episode(task) as episode:
        return await replay_gold(task, episode)


def gold_trajectory(task) -> Trajectory:
    return anyio.run(_gold, task)


@pytest.fixture(scope="module")
def base0():
    task = _task("multi_turn_base_0")
    return task, gold_trajectory(task)


@pytest.mark.parametrize("task_id", [i for ids in SAMPLE.values() for i in ids])
def test_gold_replayed_through_mcp_scores_one(task_id):
    task = _task(task_id)
    traj = gold_trajectory(task)
    assert all(c.ok for c in traj.calls), [c.result for c in traj.calls if not c.ok]
    result = BFCLReward()(task, traj)
    assert result.score == 1.0, result.details
    assert result.breakdown == {"state": 1.0, "response": 1.0}
    assert result.details["error_type"] is None and result.details["skipped"] == []


def test_registry_loads_the_reward_by_name(base0):
    task, traj = base0
    reward = get_reward("bfcl")
    assert reward.name == "bfcl" and reward(task, traj).score == 1.0


def test_a_wrong_argument_fails_the_state_check(base0):
    task, traj = base0
    wrong = copy.deepcopy(traj)
    mkdir = next(c for c in wrong.calls if c.name == "mkdir")
    mkdir.args = {"dir_name": mkdir.args["dir_name"] + "_typo"}
    result = BFCLReward()(task, wrong)
    assert result.score == 0.0
    assert result.details["error_type"] == "multi_turn:instance_state_mismatch"
    assert result.breakdown == {"state": 0.0}


def test_a_missing_read_call_fails_the_response_check():
    task = _task("multi_turn_base_0")
    traj = gold_trajectory(task)
    # drop one read-only call (ls/grep/cat...): the state still matches, the response does not
    read_only = {"ls", "cat", "grep", "pwd", "tail", "wc", "diff", "find", "du", "sort"}
    victim = next(i for i, c in enumerate(traj.calls) if c.name in read_only)
    traj.calls.pop(victim)
    result = BFCLReward()(task, traj)
    assert result.score == 0.0, result.details
    assert result.details["error_type"] == "multi_turn:execution_response_mismatch"
    assert result.breakdown == {"state": 1.0, "response": 0.0}


def test_no_calls_and_early_stops_score_zero(base0):
    task, traj = base0
    empty = dataclasses.replace(traj, calls=[])
    assert BFCLReward()(task, empty).details["error_type"] == "multi_turn:empty_turn_model_response"

    one_turn = dataclasses.replace(traj, messages=traj.messages[:2], turn_answers=traj.turn_answers[:1])
    result = BFCLReward()(task, one_turn)
    assert result.score == 0.0 and result.details["error_type"] == "multi_turn:force_terminated"

    capped = dataclasses.replace(traj, stop_reason="max_turns")
    assert BFCLReward()(task, capped).details["error_type"] == "multi_turn:force_terminated"


def test_unparsed_and_unknown_calls_are_skipped_and_reported(base0):
    task, traj = base0
    noisy = copy.deepcopy(traj)
    noisy.calls[0:0] = [
        CallRecord(name="cd", args=None, ok=False, error="bad_json: ...", turn=0, step=0),
        CallRecord(name="open", args={"file": "/etc/passwd", "mode": "w"}, ok=False, turn=0, step=0),
        CallRecord(name="__import__", args={"name": "os"}, ok=False, turn=0, step=0),
    ]
    result = BFCLReward()(task, noisy)
    assert result.score == 1.0, result.details
    assert [s["name"] for s in result.details["skipped"]] == ["cd", "open", "__import__"]


def test_code_in_argument_values_stays_a_string(base0):
    task, traj = base0
    payload = "__import__('os').mkdir('bfcl_pwned')"  # no slash: a valid BFCL file name
    sneaky = copy.deepcopy(traj)
    sneaky.calls.insert(0, CallRecord(name="touch", args={"file_name": payload}, ok=True))
    decoded, _ = decode_trajectory(task, sneaky)
    assert decoded[0][0][0] == f"touch(file_name={payload!r})"
    result = BFCLReward()(task, sneaky)  # a file named after the payload: the state differs
    assert result.score == 0.0 and result.details["error_type"] == "multi_turn:instance_state_mismatch"
    assert not Path("bfcl_pwned").exists()


def test_two_scorings_of_the_same_entry_never_share_state(base0):
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    task, traj = base0
    before = {k for k in vars(multi_turn_utils) if k.endswith("_instance")}
    reward = BFCLReward()
    wrong = copy.deepcopy(traj)
    wrong.calls = [c for c in wrong.calls if c.name != "mkdir"]
    # gold, gold again, a wrong run, gold: a leak of the first run's state would fail the later golds
    assert [reward(task, t).score for t in (traj, traj, wrong, traj)] == [1.0, 1.0, 0.0, 1.0]
    assert {k for k in vars(multi_turn_utils) if k.endswith("_instance")} == before


def test_bfcl_checker_caches_instances_by_model_name_which_is_why_we_isolate(base0):
    """The hazard the reward guards against: bfcl-eval reuses instances for a repeated model name."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    task, traj = base0
    meta = task.metadata["bfcl"]
    entry = {
        "id": meta["id"],
        "initial_config": initial_config(meta),
        "involved_classes": meta["involved_classes"],
    }
    wrong = copy.deepcopy(traj)
    wrong.calls = [c for c in wrong.calls if c.name != "mkdir"]
    gold_decoded, _ = decode_trajectory(task, traj)
    wrong_decoded, _ = decode_trajectory(task, wrong)

    def check(decoded):
        return multi_turn_checker(decoded, meta["ground_truth"], entry, "multi_turn_base", "fixed_name_test")

    try:
        assert not check(wrong_decoded)["valid"]
        assert not check(gold_decoded)["valid"]  # the wrong run's instances leaked into this one
    finally:
        for key in [k for k in vars(multi_turn_utils) if k.startswith("fixed_name_test")]:
            del vars(multi_turn_utils)[key]
    assert check(gold_decoded)["valid"]  # with the cache cleared, gold passes
    for key in [k for k in vars(multi_turn_utils) if k.startswith("fixed_name_test")]:
        del vars(multi_turn_utils)[key]


def test_first_turn_only_tasks_are_scored_on_their_first_turn():
    full = _task("multi_turn_base_100")
    task = first_turn_only(full)
    assert task.followups == [] and {g.turn for g in task.gold} == {0}
    assert task.metadata["bfcl"]["ground_truth"] == full.metadata["bfcl"]["ground_truth"][:1]
    assert len(full.followups) > 0 and "first_turn_only" not in full.metadata["bfcl"]
    traj = gold_trajectory(task)
    assert BFCLReward()(task, traj).score == 1.0
    assert BFCLReward()(task, dataclasses.replace(traj, calls=[])).score == 0.0


def test_tasks_keep_bfcl_key_order_through_sorted_jsonl(tmp_path):
    """GorillaFileSystem's root is the first key of its config (miss_func_5: 'data' before 'archive');
    the kit writes JSONL with sorted keys, so the config travels as JSON text."""
    task = _task("multi_turn_miss_func_5")
    write_jsonl(tmp_path / "t.jsonl", [task])
    (again,) = read_jsonl(tmp_path / "t.jsonl", Task)
    assert list(initial_config(again.metadata["bfcl"])["GorillaFileSystem"]["root"]) == ["data", "archive"]
    traj = gold_trajectory(again)
    assert all(c.ok for c in traj.calls), [c.result for c in traj.calls if not c.ok]
    assert BFCLReward()(again, traj).score == 1.0


def test_concurrent_scorings_in_threads_stay_independent(base0):
    from concurrent.futures import ThreadPoolExecutor

    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    task, traj = base0
    wrong = copy.deepcopy(traj)
    wrong.calls = [c for c in wrong.calls if c.name != "mkdir"]
    jobs = [traj, wrong] * 8
    reward = BFCLReward()
    with ThreadPoolExecutor(max_workers=4) as pool:
        scores = list(pool.map(lambda t: reward(task, t).score, jobs))
    assert scores == [1.0, 0.0] * 8
    assert not [k for k in vars(multi_turn_utils) if k.startswith("mcprl_")]
