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
stays False and ``enable_sampler_correction`` turns on only the flag, with a stand-in for TRL's engine
whose weight sync is a no-op (the kit's policy factory syncs the adapter before each rollout batch).

``SamplerMismatchMetrics`` adds what TRL does not log: a KL estimate between the sampler and the trainer
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


class RolloutFuncEngine:
    """What TRL's ``GRPOTrainer`` calls on its vLLM engine when ``use_vllm`` is set and a ``rollout_func``
    generates: ``sync_weights()`` at each new global step. The kit's policy factories (``VLLMLoraSync``,
    ``ServerLoraSync``) save and load the adapter themselves, so there is nothing to do here."""

    def sync_weights(self) -> None:
        return None


def enable_sampler_correction(trainer: Any) -> bool:
    """Make TRL apply its vLLM importance-sampling correction to the kit's ``rollout_func`` samples.
    True when it is on; False when the config turned it off or TRL runs an engine of its own (then TRL
    already corrects)."""
    if trainer.args.use_vllm or not trainer.vllm_importance_sampling_correction:
        return False
    trainer.use_vllm = True
    trainer.vllm_generation = RolloutFuncEngine()
    trainer._last_loaded_step = -1
    return True


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


class SamplerMismatchMetrics:
    """``GRPOTrainer`` mixin: after TRL has scored a batch with the correction on, log the sampler/trainer
    KL estimate and the truncated share (per step, averaged like TRL's own metrics)."""

    def _generate_and_score_completions(self, inputs: Any) -> Any:
        output = super()._generate_and_score_completions(inputs)  # type: ignore[misc]
        if getattr(self, "use_vllm", False) and self.vllm_importance_sampling_correction:
            self._log_sampler_mismatch(output)
        return output

    def _log_sampler_mismatch(self, output: dict[str, Any]) -> None:
        import torch

        trainer_logps = output.get("old_per_token_logps")
        sampler_logps = output.get("sampling_per_token_logps")
        if trainer_logps is None or sampler_logps is None:
            return
        mask = output["completion_mask"]
        if output.get("tool_mask") is not None:
            mask = mask * output["tool_mask"]
        stats = mismatch_stats(
            trainer_logps,
            sampler_logps,
            mask,
            mode=self.vllm_importance_sampling_mode,
            clip_min=self.vllm_importance_sampling_clip_min,
            clip_max=self.vllm_importance_sampling_clip_max,
        )
        keys = ("tokens", "abs_diff", "kl", "units", "outside")
        local = torch.tensor([stats[k] for k in keys], device=trainer_logps.device)
        total = dict(zip(keys, self.accelerator.gather(local[None]).sum(0).tolist(), strict=True))
        mode = "train" if self.model.training else "eval"
        tokens = max(total["tokens"], 1.0)
        self._metrics[mode]["sampling/sampler_trainer_kl"].append(total["kl"] / tokens)
        self._metrics[mode]["sampling/importance_sampling_ratio/truncated_share"].append(
            total["outside"] / max(total["units"], 1.0)
        )
