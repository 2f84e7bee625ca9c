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

Hooks: ``VLLMLoraSync`` is a ``policy_factory`` for ``toolkit.train.grpo.build_grpo_trainer``
(trainer -> Policy) and ``VLLMLoraSync.policy_for(adapter)`` the held-out evaluation policy on the same
engine. ``VLLMBackend`` is the whole backend for the one pipeline (model loading and the update as the
transformers backend, generation and weight sync through vLLM): one line in ``toolkit.train.backends.BACKENDS``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from toolkit.reaper import watch
from toolkit.train.config import Recipe
from toolkit.train.transformers_backend import TransformersBackend

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
    # The prefix cache (vLLM 0.32's default on an x86 CPU, said here so that it stays on): the 8 episodes of
    # a task share its whole tool-schema prompt, and each turn shares the episode's earlier turns. Reuse is
    # per KV block (128 tokens on the CPU backend) and per LoRA id, so within one step's rollouts.
    kwargs = {
        "enable_lora": True,
        "max_lora_rank": max_lora_rank,
        "max_loras": 1,
        "enable_prefix_caching": True,
        **overrides,
    }
    watch()  # the engine's processes die with this one
    return LLM(**vllm_engine_kwargs(path, **kwargs)), tokenizer


class VLLMLoraSync:
    """``policy_factory`` that generates with vLLM and the trainer's adapter as of its current step.

    Args:
        llm: a ``vllm.LLM`` started with ``enable_lora=True`` on the trainer's base checkpoint.
        tokenizer: the kit tokenizer (tool chat template) the loop renders with.
        adapter_root: where synced adapters are written (``<root>/step-<n>``).
    """

    samples_off_policy = True  # vLLM's logprobs differ from the trainer's: toolkit.train.importance

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


class VLLMBackend(TransformersBackend):
    """The one pipeline's backend with vLLM generation: model loading, SFT and the GRPO update are the
    transformers backend's (inherited), every rollout and the held-out evaluation go through one vLLM
    engine on the recipe's base model with the current LoRA (CPU backend, or CUDA where there is one).
    The engine starts on first use and stays up for the run."""

    name = "vllm"
    samples_off_policy = True  # the pipeline turns on TRL's truncated IS correction (importance.py)

    def __init__(self, recipe: Recipe, *, engine: tuple[Any, Any] | None = None):
        super().__init__(recipe)
        self._engine = engine
        self._owns_engine = False  # an engine handed in is its caller's to stop
        self._sync: VLLMLoraSync | None = None
        self._eval: Any = None  # the engine serving a merged adapter for evaluation (CPU)

    @property
    def engine(self) -> tuple[Any, Any]:
        if self._engine is None:
            self._engine = start_engine(
                self.recipe.model,
                max_lora_rank=_vllm_rank(self.recipe),
                **_engine_dtype(self.recipe),
                **_engine_memory(self.recipe, on_cuda=not self._use_cpu),
            )
            self._owns_engine = True
        return self._engine

    def grpo_config(self, out: Path, report_to: Any) -> Any:
        from toolkit.train.importance import default_is_mode

        self._sync = VLLMLoraSync(*self.engine, Path(out) / "vllm-lora")
        return default_is_mode(super().grpo_config(out, report_to), self.recipe.grpo)

    def rollout_policy(self, trainer: Any) -> Any:
        if self._sync is None:
            self._sync = VLLMLoraSync(*self.engine, Path(trainer.args.output_dir) / "vllm-lora")
        return self._sync(trainer)

    def eval_policy(self, adapter: Path | None, label: str) -> Any:
        """The held-out evaluation policy. On vLLM's CPU backend an adapter is merged into the base weights
        and served by an engine of its own, stopped by ``release``: with a LoRARequest, CPU prefill gathers
        one weight matrix per token (``toolkit.models.merged_checkpoint``) and held-out prompts, all
        different, share no prefix cache. On CUDA the LoRA kernels are fast: the rollout engine serves it."""
        if adapter is not None and self._use_cpu:
            from toolkit.agent.policies import VLLMPolicy
            from toolkit.models import BF16_IF_NATIVE, merged_checkpoint

            merged = merged_checkpoint(self.recipe.model, adapter, dtype=self.recipe.dtype or BF16_IF_NATIVE)
            self._eval = VLLMPolicy(str(merged), name=label, **_engine_dtype(self.recipe))
            return self._eval
        sync = self._sync or VLLMLoraSync(*self.engine, Path(adapter or ".") / "vllm-lora")
        policy = sync.policy_for(adapter)
        policy.name = label
        return policy

    def release(self) -> None:
        if self._eval is not None:  # the evaluation engine; the rollout engine stays up for the run
            self._eval.close()
            self._eval = None
        super().release()

    def close(self) -> None:
        """Stop the rollout engine this backend started: its engine-core process is a non-daemon child,
        and a process that exits with it still up waits on it (``multiprocessing``'s exit joins it)."""
        from toolkit.agent.policies import stop_engine

        self.release()
        if self._owns_engine and self._engine is not None:
            stop_engine(self._engine[0])
        self._engine, self._sync, self._owns_engine = None, None, False


def _engine_dtype(recipe: Recipe) -> dict[str, Any]:
    """The engine computes in the recipe's dtype, as the trainer does (bf16-if-native resolved here)."""
    from toolkit.agent.policies import vllm_dtype

    return {} if recipe.dtype is None else {"dtype": vllm_dtype(recipe.dtype)}


# On CUDA the trainer (its own copy of the weights, the optimizer, activations) shares the GPU with the
# engine; vLLM's default would take 90% of the card for its weights and KV cache.
VLLM_GPU_MEMORY_UTILIZATION = 0.35


def _engine_memory(recipe: Recipe, *, on_cuda: bool) -> dict[str, Any]:
    """The engine's cap on GPU memory (``lora.gpu_memory_utilization``, the share of the card), on CUDA;
    on vLLM's CPU backend the KV cache has a fixed size instead (``vllm_cpu_defaults``)."""
    if not on_cuda:
        return {}
    share = float(recipe.lora.get("gpu_memory_utilization", VLLM_GPU_MEMORY_UTILIZATION))
    return {"gpu_memory_utilization": share}


def _vllm_rank(recipe: Recipe) -> int:
    rank = int(recipe.lora.get("r", 16))
    return next((r for r in (8, 16, 32, 64, 128, 256, 512) if r >= rank), rank)  # the ranks vLLM accepts
