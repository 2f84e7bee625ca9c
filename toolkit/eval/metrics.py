"""Evaluation metrics with bootstrap confidence intervals.

Every metric here is a ratio of two sums over tasks, ``sum(num) / sum(den)``:

- coverage rate (MCP Atlas): mean per-task rubric score (num = score, den = 1);
- pass rate at a threshold (MCP Atlas reports 0.50 and 0.75): share of tasks with score >= t whose
  answer states every essential value with commitment (``answer_failed``: a task passes on its answer);
- tool calls per task, finish rate (episodes that ended with an explicit ``finish`` call);
- well-formed first call: share of episodes whose first model turn is a tool call that parses and
  names an offered tool (``first_call_well_formed``): what a warm start must teach before GRPO;
- tool failure rate: failed calls / all calls, pooled over tasks;
- rubric pass rate per category: passed items / items of that category, pooled over tasks;
- BFCL accuracy, overall and per test category (binary: the official checker passed or not).

Writing them all this way makes the bootstrap uniform and vectorised: resample task indices with
replacement, recompute both sums, take percentiles. The unit of resampling is always the task, so
pooled ratios (failure rate, rubric items) get intervals that respect the correlation within a task.
A paired bootstrap compares two runs on the same tasks (before vs after training) by resampling the
same task indices for both, which is much tighter than two independent intervals.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from toolkit.envs.execute import error_kind
from toolkit.records import RUBRIC_CATEGORIES, RecordError, TaskResult, Trajectory, read_task_results

MALFORMED_CALL_ERRORS = ("bad_json", "unknown_tool")  # the loop's error kinds for a call that is not one

PASS_THRESHOLDS = (0.50, 0.75)  # the two thresholds MCP Atlas reports
N_BOOT = 2000
CONFIDENCE = 0.95


def first_call_well_formed(traj: Trajectory) -> bool:
    """Whether the episode's first model turn is a well-formed tool call: it holds at least one call,
    was not cut by the token budget, and every call in it parses as JSON and names an offered tool
    (the ``finish`` tool included). Arguments that fail the tool's schema still count as well formed:
    that is a wrong call, not a malformed one."""
    assistant = [m for m in traj.messages if m.get("role") == "assistant"]
    if not assistant or not assistant[0].get("tool_calls"):
        return False
    first = [c for c in traj.calls if c.step == 0]
    if any(error_kind(c) in MALFORMED_CALL_ERRORS for c in first):
        return False
    # a turn cut at max_new_tokens ends the episode before its calls run (stop reason length)
    return not (traj.stop_reason == "length" and len(assistant) == 1 and not first)


def with_gold_calls(
    results: Sequence[TaskResult], gold_calls: dict[str, int], source: str
) -> list[TaskResult]:
    """``results`` with each missing ``n_gold_calls`` filled in from ``gold_calls`` (task id -> the gold
    trajectory's call count), for results written before they recorded it. A result whose task is not
    in ``gold_calls`` is an error naming ``source`` (the tasks file): the wrong tasks file, not a gap."""
    missing = sorted({r.task_id for r in results if r.n_gold_calls is None} - set(gold_calls))
    if missing:
        raise RecordError(
            f"{source}: no task {missing[0]!r} ({len(missing)} result task id(s) not in this file)"
        )
    return [
        r if r.n_gold_calls is not None else replace(r, n_gold_calls=gold_calls[r.task_id]) for r in results
    ]


def compare_folders(
    before_dir: str | Path, after_dir: str | Path, gold_calls: dict[str, int] | None = None, source: str = ""
) -> dict[str, Difference]:
    """``paired_bootstrap`` of two eval output folders (their ``results.jsonl``); ``gold_calls`` fills in
    the gold call counts of older results (``with_gold_calls``, ``source`` naming where they came from)."""
    before, after = (read_task_results(Path(d) / "results.jsonl") for d in (before_dir, after_dir))
    if gold_calls is not None:
        before, after = (with_gold_calls(rs, gold_calls, source) for rs in (before, after))
    return paired_bootstrap(before, after)


@dataclass
class Estimate:
    """A metric value with its percentile-bootstrap confidence interval; ``n`` = tasks it is over."""

    value: float
    ci_low: float
    ci_high: float
    n: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Difference:
    """after - before on the same tasks, with a paired-bootstrap CI. ``outside_ci`` is True when zero
    lies outside the interval: the change is larger than resampling the tasks would explain."""

    before: float
    after: float
    diff: float
    ci_low: float
    ci_high: float
    n_pairs: int
    outside_ci: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _pass_name(t: float) -> str:
    return f"pass@{t:.2f}"


def answer_failed(result: TaskResult) -> bool:
    """Whether an essential ``answer`` item of the task (a value to state) was graded and did not pass."""
    return any(
        it.get("essential") and it.get("check") == "answer" and it.get("verdict") not in (None, "pass")
        for it in result.rubric
    )


def task_passed(result: TaskResult) -> bool:
    """One task as the headline pass rate counts it: BFCL's correct, else pass@0.75."""
    if result.correct is not None:
        return result.correct
    return result.score >= PASS_THRESHOLDS[-1] - 1e-9 and not answer_failed(result)


def metric_components(results: Sequence[TaskResult]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per-task (numerator, denominator) arrays for every metric these results support."""
    n = len(results)
    ones = np.ones(n)
    score = np.array([r.score for r in results], dtype=float)
    comps: dict[str, tuple[np.ndarray, np.ndarray]] = {"coverage": (score, ones)}
    # A task passes at t when its score reaches t *and* every essential value its answer must state is
    # stated with commitment (toolkit.checks.answer): right calls around a wrong or pasted answer are
    # not a pass. Results written before the rubric items carried their check type are not gated.
    answered = np.array([not answer_failed(r) for r in results], dtype=bool)
    for t in PASS_THRESHOLDS:
        comps[_pass_name(t)] = (((score >= t - 1e-9) & answered).astype(float), ones)

    calls = np.array([r.n_calls for r in results], dtype=float)
    failed = np.array([r.n_failed_calls for r in results], dtype=float)
    comps["tool_calls_per_task"] = (calls, ones)
    if any(r.n_gold_calls is not None for r in results):
        # More calls per task is not the same change everywhere: a policy that stops after one call on
        # two-call tasks gains calls by making the missing one, a drifting policy by repeating itself.
        # Split against the gold call count (tasks without one count in neither).
        known = np.array([r.n_gold_calls is not None for r in results], dtype=float)
        gold = np.array([r.n_gold_calls or 0 for r in results], dtype=float)
        comps["calls_over_gold_per_task"] = (np.maximum(calls - gold, 0) * known, known)
        comps["calls_under_gold_per_task"] = (np.maximum(gold - calls, 0) * known, known)
    comps["tool_failure_rate"] = (failed, calls)
    comps["finish_rate"] = (np.array([r.stop_reason == "finish" for r in results], dtype=float), ones)
    comps["error_rate"] = (np.array([r.error is not None for r in results], dtype=float), ones)
    if any(r.first_call_well_formed is not None for r in results):
        known = np.array([r.first_call_well_formed is not None for r in results], dtype=float)
        good = np.array([bool(r.first_call_well_formed) for r in results], dtype=float)
        comps["first_call_well_formed"] = (good, known)

    if any(r.atlas_score is not None for r in results):
        atlas = np.array([r.atlas_score or 0.0 for r in results], dtype=float)
        comps["atlas_coverage"] = (atlas, ones)
        for t in PASS_THRESHOLDS:
            comps[f"atlas_{_pass_name(t)}"] = ((atlas >= t - 1e-9).astype(float), ones)

    seen_categories = {item.get("category") for r in results for item in r.rubric}
    for cat in [c for c in RUBRIC_CATEGORIES if c in seen_categories] + sorted(
        c for c in seen_categories if c not in RUBRIC_CATEGORIES and c
    ):
        num = np.array(
            [sum(bool(i.get("passed")) for i in r.rubric if i.get("category") == cat) for r in results]
        )
        den = np.array([sum(1 for i in r.rubric if i.get("category") == cat) for r in results])
        comps[f"rubric/{cat}"] = (num.astype(float), den.astype(float))

    if any(r.correct is not None for r in results):
        correct = np.array([bool(r.correct) for r in results], dtype=float)
        comps["accuracy"] = (correct, ones)
        for cat in sorted({r.category for r in results}):
            in_cat = np.array([r.category == cat for r in results], dtype=float)
            comps[f"accuracy/{cat}"] = (correct * in_cat, in_cat)
    return comps


def _ratio(num: np.ndarray, den: np.ndarray) -> float:
    d = den.sum()
    return float(num.sum() / d) if d > 0 else float("nan")


def _boot_ratios(num: np.ndarray, den: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Ratio of sums for each bootstrap resample (rows of ``idx``); NaN where a resample has den 0."""
    nums, dens = num[idx].sum(axis=1), den[idx].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(dens > 0, nums / np.where(dens > 0, dens, 1.0), np.nan)


def _percentiles(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    samples = samples[~np.isnan(samples)]
    if samples.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.percentile(samples, [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2])
    return float(lo), float(hi)


def bootstrap_ratio(
    num: Sequence[float] | np.ndarray,
    den: Sequence[float] | np.ndarray | None = None,
    n_boot: int = N_BOOT,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> Estimate:
    """Percentile bootstrap CI of ``sum(num) / sum(den)`` (a plain mean when ``den`` is None)."""
    num = np.asarray(num, dtype=float)
    den = np.ones_like(num) if den is None else np.asarray(den, dtype=float)
    if num.shape != den.shape or num.ndim != 1:
        raise ValueError("num and den must be 1-D arrays of the same length")
    n = num.size
    if n == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    lo, hi = _percentiles(_boot_ratios(num, den, idx), confidence)
    return Estimate(_ratio(num, den), lo, hi, int((den > 0).sum()))


def exact_interval(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Clopper-Pearson interval of a binomial share ``k / n``. Where every task fails (or passes), the
    bootstrap resamples only zeros and gives [0, 0], which reads as certainty; this interval says how
    high the rate could still be (0 of 30: up to 0.116)."""
    from math import comb

    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n > 0, got k={k}, n={n}")
    alpha = (1 - confidence) / 2

    def at_least(j: int, p: float) -> float:  # P(X >= j) for X ~ Binomial(n, p)
        return sum(comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(j, n + 1))

    def solve(f: Any) -> float:  # f rises with p from f(0) < 0 to f(1) > 0: bisection
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
        return (lo + hi) / 2

    lower = 0.0 if k == 0 else solve(lambda p: at_least(k, p) - alpha)
    upper = 1.0 if k == n else solve(lambda p: alpha - (1 - at_least(k + 1, p)))
    return lower, upper


def summarize(
    results: Sequence[TaskResult], n_boot: int = N_BOOT, seed: int = 0, confidence: float = CONFIDENCE
) -> dict[str, Estimate]:
    """Every supported metric with a bootstrap CI. One resampling of task indices is shared by all
    metrics (seeded), so the intervals are reproducible and mutually consistent."""
    if not results:
        return {}
    n = len(results)
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    out = {}
    for name, (num, den) in metric_components(results).items():
        lo, hi = _percentiles(_boot_ratios(num, den, idx), confidence)
        out[name] = Estimate(_ratio(num, den), lo, hi, int((den > 0).sum()))
    return out


def paired_bootstrap(
    before: Sequence[TaskResult],
    after: Sequence[TaskResult],
    n_boot: int = N_BOOT,
    seed: int = 0,
    confidence: float = CONFIDENCE,
) -> dict[str, Difference]:
    """after - before for every metric both runs support, on the tasks both ran (matched by task id).

    Both runs are resampled with the same task indices, so per-task difficulty cancels out.
    """
    by_id = {r.task_id: r for r in before}
    common = [r.task_id for r in after if r.task_id in by_id]
    if not common:
        raise ValueError("the two runs share no task ids: a paired comparison needs the same tasks")
    after_by_id = {r.task_id: r for r in after}
    b = metric_components([by_id[t] for t in common])
    a = metric_components([after_by_id[t] for t in common])
    n = len(common)
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    out = {}
    for name in [k for k in a if k in b]:
        (bn, bd), (an, ad) = b[name], a[name]
        diffs = _boot_ratios(an, ad, idx) - _boot_ratios(bn, bd, idx)
        lo, hi = _percentiles(diffs, confidence)
        vb, va = _ratio(bn, bd), _ratio(an, ad)
        outside = bool(not np.isnan(lo) and (lo > 0 or hi < 0))
        out[name] = Difference(vb, va, va - vb, lo, hi, n, outside)
    return out


def tool_usage(results: Iterable[TaskResult]) -> dict[str, Any]:
    """How tools were used: calls per tool (over all tasks), and the histogram of calls per task."""
    per_tool: Counter[str] = Counter()
    per_task: Counter[int] = Counter()
    distinct: list[int] = []
    for r in results:
        per_tool.update(r.tool_counts)
        per_task[r.n_calls] += 1
        distinct.append(len(r.tool_counts))
    return {
        "calls_per_tool": dict(per_tool.most_common()),
        "calls_per_task_histogram": {str(k): v for k, v in sorted(per_task.items())},
        "distinct_tools_per_task": float(np.mean(distinct)) if distinct else float("nan"),
    }


def stop_reasons(results: Iterable[TaskResult]) -> dict[str, int]:
    """Count of episodes by why they stopped (finish, no_tool_call, max_turns, length, error)."""
    return dict(Counter(r.stop_reason for r in results).most_common())


def ungraded_items(results: Iterable[TaskResult]) -> dict[str, int]:
    """Rubric items a judge could not grade (missing or malformed reply), per reward: counted, never fatal.
    They are left out of each task's denominator, so a large count means the scores rest on fewer items."""
    counts: Counter[str] = Counter()
    for r in results:
        for name, d in r.details.items():
            if isinstance(d, dict) and d.get("ungraded"):
                counts[name] += int(d["ungraded"])
    return dict(counts)


def aggregate(results: Sequence[TaskResult], n_boot: int = N_BOOT, seed: int = 0) -> dict[str, Any]:
    """The aggregate block written to results.json: metrics with CIs, tool usage, stop reasons, ungraded
    judge items."""
    return {
        "n_tasks": len(results),
        "metrics": {k: v.to_dict() for k, v in summarize(results, n_boot=n_boot, seed=seed).items()},
        "tool_usage": tool_usage(results),
        "stop_reasons": stop_reasons(results),
        "ungraded_items": ungraded_items(results),
        "bootstrap": {"n_boot": n_boot, "seed": seed, "confidence": CONFIDENCE, "unit": "task"},
    }
