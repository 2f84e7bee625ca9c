"""The Unsloth (``gpu``) backend against issue 34's five defects and issue 37's adapter/engine items, with
fakes standing in for Unsloth and vLLM (no GPU here; docs/gpu.md has the real runs):

1. kit model names reach ``FastLanguageModel.from_pretrained`` resolved to their checkpoint folder;
2. without vLLM, Unsloth runs with ``fast_inference=False`` and generates with its own ``generate``;
3. the trainer settings equal the cpu backend's although Unsloth's config classes change TRL's defaults;
4. the pipeline imports unsloth before trl;
5. the rollout gets a real ``LoRARequest`` even with ``UNSLOTH_VLLM_MERGED_ROLLOUT`` set;
- adapters load strictly, and a second vLLM engine in TRL is an error.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from unsloth_fakes import FakeFastLanguageModel  # noqa: E402

from toolkit.agent.policies import GenerationRequest  # noqa: E402
from toolkit.records import Task  # noqa: E402
from toolkit.train.config import recipe_from_dict  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RECIPE = {
    "model": "tiny-random",
    "reward": "rubric",
    "lora": {"r": 4, "lora_alpha": 8, "target_modules": "all-linear"},
    "rollout": {"max_turns": 1, "max_new_tokens": 4, "max_context_tokens": 512, "temperature": 1.0},
    "sft": {"max_steps": 2, "per_device_train_batch_size": 2},
    "grpo": {"num_generations": 2, "per_device_train_batch_size": 2, "max_steps": 1},
}
TASK = Task(id="t", prompt="hello", servers=[], split="train", tools=[], seed=0)


def _request(prompt_ids: list[int]) -> GenerationRequest:
    return GenerationRequest(
        key=0, task=TASK, turn=0, step=0, messages=[], tools=[], prompt_ids=prompt_ids,
        max_new_tokens=3, temperature=1.0,
    )  # fmt: skip


def _backend(recipe=RECIPE, **kwargs):
    from toolkit.train.unsloth_backend import UnslothBackend

    FakeFastLanguageModel.reset()
    kwargs = {"fast_language_model": FakeFastLanguageModel, "bf16_supported": True} | kwargs
    return UnslothBackend(recipe_from_dict(recipe, "tiny"), **kwargs)


# ---- 1. kit model names ------------------------------------------------------------------------------


def test_kit_model_names_reach_unsloth_as_their_checkpoint_folder():
    backend = _backend(fast_inference=False)
    model, tokenizer, _ = backend.sft_model()
    load = FakeFastLanguageModel.calls[0][1]
    folder = Path(load["model_name"])
    assert folder.is_dir() and (folder / "config.json").is_file()  # not the bare name "tiny-random"
    assert tokenizer.pad_token is not None and "tools" in tokenizer.chat_template


# ---- 2. Unsloth without vLLM ---------------------------------------------------------------------------


def test_without_vllm_unsloth_loads_without_fast_inference_and_generates_itself(monkeypatch, capsys):
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real_find_spec(name, *a)
    )
    backend = _backend()
    assert backend.fast_inference is False and backend.generation == "unsloth-transformers"
    model, tokenizer, _ = backend.sft_model()
    load = FakeFastLanguageModel.calls[0][1]
    assert load["fast_inference"] is False and "gpu_memory_utilization" not in load
    assert "generation by Unsloth/transformers generate" in capsys.readouterr().out  # the choice, logged

    from toolkit.train.unsloth_backend import gpu_grpo_overrides

    assert gpu_grpo_overrides(True, fast_inference=False)["use_vllm"] is False
    model.train()
    trainer = SimpleNamespace(
        model=model,
        args=SimpleNamespace(use_vllm=False),
        accelerator=SimpleNamespace(unwrap_model=lambda m: m),
    )
    policy = backend.rollout_policy(trainer)
    prompt = tokenizer("hello there", add_special_tokens=False)["input_ids"]
    (gen,) = asyncio.run(policy.generate([_request(prompt)]))
    assert 0 < len(gen.token_ids) <= 3 and len(gen.logprobs) == len(gen.token_ids)
    assert FakeFastLanguageModel.modes == ["inference", "training"]  # Unsloth's modes around the batch
    assert model.training


def test_the_gpu_backend_needs_unsloth_but_not_vllm():
    from toolkit.train.device import DeviceInfo, describe, detect_backend

    no_vllm = DeviceInfo(cuda=True, gpu_name="H100", missing_gpu_packages=("vllm",))
    assert detect_backend("gpu", no_vllm) == "gpu"
    assert "generation by Unsloth/transformers" in describe(no_vllm)


# ---- 3. the same trainer settings on every backend -----------------------------------------------------

# What unsloth/models/rl.py writes into UnslothSFTConfig / UnslothGRPOConfig's __init__ defaults
UNSLOTH_DEFAULTS = {
    "optim": "adamw_8bit",
    "weight_decay": 0.001,
    "learning_rate": 5e-05,
    "seed": 3407,
    "per_device_train_batch_size": 4,
    "gradient_accumulation_steps": 2,
    "warmup_steps": 0.1,
    "logging_nan_inf_filter": False,
    "torch_empty_cache_steps": 250,
    "eval_accumulation_steps": 2,
}
UNSLOTH_GRPO_DEFAULTS = {
    "num_generations": 8,
    "vllm_importance_sampling_correction": False,
    "beta": None,
    "loss_type": None,
    "mask_truncated_completions": None,
}


def _unsloth_grpo_init(explicit, merged):
    """What UnslothGRPOConfig.__init__ does with the values (unsloth/models/rl.py): None resolves to TRL's
    loss_type and beta; an EXPLICIT dapo gets the DAPO paper's epsilon_high."""
    if str(explicit.get("loss_type", "")).lower() == "dapo" and merged.get("epsilon_high") is None:
        merged["epsilon_high"] = 0.28
    if merged.get("loss_type") is None:
        merged["loss_type"] = "dapo"
    if merged.get("beta") is None:
        merged["beta"] = 0.0
    return merged


