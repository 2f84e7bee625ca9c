"""Training backends: the three things that differ between machines, and nothing else.

``toolkit.train.pipeline`` runs the stages (tasks -> SFT warm start -> held-out eval -> GRPO ->
held-out eval -> paired comparison, each resumable) once for every backend. A backend supplies:

- **model loading**: the model to warm-start with SFT, the trainable PEFT model for GRPO (continuing
  the warm-start adapter), and the training arguments that go with them (``sft_config``,
  ``grpo_config``);
- **generation**: ``rollout_policy(trainer)``, the policy the kit's agent loop samples GRPO episodes
  from, and ``eval_policy(adapter)``, the one the held-out evaluation uses;
- **weight sync**: ``rollout_policy`` is called once per generation batch and must generate with the
  weights as they are after the last optimizer step (the LoRA being trained, never the base weights).

``TransformersBackend`` (transformers + PEFT, CPU or a GPU without the ``gpu`` extra) is here: it trains
and generates on the CUDA device where torch sees one, else on the CPU;
``toolkit.train.unsloth_backend.UnslothBackend`` is the one-GPU backend. Adding one (vLLM on CPU, next)
is a class with these methods and one line in ``pipeline.BACKENDS``. Backends never import the pipeline.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any, Protocol

from toolkit.train.config import Recipe


class TrainBackend(Protocol):
    name: str

    def sft_model(self) -> tuple[Any, Any, Any]:
        """(model, tokenizer, peft_config or None when the model already carries its LoRA)."""

    def sft_config(self, out: Path, report_to: Any) -> Any: ...

    def grpo_model(self, warm: Path | None) -> tuple[Any, Any]:
        """The trainable model (LoRA; the warm-start adapter's weights when given) and tokenizer."""

    def grpo_config(self, out: Path, report_to: Any) -> Any: ...

    def rollout_policy(self, trainer: Any) -> Any:
        """A ``toolkit.agent.policies`` policy generating with the trainer's current weights."""

    def eval_policy(self, adapter: Path | None, label: str) -> Any:
        """A policy for the held-out evaluation: the base model plus ``adapter`` (None: the base)."""

    def merge(self, adapter: Path, out: Path) -> None:
        """Write the base model with ``adapter`` merged into it to ``out``."""

    def release(self) -> None:
        """Free what the last stage loaded (the pipeline calls it between stages)."""


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
