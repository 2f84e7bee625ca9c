"""Rubric reward (Scale's MCP tool-use recipe): each rubric item pass/fail, score = fraction of the
task's essential items passed; optional items are reported separately.

Two graders behind one interface (``grade(task, traj) -> list[ItemGrade]``, one grade per item):

- ``ProgrammaticGrader`` runs each item's machine-checkable ``check`` spec (types documented in
  ``toolkit.records``) against the trajectory. Deterministic, microseconds per item.
- ``toolkit.rewards.judge.JudgeGrader`` asks an LLM from the item's text (what Scale did, with Claude
  Sonnet 4.5 as judge, per the Scale write-up). A reply it cannot use leaves the item *ungraded*.

Verdicts are ``"pass"``, ``"partial"`` or ``"fail"`` (``None`` = ungraded). The rubric reward counts
only ``pass``; MCP-Atlas claim scoring (``toolkit.rewards.atlas``) gives ``partial`` half credit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from toolkit.checks import normalize as norm
from toolkit.checks.answer import AnswerContext, check_answer, fold
from toolkit.checks.state import state_verdict
from toolkit.records import RewardResult, RubricItem, Task, Trajectory
from toolkit.rewards.base import Reward, Thresholded, answer_text, model_calls
from toolkit.rewards.grading import Grader, ItemGrade, Verdict

# ---- programmatic checks ---------------------------------------------------------------------------


def _ok_calls(traj: Trajectory, tools: Sequence[str]) -> list[tuple[int, Any]]:
    names = set(tools)
    return [(i, c) for i, c in enumerate(model_calls(traj)) if c.ok and c.name in names]


def _check_tool_called(spec: dict, task: Task, traj: Trajectory) -> tuple[Verdict, str]:
    tools, need = spec.get("tools", []), int(spec.get("min_times", 1))
    n_ok = len(_ok_calls(traj, tools))
    if n_ok >= need:
        return "pass", f"{n_ok} successful call(s) to {tools}"
    n_any = sum(c.name in tools for c in model_calls(traj))
    if n_any:
        return "partial", f"{n_ok}/{need} successful call(s) to {tools} ({n_any} attempted)"
    return "fail", f"no call to {tools}"


def _check_tool_args(spec: dict, task: Task, traj: Trajectory) -> tuple[Verdict, str]:
    want: dict = spec.get("args", {})
    rules: dict = spec.get("normalize", {})
    best = -1
    for _, call in _ok_calls(traj, spec.get("tools", [])):
        args = call.args or {}
        hits = sum(k in args and norm.equal(rules.get(k), args[k], v) for k, v in want.items())
        best = max(best, hits)
        if hits == len(want):
            return "pass", f"{call.name} called with {want}"
    if best < 0:
        return "fail", f"no successful call to {spec.get('tools')}"
    if best > 0:
        return "partial", f"best call matched {best}/{len(want)} argument(s)"
    return "fail", f"no call matched any of {sorted(want)}"


def answer_context(task: Task, traj: Trajectory) -> AnswerContext:
    """What the answer check weighs an answer against: the request, the episode's tool outputs, the
    task's expected values and its reference answer (``toolkit.checks.answer``)."""
    expected = [
        (it.check.get("value"), it.check.get("normalize"))
        for it in task.rubric
        if (it.check or {}).get("type") == "answer"
    ]
    return AnswerContext(
        request="\n".join([task.prompt, *task.followups]),
        outputs=[c.result for c in traj.calls if c.result],
        expected=expected,
        reference=str(task.metadata.get("reference_answer") or ""),
    )


def _check_answer(spec: dict, task: Task, traj: Trajectory) -> tuple[Verdict, str]:
    if traj.stop_reason == "length":
        return "fail", "answer cut by the token cap (never delivered)"
    verdict = check_answer(
        answer_text(traj),
        spec.get("value"),
        spec.get("normalize"),
        float(spec.get("tolerance", 0.0)),
        answer_context(task, traj),
    )
    return ("pass" if verdict.passed else "fail"), verdict.reason


def _check_state(spec: dict, task: Task, traj: Trajectory) -> tuple[Verdict, str]:
    return state_verdict(spec, traj.state_diff)  # type: ignore[return-value]


