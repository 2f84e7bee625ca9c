"""The one-GPU path: Unsloth ``FastLanguageModel`` (LoRA, optional 4-bit) with vLLM generation.

Follows Unsloth's GRPO notebooks: ``FastLanguageModel.from_pretrained(..., fast_inference=True,
max_lora_rank=r, gpu_memory_utilization=...)`` starts a vLLM engine next to the training weights,
``FastLanguageModel.get_peft_model`` adds the LoRA adapter with Unsloth's gradient checkpointing,
and TRL's GRPOTrainer (patched by Unsloth on import) trains it. The kit's rollout loop generates
through that same engine (``model.vllm_engine``) with the current adapter (``model.load_lora``).

NOT EXERCISED IN CI (no GPU there): the tests cover the pure parts (``unsloth_load_kwargs``,
``unsloth_lora_kwargs``, ``gpu_grpo_overrides``) and the dispatch; importing this module never
imports unsloth or vllm, only calling ``run_recipe_gpu`` / ``load_unsloth`` does.

Several GPUs: do not use this module; run ``accelerate launch`` with the CPU/transformers path and
TRL's vLLM server mode (``trl vllm-serve --model M`` on one GPU, ``--set grpo.use_vllm=true --set
grpo.vllm_mode=server`` for the trainer), see the README's training section.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolkit.train.config import Recipe

LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
ADAPTER_NAME = "grpo_trainer_lora_model"  # the name Unsloth's own GRPO trainer loads into vLLM


def unsloth_load_kwargs(recipe: Recipe) -> dict[str, Any]:
    """Arguments for ``FastLanguageModel.from_pretrained`` (recipe ``gpu`` keys in ``lora``/``rollout``)."""
    loop = recipe.loop_config()
    return {
        "model_name": recipe.model,
        "max_seq_length": loop.max_context_tokens,
        "load_in_4bit": bool(recipe.lora.get("load_in_4bit", False)),  # QLoRA: less memory, slower
        "fast_inference": True,  # the vLLM engine used for rollouts
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


def gpu_grpo_overrides() -> dict[str, Any]:
    """GRPOConfig settings the GPU path needs: vLLM in colocate mode (Unsloth's engine), bf16."""
    return {"use_vllm": True, "vllm_mode": "colocate", "bf16": True, "use_cpu": False}


def load_unsloth(recipe: Recipe) -> tuple[Any, Any]:
    """Model (with LoRA) + tokenizer through Unsloth; the tokenizer gets the kit's tool template."""
    from toolkit.train.device import detect_backend

    detect_backend("gpu")  # one clear message when this machine cannot do it
    from unsloth import FastLanguageModel  # GPU only; patches transformers/TRL on import

    from toolkit.models import prepare_tokenizer

    model, tokenizer = FastLanguageModel.from_pretrained(**unsloth_load_kwargs(recipe))
    model = FastLanguageModel.get_peft_model(model, **unsloth_lora_kwargs(recipe))
    return model, prepare_tokenizer(tokenizer)


def vllm_policy_factory(trainer: Any) -> Any:
    """Rollouts through Unsloth's vLLM engine with the adapter as it is at this step."""
    from toolkit.agent.policies import VLLMPolicy

    model = trainer.accelerator.unwrap_model(trainer.model)
    lora_request = model.load_lora(ADAPTER_NAME, load_tensors=True)
    return VLLMPolicy(
        model.vllm_engine, trainer.processing_class, lora_request=lora_request, name="unsloth-vllm"
    )


def run_recipe_gpu(
    recipe: Recipe, out: Path, *, resume: bool, evaluate: bool, merge: bool, report_to: Any
) -> dict[str, Any]:
    """SFT warm start (optional) then GRPO on one GPU; same folder layout as the CPU path."""
    from toolkit.train import config as cfg
    from toolkit.train.callbacks import MetricsJsonlCallback
    from toolkit.train.grpo import build_grpo_trainer
    from toolkit.train.pipeline import grpo_tasks, last_checkpoint, load_train_tasks, resolve_task_files
    from toolkit.train.sft import gold_trajectories, run_sft, sft_rows

    train_file, _ = resolve_task_files(recipe, out)
    tasks = load_train_tasks(recipe, train_file)
    loop = recipe.loop_config()
    model, tokenizer = load_unsloth(recipe)
    metrics = out / "metrics.jsonl"
    sft_steps = 0
    if recipe.sft is not None:
        gold = gold_trajectories(tasks[: recipe.sft.get("max_examples") or len(tasks)], loop)
        rows = sft_rows(gold, tokenizer, max_length=recipe.sft.get("max_length"))
        sft_config = cfg.build_sft_config(recipe, out / "sft", use_cpu=False, report_to=report_to)
        sft_trainer = run_sft(
            model, tokenizer, rows, sft_config, None, [MetricsJsonlCallback(metrics, "sft")]
        )
        sft_steps = sft_trainer.state.global_step
        sft_trainer.save_model(str(out / "sft" / "adapter"))
    from trl import GRPOConfig

    kwargs = cfg.grpo_kwargs(recipe, out / "grpo", use_cpu=False, report_to=report_to)
    kwargs.update(gpu_grpo_overrides())
    trainer = build_grpo_trainer(
        model,
        tokenizer,
        grpo_tasks(recipe, tasks),
        GRPOConfig(**kwargs),
        loop,
        reward=recipe.reward,
        reward_config=recipe.reward_config,
        policy_factory=vllm_policy_factory,
        callbacks=[MetricsJsonlCallback(metrics, "grpo", step_offset=sft_steps)],
        ref_sync=cfg.ref_sync_settings(recipe),
    )
    trainer.train(resume_from_checkpoint=last_checkpoint(out / "grpo") if resume else None)
    trainer.save_model(str(out / "adapter"))
    if merge:
        model.save_pretrained_merged(str(out / "merged"), tokenizer, save_method="merged_16bit")
    summary = {
        "recipe": recipe.name,
        "model": recipe.model,
        "backend": "gpu",
        "grpo_steps": trainer.state.global_step,
    }
    if evaluate:
        summary["note"] = (
            "evaluate with `mcp-rl eval --policy vllm:<merged>` (GPU eval runs outside training)"
        )
    return summary
