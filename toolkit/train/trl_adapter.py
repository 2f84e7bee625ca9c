"""The one seam between the kit's stages and the RL library (TRL): every coupling to TRL is here.

The stages (``toolkit.train.pipeline``), the GRPO step (``toolkit.train.grpo.GRPOStep``), the warm start
(``toolkit.train.sft``), the recipe's configs (``toolkit.train.config``) and the backends reach TRL only
through these functions; no other module of ``toolkit.train`` imports ``trl`` (``toolkit.models`` takes
TRL's tool chat template, below this layer; ``tests/test_trl_seam.py`` holds both to it). Another trainer,
or TRL's own environment hooks, would be a module beside this one offering the same few functions.

- **configs**: ``grpo_config_class`` / ``sft_config_class`` (looked up when called: importing Unsloth
  first swaps TRL's classes for its own).
- **warm start**: ``sft_trainer`` (TRL's SFTTrainer on tokenized rows), ``training_chat_template``.
- **GRPO**: ``grpo_trainer``, TRL's GRPOTrainer with the kit's step plugged into its hooks. The seam is
  ``KitGRPOTrainer._generate_and_score_completions``: the batch's dataset rows become ``Task`` records
  there, once, in ``trainer.kit_step`` (the one object that carries the kit's state through a step);
  ``rollout_func`` samples them and hands TRL the episodes with the Tasks and Trajectories themselves,
  which TRL passes on to the reward functions (``toolkit.rewards.trl``) as they are.
- **sampler correction**: ``enable_sampler_correction`` turns on TRL's importance-sampling correction for
  episodes another engine sampled; ``_log_sampler_mismatch`` adds what TRL does not log about it.
- **version guards**: ``install_logprob_fallback`` (TRL 1.15's fused LM head on a CPU torch build).

Every ``trl`` import is inside a function: importing this module imports no TRL, so the GPU backend can
import Unsloth first (``toolkit.train.unsloth_backend.import_unsloth``).
"""

from __future__ import annotations

import logging
import os
from typing import Any

# ---- configs -------------------------------------------------------------------------------------------


def grpo_config_class() -> type:
    """``trl.GRPOConfig`` as imported now (Unsloth's subclass when Unsloth was imported first)."""
    from trl import GRPOConfig

    return GRPOConfig


def sft_config_class() -> type:
    """``trl.SFTConfig`` as imported now (Unsloth's subclass when Unsloth was imported first)."""
    from trl import SFTConfig

    return SFTConfig


# ---- the warm start ------------------------------------------------------------------------------------


def training_chat_template(tokenizer: Any) -> str:
    """The tokenizer's template with ``{% generation %}`` markers (TRL ships one per known template)."""
    from trl.chat_template_utils import get_training_chat_template

    return get_training_chat_template(tokenizer) or tokenizer.chat_template


def sft_trainer(
    model: Any,
    tokenizer: Any,
    rows: list[dict],
    args: Any,
    peft_config: Any = None,
    callbacks: list[Any] | None = None,
) -> Any:
    """TRL's SFTTrainer on tokenized rows (``input_ids`` + ``assistant_masks``), ready to ``train()``."""
    from datasets import Dataset
    from trl import SFTTrainer

    install_logprob_fallback()  # TRL 1.15 on a CPU torch build
    return SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=callbacks,
    )


# ---- GRPO ----------------------------------------------------------------------------------------------


def log_metrics(trainer: Any, metrics: dict[str, float]) -> None:
    """Hand metrics to TRL's per-step averaging (the same path a reward function's ``log_metric`` uses)."""
    log = getattr(trainer, "_log_metric", None)
    if callable(log):
        for name, value in metrics.items():
            log(name, float(value))


def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list]:
    """TRL's ``rollout_func``: the kit's step samples the batch's tasks (set at the seam), and TRL gets per
    episode ``prompt_ids``, ``completion_ids``, ``logprobs`` and ``env_mask`` (1 = model token, 0 =
    tool/environment token: tool outputs stay out of the loss). Every other key is merged into the batch's
    rows, which TRL then hands to the reward functions (``trl/trainer/grpo_trainer.py``: ``_generate``,
    ``_generate_and_score_completions``): ``trajectory``, the ``silenced`` flag, and the row's own columns
    (``task`` as the Task itself), so that a task dynamic sampling put in a slot is the one scored."""
    from toolkit.rewards.trl import SILENCED
    from toolkit.synth.dataset import task_columns
    from toolkit.train.rollout import token_sample

    step = trainer.kit_step
    if step.tasks is None or len(step.tasks) != len(prompts):
        raise RuntimeError(
            "the kit's rollout_func needs the batch's tasks: build the trainer with grpo_trainer"
        )
    rollout = step.sample(step.tasks, trainer)
    log_metrics(trainer, rollout.metrics)
    eos = trainer.processing_class.eos_token_id
    out: dict[str, list] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": []}
    for i, traj in enumerate(rollout.trajs):
        p, c, lp, m = token_sample(traj, eos)
        out["prompt_ids"].append(p)
        out["completion_ids"].append(c)
        out["logprobs"].append(lp)
        out["env_mask"].append([0] * len(m) if i in rollout.silenced else m)
    out["trajectory"] = list(rollout.trajs)
    out[SILENCED] = [i in rollout.silenced for i in range(len(rollout.trajs))]
    columns = [{**task_columns(task), "task": task} for task in rollout.tasks]
    for key in columns[0] if columns else ():
        out[key] = [row[key] for row in columns]
    return out


