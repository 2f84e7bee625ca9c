"""Training backends: what each one supplies, and the one registry of their names.

``toolkit.train.pipeline`` runs the stages (tasks -> SFT warm start -> held-out eval -> GRPO ->
held-out eval -> paired comparison, each resumable) once for every backend. A backend supplies:

- **model loading**: the model to warm-start with SFT, the trainable PEFT model for GRPO (continuing
  the warm-start adapter), and the training arguments that go with them (``sft_config``,
  ``grpo_config``);
- **generation**: ``rollout_policy(trainer)``, the policy the kit's agent loop samples GRPO episodes
  from, and ``eval_policy(adapter)``, the one the held-out evaluation uses;
- **weight sync**: ``rollout_policy`` is called once per generation batch and must generate with the
  weights as they are after the last optimizer step (the LoRA being trained, never the base weights);
- **lifetime**: ``release`` between stages, ``close`` when the run ends (an engine kept up for the run
  is stopped there, so the process exits without waiting on it).

Adding a backend is one class with these methods (a module of its own, beside
``toolkit.train.transformers_backend``, ``unsloth_backend``, ``vllm_backend`` and ``vllm_server_backend``)
and one line in ``BACKENDS``. Nothing else lists the names: the recipe check (``config``), the
``mcp-rl train --backend`` choices (``toolkit.cli.train``) and ``device.detect_backend`` read them here. This
module imports no backend (``make_backend`` loads the chosen one by name), and backends never import
the pipeline.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

AUTO = "auto"  # not a backend: device.detect_backend picks gpu or cpu for the machine


@dataclass(frozen=True)
class BackendEntry:
    """Where a backend's class lives, and whether a recipe may name it."""

    module: str
    cls: str
    # a recipe's ``backend`` key may name it; the vllm-server backend needs a URL, given on the command line
    in_recipes: bool = True


# name -> backend class; the one list of backend names
BACKENDS: dict[str, BackendEntry] = {
    "cpu": BackendEntry("toolkit.train.transformers_backend", "TransformersBackend"),
    "gpu": BackendEntry("toolkit.train.unsloth_backend", "UnslothBackend"),
    "vllm": BackendEntry("toolkit.train.vllm_backend", "VLLMBackend"),
    "vllm-server": BackendEntry("toolkit.train.vllm_server_backend", "VLLMServerBackend", in_recipes=False),
}


def backend_choices() -> tuple[str, ...]:
    """What ``--backend`` accepts: ``auto`` and every registered backend."""
    return (AUTO, *BACKENDS)


def recipe_backend_choices() -> tuple[str, ...]:
    """What a recipe's ``backend`` key accepts: ``auto`` and the backends a recipe may name."""
    return (AUTO, *(name for name, entry in BACKENDS.items() if entry.in_recipes))


def make_backend(name: str, recipe: Any, **options: Any) -> Any:
    """The backend registered as ``name``, built for ``recipe`` (``options``: its own, e.g. ``url``)."""
    entry = BACKENDS[name]
    return getattr(importlib.import_module(entry.module), entry.cls)(recipe, **options)


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

    def close(self) -> None:
        """Stop what the backend started for the run (an engine and its processes); ``run_recipe`` calls it
        when the run ends, or fails, on a backend it made. A backend object handed in is its caller's."""
