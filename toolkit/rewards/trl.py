"""Adapter from a kit reward to a TRL ``reward_funcs`` entry.

TRL's GRPOTrainer calls each reward function as ``f(prompts=..., completions=..., completion_ids=...,
**kwargs)`` where kwargs holds every dataset column (repeated per generation) plus every extra key the
``rollout_func`` returned, one value per sample (``trl/trainer/grpo_trainer.py``: ``_generate`` merges
``extra_fields`` into the inputs, ``_calculate_rewards`` turns the columns into kwargs). The kit's
trainer hands over the records themselves: ``task`` (the Task its seam made of the dataset row,
``toolkit.train.trl_adapter``) and ``trajectory`` (the episode), so nothing is parsed again here. A
plain TRL trainer on ``toolkit.synth.dataset.tasks_to_dataset`` passes the ``task`` column as its JSON
string, and a Trajectory may come as its dict: both are read too. The function name is what TRL logs
the reward under.

An episode that must teach nothing gets ``None`` from every kit reward function: TRL 1.15 then reads its
reward as NaN, leaves it out of the group mean and of the std (group or batch) and sets its advantage to
0. These are the episodes whose sampler or environment failed (``sampling_failed``) and the rows the
rollout marks ``silenced`` (``grpo_sampling.flat_groups: drop``). Their loss mask (the rollout's
``env_mask``) is all zeros too, which keeps them out of TRL's loss normaliser.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from toolkit.records import Task, Trajectory
from toolkit.rewards.base import Reward, as_reward

# the rollout's per-sample flag (``toolkit.train.trl_adapter.rollout_func``) for rows the update must not learn from
SILENCED = "silenced"


def _as_record(value: Any, kind: type[Task] | type[Trajectory]) -> Any:
    """A Task / Trajectory from what TRL hands over: the record, its dict, or its JSON string."""
    if isinstance(value, kind):
        return value
    if isinstance(value, str):
        value = json.loads(value)
    return kind.from_dict(value)


def environment_failed(traj: Trajectory) -> bool:
    """Whether the episode ended because the environment broke (stop_reason "error": the agent loop sets it
    when opening the episode or a server failed, recording why in ``metadata["error"]``), not the model."""
    return traj.stop_reason == "error" and traj.metadata.get("error_source", "environment") == "environment"


def sampling_failed(traj: Trajectory) -> bool:
    """Whether the episode ended on an infrastructure failure (stop_reason "error"): the environment broke
    (``environment_failed``) or the policy endpoint did not answer (``metadata["error_source"]`` "policy",
    a failed sampler request). Either way the model is neither blamed nor credited."""
    return traj.stop_reason == "error"


def scorable(result: Any, traj: Trajectory) -> bool:
    """Whether an episode's reward counts: a result marked unscorable (e.g. every judge reply failed) and
    an episode whose sampling failed (``sampling_failed``) are left out of their group's baseline."""
    return not result.details.get("unscorable") and not sampling_failed(traj)


class TRLRewardFunc:
    """A kit reward as a TRL reward function (a picklable callable object; TRL logs its ``__name__``)."""

    def __init__(self, reward: Reward, name: str | None = None, log_components: bool = True):
        self.reward, self.log_components = as_reward(reward), log_components
        self.__name__ = name or f"reward_{self.reward.name}".replace("-", "_").replace("+", "_").replace(
            "*", "x"
        )

    def __call__(self, prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float | None]:
        if "trajectory" not in kwargs or "task" not in kwargs:
            raise KeyError(
                f"{self.__name__} needs the per-sample 'trajectory' (returned by the kit's rollout_func) and "
                f"the dataset's 'task' column; got kwargs {sorted(kwargs)}"
            )
        tasks = [_as_record(t, Task) for t in kwargs["task"]]
        trajs = [_as_record(t, Trajectory) for t in kwargs["trajectory"]]
        results = self.reward.batch(tasks, trajs)
        log_metric = kwargs.get("log_metric")
        if self.log_components and callable(log_metric) and results:
            for key in sorted({k for r in results for k in r.breakdown}):
                vals = [r.breakdown[key] for r in results if key in r.breakdown]
                log_metric(f"{self.__name__}/{key}", sum(vals) / len(vals))
        if callable(log_metric) and any("ungraded" in r.details for r in results):
            # judge items without a usable verdict in this batch: counted, the step goes on
            log_metric(
                f"{self.__name__}/ungraded_items", sum(int(r.details.get("ungraded", 0)) for r in results)
            )
        # None (NaN to TRL) leaves the sample out of the group baseline: a broken server is not the model's
        # fault, and a silenced row (flat_groups: drop) must not weigh in the mean or the std it is not in
        silenced = kwargs.get(SILENCED) or [False] * len(results)
        return [
            float(r.score) if scorable(r, t) and not s else None
            for r, t, s in zip(results, trajs, silenced, strict=True)
        ]

    def __repr__(self) -> str:
        return f"<TRL reward function {self.__name__}>"


def as_trl_reward_func(
    reward: Reward, name: str | None = None, log_components: bool = True
) -> Callable[..., list[float | None]]:
    """Wrap ``reward`` as ``f(prompts, completions, **kwargs) -> list[float | None]`` for TRL.

    Reads ``kwargs["task"]`` and ``kwargs["trajectory"]``. A result marked unscorable (e.g. every
    judge reply failed), a trajectory whose sampling failed (``sampling_failed``: stop_reason "error",
    environment or policy endpoint) and a row flagged in ``kwargs["silenced"]`` become ``None``, which
    TRL treats as NaN and leaves out of the group baseline and the std.
    With ``log_components`` the mean of each breakdown component goes to TRL's ``log_metric``.
    ``f.__name__`` (default ``reward_<name>``) is the column TRL logs the reward under.
    """
    return TRLRewardFunc(reward, name, log_components)