class _SilencedRowsWarning(logging.Filter):
    """Drops TRL's warning that every reward function returned None for a row (it prints the row's every
    column, a whole trajectory) when the row is one the rollout silenced: None there is on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        from toolkit.rewards.trl import SILENCED

        message = record.getMessage()  # accelerate prefixes it with the rank
        return not ("All reward functions returned None" in message and f"'{SILENCED}': True" in message)


SILENCED_ROWS_WARNING = _SilencedRowsWarning()


def grpo_trainer(
    step: Any,
    *,
    model: Any,
    tokenizer: Any,
    args: Any,
    dataset: Any,
    reward_funcs: list[Any],
    callbacks: list[Any] | None = None,
) -> Any:
    """TRL's GRPOTrainer running the kit's ``step`` (a ``toolkit.train.grpo.GRPOStep``) on ``dataset``
    (``toolkit.synth.dataset.tasks_to_dataset``): the agent loop as its rollout, the kit's reward functions."""
    # rollout_func is marked experimental in TRL; the kit pins the version, so say it once here.
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    install_logprob_fallback()  # TRL 1.15 on a CPU torch build
    if step.dynamic is not None and step.dynamic.config.flat_groups == "drop":
        logging.getLogger("trl.trainer.grpo_trainer").addFilter(SILENCED_ROWS_WARNING)  # added once
    return kit_grpo_trainer_class()(
        model=model,
        reward_funcs=reward_funcs,
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
        rollout_func=rollout_func,
        callbacks=callbacks,
        kit_step=step,
    )


