"""Merged LoRA checkpoints for evaluation (``toolkit.models.merged_checkpoint``): the merged model computes
what base + adapter computes, the cache is keyed by the adapter's bytes, and the vLLM paths use it on a CPU
(vLLM's CPU LoRA kernels make prefill slow; the merged weights serve at base speed)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from toolkit import models
from toolkit.models import TINY_MODEL, load_policy, merged_checkpoint


def _adapter(folder: Path, seed: int) -> Path:
    from peft import LoraConfig, get_peft_model

    model, _ = load_policy(TINY_MODEL)
    torch.manual_seed(seed)
    config = LoraConfig(r=4, lora_alpha=16, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    get_peft_model(model, config).save_pretrained(str(folder))
    return folder


def _logits(model, ids) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=ids).logits.float()


@pytest.fixture(scope="module")
def adapters(tmp_path_factory):
    root = tmp_path_factory.mktemp("adapters")
    return _adapter(root / "a", 0), _adapter(root / "b", 1)


def test_the_merged_model_computes_base_plus_adapter(tmp_path, adapters):
    from transformers import AutoModelForCausalLM

    ids = torch.tensor([[1, 42, 7, 300, 12, 99]])
    tuned, _ = load_policy(TINY_MODEL, adapter=str(adapters[0]))
    base, _ = load_policy(TINY_MODEL)
    want, base_logits = _logits(tuned, ids), _logits(base, ids)
    assert (want - base_logits).abs().max() > 1e-2  # the adapter matters, so the check below can fail

    fp32 = merged_checkpoint(TINY_MODEL, adapters[0], dtype=None, root=tmp_path)
    got = _logits(AutoModelForCausalLM.from_pretrained(fp32), ids)
    assert torch.allclose(got, want, atol=1e-4)

    bf16 = merged_checkpoint(TINY_MODEL, adapters[0], dtype="bf16", root=tmp_path)
    assert bf16 != fp32
    merged = AutoModelForCausalLM.from_pretrained(bf16, dtype=torch.bfloat16)
    assert merged.dtype == torch.bfloat16
    # bf16 rounds the weights; the adapter's effect survives it
    assert (_logits(merged, ids) - want).abs().mean() < (base_logits - want).abs().mean() / 2


def test_the_cache_is_keyed_by_the_adapter_bytes(tmp_path, adapters, monkeypatch):
    first = merged_checkpoint(TINY_MODEL, adapters[0], dtype=None, root=tmp_path)
    other = merged_checkpoint(TINY_MODEL, adapters[1], dtype=None, root=tmp_path)
    assert first != other and (other / "config.json").exists()

    def no_merge(*args, **kwargs):
        raise AssertionError("merged again")

    monkeypatch.setattr(models, "merge_adapter", no_merge)
    assert merged_checkpoint(TINY_MODEL, adapters[0], dtype=None, root=tmp_path) == first


def test_a_folder_without_an_adapter_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        merged_checkpoint(TINY_MODEL, tmp_path, root=tmp_path / "cache")


class _FakeVLLMPolicy:
    def __init__(self, llm, tokenizer=None, *, name="vllm", lora_request=None, **kwargs):
        self.llm, self.name, self.lora_request, self.closed = llm, name, lora_request, False
        self.engine_kwargs = kwargs

    def close(self):
        self.closed = True


def test_vllm_eval_on_a_cpu_serves_the_merged_adapter(monkeypatch, tmp_path):
    from toolkit.agent import policies

    monkeypatch.setattr(policies, "_require_gpu_package", lambda name: None)
    monkeypatch.setattr(policies, "_vllm_on_cpu", lambda: True)
    monkeypatch.setattr(policies, "VLLMPolicy", _FakeVLLMPolicy)
    monkeypatch.setattr(models, "merged_checkpoint", lambda base, adapter, **kw: tmp_path / f"merged-{base}")
    policy = policies.make_policy("vllm:smollm2-135m", adapter=str(tmp_path / "adapter"))
    assert policy.llm == str(tmp_path / "merged-smollm2-135m") and policy.lora_request is None


def test_a_vllm_eval_engine_holds_the_suites_context(monkeypatch, tmp_path):
    """BFCL prompts are 4-5k tokens: the engine gets the loop's context budget (8192 for BFCL), not the
    CPU default of 4096, which would refuse every prompt."""
    from toolkit.agent import policies
    from toolkit.eval.suites import default_rollout, get_suite

    monkeypatch.setattr(policies, "_require_gpu_package", lambda name: None)
    monkeypatch.setattr(policies, "_vllm_on_cpu", lambda: True)
    made = []
    monkeypatch.setattr(
        policies, "VLLMPolicy", lambda *a, **kw: made.append(_FakeVLLMPolicy(*a, **kw)) or made[-1]
    )
    monkeypatch.setattr(models, "merged_checkpoint", lambda base, adapter, **kw: tmp_path / "merged")
    default_rollout("vllm:smollm2-135m", str(tmp_path / "adapter"), suite=get_suite("bfcl-base"))
    default_rollout("vllm:smollm2-135m", None, suite=get_suite("kit-eval"))
    assert [p.engine_kwargs.get("max_model_len") for p in made] == [8192, 4096]


def test_the_vllm_backend_evaluates_merged_and_stops_that_engine(monkeypatch, tmp_path):
    from toolkit.agent import policies
    from toolkit.train.config import recipe_from_dict
    from toolkit.train.vllm_backend import VLLMBackend

    monkeypatch.setattr(policies, "VLLMPolicy", _FakeVLLMPolicy)
    monkeypatch.setattr(models, "merged_checkpoint", lambda base, adapter, **kw: tmp_path / "merged")
    recipe = recipe_from_dict(
        {"model": "smollm2-135m", "dtype": "bf16", "backend": "vllm", "reward": "rubric"}, "t"
    )
    backend = VLLMBackend(recipe, engine=(SimpleNamespace(), None))
    backend._use_cpu = True
    policy = backend.eval_policy(tmp_path / "adapter", "sft-only")
    assert policy.llm == str(tmp_path / "merged") and policy.name == "sft-only"
    backend.release()
    assert policy.closed and backend._eval is None


def test_a_recipe_asking_for_vllm_falls_back_to_cpu_where_vllm_is_missing(monkeypatch, tmp_path):
    from toolkit.train import pipeline
    from toolkit.train.config import recipe_from_dict

    chosen = []
    monkeypatch.setattr(pipeline, "vllm_installed", lambda: False)
    monkeypatch.setattr(
        pipeline,
        "make_backend",
        lambda name, recipe: chosen.append(name) or SimpleNamespace(close=lambda: None),
    )
    monkeypatch.setattr(pipeline, "run_stages", lambda *args, **kwargs: {})
    recipe = recipe_from_dict({"model": TINY_MODEL, "backend": "vllm", "reward": "rubric"}, "t")
    pipeline.run_recipe(recipe, tmp_path / "a")
    assert chosen == ["cpu"]
    from toolkit.train.device import BackendUnavailable

    with pytest.raises(BackendUnavailable):  # asked for by the user: an error, not a silent fallback
        monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
        pipeline.run_recipe(recipe, tmp_path / "b", backend="vllm")
