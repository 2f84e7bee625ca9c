"""The one-GPU backend: Unsloth ``FastLanguageModel`` (LoRA, optional 4-bit), with or without vLLM.

``toolkit.train.pipeline.run_stages`` runs the stages; this backend supplies model loading, generation
and weight sync (``toolkit.train.backends``). Written against Unsloth 2026.10.7 / unsloth-zoo 2026.10.7
(the pinned ``gpu`` extra), from their source:

- ``FastLanguageModel.from_pretrained(model_name, max_seq_length, load_in_4bit, fast_inference,
  max_lora_rank, gpu_memory_utilization)`` (``unsloth/models/loader.py``) loads the weights once and,
  with ``fast_inference=True``, starts a vLLM engine sharing them (``model.vllm_engine``). The model
  name is the kit's resolved checkpoint (``toolkit.models.model_checkpoint``): ``smollm2-135m`` and
  ``tiny-random`` are folders in the kit's cache, as on the other backends.
- ``FastLanguageModel.get_peft_model(model, r, target_modules, lora_alpha, lora_dropout,
  use_gradient_checkpointing="unsloth", random_state)`` (``unsloth/models/llama.py``) adds the LoRA;
  ``patch_peft_fast_inference`` (``unsloth/models/_utils.py``) gives it ``load_lora`` when there is an
  engine.

Generation (the choice is logged once per run, ``UnslothBackend.generation``):

- **vLLM installed** (``fast_inference=True``): Unsloth's engine. ``model.load_lora(dir,
  load_tensors=True)`` (``unsloth_zoo/vllm_utils.py``) builds a ``vllm.lora.request.LoRARequest`` from
  the model's LIVE LoRA tensors, once per rollout batch: that is the weight sync. With
  ``UNSLOTH_VLLM_MERGED_ROLLOUT`` set, ``load_lora`` returns Unsloth's ``_MergedLoRARequest`` instead,
  which only its own wrapped ``generate`` understands; the kit switches that variable off around the
  call and refuses anything that is not a ``LoRARequest``.
- **vLLM absent**: Unsloth's own ``generate`` on the model being trained (transformers, with
  ``FastLanguageModel.for_inference`` around each batch and ``for_training`` after it).

One engine, not two. Unsloth's patched ``GRPOTrainer.__init__`` (``unsloth/models/rl.py``) forces
``args.use_vllm=True`` and ``vllm_mode="colocate"`` whenever the model has a ``vllm_engine``, and its
patch of TRL's ``VLLMGeneration._init_vllm`` (``unsloth/models/rl_replacements.py``,
``vllm_generation_init_patch``) sets ``self.llm = model.vllm_engine`` instead of building ``LLM(...)``;
``sync_weights`` returns at once when the engine shares the weights. Stock TRL, or a patch that failed
to apply, would build a second engine and push the weights to it every step: ``rollout_policy`` checks
that TRL's engine is the model's and raises otherwise.

Trainer settings: Unsloth's ``UnslothSFTConfig`` / ``UnslothGRPOConfig`` change TRL's defaults
(``optim="adamw_8bit"``, ``weight_decay=0.001``, ``learning_rate=5e-5``, ``seed=3407``,
``vllm_importance_sampling_correction=False``, ...). ``toolkit.train.config.stock_trainer_defaults``
passes TRL's own default for every such field the recipe leaves unset, so ``--backend gpu`` trains with
the settings ``--backend cpu`` uses; only precision (bf16/fp16 by the card) and the vLLM switches differ.
``loss_type`` is the exception: Unsloth resolves its ``None`` to TRL's "dapo" itself, while an explicit
"dapo" makes it set ``epsilon_high=0.28``; a recipe that names dapo gets ``epsilon_high = epsilon`` here.
Measured on an H100 (docs/gpu.md, "The Unsloth smoke run"): without this, SFT ran with Unsloth's
``gradient_accumulation_steps=2`` and padding-free batches.

Adapters load strictly (``load_adapter_strict``): the saved LoRA config must match the live one and every
LoRA weight must be in the file and used, or loading fails naming the keys.

One model is loaded per process and kept for every stage: SFT trains its LoRA in place; evaluation and
GRPO load an adapter's saved weights into it first, so a resumed run starts from the files, as on the
CPU path. Importing this module never imports unsloth or vllm; ``import_unsloth`` does, and the pipeline
calls it before anything imports TRL (Unsloth patches TRL's trainers when it is imported first).

Several GPUs: do not use this backend; run ``accelerate launch`` with the transformers backend (README).
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any

from toolkit.reaper import watch
from toolkit.train.adapters import AdapterMismatch, load_weights_strict
from toolkit.train.config import Recipe

LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
# The share of GPU memory Unsloth's vLLM engine may take (it shares the weights with the trainer)
GPU_MEMORY_UTILIZATION = 0.6
MERGED_ROLLOUT_ENV = "UNSLOTH_VLLM_MERGED_ROLLOUT"


def _log(msg: str) -> None:
    print(f"[mcp-rl train {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def import_unsloth() -> Any:
    """``unsloth.FastLanguageModel``, importing unsloth first: its patches of TRL's trainers and configs
    apply only when TRL is imported after it (Unsloth warns otherwise). Says so when TRL came first."""
    if "unsloth" not in sys.modules and "trl" in sys.modules:
        _log("warning: trl was imported before unsloth; Unsloth's trainer patches may not all apply")
    from unsloth import FastLanguageModel

    return FastLanguageModel


def wants_vllm(recipe: Recipe) -> bool:
    """Unsloth's vLLM engine (``fast_inference``): the recipe's ``lora.fast_inference`` when set, else the
    Colab install cell's decision (``$MCP_RL_GPU_VLLM``: "0" on a T4, where vLLM lacks an attention
    backend), else whether vLLM is installed."""
    from toolkit.colab import ENV_GPU_VLLM

    chosen = recipe.lora.get("fast_inference")
    if chosen is not None:
        return bool(chosen)
    if os.environ.get(ENV_GPU_VLLM) in ("0", "1"):
        return os.environ[ENV_GPU_VLLM] == "1"
    return importlib.util.find_spec("vllm") is not None


def unsloth_load_kwargs(recipe: Recipe, *, fast_inference: bool) -> dict[str, Any]:
    """Arguments for ``FastLanguageModel.from_pretrained`` (recipe ``gpu`` keys in ``lora``)."""
    from toolkit.models import model_checkpoint

    loop = recipe.loop_config()
    kwargs = {
        "model_name": model_checkpoint(recipe.model),  # the kit's names resolve as on every backend
        "max_seq_length": loop.max_context_tokens,
        # Unsloth's default is True; the kit's is False unless the recipe asks (QLoRA: less memory, slower)
        "load_in_4bit": bool(recipe.lora.get("load_in_4bit", False)),
        "fast_inference": fast_inference,
        "max_lora_rank": int(recipe.lora.get("r", 16)),
    }
    if fast_inference:
        kwargs["gpu_memory_utilization"] = float(
            recipe.lora.get("gpu_memory_utilization", GPU_MEMORY_UTILIZATION)
        )
    return kwargs


def unsloth_lora_kwargs(recipe: Recipe) -> dict[str, Any]:
    """Arguments for ``FastLanguageModel.get_peft_model``."""
    targets = recipe.lora.get("target_modules", "all-linear")
    return {
        "r": int(recipe.lora.get("r", 16)),
        "lora_alpha": int(recipe.lora.get("lora_alpha", 2 * int(recipe.lora.get("r", 16)))),
        "lora_dropout": float(recipe.lora.get("lora_dropout", 0.0)),
        "target_modules": LORA_TARGETS if targets == "all-linear" else list(targets),
        "use_gradient_checkpointing": "unsloth",
        "random_state": recipe.seed,
    }


def gpu_precision(bf16_supported: bool) -> dict[str, bool]:
    """bf16 where the GPU has it (Ampere and newer), else fp16 (a T4)."""
    return {"bf16": bf16_supported, "fp16": not bf16_supported}


def gpu_grpo_overrides(bf16_supported: bool = True, *, fast_inference: bool = True) -> dict[str, Any]:
    """GRPOConfig settings of the GPU path: with Unsloth's engine, vLLM in colocate mode (what Unsloth's
    patched trainer sets anyway; its VLLMGeneration reuses the model's engine, see the module docstring);
    without, no vLLM at all. Mixed precision the card supports, no CPU flag."""
    vllm = {"use_vllm": True, "vllm_mode": "colocate"} if fast_inference else {"use_vllm": False}
    return {**vllm, "use_cpu": False, **gpu_precision(bf16_supported)}


# LoraConfig fields that must agree between a saved adapter and the LoRA it is loaded into
_LORA_CONFIG_KEYS = ("r", "lora_alpha", "target_modules", "use_rslora", "use_dora")


def load_adapter_strict(model: Any, adapter: str | Path, adapter_name: str = "default") -> None:
    """Load ``adapter``'s saved LoRA weights into the live LoRA of ``model`` (a PEFT model), strictly:
    PEFT's ``set_peft_model_state_dict`` loads with ``strict=False`` and reports mismatches without
    raising, which would leave wrong weights for evaluation, merging and GRPO. Here a config that differs
    (rank, alpha, target modules) or a key mismatch is an ``AdapterMismatch`` naming the keys."""
    import json

    folder = Path(adapter)
    weights, config_file = folder / "adapter_model.safetensors", folder / "adapter_config.json"
    for needed in (config_file, weights):
        if not needed.is_file():
            raise FileNotFoundError(f"{needed}: missing (not a PEFT adapter folder)")
    saved = json.loads(config_file.read_text())
    live = model.peft_config[adapter_name]
    differ = []
    for key in _LORA_CONFIG_KEYS:
        mine, theirs = getattr(live, key, None), saved.get(key)
        if isinstance(mine, (set, list, tuple)) and isinstance(theirs, (list, tuple)):
            mine, theirs = sorted(mine), sorted(theirs)
        if key in saved and mine != theirs:
            differ.append(f"{key} {theirs!r} (saved) != {mine!r} (live)")
    if differ:
        raise AdapterMismatch(f"{folder}: adapter config does not match the live LoRA: {'; '.join(differ)}")
    load_weights_strict(model, folder, adapter_name)


@contextlib.contextmanager
def _env_unset(name: str):
    """``name`` switched off ("0") inside the block, restored after."""
    old = os.environ.get(name)
    os.environ[name] = "0"
    try:
        yield old
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def live_lora_request(model: Any, lora_dir: Path) -> Any:
    """A vLLM ``LoRARequest`` of the model's live LoRA tensors (``model.load_lora(load_tensors=True)``).

    With ``UNSLOTH_VLLM_MERGED_ROLLOUT`` set, unsloth-zoo returns a ``_MergedLoRARequest`` that only its
    wrapped engine can use (and vLLM rejects): the variable is switched off for the call, and anything
    that is still not a ``LoRARequest`` is an error."""
    from vllm.lora.request import LoRARequest

    with _env_unset(MERGED_ROLLOUT_ENV):
        request = model.load_lora(str(lora_dir), load_tensors=True)
    if not isinstance(request, LoRARequest):
        raise TypeError(f"model.load_lora returned {type(request).__name__}, not a vllm LoRARequest")
    return request


def check_one_engine(trainer: Any, model: Any, fast_inference: bool) -> None:
    """Raise when TRL holds a vLLM engine other than Unsloth's (a second engine beside the kit's
    rollout_func, synced every step), or any engine when Unsloth has none."""
    generation = getattr(trainer, "vllm_generation", None)
    engine = getattr(generation, "llm", None) if generation is not None else None
    if not fast_inference:
        if getattr(getattr(trainer, "args", None), "use_vllm", False) or engine is not None:
            raise RuntimeError("TRL started vLLM generation, but this run generates without vLLM")
        return
    if engine is not None and engine is not model.vllm_engine:
        raise RuntimeError(
            "TRL built a second vLLM engine beside Unsloth's: Unsloth's VLLMGeneration patch did not "
            "apply (import unsloth before trl: toolkit.train.unsloth_backend.import_unsloth)"
        )


class UnslothGeneratePolicy:
    """Generation without vLLM: the kit's transformers policy on the Unsloth model, switched into
    Unsloth's inference mode for each batch and back into training mode after it."""

    def __init__(self, flm: Any, model: Any, tokenizer: Any, *, name: str):
        from toolkit.agent.policies import TransformersPolicy

        self.flm = flm
        self.inner = TransformersPolicy(model, tokenizer, name=name)
        self.tokenizer = tokenizer
        self.name = name

    async def generate(self, requests: list[Any]) -> list[Any]:
        import asyncio

        return await asyncio.to_thread(self.generate_sync, requests)

    def generate_sync(self, requests: list[Any]) -> list[Any]:
        model = self.inner.model
        was_training = bool(getattr(model, "training", False))
        self.flm.for_inference(model)
        try:
            return self.inner.generate_sync(requests)
        finally:
            if was_training:
                self.flm.for_training(model)


