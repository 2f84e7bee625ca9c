"""The pieces of a GRPO step's sampling: the agent loop's episodes as TRL samples, the checks on them,
and what is measured and logged about them (``toolkit.train.grpo.GRPOStep.sample`` runs them in order).

- ``token_sample``: one trajectory as (prompt_ids, completion_ids, logprobs, env_mask), the per-sample
  format of TRL's ``rollout_func`` (``env_mask``: 1 = model token, 0 = tool/environment token, so tool
  outputs stay out of the loss);
- ``raise_on_dead_sampler`` and ``logprobs_missing_share``: a rollout whose policy endpoint died, or
  returned no sampling logprobs, stops the run instead of stepping the optimizer on nothing;
- ``episode_metrics``, ``reward_stats``: the ``episodes/...`` metrics;
- ``RolloutLog``: every sampled episode, a ``RolloutRecord`` appended to the run's rollout log.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from toolkit.records import RolloutRecord, Trajectory, drop_jsonl_records, write_jsonl

PolicyFactory = Callable[[Any], Any]  # trainer -> toolkit.agent.policies.Policy


def token_sample(traj: Trajectory, eos_token_id: int) -> tuple[list[int], list[int], list[float], list[int]]:
    """(prompt_ids, completion_ids, logprobs, env_mask) of one trajectory, ready for TRL.

    - Environment tokens after the model's last token (tool results nobody answered, a closing
      template) are dropped: they carry no loss, and TRL reads "the last token is not EOS" as
      truncation. So an episode ends on the model's EOS unless the model was really cut off.
    - Gold calls made for the model (guidance, ``toolkit.agent.loop``) are context like tool outputs:
      mask 0, no sampling logprob expected, so a guided episode stays trainable on the model's own turns.
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


def transformers_policy(trainer: Any) -> Any:
    """The CPU / plain-GPU policy: the model being trained, generating with transformers."""
    from toolkit.agent.policies import TransformersPolicy

    model = trainer.accelerator.unwrap_model(trainer.model)
    return TransformersPolicy(model, trainer.processing_class, name="grpo-policy")


class RolloutLog:
    """The rollout log (a run's ``RunFolder.rollouts_file``): every episode the policy sampled, one
    ``toolkit.records.RolloutRecord`` a line, appended step by step. Each process writes its own file
    (``name.<rank>.jsonl`` beside the main process's ``name.jsonl``: no interleaved lines); a resumed run
    first drops the lines of the steps it samples again."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.started: set[Path] = set()

    def file(self, trainer: Any) -> Path:
        rank = getattr(getattr(trainer, "accelerator", None), "process_index", 0)
        return self.path if not rank else self.path.with_name(f"{self.path.stem}.{rank}{self.path.suffix}")

    def append(self, trainer: Any, records: Iterable[RolloutRecord]) -> None:
        step = trainer.state.global_step
        log_file = self.file(trainer)
        if log_file not in self.started:  # first batch of this process: a resumed run starts here
            self.started.add(log_file)
            # a killed run logged the episodes of steps it never saved: they are sampled again
            drop_jsonl_records(log_file, lambda rec: rec.get("step", 0) >= step)
        write_jsonl(log_file, records, append=True)


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
