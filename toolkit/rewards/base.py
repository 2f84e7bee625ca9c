"""The reward interface, weighted composition and the name registry.

A reward is a callable ``(task, trajectory) -> RewardResult`` with a ``name`` and a documented
``range`` (lowest, highest score). ``batch`` scores many pairs at once (the LLM judge overrides it to
run requests concurrently); everything else inherits the sequential default.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from typing import Any

from toolkit.records import FINISH_TOOL, CallRecord, RewardResult, Task, Trajectory


class Reward:
    """Base class: subclasses set ``name`` and ``range`` and implement ``score``."""

    name: str = "reward"
    range: tuple[float, float] = (0.0, 1.0)

    def score(self, task: Task, traj: Trajectory) -> RewardResult:
        raise NotImplementedError

    def __call__(self, task: Task, traj: Trajectory) -> RewardResult:
        return self.score(task, traj)

    def batch(self, tasks: Sequence[Task], trajs: Sequence[Trajectory]) -> list[RewardResult]:
        """Score ``trajs[i]`` against ``tasks[i]`` for every i."""
        if len(tasks) != len(trajs):
            raise ValueError(f"{len(tasks)} tasks for {len(trajs)} trajectories")
        return [self.score(t, tr) for t, tr in zip(tasks, trajs, strict=True)]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} range={self.range}>"


class Wrapped(Reward):
    """A plain ``(task, traj) -> RewardResult`` callable (e.g. another area's class) as a Reward."""

    def __init__(self, fn: Callable[[Task, Trajectory], RewardResult], name: str | None = None):
        self.fn = fn
        self.name = name or getattr(fn, "name", None) or getattr(fn, "__name__", type(fn).__name__)
        self.range = tuple(getattr(fn, "range", (-math.inf, math.inf)))  # type: ignore[assignment]

    def score(self, task: Task, traj: Trajectory) -> RewardResult:
        return self.fn(task, traj)


def as_reward(obj: Reward | Callable[[Task, Trajectory], RewardResult], name: str | None = None) -> Reward:
    """``obj`` itself when it is a Reward, else wrapped so it gets ``batch``, ``name`` and ``range``."""
    if isinstance(obj, Reward):
        return obj
    if not callable(obj):
        raise TypeError(f"not a reward: {obj!r}")
    return Wrapped(obj, name)


class Combined(Reward):
    """Weighted sum of rewards. ``breakdown`` keeps every component as ``"<name>"`` (its score) and
    ``"<name>.<component>"``; ``details[name]`` holds each component's details."""

    def __init__(self, parts: Sequence[tuple[Reward, float]], name: str | None = None):
        if not parts:
            raise ValueError("combine() needs at least one (reward, weight) pair")
        self.parts = [(as_reward(r), float(w)) for r, w in parts]
        names = [r.name for r, _ in self.parts]
        if len(set(names)) != len(names):
            raise ValueError(f"combine(): reward names must be unique, got {names}")
        self.name = name or "+".join(f"{w:g}*{r.name}" for r, w in self.parts)
        lo = sum(w * (r.range[0] if w >= 0 else r.range[1]) for r, w in self.parts)
        hi = sum(w * (r.range[1] if w >= 0 else r.range[0]) for r, w in self.parts)
        self.range = (lo, hi)

    def _merge(self, results: list[RewardResult]) -> RewardResult:
        total, breakdown, details = 0.0, {}, {}
        for (reward, weight), res in zip(self.parts, results, strict=True):
            total += weight * res.score
            breakdown[reward.name] = res.score
            breakdown.update({f"{reward.name}.{k}": v for k, v in res.breakdown.items()})
            details[reward.name] = res.details
        return RewardResult(total, breakdown, details)

    def score(self, task: Task, traj: Trajectory) -> RewardResult:
        return self._merge([r(task, traj) for r, _ in self.parts])

    def batch(self, tasks: Sequence[Task], trajs: Sequence[Trajectory]) -> list[RewardResult]:
        per_part = [r.batch(tasks, trajs) for r, _ in self.parts]
        return [self._merge(list(col)) for col in zip(*per_part, strict=True)]


def combine(parts: Sequence[tuple[Reward, float]], name: str | None = None) -> Reward:
    """A reward that is the weighted sum of ``parts`` (e.g. ``[(rubric, 0.7), (prove, 0.3)]``)."""
    return Combined(parts, name)


# name -> "module:Class"; imported lazily so that e.g. bfcl-eval is only loaded when asked for.
REGISTRY: dict[str, str] = {
    "rubric": "toolkit.rewards.rubric:RubricReward",
    "rubric-judge": "toolkit.rewards.rubric:judge_rubric_reward",
    "rubric-pass": "toolkit.rewards.rubric:rubric_pass_reward",
    "answer": "toolkit.rewards.rubric:answer_reward",
    "atlas": "toolkit.rewards.atlas:AtlasReward",
    "prove": "toolkit.rewards.prove:ProveReward",
    "prove-kit": "toolkit.rewards.prove_kit:ProveKitReward",
    "finished": "toolkit.rewards.finished:FinishedReward",
    "outcome": "toolkit.rewards.outcome:OutcomeReward",
    "graduated": "toolkit.rewards.graduated:GraduatedReward",
    "toolrl": "toolkit.rewards.toolrl:ToolRLReward",
    "bfcl": "toolkit.rewards.bfcl:BFCLReward",
}


def list_rewards() -> list[str]:
    """The names ``get_reward`` accepts."""
    return list(REGISTRY)


def get_reward(name: str, **config: Any) -> Reward:
    """Build a reward by name with keyword config (see each reward's class for its options)."""
    if name not in REGISTRY:
        raise KeyError(f"unknown reward {name!r}; known: {', '.join(REGISTRY)}")
    module_name, attr = REGISTRY[name].split(":")
    module = importlib.import_module(module_name)
    factory: Callable[..., Reward] = getattr(module, attr)
    reward = factory(**config)
    if not isinstance(reward, Reward):  # e.g. a plain callable class from another area
        return as_reward(reward, getattr(reward, "name", None) or name)
    return reward


# ---- helpers shared by the call-level rewards -------------------------------------------------------


def model_calls(traj: Trajectory) -> list[CallRecord]:
    """The model's tool calls, without the loop's own ``finish`` tool (it ends the episode, it is not a
    task tool)."""
    return [c for c in traj.calls if c.name != FINISH_TOOL]


def answer_text(traj: Trajectory) -> str:
    """All the answers the model gave the user: every turn's answer plus the final one."""
    parts = [a for a in traj.turn_answers if a]
    if traj.final_answer and traj.final_answer not in parts:
        parts.append(traj.final_answer)
    return "\n".join(parts)


class Thresholded(Reward):
    """1.0 when the inner reward reaches ``threshold``, else 0.0: a binary task-completion reward built
    from a dense one (e.g. all essential rubric items passed). An inner result that reports
    ``details["answer_failed"]`` (the rubric and outcome rewards: essential answer values not stated with
    commitment) never passes: the pass@t of evaluation is defined the same way (toolkit.eval.metrics)."""

    range = (0.0, 1.0)

    def __init__(self, inner: Reward, threshold: float | None = None, name: str | None = None):
        self.inner = inner
        self.threshold = inner.range[1] if threshold is None else threshold
        self.name = name or f"{inner.name}-binary"

    def _wrap(self, res: RewardResult) -> RewardResult:
        # a task whose answer misses a value it must state has not passed, however many calls were right
        hit = res.score >= self.threshold - 1e-9 and not res.details.get("answer_failed")
        details = {**res.details, "inner_score": res.score}
        return RewardResult(float(hit), {self.inner.name: res.score}, details)

    def score(self, task: Task, traj: Trajectory) -> RewardResult:
        return self._wrap(self.inner(task, traj))

    def batch(self, tasks: Sequence[Task], trajs: Sequence[Trajectory]) -> list[RewardResult]:
        return [self._wrap(r) for r in self.inner.batch(tasks, trajs)]


def binarize(reward: Reward, threshold: float | None = None, name: str | None = None) -> Reward:
    """``reward`` turned into a {0, 1} reward: 1 when it reaches ``threshold`` (default: its maximum)."""
    return Thresholded(reward, threshold, name)
