"""Outcome reward (``get_reward("outcome")``): finishing right and short is strictly best, on every task
kind, and no kind pays for calling again. Range [0, 1]; 1.0 only for a finished episode that passes every
essential rubric item with no more calls than the gold trajectory makes.

Why a new reward (issue 31, item 2; docs/rewards.md): the cpu-demo recipe's reward, ``rubric`` + 0.5
``prove-kit`` (beta 0), credits a rubric tool or argument item as soon as *any* call gets it right, so a
second call never lowers the rubric; it pays for a retry after a failed call (+0.45 with a wrong answer,
+0.78 with the right one, on a lookup) against a 0.25 charge for an extra call, so a blanket "call
twice" habit pays once more than 24-36% of first calls fail; an episode that runs to the turn cap scores
the same as one that finishes with a wrong answer after the same calls; nothing pays for replying.

    R = 0.45 * outcome + 0.15 * process + 0.10 * finished + 0.30 * economy

- ``process`` (q): share of the essential rubric items of the calling categories (tool selection, query
  construction, multi-step planning) that pass, graded by the rubric's own checks
  (``toolkit.rewards.rubric``). Dense credit for the right calls even when the answer is wrong: with
  answer correctness around 0.13 on the warm start (docs/cpu-proof, run 13), most groups have no right
  answer, and this is what they can still rank. On a task with no gold calls (abstain, clarify) q is 1
  when the episode changed no record, else 0 (a write where none was asked for).
- ``outcome`` (o): share of the essential ``answer_correctness`` items that pass (the stated value, the
  record a write leaves, the question a clarification asks); a task without such items uses all its
  essential items. On a task with gold calls it is multiplied by q (*grounding*): an answer counts as
  far as the calls behind it were made, so a right value guessed without the call (the drift of runs 11
  and 16 towards answering without calling) earns nothing. On a task with no gold calls o is the whole
  essential rubric (abstain: no tool call; clarify: a question, no change). It counts only when the
  episode finished: an answer cut by the token cap (stop reason ``length``) was never delivered, and
  at the turn cap (``max_turns``) there is none.
- ``finished`` (F): 1 when the episode ended with a non-empty reply (``finish`` or a turn without a
  call, ``toolkit.rewards.finished.REPLIED``), 0.5 for a reply with no text, 0 at the turn or token cap
  or on an error. It makes the cap strictly worse than any reply after the same calls (o and F both
  drop), and finishing without an answer worse than finishing with one. On a task with gold calls a
  reply without a single call earns no F either (run 19, docs/cpu-proof: with F for it, a reply that
  looked nothing up tied with a failed attempt, 0.40 each, and abstain-like "answer at once" episodes
  took over every kind within three GRPO steps): trying the tool is strictly better than not trying.
- ``economy`` (E): ``0.5 ** extra`` with ``extra = max(0, n_calls - n_gold)``: every call beyond the gold
  call count (PROVE's efficiency budget with beta 0, as cpu-demo sets it; failed calls count) halves it,
  so each extra call costs something on every kind, whatever else the episode got right. Optionally
  (``extra_argument_factor`` below 1, off by default) every argument the gold calls of that tool do not
  use multiplies it too: run 25 (docs/cpu-proof) doubled the lookups that pass such arguments
  (``company_name`` beside ``company_id``), which nothing in the reward saw.

The weights give, on a one-call lookup (rows tested in tests/test_rewards_outcome.py):

| episode | o | q | F | E | R |
|---|---|---|---|---|---|
| right call, right answer | 1 | 1 | 1 | 1 | 1.00 |
| right call twice (or a failed call, then the right one), right answer | 1 | 1 | 1 | 0.5 | 0.85 |
| right call, wrong answer | 0 | 1 | 1 | 1 | 0.55 |
| failed call, then the right one, wrong answer | 0 | 1 | 1 | 0.5 | 0.40 |
| failed call, gives up with an apology | 0 | 0 | 1 | 1 | 0.40 |
| no call, answers at once (right value or not) | 0 | 0 | 0 | 1 | 0.30 |
| right call, then again to the turn cap (3 calls) | 0 | 1 | 0 | 0.25 | 0.225 |

Choices, and why:

- right + one redundant call (0.85) > wrong + short (0.55) needs the first extra call's cost
  (0.30 * 0.5 = 0.15) below the outcome weight (0.45): getting the answer right matters more than the
  call it took.
- A retry after a failed call is worth less than a right first call (0.85 < 1.00: it is one call over
  the gold count) but more than giving up when it ends right (0.85 > 0.40): a policy that abandons a
  task after a tool error never learns to recover, and runs 11 and 16 show the kit's policies drift
  towards not calling when calling is not worth it. Ending *wrong* after a retry earns nothing over
  giving up (0.40 = 0.40): the process credit the retry wins (0.15) is exactly what its extra call
  costs. So, against the old reward's 0.24-0.36, a blanket "call twice" habit pays only where
  p * a * 0.45 > (1 - p) * 0.15 (p: the share of first calls that fail, a: the share of retries that
  end right): never at a = 0, and at a = 0.15 (about the warm start's answer correctness) only where
  more than 69% of first calls fail; at a = 1 above 25%. A retry that is only needed when the first
  call failed (looking at the tool error) is the best policy in every case, as it should be.
- The process weight stays: set to 0 (outcome 0.60), GRPO from an RFT round made more calls over the
  gold count (+0.100 a task) and passed fewer dev tasks (-0.050) than with these weights, one seed
  (docs/cpu-proof, "Levers over GRPO's calls"): the answer's larger weight made a second call that
  protects it relatively cheaper.
- Failed calls cost nothing beyond the call itself: charging them more makes a failed attempt worse
  than no attempt, which teaches the policy to stop calling (the drift of runs 11 and 16).
- The abstain kinds: no call and a reply scores 1.0 (PROVE's abstention reward is 1.0 with zero calls;
  any non-empty reply counts, the rubric does not judge the wording); an empty reply 0.95; a read call
  0.40; a write (state changed) 0.25.

GRPO (TRL's ``GRPOTrainer``) computes advantages per group of episodes of one task: ``r - mean(group)``,
divided by the group's std when ``scale_rewards`` is "group". A constant offset per task (e.g. every
episode of an abstain task getting the 0.30 * E floor) cancels; what reaches the gradient is the order
of the episodes within a group and, with std scaling, their gaps relative to the group's spread. Every
ordering above holds within one task, which is what a group sees. With std scaling a group whose
episodes differ only in E (all wrong, different call counts) still gets full-size advantages for being
shorter: intended, but a near-tie (e.g. all at the turn cap, spread 0.02) gets them too; the filter for
such groups belongs to the trainer (issue 31, item 3), not here. Under ``scale_rewards: "batch"`` the
kinds share one scale, which is why every kind's best episode scores the same 1.0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolkit.records import RewardResult, Task, Trajectory
from toolkit.rewards.base import Reward, answer_text, model_calls
from toolkit.rewards.finished import REPLIED
from toolkit.rewards.grading import ItemGrade
from toolkit.rewards.rubric import ProgrammaticGrader, rubric_result

DEFAULT_WEIGHTS = {"outcome": 0.45, "process": 0.15, "finished": 0.10, "economy": 0.30}
CALLING = ("tool_selection", "query_construction", "multi_step_planning")
ANSWER = ("answer_correctness",)


class OutcomeReward(Reward):
    """``R = w_o * o * q + w_p * q + w_f * F + w_e * 0.5 ** extra``, in [0, 1]; see the module docstring.

    Args:
        weights: ``outcome``, ``process``, ``finished``, ``economy`` (missing keys keep their default);
            non-negative and summing to 1, so that the range stays [0, 1].
        extra_call_factor: what each call beyond the gold count multiplies ``economy`` by (0.5).
        extra_argument_factor: what each argument no gold call of that tool uses multiplies ``economy``
            by (1.0: not counted). Calls to tools outside the gold are left to the call count and ``process``.
    """

    name = "outcome"
    range = (0.0, 1.0)

    def __init__(
        self,
        weights: dict[str, float] | None = None,
        extra_call_factor: float = 0.5,
        extra_argument_factor: float = 1.0,
    ):
        unknown = set(weights or {}) - set(DEFAULT_WEIGHTS)
        if unknown:
            raise ValueError(f"unknown outcome weight(s) {sorted(unknown)}; known: {list(DEFAULT_WEIGHTS)}")
        self.weights = {**DEFAULT_WEIGHTS, **(weights or {})}
        if any(w < 0 for w in self.weights.values()) or abs(sum(self.weights.values()) - 1.0) > 1e-9:
            raise ValueError(f"outcome weights must be >= 0 and sum to 1, got {self.weights}")
        if not 0.0 < extra_call_factor < 1.0:
            raise ValueError(f"extra_call_factor must be in (0, 1), got {extra_call_factor}")
        self.extra_call_factor = extra_call_factor
        if not 0.0 < extra_argument_factor <= 1.0:
            raise ValueError(f"extra_argument_factor must be in (0, 1], got {extra_argument_factor}")
        self.extra_argument_factor = extra_argument_factor
        self.grader = ProgrammaticGrader()

    def score(self, task: Task, traj: Trajectory) -> RewardResult:
        return self._score(task, traj, self.grader.grade(task, traj))

    def batch(self, tasks: Sequence[Task], trajs: Sequence[Trajectory]) -> list[RewardResult]:
        if len(tasks) != len(trajs):
            raise ValueError(f"{len(tasks)} tasks for {len(trajs)} trajectories")
        grades = self.grader.grade_many(list(zip(tasks, trajs, strict=True)))
        return [self._score(t, tr, g) for t, tr, g in zip(tasks, trajs, grades, strict=True)]

    def _score(self, task: Task, traj: Trajectory, grades: list[ItemGrade]) -> RewardResult:
        whole = rubric_result(task, grades)
        replied = traj.stop_reason in REPLIED
        if task.gold:
            process = _share(task, grades, CALLING, default=1.0)
            outcome = _share(task, grades, ANSWER, default=whole.score) * process
        else:  # abstain / clarify: the restraint is the outcome; process = no unrequested writes
            process = float(not traj.state_diff)
            outcome = whole.score
        if not replied:
            outcome = 0.0
        n_calls = len(model_calls(traj))
        finished = (1.0 if answer_text(traj).strip() else 0.5) if replied else 0.0
        if task.gold and not n_calls:
            finished = 0.0  # a reply that looked nothing up on a task that needs calls is not an attempt
        extra = max(0, n_calls - len(task.gold))
        extra_args = extra_arguments(task, traj)
        economy = self.extra_call_factor**extra * self.extra_argument_factor**extra_args
        comps = {"outcome": outcome, "process": process, "finished": finished, "economy": economy}
        total = sum(self.weights[k] * v for k, v in comps.items())
        details: dict[str, Any] = {
            "kind": task.metadata.get("kind"),
            "n_calls": n_calls,
            "n_gold": len(task.gold),
            "extra_calls": extra,
            "extra_arguments": extra_args,
            "stop_reason": traj.stop_reason,
            "items": whole.details["items"],
            "answer_failed": whole.details["answer_failed"],  # pass@t needs every stated value right
        }
        if whole.details.get("unscorable"):
            details["unscorable"] = True  # no essential item could be graded: TRL leaves it out
        return RewardResult(total, comps, details)


def extra_arguments(task: Task, traj: Trajectory) -> int:
    """Arguments the model passed that no gold call of the same tool uses, summed over its calls (calls
    to tools the gold does not call, and calls whose arguments did not parse, count 0 here)."""
    gold_keys: dict[str, set[str]] = {}
    for call in task.gold:
        gold_keys.setdefault(call.name, set()).update(call.arguments)
    return sum(
        len(set(call.args) - gold_keys[call.name])
        for call in model_calls(traj)
        if call.args and call.name in gold_keys
    )


def _share(task: Task, grades: list[ItemGrade], categories: Sequence[str], default: float) -> float:
    """The share of the task's essential items of ``categories`` that pass (``default`` when it has none)."""
    if not any(it.essential and it.category in categories for it in task.rubric):
        return default
    return rubric_result(task, grades, categories=categories).score
