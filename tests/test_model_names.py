"""Kit model names (``toolkit.models.KIT_MODELS``) resolve through one resolver on every backend, and an
unknown name stops a run before its first stage (issue 35). `mcp-rl train --recipe cpu-demo --model
tiny-random` used to fail in the vllm backend after 40 s of SFT: it asked the Hugging Face hub for a model
called "tiny-random". The gpu backend's case is in tests/test_unsloth_backend.py (its model name reaches
``FastLanguageModel.from_pretrained`` as the checkpoint folder)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from toolkit.train.config import recipe_from_dict

RECIPE = {
    "model": "tiny-random",
    "reward": "rubric",
    "lora": {"r": 4, "lora_alpha": 8, "target_modules": "all-linear"},
    "rollout": {"max_turns": 1, "max_new_tokens": 4, "max_context_tokens": 512},
    "grpo": {"num_generations": 2, "per_device_train_batch_size": 2, "max_steps": 1},
}


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv(
        "HF_HUB_OFFLINE", "1"
    )  # a name that reaches the hub fails at once, not after a timeout


def test_kit_names_are_checkpoint_folders():
    from toolkit.models import KIT_MODELS, model_checkpoint

    assert set(KIT_MODELS) >= {"smollm2-135m", "tiny-random"}
    folder = Path(model_checkpoint("tiny-random"))
    assert (folder / "config.json").is_file() and (folder / "tokenizer_config.json").is_file()
    assert model_checkpoint("tiny-random") == str(folder)  # built once, then reused
    assert model_checkpoint("HuggingFaceTB/SmolLM2-135M-Instruct") == "HuggingFaceTB/SmolLM2-135M-Instruct"


def test_the_cpu_backend_loads_the_kit_checkpoint():
    from toolkit.train.transformers_backend import TransformersBackend

    model, tokenizer, _ = TransformersBackend(recipe_from_dict(RECIPE, "t")).sft_model()
    assert (Path(model.name_or_path) / "config.json").is_file()
    from toolkit.models import model_checkpoint

    assert model.name_or_path == model_checkpoint("tiny-random")  # the folder every backend loads
    assert tokenizer.pad_token is not None


def test_the_vllm_backend_starts_its_engine_on_the_kit_checkpoint(monkeypatch):
    from toolkit.train.vllm_backend import VLLMBackend

    started = {}

    class FakeLLM:
        def __init__(self, **kwargs):
            started.update(kwargs)

    monkeypatch.setattr("toolkit.agent.policies._require_gpu_package", lambda name: None)
    monkeypatch.setitem(sys.modules, "vllm", SimpleNamespace(LLM=FakeLLM))
    llm, tokenizer = VLLMBackend(recipe_from_dict(RECIPE, "t")).engine
    assert isinstance(llm, FakeLLM) and (Path(started["model"]) / "config.json").is_file()
    from toolkit.models import model_checkpoint

    assert started["model"] == model_checkpoint("tiny-random")  # the folder every backend loads
    assert "tools" in tokenizer.chat_template


@pytest.mark.parametrize("on_cuda", [False, True])
def test_the_vllm_backend_caps_gpu_memory_on_cuda(monkeypatch, on_cuda):
    """On CUDA the vLLM engine shares the card with the trainer: its memory share is capped (the
    recipe's ``lora.gpu_memory_utilization``, else the kit's default), not vLLM's 90%."""
    import toolkit.train.device as device
    import toolkit.train.vllm_backend as vllm_backend

    seen = {}
    monkeypatch.setattr(device, "cuda_available", lambda: on_cuda)
    monkeypatch.setattr(vllm_backend, "start_engine", lambda model, **kw: seen.update(kw) or ("llm", "tok"))
    _ = vllm_backend.VLLMBackend(recipe_from_dict(RECIPE, "t")).engine
    assert seen.get("gpu_memory_utilization") == (
        vllm_backend.VLLM_GPU_MEMORY_UTILIZATION if on_cuda else None
    )
    recipe = recipe_from_dict(RECIPE | {"lora": RECIPE["lora"] | {"gpu_memory_utilization": 0.2}}, "t")
    seen.clear()
    _ = vllm_backend.VLLMBackend(recipe).engine
    assert seen.get("gpu_memory_utilization") == (0.2 if on_cuda else None)


@pytest.mark.parametrize("name", ["tiny-randm", "smollm2", "no/such/model", ""])
def test_an_unknown_name_is_refused_in_one_line(name):
    from toolkit.models import UnknownModel, check_model_name

    with pytest.raises(UnknownModel) as info:
        check_model_name(name)
    assert "\n" not in str(info.value) and "tiny-random" in str(info.value)


@pytest.mark.parametrize("backend", ["cpu", "vllm"])
def test_an_unknown_name_stops_the_run_before_its_first_stage(tmp_path, backend, capsys):
    from toolkit.cli import main

    out = tmp_path / "run"
    code = main(
        ["train", "--recipe", "cpu-demo", "--model", "tiny-randm", "--backend", backend, "--out", str(out)]
    )
    err = capsys.readouterr().err.strip()
    assert code != 0 and "unknown model 'tiny-randm'" in err and len(err.splitlines()) == 1
    assert not out.exists()  # no recipe.json, no tasks: nothing ran


def test_folders_and_hub_ids_pass_the_check(tmp_path):
    from toolkit.models import check_model_name

    check_model_name(str(tmp_path))  # a local folder
    check_model_name("Qwen/Qwen2.5-0.5B-Instruct")  # a hub id (not looked up: offline)
