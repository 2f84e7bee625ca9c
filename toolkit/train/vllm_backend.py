"""GRPO with vLLM generation and a hot-swapped LoRA: vLLM's CPU backend here, the same code on CUDA.

TRL's own vLLM modes do not run on a CPU (server mode moves weights over NCCL; colocate mode's
``sync_weights`` fails because the CPU backend prepacks the linear weights), so generation goes
through the kit's ``rollout_func`` instead, with ``grpo.use_vllm`` left off:

- one ``vllm.LLM`` on the *base* checkpoint with ``enable_lora=True`` (started once);
- the update is TRL's GRPOTrainer on a transformers + PEFT model, as on the CPU path;
- before each rollout batch, if the optimizer has stepped since the last sync, the trainer's adapter is
  saved (``PeftModel.save_pretrained``) and handed to vLLM under a NEW ``LoRARequest`` id. A new id is
  what makes vLLM read the folder again: a request with an id it has seen reuses its cached adapter.
  This is the pattern of Unsloth's ``model.load_lora(path)`` -> LoRARequest for ``fast_generate``.

The hook for the one-pipeline backend interface: ``VLLMLoraSync`` is a ``policy_factory`` for
``toolkit.train.grpo.build_grpo_trainer`` (trainer -> Policy); ``VLLMLoraSync.policy_for(adapter)``
gives the held-out evaluation policy for a saved adapter folder on the same engine.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

ADAPTERS_KEPT = 2  # older synced adapter folders are deleted (vLLM has already loaded them)


def start_engine(model: str, *, max_lora_rank: int = 16, **overrides: Any) -> tuple[Any, Any]:
    """A LoRA-enabled ``vllm.LLM`` on ``model``'s base checkpoint, and the kit tokenizer for it.

    ``model`` is a kit model name (``smollm2-135m``: its cached checkpoint), a hub id or a folder.
    Scripts that call this need an ``if __name__ == "__main__":`` guard: vLLM starts its engine in a
    new process that re-imports the main module.
    """
    from toolkit.agent.policies import _require_gpu_package, resolve_vllm_model, vllm_engine_kwargs

    _require_gpu_package("vllm")
    from vllm import LLM

    path, tokenizer = resolve_vllm_model(model)
    kwargs = vllm_engine_kwargs(enable_lora=True, max_lora_rank=max_lora_rank, max_loras=1)
    kwargs.update(overrides)
    return LLM(model=path, **kwargs), tokenizer


class VLLMLoraSync:
    """``policy_factory`` that generates with vLLM and the trainer's adapter as of its current step.

    Args:
        llm: a ``vllm.LLM`` started with ``enable_lora=True`` on the trainer's base checkpoint.
        tokenizer: the kit tokenizer (tool chat template) the loop renders with.
        adapter_root: where synced adapters are written (``<root>/step-<n>``).
    """

    def __init__(self, llm: Any, tokenizer: Any, adapter_root: str | Path, *, name: str = "vllm-lora"):
        self.llm = llm
        self.tokenizer = tokenizer
        self.root = Path(adapter_root)
        self.name = name
        self.synced_step: int | None = None
        self.lora_request: Any = None
        self.history: list[dict[str, Any]] = []  # one entry per sync: step, lora id, folder
        self._next_id = 1

    def __call__(self, trainer: Any) -> Any:
        step = int(trainer.state.global_step)
        if step != self.synced_step:
            model = trainer.accelerator.unwrap_model(trainer.model)
            self.sync(model, step)
        return self._policy(self.lora_request, f"{self.name}@{step}")

    def sync(self, peft_model: Any, step: int) -> Any:
        """Save the active adapter and make it the one vLLM generates with (a new LoRA id)."""
        from vllm.lora.request import LoRARequest

        folder = self.root / f"step-{step}"
        if folder.exists():
            shutil.rmtree(folder)  # a resumed run re-syncs the same step with new weights
        # Only the trained adapter: TRL may hold a frozen "ref" adapter beside it.
        peft_model.save_pretrained(str(folder), selected_adapters=[peft_model.active_adapter])
        lora_id = self._next_id
        self._next_id += 1
        self.lora_request = LoRARequest(f"step-{step}-{lora_id}", lora_id, str(folder))
        self.synced_step = step
        self.history.append({"step": step, "lora_id": lora_id, "path": str(folder)})
        for old in self.history[:-ADAPTERS_KEPT]:
            shutil.rmtree(old["path"], ignore_errors=True)
        return self.lora_request

    def policy_for(self, adapter: str | Path | None) -> Any:
        """An evaluation policy on this engine: the base model, or a saved adapter under a new id."""
        from vllm.lora.request import LoRARequest

        if adapter is None:
            return self._policy(None, f"{self.name}:base")
        lora_id = self._next_id
        self._next_id += 1
        return self._policy(LoRARequest(f"eval-{lora_id}", lora_id, str(adapter)), f"{self.name}:{adapter}")

    def _policy(self, lora_request: Any, name: str) -> Any:
        from toolkit.agent.policies import VLLMPolicy

        return VLLMPolicy(self.llm, self.tokenizer, lora_request=lora_request, name=name)