def _check_order(spec: dict, task: Task, traj: Trajectory) -> tuple[Verdict, str]:
    first = [i for i, _ in _ok_calls(traj, spec.get("first", []))]
    then = [i for i, _ in _ok_calls(traj, spec.get("then", []))]
    if first and then and min(first) < max(then):
        return "pass", "order respected"
    if first and then:
        return "partial", "both called, wrong order"
    return "fail", "a required step is missing"


def _check_no_tool_calls(spec: dict, task: Task, traj: Trajectory) -> tuple[Verdict, str]:
    n = len(model_calls(traj))
    return ("pass", "no tool calls") if n == 0 else ("fail", f"{n} tool call(s)")


def _check_clarification(spec: dict, task: Task, traj: Trajectory) -> tuple[Verdict, str]:
    if traj.stop_reason == "length":
        return "fail", "question cut by the token cap (never delivered)"
    request = fold("\n".join([task.prompt, *task.followups]))
    if request and request in fold(traj.final_answer or ""):
        return "fail", "the request copied back is not a question about it"
    asked = "?" in (traj.final_answer or "")
    if asked and not traj.state_diff:
        return "pass", "asked the user, changed nothing"
    if asked:
        return "partial", "asked the user but also changed state"
    return "fail", "no question to the user"


CHECKS = {
    "tool_called": _check_tool_called,
    "tool_args": _check_tool_args,
    "answer": _check_answer,
    "state": _check_state,
    "order": _check_order,
    "no_tool_calls": _check_no_tool_calls,
    "no_state_change": _check_state,
    "clarification": _check_clarification,
}


def check_item(item: RubricItem, task: Task, traj: Trajectory) -> ItemGrade:
    """Grade one item from its ``check`` spec. An item without a known spec is ungraded."""
    fn = CHECKS.get((item.check or {}).get("type", ""))
    if fn is None:
        return ItemGrade(item.id, None, f"no programmatic check for type {item.check.get('type')!r}")
    try:
        verdict, reason = fn(item.check, task, traj)
    except (TypeError, ValueError, AttributeError, KeyError) as exc:  # a malformed spec, not a crash
        return ItemGrade(item.id, None, f"bad check spec: {type(exc).__name__}: {exc}")
    return ItemGrade(item.id, verdict, reason)


class ProgrammaticGrader:
    """Grades every rubric item from its machine-checkable spec."""

    name = "programmatic"

    def grade(self, task: Task, traj: Trajectory) -> list[ItemGrade]:
        return [check_item(item, task, traj) for item in task.rubric]

    def grade_many(self, pairs: Sequence[tuple[Task, Trajectory]]) -> list[list[ItemGrade]]:
        return [self.grade(t, tr) for t, tr in pairs]


# ---- the reward ------------------------------------------------------------------------------------


def rubric_result(
    task: Task,
    grades: list[ItemGrade],
    credit: dict[str, float] | None = None,
    categories: Sequence[str] | None = None,
) -> RewardResult:
    """Score = credit over the graded essential items (``pass`` 1, else 0 by default); with
    ``categories``, over the essential items of those categories only (a task with none is unscorable).

    Ungraded items are left out of the denominator and counted in ``details["ungraded"]``; when no
    essential item could be graded the result is marked ``details["unscorable"] = True`` (score 0.0;
    ``as_trl_reward_func`` turns it into ``None`` so TRL leaves it out of the group baseline).
    """
    credit = credit or {"pass": 1.0, "partial": 0.0, "fail": 0.0}
    by_id = {g.id: g for g in grades}
    kept = [it for it in task.rubric if categories is None or it.category in categories]
    ess = [it for it in kept if it.essential]
    opt = [it for it in kept if not it.essential]

    def frac(items: list[RubricItem]) -> tuple[float, int, int]:
        graded = [by_id[it.id] for it in items if by_id.get(it.id) and by_id[it.id].verdict is not None]
        got = sum(credit[g.verdict] for g in graded)  # type: ignore[index]
        return (got / len(graded) if graded else 0.0), len(graded), len(items) - len(graded)

    ess_score, ess_graded, ess_ungraded = frac(ess)
    opt_score, _, opt_ungraded = frac(opt)
    breakdown = {"essential": ess_score}
    if opt:  # reported only where the task has optional items, so averages are not diluted
        breakdown["optional"] = opt_score
    for cat in sorted({it.category for it in ess}):
        breakdown[f"essential.{cat}"] = frac([it for it in ess if it.category == cat])[0]
    details: dict[str, Any] = {
        "items": [asdict(g) for g in grades],
        "n_essential": len(ess),
        "n_optional": len(opt),
        "ungraded": ess_ungraded + opt_ungraded,
        "answer_failed": answers_failed(task, grades),
    }
    if not ess_graded:
        details["unscorable"] = True
    return RewardResult(ess_score, breakdown, details)