def _unsloth_like(config_cls, defaults, *, shim=False, body=None):
    """A subclass of TRL's config whose ``__init__`` has Unsloth's defaults, as Unsloth installs it into
    ``trl`` (an explicit ``__init__`` over TRL's dataclass, ``UnslothGRPOConfig``). ``shim``: as Unsloth's
    ``SFTConfig`` stand-in, with TRL's own name and module and the ``_unsloth_patched_rl_config`` marker."""
    import inspect

    def __init__(self, **kwargs):
        merged = defaults | kwargs
        config_cls.__init__(self, **(body(kwargs, merged) if body else merged))

    signature = inspect.signature(config_cls.__init__)
    params = [
        p.replace(default=defaults[p.name]) if p.name in defaults else p
        for p in signature.parameters.values()
    ]
    __init__.__signature__ = signature.replace(parameters=params)
    if shim:
        attrs = {
            "__init__": __init__,
            "_unsloth_patched_rl_config": True,
            "__module__": config_cls.__module__,
        }
        return type(config_cls.__name__, (config_cls,), attrs)
    return type(f"Unsloth{config_cls.__name__}", (config_cls,), {"__init__": __init__})


@pytest.mark.parametrize("loss_type", [None, "dapo"])
def test_gpu_trains_with_the_cpu_settings_although_unsloth_changes_the_defaults(
    monkeypatch, tmp_path, loss_type
):
    import trl

    from toolkit.train.transformers_backend import TransformersBackend

    recipe = RECIPE | {"sft": {"max_steps": 2, "learning_rate": 2e-4}}
    if loss_type:
        recipe["grpo"] = RECIPE["grpo"] | {"loss_type": loss_type}
    cpu = TransformersBackend(recipe_from_dict(recipe, "tiny"))
    cpu_sft = cpu.sft_config(tmp_path / "sft", "none").to_dict()
    cpu_grpo = cpu.grpo_config(tmp_path / "grpo", "none").to_dict()

    sft_defaults = UNSLOTH_DEFAULTS | {"padding_free": None}  # None: Unsloth's SFTTrainer auto-enables it
    monkeypatch.setattr(trl, "SFTConfig", _unsloth_like(trl.SFTConfig, sft_defaults, shim=True))
    grpo_cls = _unsloth_like(
        trl.GRPOConfig, UNSLOTH_DEFAULTS | UNSLOTH_GRPO_DEFAULTS, body=_unsloth_grpo_init
    )
    monkeypatch.setattr(trl, "GRPOConfig", grpo_cls)
    gpu = _backend(recipe, fast_inference=False)
    # mixed precision needs a GPU to construct; the cards' precision is the deliberate difference below
    monkeypatch.setattr(gpu, "precision", lambda: {"bf16": False, "fp16": False})
    monkeypatch.setattr(
        "toolkit.train.unsloth_backend.gpu_precision", lambda bf16: {"bf16": False, "fp16": False}
    )
    gpu_sft_config = gpu.sft_config(tmp_path / "sft", "none")
    gpu_grpo_config = gpu.grpo_config(tmp_path / "grpo", "none")
    assert "_unsloth_patched_rl_config" in type(gpu_sft_config).__dict__  # the class Unsloth put in trl
    gpu_sft, gpu_grpo = gpu_sft_config.to_dict(), gpu_grpo_config.to_dict()
    for config in (cpu_grpo, gpu_grpo):  # TRL: epsilon_high None means epsilon_high = epsilon
        config["epsilon_high"] = (
            config["epsilon_high"] if config["epsilon_high"] is not None else config["epsilon"]
        )

    # where the backends differ on purpose: the CPU flag and what follows from it (pinned memory, the CPU
    # path's checkpointing default), and mixed precision (the card's bf16/fp16 on the GPU)
    allowed = {"use_cpu", "dataloader_pin_memory", "gradient_checkpointing", "bf16", "fp16"}
    for cpu_cfg, gpu_cfg in ((cpu_sft, gpu_sft), (cpu_grpo, gpu_grpo)):
        differ = {k: (cpu_cfg.get(k), gpu_cfg.get(k)) for k in cpu_cfg.keys() | gpu_cfg.keys()}
        differ = {k: v for k, v in differ.items() if v[0] != v[1] and k not in allowed}
        assert differ == {}
    assert gpu_sft["learning_rate"] == 2e-4 and gpu_sft["padding_free"] is False  # recipe, then TRL
    assert gpu_grpo["optim"] == cpu_grpo["optim"] != "adamw_8bit"
    assert gpu_grpo["weight_decay"] == 0.0 and gpu_grpo["seed"] == 0


