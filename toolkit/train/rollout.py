"""The kit's agent loop plugged into TRL's GRPOTrainer through ``rollout_func``.

TRL calls ``rollout_func(prompts, trainer)`` once per generation batch with the prompts of this
process (each prompt already repeated ``num_generations`` times, consecutively) and expects, per
sample, ``prompt_ids``, ``completion_ids`` and ``logprobs``; ``env_mask`` (1 = model token, 0 =
tool/environment token) keeps tool outputs out of the loss, and any other key (here ``trajectory``)
is passed to the reward functions (``trl/trainer/grpo_trainer.py``: ``_generate``).

The rollout needs the task of each sample, but TRL hands the rollout function only the prompts; the
small ``KitGRPOTrainer`` subclass records the batch's dataset rows (with their ``task`` column) just
before TRL generates. Nothing else of TRL's is changed: loss, advantages, clipping and KL are TRL's.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolkit.records import Task, Trajectory, drop_jsonl_records, write_jsonl

PolicyFactory = Callable[[Any], Any]  # trainer -> toolkit.agent.policies.Policy


def task_of(row: dict[str, Any]) -> Task:
    """The Task of a dataset row (``task`` column: a Task JSON string or dict)."""
    raw = row["task"]
    return Task.from_dict(json.loads(raw) if isinstance(raw, str) else raw)


def trl_sample(traj: Trajectory, eos_token_id: int) -> tuple[list[int], list[int], list[float], list[int]]:
    """(prompt_ids, completion_ids, logprobs, env_mask) of one trajectory, ready for TRL.

    - Environment tokens after the model's last token (tool results nobody answered, a closing
      template) are dropped: they carry no loss, and TRL reads "the last token is not EOS" as
      truncation. So an episode ends on the model's EOS unless the model was really cut off.
    - An episode cut by the context budget (stop reason ``length``) keeps a non-EOS last token, so
      ``mask_truncated_completions`` (overlong filtering) masks it.
    - An episode whose environment failed (stop reason ``error``) gets an all-zero mask: the model is
      not blamed or credited for an infrastructure failure.
    - An episode with a model token that has no sampling logprob (``has_sampling_logprobs``) gets an
      all-zero mask too: its 0.0 placeholders would read as probability-1 samples to the importance
      correction. ``rollout_func`` counts these (``episodes/logprobs_missing``).
    """
    ids = list(traj.completion_ids)
    mask = list(traj.completion_mask)
    complete = has_sampling_logprobs(traj)
    logprobs = list(traj.logprobs) if len(traj.logprobs) == len(ids) else [0.0] * len(ids)
    if traj.stop_reason != "length":
        last_model = max((i for i, m in enumerate(mask) if m), default=-1)
        ids, mask, logprobs = ids[: last_model + 1], mask[: last_model + 1], logprobs[: last_model + 1]
    if not ids:  # no model token at all: one masked EOS keeps TRL's shapes valid
        ids, mask, logprobs = [eos_token_id], [0], [0.0]
    if traj.stop_reason == "error" or not complete:
        mask = [0] * len(ids)
    return list(traj.prompt_ids), ids, logprobs, mask


def has_sampling_logprobs(traj: Trajectory) -> bool:
    """Whether every model token of a token-level trajectory carries the logprob it was sampled with."""
    from toolkit.agent.loop import MISSING_LOGPROBS

    return len(traj.logprobs) == len(traj.completion_ids) and not traj.metadata.get(MISSING_LOGPROBS)


def episode_metrics(trajs: Sequence[Trajectory]) -> dict[str, float]:
    """Per-batch means of what the loop did: tool calls, failures, finishes, parse errors."""
    n = max(1, len(trajs))
    calls = [c for t in trajs for c in t.calls]
    stops = Counter(t.stop_reason for t in trajs)
    metrics = {
        "episodes/tool_calls_mean": len(calls) / n,
        "episodes/tool_failure_rate": (sum(not c.ok for c in calls) / len(calls)) if calls else 0.0,
        "episodes/finish_rate": stops.get("finish", 0) / n,
        "episodes/parse_errors_mean": sum(t.n_parse_errors for t in trajs) / n,
        "episodes/model_tokens_mean": sum(sum(t.completion_mask) for t in trajs) / n,
    }
    for reason in ("finish", "no_tool_call", "max_turns", "length", "error"):
        metrics[f"episodes/stop_{reason}"] = stops.get(reason, 0) / n
    return metrics


def logprobs_missing_share(trajs: Sequence[Trajectory]) -> float:
    """Share of episodes masked out of the loss because a model token had no sampling logprob; all of
    them is a policy that returns none, an error rather than a step that trains on nothing."""
    missing = [t for t in trajs if not has_sampling_logprobs(t)]
    if trajs and len(missing) == len(trajs):
        raise RuntimeError(
            f"the rollout policy {trajs[0].metadata.get('policy')!r} returned no sampling logprobs for "
            f"any of the {len(trajs)} episodes: GRPO needs the logprob of every sampled token"
        )
    return len(missing) / max(1, len(trajs))


def _log_metrics(trainer: Any, metrics: dict[str, float]) -> None:
    """Hand metrics to TRL's per-step averaging (the same path a reward function's log_metric uses)."""
    log = getattr(trainer, "_log_metric", None)
    if callable(log):
        for name, value in metrics.items():
            log(name, float(value))


def transformers_policy(trainer: Any) -> Any:
    """The CPU / plain-GPU policy: the model being trained, generating with transformers."""
    from toolkit.agent.policies import TransformersPolicy

    model = trainer.accelerator.unwrap_model(trainer.model)
    return TransformersPolicy(model, trainer.processing_class, name="grpo-policy")


def rollout_log_record(step: int, traj: Trajectory, round_: int = 0, kept: bool = True) -> dict[str, Any]:
    """One line of the rollout log: the episode without its token ids and log-probabilities, with the
    dynamic-sampling round it was sampled in and whether its group went into the update."""
    return {
        "step": step,
        "round": round_,
        "kept": kept,
        "task_id": traj.task_id,
        "stop_reason": traj.stop_reason,
        "n_parse_errors": traj.n_parse_errors,
        "final_answer": traj.final_answer,
        "calls": [dataclasses.asdict(c) for c in traj.calls],
        "messages": traj.messages,
    }


def _process_file(path: str | Path, trainer: Any) -> Path:
    """``path`` for the main process, ``name.<rank>.jsonl`` beside it for the others (no interleaved lines)."""
    path = Path(path)
    rank = getattr(getattr(trainer, "accelerator", None), "process_index", 0)
    return path if not rank else path.with_name(f"{path.stem}.{rank}{path.suffix}")


def raise_on_dead_sampler(trajs: Sequence[Trajectory]) -> None:
    """Raise when more than half of one rollout's episodes failed on the policy endpoint (stop reason
    ``error`` with ``metadata["error_source"]`` "policy": a sampler request that got no answer, e.g. the
    vLLM server is down). Those episodes are masked and unscored, so such a step would move the
    optimizer on what is left of the batch, or on nothing. Half or fewer: the step goes on without them.
    Environment failures (an external tool server) are not counted here: they are masked and unscored."""
    from toolkit.agent.loop import policy_failure

    failed = [t for t in trajs if policy_failure(t) is not None]
    if len(failed) * 2 > len(trajs):
        errors = Counter(policy_failure(t) for t in failed)
        error, count = errors.most_common(1)[0]
        raise RuntimeError(
            f"{len(failed)} of the {len(trajs)} episodes of this rollout failed on the policy endpoint"
            f" ({failed[0].metadata.get('policy')!r}); the most common error ({count}x): {error}."
            " Stopping rather than stepping the optimizer on what is left: is the sampling server up?"
        )


def reward_stats(rewards: Sequence[float]) -> dict[str, float]:
    """Mean and (population) std of the scorable rewards, NaN (unscorable) left out; none without one."""
    scored = [r for r in rewards if not math.isnan(r)]
    if not scored:
        return {}
    mean = sum(scored) / len(scored)
    return {
        "episodes/reward_mean": mean,
        "episodes/reward_std": math.sqrt(sum((r - mean) ** 2 for r in scored) / len(scored)),
    }


class _SilencedRowsWarning(logging.Filter):
    """Drops TRL's warning that every reward function returned None for a row (it prints the row's every
    column, a whole trajectory) when the row is one the rollout silenced: None there is on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        from toolkit.rewards.trl import SILENCED

        message = record.getMessage()  # accelerate prefixes it with the rank
        return not ("All reward functions returned None" in message and f"'{SILENCED}': True" in message)