def answers_failed(task: Task, grades: Sequence[ItemGrade]) -> int:
    """How many essential ``answer`` items (a value the answer must state) were graded and did not pass."""
    by_id = {g.id: g.verdict for g in grades}
    return sum(
        1
        for it in task.rubric
        if it.essential
        and (it.check or {}).get("type") == "answer"
        and by_id.get(it.id) not in (None, "pass")
    )


class RubricReward(Reward):
    """Fraction of essential rubric items passed, in [0, 1] (optional items in ``breakdown``).

    ``grader``: ``"programmatic"`` (default), ``"judge"`` (keyword ``judge`` holds the JudgeGrader
    config) or any object with ``grade`` / ``grade_many``. ``categories``: score only the items of
    these rubric categories (e.g. ``["answer_correctness"]``); tasks without such items are unscorable.
    """

    range = (0.0, 1.0)

    def __init__(
        self,
        grader: str | Grader = "programmatic",
        judge: dict[str, Any] | None = None,
        categories: Sequence[str] | None = None,
    ):
        if grader == "programmatic":
            self.grader: Grader = ProgrammaticGrader()
        elif grader == "judge":
            from toolkit.rewards.judge import JudgeGrader

            self.grader = JudgeGrader(**(judge or {}))
        elif isinstance(grader, str):
            raise ValueError(f"unknown grader {grader!r}; use 'programmatic' or 'judge'")
        else:
            self.grader = grader
        self.name = "rubric" if self.grader.name == "programmatic" else "rubric-judge"
        if isinstance(categories, str):  # a bare string would filter by its characters
            categories = [categories]
        self.categories = tuple(categories) if categories else None

    def score(self, task: Task, traj: Trajectory) -> RewardResult:
        return rubric_result(task, self.grader.grade(task, traj), categories=self.categories)

    def batch(self, tasks: Sequence[Task], trajs: Sequence[Trajectory]) -> list[RewardResult]:
        if len(tasks) != len(trajs):
            raise ValueError(f"{len(tasks)} tasks for {len(trajs)} trajectories")
        pairs = list(zip(tasks, trajs, strict=True))
        grades = self.grader.grade_many(pairs)
        return [rubric_result(t, g, categories=self.categories) for t, g in zip(tasks, grades, strict=True)]


def judge_rubric_reward(**judge_config: Any) -> RubricReward:
    """``get_reward("rubric-judge", base_url=..., model=..., api_key_env=...)``: the rubric reward
    graded by an LLM judge (config: ``toolkit.rewards.judge.JudgeGrader``)."""
    return RubricReward(grader="judge", judge=judge_config)


def rubric_pass_reward(threshold: float = 0.75, **rubric_config: Any) -> Thresholded:
    """``get_reward("rubric-pass", threshold=0.75)``: 1.0 when the episode passes at least ``threshold`` of
    its essential rubric items, else 0.0: the per-episode form of the pass@0.75 that evaluation reports
    (a task-completion reward, as Bespoke Labs' binary BFCL reward is). Added to the dense rubric reward,
    it pays a whole extra unit for the last item that completes a task, usually the final answer.
    ``rubric_config`` goes to ``RubricReward`` (``grader``, ``judge``)."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"rubric-pass threshold must be in (0, 1], got {threshold}")
    return Thresholded(RubricReward(**rubric_config), threshold, name="rubric-pass")


def answer_reward(**rubric_config: Any) -> RubricReward:
    """``get_reward("answer")``: the rubric reward over the essential ``answer_correctness`` items only
    (the stated value of a lookup, the record a write leaves behind), in [0, 1]. Added to the dense
    rubric reward it weighs the final answer up: in the full rubric it is one item of three to five,
    while the calls before it are the rest. ``rubric_config`` goes to ``RubricReward``."""
    reward = RubricReward(categories=["answer_correctness"], **rubric_config)
    reward.name = "answer"
    return reward
