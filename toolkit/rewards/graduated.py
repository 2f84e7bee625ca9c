"""Graduated reward for multi-step tool orchestration ("Training LLMs for Multi-Step Tool Orchestration
with Constrained Data Synthesis and Graduated Rewards"; reference implementation ToolOrchestrationReward).

score = w_atomic * atomic_validity + w_orch * orchestration, default 0.5 / 0.5, range [0, 1].

- atomic validity: mean over the model's calls of (AST score + execution score) / 2, where the call is
  compared with the gold step of the same name that suits it best and the AST score climbs in levels:
  1/3 for the name, 1/3 * (share of gold argument keys present) * (share of those with a compatible
  JSON type), 1/3 when every gold value is reproduced and no unexpected argument is added. Execution
  is 1 when the call ran without error. A call whose name is in no gold step scores 0.
- orchestration consistency: share of gold steps matched, in gold order, by a call with the same
  name placed after the calls matched to the steps it depends on (each call used once).

A task that expects no calls gets 1.0 for both parts when the model makes none, 0 otherwise.
``breakdown``: ``atomic``, ``orchestration`` and the per-level means ``atomic.name``,
``atomic.structure``, ``atomic.values``, ``atomic.execution``, each in [0, 1].
"""

from __future__ import annotations

from typing import Any

from toolkit.checks.normalize import loose_equal
from toolkit.records import CallRecord, GoldCall, RewardResult, Task, Trajectory
from toolkit.rewards.base import Reward, model_calls
from toolkit.rewards.matching import dependency_match, same_json_type


def ast_levels(call: CallRecord, step: GoldCall) -> dict[str, float]:
    """The three AST levels for ``call`` against ``step``, each in [0, 1] (all 0 when the names
    differ); the AST score is their mean."""
    if call.name != step.name:
        return {"name": 0.0, "structure": 0.0, "values": 0.0}
    args, want = call.args, step.arguments
    if args is None:  # unparseable arguments: only the name was right
        return {"name": 1.0, "structure": 0.0, "values": 0.0}
    if not want:
        structure = 1.0 if not args else 0.0
    else:
        present = [k for k in want if k in args]
        typed = sum(same_json_type(args[k], want[k]) for k in present)
        structure = (len(present) / len(want)) * (typed / len(present) if present else 0.0)
    values = set(args) == set(want) and all(loose_equal(args[k], v) for k, v in want.items())
    return {"name": 1.0, "structure": structure, "values": float(values)}


class GraduatedReward(Reward):
    """Atomic validity (graduated AST + execution) and orchestration consistency, in [0, 1]."""

    name = "graduated"
    range = (0.0, 1.0)

    def __init__(self, atomic_weight: float = 0.5, orchestration_weight: float = 0.5):
        self.w_atomic, self.w_orch = atomic_weight, orchestration_weight
        self.range = (0.0, atomic_weight + orchestration_weight)

    def score(self, task: Task, traj: Trajectory) -> RewardResult:
        calls, gold = model_calls(traj), task.gold
        if not gold:
            ok = float(not calls)
            comps = {"atomic": ok, "orchestration": ok, "atomic.name": ok, "atomic.structure": ok,
                     "atomic.values": ok, "atomic.execution": ok}  # fmt: skip
            return RewardResult(
                self.w_atomic * ok + self.w_orch * ok, comps, {"n_calls": len(calls), "n_gold": 0}
            )
        per_call: list[dict[str, Any]] = []
        for c in calls:
            candidates = [ast_levels(c, g) for g in gold if g.name == c.name]
            best = max(
                candidates,
                key=lambda lv: sum(lv.values()),
                default={"name": 0.0, "structure": 0.0, "values": 0.0},
            )
            execution = 1.0 if (candidates and c.ok) else 0.0
            ast = sum(best.values()) / 3
            per_call.append({**best, "execution": execution, "atomic": (ast + execution) / 2})
        n = len(per_call)

        def mean(key: str) -> float:
            return sum(p[key] for p in per_call) / n if n else 0.0

        matched = dependency_match(gold, calls, lambda step, call: call.name == step.name)
        orchestration = len(matched) / len(gold)
        atomic = mean("atomic")
        breakdown = {
            "atomic": atomic,
            "orchestration": orchestration,
            "atomic.name": mean("name"),
            "atomic.structure": mean("structure"),
            "atomic.values": mean("values"),
            "atomic.execution": mean("execution"),
        }
        details = {"n_calls": n, "n_gold": len(gold), "matched": {str(j): i for j, i in matched.items()}}
        return RewardResult(self.w_atomic * atomic + self.w_orch * orchestration, breakdown, details)
