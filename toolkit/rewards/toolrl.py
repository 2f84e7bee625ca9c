"""ToolRL's reward (Qian et al., 2025, "ToolRL: Reward is All Tool Learning Needs"):
R = R_format + R_correct, with R_format in {0, 1} and R_correct in [-3, 3]; range [-3, 4].

ToolRL scores one assistant turn written as ``<think>...</think>`` + ``<tool_call>`` JSON lines +
``<response>``. The kit's loop already parses tool calls out of the model's text, so here:

- R_format = 1 when every model turn parsed cleanly: no parse errors in the episode
  (``Trajectory.n_parse_errors == 0``), no call whose arguments could not be parsed
  (``args is None``), and a non-empty final answer or at least one call; else 0.
- R_correct compares the episode's calls (all turns together, ``finish`` excluded) with the gold calls:
    r_name  = |G ∩ P| / |G ∪ P| over tool-name multisets (frequency-aware Jaccard), in [0, 1];
    for each gold call, the best still-unused predicted call with the same name adds
      r_param = Jaccard of the argument-key multisets, in [0, 1], plus
      r_value = number of gold arguments whose value the predicted call reproduces, in [0, |args|];
    S_max = 1 + Σ_gold (1 + |args|);  R_correct = 6 * (r_name + Σ r_param + Σ r_value) / S_max - 3.
  Identical call lists (including both empty: an abstention task answered without calls) give +3.
  Values compare exactly after JSON typing (2 == 2.0), like ToolRL's ``==``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from toolkit.checks.normalize import loose_equal
from toolkit.records import RewardResult, Task, Trajectory
from toolkit.rewards.base import Reward, model_calls


def multiset_jaccard(a: Sequence[Any], b: Sequence[Any]) -> float:
    """|A ∩ B| / |A ∪ B| for multisets; 1.0 when both are empty."""
    if not a and not b:
        return 1.0
    ca, cb = Counter(a), Counter(b)
    inter = sum((ca & cb).values())
    return inter / (len(a) + len(b) - inter)


def correctness(gold: list[tuple[str, dict]], pred: list[tuple[str, dict]]) -> tuple[float, dict[str, float]]:
    """ToolRL's R_correct in [-3, 3] plus its parts."""
    if len(gold) == len(pred) and all(
        g[0] == p[0] and loose_equal(g[1], p[1], text_rule=False) for g, p in zip(gold, pred, strict=True)
    ):
        return 3.0, {"name": 1.0, "param": float(len(gold)), "value": float(sum(len(a) for _, a in gold))}
    r_name = multiset_jaccard([n for n, _ in gold], [n for n, _ in pred]) if gold and pred else 0.0
    r_param = r_value = 0.0
    used: set[int] = set()
    for g_name, g_args in gold:
        best, best_i, best_parts = 0.0, -1, (0.0, 0.0)
        for i, (p_name, p_args) in enumerate(pred):
            if i in used or p_name != g_name:
                continue
            param = multiset_jaccard(list(g_args), list(p_args))
            value = float(
                sum(k in p_args and loose_equal(p_args[k], v, text_rule=False) for k, v in g_args.items())
            )
            if param + value > best:
                best, best_i, best_parts = param + value, i, (param, value)
        if best_i >= 0:
            used.add(best_i)
            r_param += best_parts[0]
            r_value += best_parts[1]
    s_max = 1 + sum(1 + len(a) for _, a in gold)
    r = 6 * (r_name + r_param + r_value) / s_max - 3
    return r, {"name": r_name, "param": r_param, "value": r_value}


class ToolRLReward(Reward):
    """ToolRL format + correctness reward, range [-3, 4] (see module docstring)."""

    name = "toolrl"
    range = (-3.0, 4.0)

    def score(self, task: Task, traj: Trajectory) -> RewardResult:
        calls = model_calls(traj)
        fmt = float(
            traj.n_parse_errors == 0
            and all(c.args is not None for c in calls)
            and (bool(calls) or bool((traj.final_answer or "").strip()))
        )
        gold = [(g.name, dict(g.arguments)) for g in task.gold]
        pred = [(c.name, dict(c.args or {})) for c in calls]
        corr, parts = correctness(gold, pred)
        breakdown = {"format": fmt, "correctness": corr, **{f"correctness.{k}": v for k, v in parts.items()}}
        return RewardResult(fmt + corr, breakdown, {"n_calls": len(calls), "n_gold": len(gold)})
