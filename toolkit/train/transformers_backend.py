"""The transformers + PEFT backend (registry name ``cpu``): the one every machine can run.

It trains and generates on the CUDA device where torch sees one, else on the CPU. ``toolkit.train.backends``
says what a backend supplies; the vLLM backends (``vllm_backend``, ``vllm_server_backend``) inherit its
model loading and update and replace its generation.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

from toolkit.train.config import Recipe


class TransformersBackend:
    """transformers + PEFT: every stage loads the model afresh (what the CPU runs measured). Named
    ``cpu`` because it needs nothing beyond the CPU install, but on a machine where torch sees a CUDA
    device (a GPU without the ``gpu`` extra, e.g. Colab before Unsloth is installed) the trainers and
    the evaluation run there, not on the host's cores."""

    name = "cpu"

    def __init__(self, recipe: Recipe):
        from toolkit.train.device import cuda_available

        self.recipe = recipe
        self._use_cpu = not cuda_available()

    def sft_model(self) -> tuple[Any, Any, Any]:
        from toolkit.models import load_policy
        from toolkit.train.config import build_lora_config

        model, tokenizer = load_policy(self.recipe.model, dtype=self.recipe.dtype)
        return model, tokenizer, build_lora_config(self.recipe)

    def sft_config(self, out: Path, report_to: Any) -> Any:
        from toolkit.train.config import build_sft_config

        return build_sft_config(self.recipe, out, use_cpu=self._use_cpu, report_to=report_to)

    def grpo_model(self, warm: Path | None) -> tuple[Any, Any]:
        from toolkit.models import load_policy
        from toolkit.train.config import build_lora_config
        from toolkit.train.grpo import peft_model_for_grpo

        model, tokenizer = load_policy(self.recipe.model, dtype=self.recipe.dtype)
        return peft_model_for_grpo(model, build_lora_config(self.recipe), warm), tokenizer

    def grpo_config(self, out: Path, report_to: Any) -> Any:
        from toolkit.train.config import build_grpo_config

        return build_grpo_config(self.recipe, out, use_cpu=self._use_cpu, report_to=report_to)

    def rollout_policy(self, trainer: Any) -> Any:
        # the trainer's own module: an optimizer step changes the very parameters generate() reads
        from toolkit.train.rollout import transformers_policy

        return transformers_policy(trainer)

    def eval_policy(self, adapter: Path | None, label: str) -> Any:
        """With ``eval.merge_adapter`` the LoRA weights are merged into the base weights first (PEFT
        ``merge_and_unload``): no adapter layers in every forward pass, at the price of rounding the
        merged weights to the model's dtype."""
        from toolkit.agent.policies import TransformersPolicy
        from toolkit.models import load_policy

        model, tokenizer = load_policy(
            self.recipe.model, adapter=str(adapter) if adapter else None, dtype=self.recipe.dtype
        )
        if adapter and self.recipe.eval.get("merge_adapter"):
            model = model.merge_and_unload()
        if not self._use_cpu:  # the trainers move their model themselves; this one is ours to place
            model = model.to("cuda")
        model.eval()
        return TransformersPolicy(model, tokenizer, name=label)

    def merge(self, adapter: Path, out: Path) -> None:
        from toolkit.models import merge_adapter

        merge_adapter(self.recipe.model, adapter, out, dtype=self.recipe.dtype)

    def release(self) -> None:
        gc.collect()

    def close(self) -> None:
        self.release()  # nothing outlives a stage here
