"""LLM-judge faults over real HTTP (CI-sized version of ``python -m bench.fault_judge``).

Contract: an endpoint that is down, slow, failing or answering malformed JSON is retried, then its
items are counted as ungraded in the results; nothing raises; a trajectory with no graded essential
item reaches TRL as ``None`` (left out of the group baseline), never as a 0 reward.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from toolkit.paths import REPO_ROOT
from toolkit.records import write_jsonl


def _load_bench():
    spec = importlib.util.spec_from_file_location("fault_judge", REPO_ROOT / "bench" / "fault_judge.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fj = _load_bench()


@pytest.mark.parametrize("mode", ["down", "slow", "http500", "prose", "garbage", "truncated"])
def test_faulty_judge_is_retried_then_counted_as_ungraded(mode):
    row = fj.run_mode(mode, n=2, items=3)
    assert row["crash"] is None
    assert row["ungraded"] == row["items"] == 6
    assert row["unscorable"] == 2
    assert row["stats"]["retries"] >= 2  # every batch was retried before giving up
    assert row["trl_values"] == [None, None]  # left out of the GRPO baseline, not scored 0
    if mode != "down":
        assert row["requests_seen"] >= 2


def test_flaky_judge_recovers_after_retries():
    row = fj.run_mode("flaky", n=2, items=3)
    assert row["crash"] is None
    assert row["ungraded"] == 0 and row["scores"] == [1.0, 1.0]
    assert row["stats"]["retries"] == 2 and row["stats"]["http_errors"] == 2


def test_score_cli_reports_ungraded_items_when_the_judge_is_down(tmp_path):
    pairs = fj.sample_pairs(3, items=2)
    write_jsonl(tmp_path / "tasks.jsonl", [t for t, _ in pairs])
    write_jsonl(tmp_path / "trajs.jsonl", [tr for _, tr in pairs])
    key = "sk-PLANTED-judge-key-0123456789"
    with fj.FakeJudge("down") as judge:
        config = fj.judge_config(judge, api_key_env="MCP_RL_TEST_JUDGE_KEY", max_retries=1)
        env = {**os.environ, "MCP_RL_TEST_JUDGE_KEY": key}
        proc = subprocess.run(
            [sys.executable, "-m", "toolkit.cli", "score", "--reward", "rubric-judge", "--json",
             "--tasks", str(tmp_path / "tasks.jsonl"), "--trajectories", str(tmp_path / "trajs.jsonl"),
             "--config", json.dumps(config)],
            capture_output=True, text=True, env=env, timeout=120, cwd=REPO_ROOT,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["aggregate"]["ungraded"] == 6
    assert [row["ungraded"] for row in out["trajectories"]] == [2, 2, 2]
    assert key not in proc.stdout + proc.stderr


def test_ungraded_items_reach_the_training_log_and_the_eval_aggregate():
    """Ungraded judge items are visible where a user looks: TRL's step metrics and results.json."""
    from toolkit.eval.metrics import aggregate
    from toolkit.eval.suites import Suite, task_result
    from toolkit.rewards.base import get_reward
    from toolkit.rewards.trl import as_trl_reward_func

    pairs = fj.sample_pairs(2, items=3)
    with fj.FakeJudge("down") as judge:
        reward = get_reward("rubric-judge", **fj.judge_config(judge, max_retries=0))
        logged: dict[str, float] = {}
        as_trl_reward_func(reward)(
            prompts=[t.prompt for t, _ in pairs],
            completions=["" for _ in pairs],
            task=[json.dumps(t.to_dict()) for t, _ in pairs],
            trajectory=[tr for _, tr in pairs],
            log_metric=logged.__setitem__,
        )
        suite = Suite("judged", "kit tasks graded by a judge", ("rubric-judge",))
        results = [task_result(suite, t, tr, {"rubric-judge": reward}) for t, tr in pairs]
    assert logged["reward_rubric_judge/ungraded_items"] == 6
    assert [r.details["rubric-judge"]["ungraded"] for r in results] == [3, 3]
    assert aggregate(results, n_boot=10)["ungraded_items"] == {"rubric-judge": 6}