def test_stock_defaults_are_empty_for_trls_own_classes():
    import trl

    from toolkit.train.config import stock_trainer_defaults

    assert stock_trainer_defaults(trl.GRPOConfig, {}) == {}
    unsloth_like = _unsloth_like(trl.GRPOConfig, {"generation_kwargs": {}, "weight_decay": 0.001})
    assert stock_trainer_defaults(unsloth_like, {}) == {"weight_decay": 0.0}  # {} and None: both "none"
    assert stock_trainer_defaults(unsloth_like, {"weight_decay": 0.1}) == {}


# ---- 4. unsloth before trl ------------------------------------------------------------------------------

IMPORT_ORDER = r"""
import importlib.abc, importlib.machinery, json, sys
seen = {}
class Unsloth(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        return importlib.machinery.ModuleSpec(name, self) if name == "unsloth" else None
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        seen["trl_loaded_before_unsloth"] = "trl" in sys.modules
        module.FastLanguageModel = object()
sys.meta_path.insert(0, Unsloth())
import toolkit.train.device as device
device.detect_backend = lambda requested, info=None: "gpu"
device.describe = lambda info=None: "fake gpu"
import toolkit.train.pipeline as pipeline
class Stop(Exception):
    pass
def stop(name, recipe):
    raise Stop
pipeline.make_backend = stop
from toolkit.train.config import load_recipe
try:
    pipeline.run_recipe(load_recipe("cpu-demo"), sys.argv[1], backend="gpu")
except Stop:
    pass
print(json.dumps(seen))
"""


def test_the_pipeline_imports_unsloth_before_trl(tmp_path):
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", IMPORT_ORDER, str(tmp_path / "run")],
        capture_output=True, text=True, check=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"trl_loaded_before_unsloth": False}


# ---- 5. a real LoRARequest, and one engine ----------------------------------------------------------------


class FakeLoRARequest:
    def __init__(self, name, lora_id, lora_path="", lora_tensors=None, lora_config=None):
        self.name, self.lora_id, self.tensors = name, lora_id, lora_tensors


class MergedRequest:
    """unsloth_zoo's ``_MergedLoRARequest``: not a LoRARequest on purpose."""


class FakeEngine:
    def __init__(self):
        self.lora_requests = []

    def generate(self, prompts, params, use_tqdm=False, lora_request=None):
        self.lora_requests.append(lora_request)
        done = SimpleNamespace(token_ids=[5, 2], logprobs=[{5: -0.5}, {2: -0.1}], finish_reason="stop")
        return [SimpleNamespace(outputs=[done]) for _ in prompts]


class FakeEngineModel:
    """A model loaded with fast_inference: its engine, and load_lora as unsloth-zoo 2026.10.7 has it
    (the merged-rollout sentinel whenever UNSLOTH_VLLM_MERGED_ROLLOUT is on at call time)."""

    def __init__(self):
        self.vllm_engine = FakeEngine()

    def load_lora(self, save_directory, load_tensors=False):
        if os.environ.get("UNSLOTH_VLLM_MERGED_ROLLOUT", "0") == "1" and load_tensors:
            return MergedRequest()
        return FakeLoRARequest("1", 1, lora_tensors={"w": 1.0})


@pytest.fixture
def fake_vllm(monkeypatch):
    monkeypatch.setattr("toolkit.agent.policies._require_gpu_package", lambda name: None)
    request = SimpleNamespace(LoRARequest=FakeLoRARequest)
    fake = SimpleNamespace(SamplingParams=lambda **kw: kw, lora=SimpleNamespace(request=request))
    monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.setitem(sys.modules, "vllm.lora", fake.lora)
    monkeypatch.setitem(sys.modules, "vllm.lora.request", request)


