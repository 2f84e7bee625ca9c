"""Per-step GRPO diagnostics that explain a run, beside TRL's own metrics in ``metrics.jsonl``.

TRL logs the reward mean/std, the share of zero-variance groups (``frac_reward_zero_std``) and the
completion lengths of the batch it scores; the rollout logs calls per episode and the finish rate
(``episodes/...``) over every episode it sampled, dynamic sampling's replaced groups included. What
they do not say is *where* the signal comes from. Here, per step:

- ``kinds/<kind>/share``: share of the batch's episodes drawn from tasks of that kind;
- ``kinds/<kind>/reward_mean``: the weighted total reward (what the advantages are computed from) of
  its scorable episodes; silenced and failed episodes (no reward) are left out;
- ``kinds/<kind>/zero_std_share``: share of that kind's groups where every episode got the same reward
  (no advantage, no gradient; a silenced group counts here). Run 11 of the CPU proof lost its answers
  on kinds GRPO never sampled: these columns show which kinds feed the update.
- ``episodes/answer_correct`` (logged by the rollout): among every sampled episode of tasks with
  essential ``answer_correctness`` items, kept for the update or not, the share that passed all of them
  (the right answer while sampling, not only the calls).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from toolkit.records import Task, Trajectory


def kind_diagnostics(kinds: Sequence[str], rewards: Sequence[float], group_size: int) -> dict[str, float]:
    """Share, reward mean and zero-variance group share per task kind.

    ``rewards`` are the weighted totals, one per episode, with the ``group_size`` episodes of one task
    consecutive (TRL's order). NaN rewards (unscorable episodes) are left out of the means and of the
    group's spread, as TRL leaves them out of its baseline."""
    if len(kinds) != len(rewards):
        raise ValueError(f"{len(kinds)} kinds for {len(rewards)} rewards")
    if group_size < 1 or len(rewards) % group_size:
        raise ValueError(f"{len(rewards)} rewards do not make groups of {group_size}")
    n = len(rewards)
    count: dict[str, int] = defaultdict(int)
    total: dict[str, list[float]] = defaultdict(list)
    groups: dict[str, list[bool]] = defaultdict(list)
    for start in range(0, n, group_size):
        kind = str(kinds[start] or "unknown")
        values = [float(r) for r in rewards[start : start + group_size]]
        scored = [r for r in values if not math.isnan(r)]
        count[kind] += group_size
        total[kind].extend(scored)
        groups[kind].append(len(scored) < 2 or max(scored) - min(scored) <= 1e-6)
    out: dict[str, float] = {}
    for kind in sorted(count):
        out[f"kinds/{kind}/share"] = count[kind] / n
        if total[kind]:
            out[f"kinds/{kind}/reward_mean"] = sum(total[kind]) / len(total[kind])
        out[f"kinds/{kind}/zero_std_share"] = sum(groups[kind]) / len(groups[kind])
    return out


def answer_correct_share(tasks: Sequence[Task], trajs: Sequence[Trajectory]) -> float | None:
    """Share of episodes that pass every essential ``answer_correctness`` item, over the episodes of
    tasks that have such items (programmatic grading); None when no task has one."""
    from toolkit.rewards.rubric import answer_reward

    reward = answer_reward()
    passed = scored = 0
    for task, traj in zip(tasks, trajs, strict=True):
        if not any(it.essential and it.category == "answer_correctness" for it in task.rubric):
            continue
        result = reward(task, traj)
        if result.details.get("unscorable"):
            continue
        scored += 1
        passed += result.score >= 1.0 - 1e-9
    return passed / scored if scored else None


def weighted_rewards(rewards_per_func: Any, weights: Any) -> list[float]:
    """TRL's total reward per episode: ``nansum`` of the weighted per-function rewards, NaN where every
    function returned None (as in ``GRPOTrainer._generate_and_score_completions``)."""
    import torch

    per_func = rewards_per_func.detach().float().cpu()
    totals = (per_func * weights.detach().float().cpu().unsqueeze(0)).nansum(dim=1)
    totals[torch.isnan(per_func).all(dim=1)] = float("nan")
    return totals.tolist()
