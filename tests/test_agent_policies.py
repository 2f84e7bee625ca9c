"""Generation backends: transformers (tiny random model), policy specs, GPU import guards."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from toolkit.agent.loop import RolloutConfig, rollout
from toolkit.agent.policies import (
    GenerationRequest,
    GoldPolicy,
    OpenAIPolicy,
    TransformersPolicy,
    make_policy,
)
from toolkit.agent.testing import check_token_exact, fake_opener
from toolkit.records import Task


@pytest.fixture(scope="module")
def tiny():
    from toolkit.models import load_policy

    model, tokenizer = load_policy("tiny-random")
    return TransformersPolicy(model, tokenizer, name="tiny-random")


def task(task_id: str = "t") -> Task:
    return Task(
        id=task_id, split="eval", prompt="Add 2 and 3.", servers=["calc"], tools=["add", "save_note"], seed=0
    )


def request(policy, text: str, **kw) -> GenerationRequest:
    ids = policy.tokenizer(text, add_special_tokens=False)["input_ids"]
    base = {"key": 0, "task": task(), "turn": 0, "step": 0, "messages": [], "tools": [], "prompt_ids": ids}
    return GenerationRequest(**base, stop_token_ids=[policy.tokenizer.eos_token_id], **kw)


@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_batched_generation_returns_ids_and_the_sampled_tokens_logprobs(tiny, temperature):
    import torch

    reqs = [
        request(
            tiny,
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
            max_new_tokens=6,
            temperature=temperature,
        ),
        request(
            tiny,
            "<|im_start|>user\na much longer prompt here with words<|im_end|>\n",
            max_new_tokens=9,
            temperature=temperature,
        ),
    ]
    gens = tiny.generate_sync(reqs)
    for req, gen in zip(reqs, gens, strict=True):
        assert 0 < len(gen.token_ids) <= req.max_new_tokens and len(gen.logprobs) == len(gen.token_ids)
        ended = gen.token_ids[-1] == tiny.tokenizer.eos_token_id
        assert gen.finish_reason == ("stop" if ended else "length")
        # teacher-forced on the unpadded row: the batch's left padding must not change anything
        ids = torch.tensor([req.prompt_ids + gen.token_ids])
        with torch.no_grad():
            logits = tiny.model(input_ids=ids).logits[0, len(req.prompt_ids) - 1 : -1].float()
        expected = torch.log_softmax(logits / (temperature or 1.0), dim=-1)
        expected = expected.gather(1, torch.tensor(gen.token_ids)[:, None]).squeeze(1)
        assert torch.allclose(torch.tensor(gen.logprobs), expected, atol=2e-3), (
            gen.logprobs,
            expected.tolist(),
        )
        if temperature == 0.0:  # greedy: each sampled token is the argmax
            assert gen.token_ids == logits.argmax(-1).tolist()


def test_length_buckets_cut_padding_and_keep_each_requests_output(tiny):
    from toolkit.agent.loop import length_buckets

    texts = [
        "hi",
        "a much longer prompt here with many more words in it",
        "hello there",
        "and a longer one too",
    ]
    reqs = [
        request(tiny, f"<|im_start|>user\n{t}<|im_end|>\n", max_new_tokens=5, temperature=0.0) for t in texts
    ]
    lengths = [len(r.prompt_ids) for r in reqs]
    buckets = length_buckets(reqs, 0.3)
    assert sorted(i for b in buckets for i in b) == [0, 1, 2, 3] and len(buckets) > 1
    for b in buckets:  # within a bucket, padding to the longest adds at most 30% to any prompt
        assert all(max(lengths[j] for j in b) - lengths[i] <= 0.3 * lengths[i] for i in b)
    assert length_buckets(reqs, 0.0) == [[0, 1, 2, 3]]  # the default: one call per batch

    # a whole rollout, greedy: the same episodes bucketed or not (outputs go back to their episodes)
    import dataclasses

    prompts = [
        "Add 2 and 3.",
        "Add 2 and 3, then save a note saying what the sum was and why it matters.",
        "Hi.",
    ]
    tasks = [dataclasses.replace(task(f"t{i}"), prompt=p) for i, p in enumerate(prompts)]
    base = dict(max_turns=2, max_new_tokens=6, temperature=0.0)
    plain = rollout(tasks, tiny, RolloutConfig(**base), open_episode=fake_opener())
    bucketed = rollout(tasks, tiny, RolloutConfig(**base, max_padding=0.01), open_episode=fake_opener())
    assert [t.completion_ids for t in bucketed] == [t.completion_ids for t in plain]


def test_loop_with_a_real_model_is_token_exact(tiny):
    config = RolloutConfig(max_new_tokens=12, max_turns=2, temperature=1.0, seed=0)
    trajs = rollout([task("a"), task("b")], tiny, config, n=2, open_episode=fake_opener())
    assert len(trajs) == 4
    for traj in trajs:
        check_token_exact(traj, tiny.tokenizer)
        assert traj.metadata["model_tokens"] > 0
        assert any(lp != 0.0 for lp in traj.logprobs)


def test_check_token_exact_catches_drift(tiny):
    config = RolloutConfig(max_new_tokens=6, max_turns=1, temperature=1.0, seed=1)
    (traj,) = rollout([task()], tiny, config, open_episode=fake_opener())
    check_token_exact(traj, tiny.tokenizer)
    shifted = type(traj).from_dict(traj.to_dict())
    shifted.completion_mask[0] = 1 - shifted.completion_mask[0]
    with pytest.raises(AssertionError):
        check_token_exact(shifted, tiny.tokenizer)
    retokenized = type(traj).from_dict(traj.to_dict())
    retokenized.completion_ids[0] = (retokenized.completion_ids[0] + 1) % 1000
    with pytest.raises(AssertionError):
        check_token_exact(retokenized, tiny.tokenizer)


def test_make_policy_specs():
    assert isinstance(make_policy("gold"), GoldPolicy)
    served = make_policy("openai:qwen2.5-7b@http://127.0.0.1:9/v1")
    assert isinstance(served, OpenAIPolicy) and served.model == "qwen2.5-7b" and served.tokenizer is None
    if importlib.util.find_spec("vllm") is None:  # CPU machines: one clear message, no import error
        with pytest.raises(RuntimeError, match="GPU"):
            make_policy("vllm:Qwen/Qwen2.5-0.5B-Instruct")
    if importlib.util.find_spec("unsloth") is None:
        with pytest.raises(RuntimeError, match="GPU"):
            make_policy("unsloth:unsloth/Qwen2.5-0.5B-Instruct")


def test_importing_the_agent_never_imports_gpu_packages_or_torch():
    code = (
        "import sys, toolkit.agent.loop, toolkit.agent.policies, toolkit.cli.rollout, toolkit.agent.testing; "
        "bad = [m for m in ('vllm', 'unsloth', 'torch') if m in sys.modules]; print(bad); sys.exit(bool(bad))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_openai_policy_against_a_local_http_server():
    """The real ``openai`` client against a minimal OpenAI-compatible server (stdlib http.server)."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    received = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append((self.path, body))
            if len(received) == 1:
                call = {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                }
                message = {"role": "assistant", "content": None, "tool_calls": [call]}
                finish = "tool_calls"
            else:
                message, finish = {"role": "assistant", "content": "It is 5."}, "stop"
            reply = {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            }
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        policy = make_policy(f"openai:served-model@http://127.0.0.1:{server.server_port}/v1")
        (traj,) = rollout([task()], policy, RolloutConfig(temperature=0.0), open_episode=fake_opener())
    finally:
        server.shutdown()
    assert traj.final_answer == "It is 5." and traj.calls[0].ok and traj.calls[0].result == "5"
    path, second = received[1]
    assert path == "/v1/chat/completions" and second["model"] == "served-model"
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["messages"][3]["tool_call_id"] == second["messages"][2]["tool_calls"][0]["id"]
    assert {t["function"]["name"] for t in second["tools"]} == {"add", "save_note", "finish"}