def kit_grpo_trainer_class() -> type:
    """``GRPOTrainer`` with the kit's step in its hooks, in the order TRL calls them: the rows become Tasks
    (the seam), the rewards are in (per-kind diagnostics), the scored batch is cut into micro-batches
    (regrouped by task, old logprobs in the update's layout), the update's log-probabilities (a shared
    prompt once), and a resumed checkpoint (the trained adapter put back)."""
    from trl import GRPOTrainer

    from toolkit.synth.dataset import task_from_row
    from toolkit.train.batching import shared_prefix_logps
    from toolkit.train.diagnostics import weighted_rewards

    class KitGRPOTrainer(GRPOTrainer):
        def __init__(self, *args: Any, kit_step: Any, **kwargs: Any):
            self.kit_step = kit_step  # the kit's step: its settings and the state of the batch in flight
            super().__init__(*args, **kwargs)

        def _generate_and_score_completions(self, inputs):
            # the seam: the batch's rows become Tasks here, once (a trainer fed by another rollout function
            # may have rows without tasks). Still-flat groups (flat_groups: drop) are silenced inside TRL's
            # own math: the rollout masks them and the reward functions return None for them.
            has_tasks = bool(inputs) and "task" in inputs[0]
            self.kit_step.tasks = [task_from_row(row) for row in inputs] if has_tasks else None
            output = super()._generate_and_score_completions(inputs)
            if getattr(self, "use_vllm", False) and self.vllm_importance_sampling_correction:
                _log_sampler_mismatch(self, output)
            return output

        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            if len(prompts) == len(inputs):  # dynamic sampling may have replaced rows: TRL logs these prompts
                prompts[:] = [row["prompt"] for row in inputs]
            rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            # per-kind diagnostics; skipped outside training, and where the gathered rewards do not line up
            # with this process's rows (several processes: rank 0's rows are not the whole batch)
            if getattr(self.model, "training", True) and len(inputs) == len(rewards_per_func):
                kinds = [row.get("kind") or "unknown" for row in inputs]
                totals = weighted_rewards(rewards_per_func, self.reward_weights)
                log_metrics(self, self.kit_step.scored(kinds, totals, self.num_generations))
            return rewards_per_func

        def _prepare_inputs(self, generation_batch):
            before = self._buffered_inputs
            inputs = super()._prepare_inputs(generation_batch)
            if not self.model.training:
                return inputs
            step = self.kit_step
            if self._buffered_inputs is not before:  # a new generation batch, scored by TRL just now
                step.scored_step = self.state.global_step
                self._buffered_inputs = step.micro_batches(self._buffered_inputs)
                self._rescore_old_logps()
                inputs = self._buffered_inputs[self._step % self.args.steps_per_generation]
            # The PPO ratio of a micro-batch used before any optimizer step since scoring is exactly 1 (the
            # parameters are the old ones), but TRL scored old_per_token_logps on the padded batch (it always
            # does with the sampler correction on), and in bf16 the update's other layout gives other
            # numbers: 0.1-1% of tokens were clipped on every step of run 25. Without them TRL takes
            # per_token_logps.detach(), ratio 1; importance_sampling_ratio (sampler vs trainer) stays.
            if self.state.global_step == step.scored_step and "old_per_token_logps" in inputs:
                inputs = {k: v for k, v in inputs.items() if k != "old_per_token_logps"}
            return inputs

        def _rescore_old_logps(self):
            """Micro-batches used after an optimizer step (``num_iterations`` > 1, or more micro-batches a
            generation than an accumulation window: TRL's own test) keep old logprobs; they are scored again
            here, with the parameters TRL scored with, in the layout and through the path the update uses,
            so that their ratio measures the step and not the layout."""
            import torch
            from trl.models.utils import disable_gradient_checkpointing

            window = self.args.steps_per_generation * self.num_iterations
            if self.args.gradient_accumulation_steps % window == 0:
                return  # every micro-batch is used before the next optimizer step
            gc_kwargs = self.args.gradient_checkpointing_kwargs
            with torch.no_grad(), disable_gradient_checkpointing(self.model, gc_kwargs):
                for batch in self._buffered_inputs:
                    if "old_per_token_logps" not in batch:
                        continue
                    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
                    mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
                    logps, _, _ = self._get_per_token_logps_and_entropies(
                        self.model, ids, mask, batch["completion_ids"].size(1)
                    )
                    batch["old_per_token_logps"] = logps

        def _get_per_token_logps_and_entropies(
            self,
            model,
            input_ids,
            attention_mask,
            logits_to_keep,
            batch_size=None,
            compute_entropy=False,
            **kw,
        ):
            # one task's episodes in a micro-batch: its prompt runs once (batching.shared_prefix_logps);
            # images or an MoE aux loss (any other argument set) take TRL's own path
            if self.kit_step.shared_prefix and not any(kw.values()):
                with self.accelerator.autocast():
                    shared = shared_prefix_logps(
                        model, input_ids, attention_mask, logits_to_keep, compute_entropy
                    )
                if shared is not None:
                    return shared[0], shared[1], None
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, **kw
            )

        def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
            from toolkit.train.adapters import load_checkpoint_adapter

            super()._load_from_checkpoint(resume_from_checkpoint, model)
            load_checkpoint_adapter(self.model if model is None else model, resume_from_checkpoint)

    return KitGRPOTrainer


# ---- the sampler correction (toolkit.train.importance) --------------------------------------------------


class RolloutFuncEngine:
    """What TRL's ``GRPOTrainer`` calls on its vLLM engine when ``use_vllm`` is set and a ``rollout_func``
    generates: ``sync_weights()`` at each new global step. The kit's policy factories (``VLLMLoraSync``,
    ``ServerLoraSync``) save and load the adapter themselves, so there is nothing to do here."""

    def sync_weights(self) -> None:
        return None


def enable_sampler_correction(trainer: Any) -> bool:
    """Make TRL apply its vLLM importance-sampling correction to the kit's ``rollout_func`` samples.
    True when it is on; False when the config turned it off or TRL runs an engine of its own (then TRL
    already corrects). TRL gates the correction on ``use_vllm``, which would also make it build an engine:
    the flag is set on the trainer only, with ``RolloutFuncEngine`` standing in for the engine."""
    if trainer.args.use_vllm or not trainer.vllm_importance_sampling_correction:
        return False
    trainer.use_vllm = True
    trainer.vllm_generation = RolloutFuncEngine()
    trainer._last_loaded_step = -1
    return True


def _log_sampler_mismatch(trainer: Any, output: dict[str, Any]) -> None:
    """After TRL has scored a batch with the correction on, log the sampler/trainer KL estimate and the
    truncated share (``toolkit.train.importance.mismatch_stats``; per step, averaged like TRL's own)."""
    import torch

    from toolkit.train.importance import mismatch_stats

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
        mode=trainer.vllm_importance_sampling_mode,
        clip_min=trainer.vllm_importance_sampling_clip_min,
        clip_max=trainer.vllm_importance_sampling_clip_max,
    )
    keys = ("tokens", "abs_diff", "kl", "units", "outside")
    local = torch.tensor([stats[k] for k in keys], device=trainer_logps.device)
    total = dict(zip(keys, trainer.accelerator.gather(local[None]).sum(0).tolist(), strict=True))
    mode = "train" if trainer.model.training else "eval"
    tokens = max(total["tokens"], 1.0)
    trainer._metrics[mode]["sampling/sampler_trainer_kl"].append(total["kl"] / tokens)
    trainer._metrics[mode]["sampling/importance_sampling_ratio/truncated_share"].append(
        total["outside"] / max(total["units"], 1.0)
    )


