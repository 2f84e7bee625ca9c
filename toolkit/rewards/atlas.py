"""MCP-Atlas claim scoring: each claim (rubric item) is fulfilled (1), partially fulfilled (0.5) or not
(0); a task's coverage is the mean claim score, and it passes at threshold t when coverage >= t.

Scale reports MCP Atlas as coverage rate plus pass rates at 0.50 and 0.75 (Qwen2.5-14B: coverage
23.5% -> 30.4%, pass@0.50 15.8% -> 31.9%, pass@0.75 7.7% -> 17.3% after GRPO, per the Scale write-up).
Per trajectory, ``score`` is the coverage in [0, 1]; ``breakdown`` holds ``pass@0.50`` and
``pass@0.75`` in {0, 1}; ``aggregate(results)`` gives the suite-level rates.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from toolkit.records import RewardResult, RubricItem, Task, Trajectory
from toolkit.rewards.base import Reward
from toolkit.rewards.grading import VERDICT_CREDIT, Grader, ItemGrade
from toolkit.rewards.judge import JudgeGrader
from toolkit.rewards.rubric import ProgrammaticGrader, answers_failed

THRESHOLDS = (0.50, 0.75)

# MCP-Atlas's judge (harness/score_claims.py in the paper's code companion) sees one claim and the
# model's final answer, nothing else, and answers fulfilled / partially_fulfilled / not_fulfilled with a
# justification and a confidence. The wording below is the kit's; the inputs and the reply are theirs.
CLAIM_MARK, ANSWER_MARK = "CLAIM:\n", "\n\nFINAL ANSWER:\n"
CLAIM_PROMPT = (
    "You grade whether an assistant's final answer states one expected claim.\n"
    "- fulfilled: the answer states the claim fully and correctly.\n"
    "- partially_fulfilled: the answer states part of the claim, or states it with a small error.\n"
    "- not_fulfilled: the answer does not state the claim, or contradicts it.\n"
    "Numbers match when they agree to within 5% (percentages within one point) or are the same value "
    "written differently (0.5, 50%, half). Judge from the final answer only.\n"
    '- The answer must commit: one that lists several candidate values, hedges ("X, or maybe Y"), pastes '
    "raw tool output, restates the request, or only asserts that the claim is satisfied is not_fulfilled, "
    "even when the expected value appears somewhere in it.\n"
    'Reply with JSON only: {"claim_text": "...", "coverage_outcome": "fulfilled" | '
    '"partially_fulfilled" | "not_fulfilled", "justification": "...", "confidence_level": 0.0-1.0}'
)
OUTCOMES = {"fulfilled": "pass", "partially_fulfilled": "partial", "not_fulfilled": "fail"}


def claim_messages(claim: str, final_answer: str) -> list[dict[str, str]]:
    """The request for one claim: the claim and the final answer only, as MCP-Atlas's judge sees them."""
    return [
        {"role": "user", "content": CLAIM_PROMPT + "\n\n" + CLAIM_MARK + claim + ANSWER_MARK + final_answer}
    ]


def parse_claim_reply(text: str | None, claim_id: str) -> dict[str, tuple[str, str]] | None:
    """``{claim_id: (verdict, justification)}`` from a reply, None when it is not the requested JSON."""
    s = (text or "").strip()
    fence = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", s, re.S)
    try:
        obj = json.loads(fence.group(1) if fence else s)
    except json.JSONDecodeError:
        return None
    verdict = (
        OUTCOMES.get(str(obj.get("coverage_outcome", "")).strip().lower()) if isinstance(obj, dict) else None
    )
    if verdict is None:
        return None
    return {claim_id: (verdict, str(obj.get("justification", ""))[:500])}


class ClaimJudge(JudgeGrader):
    """An LLM judge graded as MCP-Atlas grades: one request per claim, inputs the claim and the final
    answer; a broken reply is retried, then counted as ungraded (never fatal)."""

    def __init__(self, **config: Any):
        super().__init__(**{**config, "batch_size": 1})

    def build_messages(
        self, task: Task, traj: Trajectory, items: Sequence[RubricItem]
    ) -> list[dict[str, str]]:
        return claim_messages(items[0].text, traj.final_answer or "")

    def parse_reply(self, text: str | None, ids: Sequence[str]) -> dict[str, tuple[str, str]] | None:
        return parse_claim_reply(text, ids[0])


class AtlasReward(Reward):
    """Claim coverage in [0, 1] with pass@0.50 / pass@0.75 flags.

    Args:
        grader: ``"programmatic"`` (default), ``"judge"`` (an LLM judge over the whole trajectory, config
            in ``judge``), ``"claim-judge"`` (MCP-Atlas's way: one claim and the final answer per
            request, ``ClaimJudge``) or a grader object.
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
            self.grader = JudgeGrader(**(judge or {}))
        elif grader == "claim-judge":
            self.grader = ClaimJudge(**(judge or {}))
        else:
            self.grader = grader  # type: ignore[assignment]
        self.claims, self.thresholds = claims, tuple(thresholds)

    def _result(self, task: Task, grades: list[ItemGrade]) -> RewardResult:
        by_id = {g.id: g for g in grades}
        ids = [it.id for it in task.rubric if self.claims == "all" or it.essential]
        graded = [by_id[i] for i in ids if i in by_id and by_id[i].verdict is not None]
        coverage = sum(VERDICT_CREDIT[g.verdict] for g in graded) / len(graded) if graded else 0.0  # type: ignore[index]
        failed = answers_failed(task, grades)  # a kit task passes on its answer (toolkit.eval.metrics)
        breakdown = {"coverage": coverage}
        breakdown.update({f"pass@{t:.2f}": float(coverage >= t and not failed) for t in self.thresholds})
        for v in ("pass", "partial", "fail"):
            breakdown[f"claims_{v}"] = float(sum(g.verdict == v for g in graded))
        details: dict[str, Any] = {
            "items": [asdict(g) for g in grades],
            "ungraded": len(ids) - len(graded),
            "answer_failed": failed,
        }
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
    out.update(
        {
            f"pass@{t:.2f}": sum(r.score >= t and not r.details.get("answer_failed") for r in results) / n
            for t in thresholds
        }
    )
    return out
