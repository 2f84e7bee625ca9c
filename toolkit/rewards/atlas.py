"""MCP-Atlas claim scoring: each claim (rubric item) is fulfilled (1), partially fulfilled (0.5) or not
(0); a task's coverage is the mean claim score, and it passes at threshold t when coverage >= t.

Scale reports MCP Atlas as coverage rate plus pass rates at 0.50 and 0.75 (Qwen2.5-14B: coverage
23.5% -> 30.4%, pass@0.50 15.8% -> 31.9%, pass@0.75 7.7% -> 17.3% after GRPO, per the Scale write-up).
Per trajectory, ``score`` is the coverage in [0, 1]; ``breakdown`` holds ``pass@0.50`` and
``pass@0.75`` in {0, 1}; ``aggregate(results)`` gives the suite-level rates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from toolkit.records import RewardResult, Task, Trajectory
from toolkit.rewards.base import Reward
from toolkit.rewards.grading import VERDICT_CREDIT, Grader, ItemGrade
from toolkit.rewards.rubric import ProgrammaticGrader

THRESHOLDS = (0.50, 0.75)


class AtlasReward(Reward):
    """Claim coverage in [0, 1] with pass@0.50 / pass@0.75 flags.

    Args:
        grader: ``"programmatic"`` (default), ``"judge"`` (config in ``judge``) or a grader object.
        claims: ``"essential"`` (default: the task's must-have items) or ``"all"`` rubric items.
        thresholds: pass thresholds reported in the breakdown.
    """

    name = "atlas"
    range = (0.0, 1.0)

    def __init__(
        self,
        grader: str | Grader = "programmatic",
        judge: dict[str, Any] | None = None,
        claims: str = "essential",
        thresholds: Sequence[float] = THRESHOLDS,
    ):
        if claims not in ("essential", "all"):
            raise ValueError("claims must be 'essential' or 'all'")
        if grader == "programmatic":
            self.grader: Grader = ProgrammaticGrader()
        elif grader == "judge":
            from toolkit.rewards.judge import JudgeGrader

            self.grader = JudgeGrader(**(judge or {}))
        else:
            self.grader = grader  # type: ignore[assignment]
        self.claims, self.thresholds = claims, tuple(thresholds)

    def _result(self, task: Task, grades: list[ItemGrade]) -> RewardResult:
        by_id = {g.id: g for g in grades}
        ids = [it.id for it in task.rubric if self.claims == "all" or it.essential]
        graded = [by_id[i] for i in ids if i in by_id and by_id[i].verdict is not None]
        coverage = sum(VERDICT_CREDIT[g.verdict] for g in graded) / len(graded) if graded else 0.0  # type: ignore[index]
        breakdown = {"coverage": coverage}
        breakdown.update({f"pass@{t:.2f}": float(coverage >= t) for t in self.thresholds})
        for v in ("pass", "partial", "fail"):
            breakdown[f"claims_{v}"] = float(sum(g.verdict == v for g in graded))
        details: dict[str, Any] = {"items": [asdict(g) for g in grades], "ungraded": len(ids) - len(graded)}
        if not graded:
            details["unscorable"] = True
        return RewardResult(coverage, breakdown, details)

    def score(self, task: Task, traj: Trajectory) -> RewardResult:
        return self._result(task, self.grader.grade(task, traj))

    def batch(self, tasks: Sequence[Task], trajs: Sequence[Trajectory]) -> list[RewardResult]:
        pairs = list(zip(tasks, trajs, strict=True))
        return [self._result(t, g) for t, g in zip(tasks, self.grader.grade_many(pairs), strict=True)]


def aggregate(results: Sequence[RewardResult], thresholds: Sequence[float] = THRESHOLDS) -> dict[str, float]:
    """Suite-level MCP-Atlas numbers: mean coverage and the share of tasks passing each threshold."""
    n = len(results)
    if not n:
        return {"n": 0}
    out = {"n": float(n), "coverage": sum(r.score for r in results) / n}
    out.update({f"pass@{t:.2f}": sum(r.score >= t for r in results) / n for t in thresholds})
    return out