# ---- version guards ------------------------------------------------------------------------------------
# What the pinned TRL (1.15.0, capped by Unsloth) lacks on a CPU torch build, and nothing more.
# Delete this section when the pins move to TRL >= 1.16 (it has the torch path itself).


class TorchChunkedLogProbs:
    """TRL 1.15's fused LM head without Triton: the same call and outputs in plain torch (autograd does
    the backward).

    TRL 1.15.0 (the newest that Unsloth 2026.10 accepts: ``trl<=1.15.0``) computes GRPO's per-token
    log-probabilities with ``trl.kernels.ChunkedLogProbFunction``, a Triton kernel; where Triton is
    missing (the CPU torch build) ``trl/trainer/utils.py`` sets ``_ChunkedLogProbFunction = None`` and
    every GRPO step fails with "'NoneType' object has no attribute 'apply'". TRL 1.16 added a torch
    path for that case; this class is that path for 1.15, used for tensors that are not on a GPU
    (``DeviceDispatch``, ``install_logprob_fallback``): a GPU keeps TRL's kernel, TRL >= 1.16 its own code.
    """

    TOKENS_PER_CHUNK = 256  # rows of logits materialised at once (the CPU models' vocabularies are small)

    @staticmethod
    def apply(
        hidden: Any,
        weight: Any,
        bias: Any,
        targets: Any,
        temperature: float,
        chunk_size: int,
        final_logit_softcapping: float | None = None,
        logit_scale: float = 1.0,
        outputs: tuple[str, ...] = ("entropy", "log_sum_sq_probs", "mean_logits", "is_top1"),
    ) -> tuple[Any, Any, Any, Any, Any]:
        import torch
        import torch.nn.functional as F

        parts: dict[str, list] = {
            k: [] for k in ("log_probs", "entropy", "log_sum_sq_probs", "mean_logits", "is_top1")
        }
        step = TorchChunkedLogProbs.TOKENS_PER_CHUNK
        for start in range(0, hidden.shape[0], step):
            z = F.linear(hidden[start : start + step], weight, bias).float() * logit_scale
            if final_logit_softcapping:
                z = final_logit_softcapping * torch.tanh(z / final_logit_softcapping)
            z = z / temperature
            logp = torch.log_softmax(z, dim=-1)
            target = targets[start : start + step].unsqueeze(-1)
            parts["log_probs"].append(logp.gather(-1, target).squeeze(-1))
            if "entropy" in outputs:
                parts["entropy"].append(-(logp.exp() * logp).sum(-1))
            if "log_sum_sq_probs" in outputs:
                parts["log_sum_sq_probs"].append(torch.logsumexp(2 * logp, dim=-1).detach())
            if "mean_logits" in outputs:
                parts["mean_logits"].append(z.mean(-1).detach())
            if "is_top1" in outputs:
                parts["is_top1"].append(z.gather(-1, target).squeeze(-1) >= z.max(-1).values)

        def cat(name: str) -> Any:
            if not parts[name]:
                return None if name != "log_probs" else hidden.new_zeros(0, dtype=torch.float32)
            return torch.cat(parts[name])

        return tuple(cat(k) for k in parts)  # type: ignore[return-value]


class DeviceDispatch:
    """TRL's Triton kernel for CUDA/XPU tensors, ``TorchChunkedLogProbs`` for the rest (CPU tensors:
    also where Triton is installed but the model is on the CPU, as with a CPU vLLM build)."""

    def __init__(self, kernel: Any):
        self.kernel = kernel  # trl.kernels.ChunkedLogProbFunction, or None without Triton

    def apply(self, hidden: Any, *args: Any, **kwargs: Any) -> Any:
        if self.kernel is not None and hidden.device.type in ("cuda", "xpu"):
            return self.kernel.apply(hidden, *args, **kwargs)
        return TorchChunkedLogProbs.apply(hidden, *args, **kwargs)


def install_logprob_fallback() -> bool:
    """Route TRL 1.15's fused LM head through ``DeviceDispatch``; True when this call installed it.
    TRL >= 1.16 has its own torch path and is left alone."""
    try:
        import trl
        from packaging.version import Version
        from trl.trainer import utils as trl_utils
    except ImportError:
        return False
    current = getattr(trl_utils, "_ChunkedLogProbFunction", "absent")
    if isinstance(current, str) or isinstance(current, DeviceDispatch):
        return False
    if current is not None and Version(trl.__version__) >= Version("1.16"):
        return False
    trl_utils._ChunkedLogProbFunction = DeviceDispatch(current)
    return True