SILENCED_ROWS_WARNING = _SilencedRowsWarning()


def make_rollout_func(
    loop_config: Any,
    policy_factory: PolicyFactory = transformers_policy,
    *,
    open_episode: Any = None,
    on_batch: Callable[[list[Trajectory]], None] | None = None,
    rollout_log: str | Path | None = None,
    dynamic: Any = None,
) -> Callable[[list[Any], Any], dict[str, list]]:
    """Build ``rollout_func(prompts, trainer)`` for ``KitGRPOTrainer``.

    Rows that must teach nothing get an all-zero ``env_mask`` (out of TRL's loss and of its loss
    normaliser) and, through the reward functions, no reward (out of the group mean and the std, advantage
    0; ``toolkit.rewards.trl``): episodes whose sampler or environment failed, and with
    ``grpo_sampling.flat_groups: drop`` the slots still flat after dynamic sampling's refill rounds
    (flagged per row in the ``silenced`` column). More than half of a rollout failing on the policy
    endpoint raises (``raise_on_dead_sampler``).

    The ``episodes/...`` metrics and the rollout log cover every episode the policy sampled in the
    step, the groups dynamic sampling replaced included: ``episodes/sampled`` of them, and with dynamic
    sampling the reward of each (``episodes/reward_mean``, ``episodes/reward_std``; TRL's ``reward``
    covers the rows the update learns from). ``batch/...``, ``kinds/...`` and TRL's own columns describe
    the batch TRL scores.

    Args:
        loop_config: a ``toolkit.agent.loop.RolloutConfig`` (budgets, temperature, finish tool).
        policy_factory: ``trainer -> Policy``; defaults to transformers generation with the trained
            model. The GPU path passes a vLLM-backed factory (``toolkit.train.unsloth_backend``).
        open_episode: override the environment opener (tests).
        on_batch: called with each batch's trajectories (e.g. to save samples).
        rollout_log: JSONL file that gets every sampled episode of every step appended (step, task,
            messages, calls, stop reason, ``round``: 0 for the first sampling, r for refill round r, and
            ``kept``: whether its group went into the update, i.e. was neither replaced nor silenced):
            what the policy actually did, for reading a run after the fact.
        dynamic: a ``toolkit.train.batching.DynamicSampling``: groups whose rewards barely differ are
            replaced by groups of other tasks (and the trainer's rows with them) before TRL scores them.
    """
    from toolkit.agent.loop import rollout
    from toolkit.rewards.trl import SILENCED
    from toolkit.train.batching import batch_mix_metrics, replace_rows, silenced_rows, trainer_scorer
    from toolkit.train.diagnostics import answer_correct_share

    started_logs: set[Path] = set()
    if dynamic is not None and dynamic.config.flat_groups == "drop":
        logging.getLogger("trl.trainer.grpo_trainer").addFilter(SILENCED_ROWS_WARNING)  # added once

    def sample(tasks: list[Task], policy: Any) -> list[Trajectory]:
        trajs = rollout(tasks, policy, loop_config, n=1, open_episode=open_episode)
        raise_on_dead_sampler(trajs)
        return trajs

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list]:
        rows = getattr(trainer, "_kit_rows", None)
        if rows is None or len(rows) != len(prompts):
            raise RuntimeError(
                "rollout_func needs KitGRPOTrainer (it passes the dataset rows with their tasks)"
            )
        tasks = [task_of(row) for row in rows]
        policy = policy_factory(trainer)
        was_training = trainer.model.training
        trainer.model.eval()  # no dropout while sampling; TRL switches back for the update
        started = time.perf_counter()
        refill: dict[str, float] = {}
        report = None
        silenced: set[int] = set()
        try:
            trajs = sample(tasks, policy)
            if dynamic is not None:
                tasks, trajs, report = dynamic.resample(
                    tasks,
                    trajs,
                    trainer.num_generations,
                    run=lambda ts: sample(ts, policy),
                    score=trainer_scorer(trainer, dynamic.config.spread_on),
                    on_replace=replace_rows(rows, trainer.num_generations),
                )
                refill = report.metrics()
                silenced = set(silenced_rows(report, trainer.num_generations, dynamic.config.flat_groups))
                refill["dynamic/silenced_share"] = len(silenced) / max(1, len(trajs))
        finally:
            trainer.model.train(was_training)
        eos = trainer.processing_class.eos_token_id
        out: dict[str, list] = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_mask": []}
        for i, traj in enumerate(trajs):
            p, c, lp, m = trl_sample(traj, eos)
            out["prompt_ids"].append(p)
            out["completion_ids"].append(c)
            out["logprobs"].append(lp)
            out["env_mask"].append([0] * len(m) if i in silenced else m)
        out["trajectory"] = [t.to_dict() for t in trajs]
        out[SILENCED] = [i in silenced for i in range(len(trajs))]
        # every sampled episode: the batch's (kept unless silenced), then the groups that lost their slot
        group = getattr(trainer, "num_generations", 1)
        sampled = [
            (task, traj, report.slot_rounds[i // group] if report else 0, i not in silenced)
            for i, (task, traj) in enumerate(zip(tasks, trajs, strict=True))
        ]
        for round_, ts, trs in report.discarded if report else []:
            sampled.extend((task, traj, round_, False) for task, traj in zip(ts, trs, strict=True))
        all_tasks, all_trajs = [s[0] for s in sampled], [s[1] for s in sampled]
        metrics = episode_metrics(all_trajs)
        metrics["episodes/sampled"] = float(len(sampled))
        metrics["episodes/logprobs_missing"] = logprobs_missing_share(trajs)
        metrics["episodes/rollout_seconds"] = time.perf_counter() - started
        metrics.update(refill)
        if dynamic is not None:  # without it TRL's reward covers every episode already
            metrics.update(reward_stats(trainer_scorer(trainer)(all_tasks, all_trajs)))
        metrics.update(
            batch_mix_metrics(
                [str(t.metadata.get("kind") or "unknown") for t in tasks],
                [t.id for t in tasks],
                group,
            )
        )
        answer_correct = answer_correct_share(all_tasks, all_trajs)
        if answer_correct is not None:
            metrics["episodes/answer_correct"] = answer_correct
        _log_metrics(trainer, metrics)
        if rollout_log is not None:
            step = trainer.state.global_step
            log_file = _process_file(rollout_log, trainer)
            if log_file not in started_logs:  # first batch of this process: a resumed run starts here
                started_logs.add(log_file)
                # a killed run logged the episodes of steps it never saved: they are sampled again
                drop_jsonl_records(log_file, lambda rec: rec.get("step", 0) >= step)
            records = (rollout_log_record(step, traj, round_, kept) for _, traj, round_, kept in sampled)
            write_jsonl(log_file, records, append=True)
        if on_batch is not None:
            on_batch(trajs)
        return out

    return rollout_func


def kit_grpo_trainer_class() -> type:
    """``GRPOTrainer`` plus the kit's hooks: remember the batch's dataset rows for the rollout function, log
    per-kind reward diagnostics (``toolkit.train.diagnostics``) once the rewards are in, resume the
    trained adapter from a checkpoint (``toolkit.train.adapters``), and regroup the update's
    micro-batches by task (``toolkit.train.batching.regroup_micro_batches``)."""
    from trl import GRPOTrainer

    from toolkit.train.batching import regroup_micro_batches, shared_prefix_logps
    from toolkit.train.diagnostics import log_step_diagnostics
    from toolkit.train.importance import SamplerMismatchMetrics

    class KitGRPOTrainer(SamplerMismatchMetrics, GRPOTrainer):
        _kit_rows: list[dict[str, Any]] | None = None
        _kit_regroup = True  # micro-batches by task, cut to length (bench_grpo_step turns it off to compare)
        _kit_shared_prefix = False  # grpo_sampling.shared_prefix_update: a micro-batch's one prompt run once
        _kit_scored_step: int | None = None  # the global step the buffered generation batch was scored at

        def _generate_and_score_completions(self, inputs):
            # the rows of still-flat groups (flat_groups: drop) are silenced inside TRL's own math: the
            # rollout function masks them and the reward functions return None for them
            self._kit_rows = inputs
            return super()._generate_and_score_completions(inputs)

        def _prepare_inputs(self, generation_batch):
            before = self._buffered_inputs
            inputs = super()._prepare_inputs(generation_batch)
            if not self.model.training:
                return inputs
            if self._buffered_inputs is not before:  # a new generation batch, scored by TRL just now
                self._kit_scored_step = self.state.global_step
                if self._kit_regroup:
                    # its micro-batches regrouped by task and cut to their own length
                    # (toolkit.train.batching.regroup_micro_batches: the same gradient, fewer padded tokens)
                    self._buffered_inputs = regroup_micro_batches(self._buffered_inputs)
                self._kit_rescore_old_logps()
                inputs = self._buffered_inputs[self._step % self.args.steps_per_generation]
            # The PPO ratio of a micro-batch used before any optimizer step since scoring is exactly 1 (the
            # parameters are the old ones), but TRL scored old_per_token_logps on the padded batch (it always
            # does with the sampler correction on), and in bf16 the update's other layout gives other
            # numbers: 0.1-1% of tokens were clipped on every step of run 25. Without them TRL takes
            # per_token_logps.detach(), ratio 1; importance_sampling_ratio (sampler vs trainer) stays.
            if self.state.global_step == self._kit_scored_step and "old_per_token_logps" in inputs:
                inputs = {k: v for k, v in inputs.items() if k != "old_per_token_logps"}
            return inputs

        def _kit_rescore_old_logps(self):
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
            if self._kit_shared_prefix and not any(kw.values()):
                with self.accelerator.autocast():
                    shared = shared_prefix_logps(
                        model, input_ids, attention_mask, logits_to_keep, compute_entropy
                    )
                if shared is not None:
                    return shared[0], shared[1], None
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, **kw
            )

        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            if len(prompts) == len(inputs):  # dynamic sampling may have replaced rows: TRL logs these prompts
                prompts[:] = [row["prompt"] for row in inputs]
            rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            log_step_diagnostics(self, inputs, rewards_per_func)
            return rewards_per_func

        def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
            from toolkit.train.adapters import load_checkpoint_adapter

            super()._load_from_checkpoint(resume_from_checkpoint, model)
            load_checkpoint_adapter(self.model if model is None else model, resume_from_checkpoint)

    return KitGRPOTrainer
