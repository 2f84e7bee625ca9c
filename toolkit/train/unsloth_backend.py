"""The one-GPU backend: Unsloth ``FastLanguageModel`` (LoRA, optional 4-bit) with its vLLM engine.

``toolkit.train.pipeline.run_stages`` runs the stages; this backend supplies model loading, generation
and weight sync (``toolkit.train.backends``). Written against Unsloth 2026.10.7 / unsloth-zoo 2026.10.7
(the pinned ``gpu`` extra), from their source:

- ``FastLanguageModel.from_pretrained(model_name, max_seq_length, load_in_4bit, fast_inference=True,
  max_lora_rank, gpu_memory_utilization)`` (``unsloth/models/loader.py``) loads the weights once and,
  with ``fast_inference``, starts a vLLM engine sharing them (``model.vllm_engine``,
  ``model.fast_generate``: ``unsloth/models/llama.py``);
- ``FastLanguageModel.get_peft_model(model, r, target_modules, lora_alpha, lora_dropout,
  use_gradient_checkpointing="unsloth", random_state)`` (``unsloth/models/llama.py``) adds the LoRA, and
  ``patch_peft_fast_inference`` (``unsloth/models/_utils.py``) gives the PEFT model ``load_lora`` /
  ``save_lora``;
- ``model.load_lora(save_directory, load_tensors=True)`` (``unsloth_zoo/vllm_utils.py``: ``load_lora``
  -> ``_build_lora_request``) builds a ``vllm.lora.request.LoRARequest`` from the model's LIVE LoRA
  tensors (only the adapter config is written to ``save_directory``). Unsloth's own GRPO trainer does
  the same before each generation (``unsloth/models/rl_replacements.py``). The kit calls it once per
  rollout batch, so every batch samples from the adapter as the last optimizer step left it: that is
  the weight sync. ``model.save_lora(dir)`` writes the adapter (PEFT format).

One model is loaded per process and kept for every stage (a second vLLM engine would not fit beside
the first): SFT trains its LoRA in place; evaluation and GRPO load an adapter's saved weights into it
first (``peft.set_peft_model_state_dict``), so a resumed run starts from the files, like the CPU path.

NOT RUN ON A GPU HERE: no GPU was available when this was written. The tests drive the wiring with
fakes (tests/test_train_backends.py); importing this module never imports unsloth or vllm.

Several GPUs: do not use this backend; run ``accelerate launch`` with the transformers backend and TRL's
vLLM server mode (``trl vllm-serve --model M`` on one GPU, ``--set grpo.use_vllm=true --set
grpo.vllm_mode=server`` for the trainer), see the README's training section.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

from toolkit.train.config import Recipe

LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def unsloth_load_kwargs(recipe: Recipe) -> dict[str, Any]:
    """Arguments for ``FastLanguageModel.from_pretrained`` (recipe ``gpu`` keys in ``lora``/``rollout``)."""
    loop = recipe.loop_config()
    return {
        "model_name": recipe.model,
        "max_seq_length": loop.max_context_tokens,
        # Unsloth's default is True; the kit's is False unless the recipe asks (QLoRA: less memory, slower)
        "load_in_4bit": bool(recipe.lora.get("load_in_4bit", False)),
        "fast_inference": True,  # the vLLM engine used for rollouts and evaluation
        "max_lora_rank": int(recipe.lora.get("r", 16)),
        "gpu_memory_utilization": float(recipe.lora.get("gpu_memory_utilization", 0.6)),
    }


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


def gpu_grpo_overrides(bf16_supported: bool = True) -> dict[str, Any]:
    """GRPOConfig settings of the GPU path: vLLM in colocate mode (Unsloth's patched trainer reuses
    the model's engine), mixed precision the card supports, no CPU flag."""
    return {"use_vllm": True, "vllm_mode": "colocate", "use_cpu": False, **gpu_precision(bf16_supported)}


class UnslothBackend:
    """Unsloth + vLLM on one CUDA GPU (see the module docstring)."""

    name = "gpu"

    def __init__(
        self, recipe: Recipe, *, fast_language_model: Any = None, bf16_supported: bool | None = None
    ):
        self.recipe = recipe
        self._flm = fast_language_model  # tests pass a fake; else ``unsloth.FastLanguageModel``
        self._bf16 = bf16_supported
        self.model: Any = None
        self.tokenizer: Any = None
        self.lora_dir: Path | None = None  # where load_lora writes the adapter config

    # ---- model loading -----------------------------------------------------------------------------

    def _fast_language_model(self) -> Any:
        if self._flm is None:
            from toolkit.train.device import detect_backend

            detect_backend("gpu")  # one clear message when this machine cannot do it
            from unsloth import FastLanguageModel  # GPU only; patches transformers/TRL on import

            self._flm = FastLanguageModel
        return self._flm

    def _bf16_supported(self) -> bool:
        if self._bf16 is None:
            import torch

            self._bf16 = bool(torch.cuda.is_bf16_supported())
        return self._bf16

    def _loaded(self) -> tuple[Any, Any]:
        """The one model of this process, with its LoRA (loaded on first use)."""
        if self.model is None:
            from toolkit.models import prepare_tokenizer

            flm = self._fast_language_model()
            model, tokenizer = flm.from_pretrained(**unsloth_load_kwargs(self.recipe))
            self.model = flm.get_peft_model(model, **unsloth_lora_kwargs(self.recipe))
            self.tokenizer = prepare_tokenizer(tokenizer)
        return self.model, self.tokenizer

    def _set_adapter(self, adapter: Path | None) -> None:
        """Make the live LoRA hold ``adapter``'s weights (None: leave it as it is)."""
        if adapter is None:
            return
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        set_peft_model_state_dict(self.model, load_file(str(Path(adapter) / "adapter_model.safetensors")))

    def sft_model(self) -> tuple[Any, Any, Any]:
        model, tokenizer = self._loaded()
        return model, tokenizer, None  # the LoRA is already on the model (get_peft_model)

    def sft_config(self, out: Path, report_to: Any) -> Any:
        import dataclasses

        from toolkit.train.config import build_sft_config

        config = build_sft_config(self.recipe, out, use_cpu=False, report_to=report_to)
        return dataclasses.replace(config, **gpu_precision(self._bf16_supported()))

    def grpo_model(self, warm: Path | None) -> tuple[Any, Any]:
        model, tokenizer = self._loaded()
        self._set_adapter(warm)
        return model, tokenizer

    def grpo_config(self, out: Path, report_to: Any) -> Any:
        from trl import GRPOConfig

        from toolkit.train.config import grpo_kwargs

        self.lora_dir = Path(out) / "rollout_lora"
        kwargs = grpo_kwargs(self.recipe, out, use_cpu=False, report_to=report_to)
        return GRPOConfig(**(kwargs | gpu_grpo_overrides(self._bf16_supported())))

    # ---- generation and weight sync ----------------------------------------------------------------

    def _live_policy(self, model: Any, name: str) -> Any:
        """A vLLM policy over the model's engine with a LoRARequest built from the live LoRA tensors."""
        from toolkit.agent.policies import VLLMPolicy

        if self.lora_dir is None:  # no grpo_config yet (evaluation before GRPO): a scratch folder
            import tempfile

            self.lora_dir = Path(tempfile.mkdtemp(prefix="unsloth-lora-"))
        lora_dir = self.lora_dir
        lora_dir.mkdir(parents=True, exist_ok=True)
        lora_request = model.load_lora(str(lora_dir), load_tensors=True)
        return VLLMPolicy(model.vllm_engine, self.tokenizer, lora_request=lora_request, name=name)

    def rollout_policy(self, trainer: Any) -> Any:
        return self._live_policy(trainer.accelerator.unwrap_model(trainer.model), "unsloth-vllm")

    def eval_policy(self, adapter: Path | None, label: str) -> Any:
        model, _ = self._loaded()
        if adapter is None:  # the base model: no LoRA request at all
            from toolkit.agent.policies import VLLMPolicy

            return VLLMPolicy(model.vllm_engine, self.tokenizer, name=label)
        self._set_adapter(adapter)
        return self._live_policy(model, label)

    def merge(self, adapter: Path, out: Path) -> None:
        model, tokenizer = self._loaded()
        self._set_adapter(adapter)
        # unsloth/save.py: unsloth_save_pretrained_merged (16-bit weights vLLM can serve)
        model.save_pretrained_merged(str(out), tokenizer, save_method="merged_16bit")

    def release(self) -> None:
        gc.collect()  # the model stays loaded: every stage of this process uses it