def _engine_backend(tmp_path, model):
    backend = _backend(fast_inference=True)
    backend.model, backend.tokenizer = model, object()
    backend.lora_dir = tmp_path / "lora"
    return backend


def test_the_rollout_gets_a_lora_request_with_merged_rollouts_switched_on(fake_vllm, monkeypatch, tmp_path):
    monkeypatch.setenv("UNSLOTH_VLLM_MERGED_ROLLOUT", "1")
    model = FakeEngineModel()
    backend = _engine_backend(tmp_path, model)
    trainer = SimpleNamespace(
        model=model,
        vllm_generation=SimpleNamespace(llm=model.vllm_engine),
        accelerator=SimpleNamespace(unwrap_model=lambda m: m),
    )
    policy = backend.rollout_policy(trainer)
    assert isinstance(policy.lora_request, FakeLoRARequest)
    assert os.environ["UNSLOTH_VLLM_MERGED_ROLLOUT"] == "1"  # restored after the call

    from toolkit.train.unsloth_backend import live_lora_request

    model.load_lora = lambda *a, **k: MergedRequest()  # whatever the reason, never handed to vLLM
    with pytest.raises(TypeError, match="not a vllm LoRARequest"):
        live_lora_request(model, tmp_path / "lora")


def test_a_second_vllm_engine_in_trl_is_an_error(fake_vllm, tmp_path):
    model = FakeEngineModel()
    backend = _engine_backend(tmp_path, model)
    unwrap = SimpleNamespace(unwrap_model=lambda m: m)
    # stock TRL in colocate mode: VLLMGeneration built its own LLM(...) beside Unsloth's engine
    second = SimpleNamespace(
        model=model, vllm_generation=SimpleNamespace(llm=FakeEngine()), accelerator=unwrap
    )
    with pytest.raises(RuntimeError, match="second vLLM engine"):
        backend.rollout_policy(second)
    # Unsloth's patched VLLMGeneration._init_vllm: self.llm = model.vllm_engine
    shared = SimpleNamespace(
        model=model, vllm_generation=SimpleNamespace(llm=model.vllm_engine), accelerator=unwrap
    )
    backend.rollout_policy(shared)

    no_vllm = _backend(fast_inference=False)
    with pytest.raises(RuntimeError, match="without vLLM"):
        no_vllm.rollout_policy(
            SimpleNamespace(model=model, args=SimpleNamespace(use_vllm=True), accelerator=unwrap)
        )


def test_gpu_grpo_config_asks_for_vllm_only_with_the_engine():
    from toolkit.train.unsloth_backend import gpu_grpo_overrides

    assert gpu_grpo_overrides(True, fast_inference=True) | {"use_cpu": False} == {
        "use_vllm": True, "vllm_mode": "colocate", "use_cpu": False, "bf16": True, "fp16": False,
    }  # fmt: skip


# ---- strict adapter loading (issue 37, item 4) ------------------------------------------------------------


def _saved_adapter(tmp_path, name, **lora):
    backend = _backend(RECIPE | {"lora": {"r": 4, "lora_alpha": 8, **lora}}, fast_inference=False)
    model, _, _ = backend.sft_model()
    import torch

    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.fill_(0.25)
    model.save_pretrained(str(tmp_path / name))
    return tmp_path / name


def test_adapters_load_strictly(tmp_path):
    import torch

    from toolkit.train.unsloth_backend import AdapterMismatch

    full = _saved_adapter(tmp_path, "full", target_modules="all-linear")
    attention = _saved_adapter(tmp_path, "attention", target_modules=["q_proj", "v_proj"])
    alpha = _saved_adapter(tmp_path, "alpha", target_modules="all-linear", lora_alpha=16)

    backend = _backend(fast_inference=False)  # live LoRA: all-linear, r 4, alpha 8
    backend.grpo_model(full)  # a matching adapter loads, every LoRA weight from the file
    assert all(torch.all(p == 0.25) for n, p in backend.model.named_parameters() if "lora_B" in n)
    with pytest.raises(AdapterMismatch, match="target_modules"):
        backend.grpo_model(attention)
    with pytest.raises(AdapterMismatch, match="lora_alpha"):
        backend.grpo_model(alpha)
    # same config, weights missing from the file: an error naming them, not the live weights left over
    from safetensors.torch import load_file, save_file

    weights = load_file(str(full / "adapter_model.safetensors"))
    save_file(
        {k: v for k, v in weights.items() if "layers.1." not in k}, str(full / "adapter_model.safetensors")
    )
    with pytest.raises(AdapterMismatch, match="missing"):
        backend.grpo_model(full)
