"""GRPO with TRL's GRPOTrainer, the kit's agent loop as the rollout, a kit reward, LoRA through PEFT.

``build_grpo_trainer`` assembles the pieces; the trainer, its loss (clipped ratio, KL to the
reference, ``mask_truncated_completions``, multiple iterations) and its optimiser are TRL's. What the
kit adds: the rollout (``toolkit.train.rollout``), the reward adapter (``toolkit.rewards.trl``), the
metrics file and the LoRA reference refresh (``toolkit.train.callbacks``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolkit.records import Task


def first_turn_only(task: Task) -> Task:
    """The task cut to its first user turn (Bespoke Labs trained on the first query of each example).
    BFCL tasks use their loader's version, which also cuts the checker's ground truth."""
    if not task.followups:
        return task
    if "bfcl" in task.metadata:
        from toolkit.synth.bfcl_tasks import first_turn_only as bfcl_first_turn_only

        return bfcl_first_turn_only(task)
    gold = [g for g in task.gold if g.turn == 0]
    return dataclasses.replace(task, followups=[], gold=gold)


def tasks_dataset(tasks: Sequence[Task]) -> Any:
    """Tasks as the dataset GRPOTrainer samples from (columns: prompt, task, id, kind, split)."""
    from toolkit.synth.dataset import tasks_to_dataset

    return tasks_to_dataset(tasks)


def peft_model_for_grpo(model: Any, lora_config: Any, adapter: str | Path | None = None) -> Any:
    """A trainable PEFT model: continue the warm-start adapter when given, else a fresh LoRA.

    Continuing the SFT adapter (rather than merging it and adding a new one) keeps one adapter to
    save; TRL then keeps a frozen copy of it as the reference model (adapter ``"ref"``), so the KL
    term pulls towards the warm-started policy, not towards the untrained base model.
    """
    from peft import PeftModel, get_peft_model

    if adapter is not None:
        return PeftModel.from_pretrained(model, str(adapter), is_trainable=True)
    return get_peft_model(model, lora_config)


def reward_funcs(name: str | Sequence[str], config: dict[str, Any] | None = None) -> list[Any]:
    """The recipe's reward as TRL reward functions (each reads the ``task`` column and ``trajectory``).

    A list of names gives one function per reward; TRL sums them with ``grpo.reward_weights`` and logs
    each on its own. ``config`` is then keyed by reward name (``{"prove": {...}}``)."""
    from toolkit.rewards.base import get_reward
    from toolkit.rewards.trl import as_trl_reward_func

    if isinstance(name, str):
        return [as_trl_reward_func(get_reward(name, **(config or {})))]
    return [as_trl_reward_func(get_reward(n, **((config or {}).get(n) or {}))) for n in name]


def build_grpo_trainer(
    model: Any,
    tokenizer: Any,
    tasks: Sequence[Task],
    grpo_config: Any,
    loop_config: Any,
    *,
    reward: str | Sequence[str] = "rubric",
    reward_config: dict[str, Any] | None = None,
    policy_factory: Any = None,
    callbacks: list[Any] | None = None,
    ref_sync: tuple[bool, int, float] = (False, 0, 1.0),
    open_episode: Any = None,
    sampler_correction: bool | None = None,
    sampling: Any = None,
) -> Any:
    """A ``KitGRPOTrainer`` ready to ``train()``; ``model`` may be a plain or a PEFT model.

    ``sampler_correction``: the policy samples with another engine than the trainer's (vLLM), so TRL's
    truncated importance-sampling correction is applied (``toolkit.train.importance``). Default: the
    policy factory's ``samples_off_policy`` attribute (``VLLMLoraSync``, ``ServerLoraSync``).
    ``sampling``: the recipe's ``grpo_sampling`` section (``toolkit.train.batching.SamplingConfig`` or its
    dict): the order tasks are drawn in and dynamic sampling, seeded by ``grpo_config.seed``."""
    from toolkit.train.batching import SamplingConfig, task_order_and_refill
    from toolkit.train.callbacks import PeftRefSyncCallback, use_step_lines
    from toolkit.train.rollout import kit_grpo_trainer_class, make_rollout_func, transformers_policy
    from toolkit.train.trl_compat import install_logprob_fallback

    if not isinstance(sampling, SamplingConfig):
        sampling = SamplingConfig.from_recipe(sampling)
    tasks, dynamic = task_order_and_refill(tasks, grpo_config, sampling)
    rollout_func = make_rollout_func(
        loop_config,
        policy_factory or transformers_policy,
        open_episode=open_episode,
        rollout_log=Path(grpo_config.output_dir) / "rollouts.jsonl",
        dynamic=dynamic,
    )
    # rollout_func is marked experimental in TRL; the kit pins the version, so say it once here.
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    install_logprob_fallback()  # TRL 1.15 on a CPU torch build: toolkit/train/trl_compat.py
    trainer_cls = kit_grpo_trainer_class()
    trainer = trainer_cls(
        model=model,
        reward_funcs=reward_funcs(reward, reward_config),
        args=grpo_config,
        train_dataset=tasks_dataset(tasks),
        processing_class=tokenizer,
        rollout_func=rollout_func,
        callbacks=callbacks,
    )
    use_step_lines(trainer, "grpo")  # one line per step, not TRL's raw dict of ~60 metrics
    if sampler_correction is None:
        sampler_correction = bool(getattr(policy_factory, "samples_off_policy", False))
    if sampler_correction:
        from toolkit.train.importance import enable_sampler_correction

        enable_sampler_correction(trainer)
    trainer._kit_shared_prefix = sampling.shared_prefix_update
    enabled, every, alpha = ref_sync
    if enabled and grpo_config.beta > 0:
        trainer.add_callback(PeftRefSyncCallback(every, alpha, trainer.accelerator))
    return trainer
