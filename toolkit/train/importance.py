"""Truncated importance sampling for rollouts that another engine generated (vLLM: in-process or served).

With the ``vllm`` and ``vllm-server`` backends the episodes are sampled by vLLM and the update is
transformers + PEFT: the two compute different log-probabilities for the same tokens (kernels, dtype,
LoRA application), so the samples are slightly off-policy. TRL corrects exactly this with its
``vllm_importance_sampling_*`` settings (``trl/trainer/grpo_trainer.py``,
``_generate_and_score_completions``): it recomputes the trainer's logprobs (``old_per_token_logps``),
takes ``ratio = exp(logp_trainer - logp_sampler)`` against the ``logprobs`` the rollout function
returned, truncates it (``token_truncate``: ``min(ratio, vllm_importance_sampling_clip_max)``) and
multiplies the per-token loss by it. But TRL gates all of that on ``self.use_vllm``, which also makes it
build an engine of its own; the kit's engine lives behind ``rollout_func``, so ``GRPOConfig.use_vllm``
stays False and ``toolkit.train.trl_adapter.enable_sampler_correction`` turns on only the flag, with a
stand-in for TRL's engine whose weight sync is a no-op (the kit's policy factory syncs the adapter before
each rollout batch).

``mismatch_stats`` measures what TRL does not log (the adapter logs it after TRL has scored a batch): a KL estimate between the sampler and the trainer
and the share of tokens whose ratio fell outside the clip range (truncated, or zeroed in the ``*_mask``
modes). TRL itself logs ``sampling/sampling_logp_difference/{mean,max}`` (mean and max
|logp_trainer - logp_sampler| over model tokens) and ``sampling/importance_sampling_ratio/{min,mean,max}``.
"""

from __future__ import annotations

from typing import Any

# The kit's choice for its vLLM backends (TRL's default mode is "sequence_mask"): per-token truncated
# IS, as in Yao et al. 2025, "Your efficient RL framework secretly brings you off-policy RL training".
# A recipe's grpo section may set any of TRL's vllm_importance_sampling_* fields instead.
KIT_IS_MODE = "token_truncate"


def default_is_mode(grpo_config: Any, recipe_grpo: dict[str, Any]) -> Any:
    """Set the kit's truncation mode on a GRPOConfig unless the recipe chose one."""
    if "vllm_importance_sampling_mode" not in recipe_grpo:
        grpo_config.vllm_importance_sampling_mode = KIT_IS_MODE
    return grpo_config


def mismatch_stats(
    trainer_logps: Any,
    sampler_logps: Any,
    mask: Any,
    *,
    mode: str,
    clip_min: float | None,
    clip_max: float | None,
) -> dict[str, float]:
    """Sums over the model tokens of one batch: ``tokens``, ``abs_diff`` (|logp_trainer - logp_sampler|),
    ``kl`` (Schulman's k3 estimate of KL(sampler || trainer) from the sampler's tokens,
    ``exp(d) - 1 - d`` with ``d = logp_trainer - logp_sampler``), ``units`` and ``outside`` (tokens, or
    sequences in the ``sequence_*`` modes, whose ratio was outside [clip_min, clip_max])."""
    import torch

    diff = trainer_logps.float() - sampler_logps.float()
    valid = mask.bool() & ~torch.isnan(diff)
    d = torch.where(valid, diff, torch.zeros_like(diff))
    if mode.startswith("sequence"):
        log_ratio = d.sum(-1)
        units = valid.any(-1)
    else:
        log_ratio, units = d, valid
    outside = torch.zeros_like(units)
    if clip_max is not None:
        outside |= log_ratio > torch.log(torch.tensor(float(clip_max)))
    if clip_min is not None and clip_min > 0:
        outside |= log_ratio < torch.log(torch.tensor(float(clip_min)))
    return {
        "tokens": float(valid.sum()),
        "abs_diff": float(d.abs().sum()),
        "kl": float((torch.expm1(d) - d)[valid].sum()),
        "units": float(units.sum()),
        "outside": float((outside & units).sum()),
    }