class UnslothBackend:
    """Unsloth on one CUDA GPU, with its vLLM engine where vLLM is installed (see the module docstring)."""

    name = "gpu"

    def __init__(
        self,
        recipe: Recipe,
        *,
        fast_language_model: Any = None,
        bf16_supported: bool | None = None,
        fast_inference: bool | None = None,
    ):
        self.recipe = recipe
        self._flm = fast_language_model  # tests pass a fake; else ``unsloth.FastLanguageModel``
        self._bf16 = bf16_supported
        self.fast_inference = wants_vllm(recipe) if fast_inference is None else fast_inference
        self.generation = "unsloth-vllm" if self.fast_inference else "unsloth-transformers"
        self.model: Any = None
        self.tokenizer: Any = None
        self.lora_dir: Path | None = None  # where load_lora writes the adapter config

    # ---- model loading -----------------------------------------------------------------------------

    def _fast_language_model(self) -> Any:
        if self._flm is None:
            from toolkit.train.device import detect_backend

            detect_backend("gpu")  # one clear message when this machine cannot do it
            self._flm = import_unsloth()
        return self._flm

    def _bf16_supported(self) -> bool:
        if self._bf16 is None:
            import torch

            self._bf16 = bool(torch.cuda.is_bf16_supported())
        return self._bf16

    def precision(self) -> dict[str, bool]:
        return gpu_precision(self._bf16_supported())

    def _loaded(self) -> tuple[Any, Any]:
        """The one model of this process, with its LoRA (loaded on first use)."""
        if self.model is None:
            from toolkit.models import prepare_tokenizer

            flm = self._fast_language_model()
            how = (
                "Unsloth's vLLM engine (fast_inference)"
                if self.fast_inference
                else "Unsloth/transformers generate (vLLM not installed or lora.fast_inference: false)"
            )
            _log(f"gpu backend: generation by {how}")
            kwargs = unsloth_load_kwargs(self.recipe, fast_inference=self.fast_inference)
            watch()  # Unsloth's vLLM engine (fast_inference) dies with this process
            model, tokenizer = flm.from_pretrained(**kwargs)
            self.model = flm.get_peft_model(model, **unsloth_lora_kwargs(self.recipe))
            self.tokenizer = prepare_tokenizer(tokenizer)
        return self.model, self.tokenizer

    def _set_adapter(self, adapter: Path | None) -> None:
        """Make the live LoRA hold ``adapter``'s weights (None: leave it as it is)."""
        if adapter is not None:
            load_adapter_strict(self.model, adapter)

    def sft_model(self) -> tuple[Any, Any, Any]:
        model, tokenizer = self._loaded()
        return model, tokenizer, None  # the LoRA is already on the model (get_peft_model)

    def _trainer_config(self, stock_cls: Any, kwargs: dict[str, Any], overrides: dict[str, Any]) -> Any:
        from toolkit.train.config import RecipeError, stock_trainer_defaults

        kwargs = kwargs | overrides
        try:  # TRL's defaults where Unsloth's config class changed them and the recipe is silent
            return stock_cls(**(stock_trainer_defaults(stock_cls, kwargs) | kwargs))
        except TypeError as exc:
            raise RecipeError(f"recipe {self.recipe.name!r}: {exc}") from exc

    def sft_config(self, out: Path, report_to: Any) -> Any:
        from toolkit.train.config import sft_kwargs
        from toolkit.train.trl_adapter import sft_config_class

        kwargs = sft_kwargs(self.recipe, out, use_cpu=False, report_to=report_to)
        return self._trainer_config(sft_config_class(), kwargs, self.precision())

    def grpo_model(self, warm: Path | None) -> tuple[Any, Any]:
        model, tokenizer = self._loaded()
        self._set_adapter(warm)
        return model, tokenizer

    def grpo_config(self, out: Path, report_to: Any) -> Any:
        from toolkit.train.config import grpo_kwargs
        from toolkit.train.trl_adapter import grpo_config_class

        GRPOConfig = grpo_config_class()  # noqa: N806 (Unsloth's, when it was imported first)

        self.lora_dir = Path(out) / "rollout_lora"
        kwargs = grpo_kwargs(self.recipe, out, use_cpu=False, report_to=report_to)
        if str(kwargs.get("loss_type", "")).lower() == "dapo" and kwargs.get("epsilon_high") is None:
            # an explicit dapo makes Unsloth's config set epsilon_high=0.28 (the DAPO paper); TRL's meaning
            # of "unset" is epsilon_high = epsilon, so say that
            import dataclasses

            epsilon = {f.name: f.default for f in dataclasses.fields(GRPOConfig)}["epsilon"]
            kwargs["epsilon_high"] = kwargs.get("epsilon", epsilon)
        overrides = gpu_grpo_overrides(self._bf16_supported(), fast_inference=self.fast_inference)
        overrides |= self.precision()
        return self._trainer_config(GRPOConfig, kwargs, overrides)

    # ---- generation and weight sync ----------------------------------------------------------------

    def _policy(self, model: Any, name: str, *, lora: bool = True) -> Any:
        """A policy on the live model: Unsloth's vLLM engine with a LoRARequest of the live LoRA
        tensors (``lora=False``: the base model), or Unsloth's generate without vLLM."""
        from toolkit.agent.policies import VLLMPolicy

        if not self.fast_inference:
            if not lora:
                return _BaseModelPolicy(self._flm, model, self.tokenizer, name=name)
            return UnslothGeneratePolicy(self._flm, model, self.tokenizer, name=name)
        if not lora:
            return VLLMPolicy(model.vllm_engine, self.tokenizer, name=name)
        if self.lora_dir is None:  # no grpo_config yet (evaluation before GRPO): a scratch folder
            import tempfile

            self.lora_dir = Path(tempfile.mkdtemp(prefix="unsloth-lora-"))
        self.lora_dir.mkdir(parents=True, exist_ok=True)
        request = live_lora_request(model, self.lora_dir)
        return VLLMPolicy(model.vllm_engine, self.tokenizer, lora_request=request, name=name)

    def rollout_policy(self, trainer: Any) -> Any:
        model = trainer.accelerator.unwrap_model(trainer.model)
        check_one_engine(trainer, model, self.fast_inference)
        return self._policy(model, self.generation)

    def eval_policy(self, adapter: Path | None, label: str) -> Any:
        model, _ = self._loaded()
        if adapter is None:  # the base model: no LoRA request at all
            return self._policy(model, label, lora=False)
        self._set_adapter(adapter)
        return self._policy(model, label)

    def merge(self, adapter: Path, out: Path) -> None:
        model, tokenizer = self._loaded()
        self._set_adapter(adapter)
        # unsloth/save.py: unsloth_save_pretrained_merged (16-bit weights vLLM can serve)
        model.save_pretrained_merged(str(out), tokenizer, save_method="merged_16bit")

    def release(self) -> None:
        gc.collect()  # the model stays loaded: every stage of this process uses it

    def close(self) -> None:
        """Stop the vLLM engine (Unsloth's ``fast_inference`` sets ``model.vllm_engine``) and drop the model:
        both live for the run."""
        from toolkit.agent.policies import stop_engine

        if self.model is not None:
            stop_engine(getattr(self.model, "vllm_engine", None))
        self.model = self.tokenizer = None
        gc.collect()


class _BaseModelPolicy(UnslothGeneratePolicy):
    """Without vLLM, the base model: the same Unsloth generate with the LoRA layers disabled."""

    def generate_sync(self, requests: list[Any]) -> list[Any]:
        with self.inner.model.disable_adapter():
            return super().generate_sync(requests)
