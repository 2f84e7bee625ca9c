"""Tables for notebooks and reports: metrics with CIs, paired before/after differences, published numbers.

Plain pandas DataFrames built from eval output folders; nothing here runs a model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from toolkit.eval.metrics import paired_bootstrap
from toolkit.eval.plots import REFERENCE_FILE, Run, load_reference, load_run

HEADLINE = (
    "coverage",
    "pass@0.50",
    "pass@0.75",
    "accuracy",
    "atlas_coverage",
    "tool_calls_per_task",
    "calls_over_gold_per_task",
    "calls_under_gold_per_task",
    "tool_failure_rate",
    "finish_rate",
)


# What a small model can move on BFCL while it gets no task right: its first call well formed, fewer
# failed calls, fewer calls; accuracy first, for the record.
BFCL_SIGNALS = (
    "accuracy",
    "first_call_well_formed",
    "tool_failure_rate",
    "tool_calls_per_task",
    "finish_rate",
)


# On BFCL (a binary score) coverage and the pass rates equal the accuracy: tables show accuracy only.
BINARY_DUPLICATES = ("coverage", "pass@0.50", "pass@0.75")


def _run(r: Run | str | Path) -> Run:
    return r if isinstance(r, Run) else load_run(r)


def _shown(name: str, all_names: Any, metrics: tuple[str, ...] | None) -> bool:
    if metrics is not None and name not in metrics:
        return False
    return not ("accuracy" in all_names and name in BINARY_DUPLICATES)


def metrics_table(runs: list[Run | str | Path], metrics: tuple[str, ...] | None = None) -> pd.DataFrame:
    """One row per (run, metric): value and 95% CI."""
    rows = []
    for r in map(_run, runs):
        ms = r.aggregate.get("metrics", {})
        for name, m in ms.items():
            if _shown(name, ms, metrics):
                rows.append(
                    {
                        "suite": r.suite,
                        "run": r.label,
                        "metric": name,
                        "value": m["value"],
                        "ci_low": m["ci_low"],
                        "ci_high": m["ci_high"],
                        "n": m["n"],
                    }
                )
    return pd.DataFrame(rows)


def paired_table(
    before: Run | str | Path,
    after: Run | str | Path,
    metrics: tuple[str, ...] | None = HEADLINE,
    seed: int = 0,
) -> pd.DataFrame:
    """after - before per metric on the shared tasks, paired-bootstrap CI, and whether 0 is outside it."""
    b, a = _run(before), _run(after)
    diffs = paired_bootstrap(b.tasks, a.tasks, seed=seed)
    rows = [
        {
            "suite": a.suite,
            "metric": k,
            "before": d.before,
            "after": d.after,
            "diff": d.diff,
            "ci_low": d.ci_low,
            "ci_high": d.ci_high,
            "n_pairs": d.n_pairs,
            "outside_ci": d.outside_ci,
        }
        for k, d in diffs.items()
        if _shown(k, diffs, metrics)
    ]
    return pd.DataFrame(rows)


def accuracy_table(runs: list[Run | str | Path]) -> pd.DataFrame:
    """BFCL accuracy per run: tasks right of n, the bootstrap 95% CI and the exact (Clopper-Pearson) one,
    which stays informative where every task fails and the bootstrap gives [0, 0]."""
    from toolkit.eval.metrics import exact_interval

    rows = []
    for r in map(_run, runs):
        right, n = sum(bool(t.correct) for t in r.tasks), len(r.tasks)
        m = r.aggregate.get("metrics", {}).get("accuracy", {})
        low, high = exact_interval(right, n) if n else (float("nan"), float("nan"))
        rows.append(
            {
                "suite": r.suite,
                "run": r.label,
                "right": right,
                "n": n,
                "accuracy": right / n if n else float("nan"),
                "bootstrap_low": m.get("ci_low"),
                "bootstrap_high": m.get("ci_high"),
                "exact_low": low,
                "exact_high": high,
            }
        )
    return pd.DataFrame(rows)


def reference_table(reference: str | Path = REFERENCE_FILE) -> pd.DataFrame:
    """The published numbers with absolute and relative change and their sources."""
    rows: list[dict[str, Any]] = []
    for e in load_reference(reference):
        before, after = e.get("before"), e.get("after")
        delta = e.get("delta", None if before is None else round(after - before, 2))
        rel = None if not before else round(100 * (after - before) / before, 1)
        rows.append(
            {
                "benchmark": e["benchmark"],
                "metric": e["metric"],
                "model": e["model"],
                "before": before,
                "after": after,
                "delta_points": delta,
                "relative_%": rel,
                "verified": e["verified"],
                "source": e["source"],
            }
        )
    return pd.DataFrame(rows)


def combined_table(runs: list[Run | str | Path], seed: int = 0) -> pd.DataFrame:
    """Metrics over the tasks of several runs pooled together, e.g. the four BFCL suites of one model:
    ``accuracy`` is then BFCL multi-turn overall (over all tasks) and ``accuracy/<category>`` per category."""
    from toolkit.eval.metrics import summarize

    tasks = [t for r in map(_run, runs) for t in r.tasks]
    ests = summarize(tasks, seed=seed)
    return pd.DataFrame(
        [
            {"metric": k, "value": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high, "n": e.n}
            for k, e in ests.items()
        ]
    )
