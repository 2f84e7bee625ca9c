"""Figures from evaluation results only (results.json / results.jsonl of `mcp-rl eval` runs, a training
run's metrics.jsonl, the kit's reference_results.json). Every figure is saved as PNG and SVG.

The kit does not choose a matplotlib backend: JupyterLab and Colab show figures inline, and where there
is no display (CI, papermill, a server) matplotlib falls back to Agg by itself.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from toolkit.eval.metrics import paired_bootstrap
from toolkit.paths import DATA_DIR
from toolkit.records import MetricsRow, TaskResult, read_jsonl, read_task_results

REFERENCE_FILE = DATA_DIR / "reference_results.json"
# Metrics shown in the before/after panel, per kind of suite, in reading order.
ATLAS_METRICS = ("coverage", "pass@0.50", "pass@0.75", "atlas_coverage", "finish_rate", "tool_failure_rate")
PUBLISHED_METRICS = ("coverage", "pass@0.50", "pass@0.75")
BFCL_METRICS = ("accuracy", "finish_rate", "tool_failure_rate")
# Training-curve panels: (title, candidate keys in metrics.jsonl, first match wins). The kit's trainer
# logs TRL's names (reward, reward_std, frac_reward_zero_std, completions/mean_length, kl) plus the
# loop's episode metrics (episodes/...); the other names are accepted for hand-written files.
CURVES = (
    ("reward (mean ± std)", ("reward", "reward_mean", "rewards/mean")),
    ("zero-variance groups", ("frac_reward_zero_std", "zero_variance_share", "zero_std_share")),
    ("completion length", ("completions/mean_length", "completion_length", "completion_length_mean")),
    ("clipped completions", ("completions/clipped_ratio", "clipped_ratio")),
    ("tool calls / episode", ("episodes/tool_calls_mean", "tool_calls", "tool_calls_per_episode")),
    ("tool failure rate", ("episodes/tool_failure_rate", "tool_failure_rate", "failure_rate")),
    ("finish rate", ("episodes/finish_rate", "finish_rate")),
    ("answer correct (sampled)", ("episodes/answer_correct",)),
    ("KL", ("kl", "kl_mean")),
    ("loss", ("loss",)),
)
REWARD_STD_KEYS = ("reward_std", "rewards/std")
COLORS = ("#7f8c8d", "#2e86de", "#e67e22", "#27ae60", "#8e44ad", "#c0392b")


@dataclass
class Run:
    """One evaluation run loaded from its output folder."""

    label: str
    suite: str
    aggregate: dict[str, Any]
    config: dict[str, Any]
    tasks: list[TaskResult] = field(default_factory=list)
    path: Path | None = None

    def metric(self, name: str) -> dict[str, float] | None:
        """One metric's estimate; a bound JSON could not hold (NaN, written as null) reads back as NaN."""
        est = self.aggregate.get("metrics", {}).get(name)
        if est is None:
            return None
        return {k: (np.nan if v is None else v) for k, v in est.items()}


def load_run(path: str | Path, label: str | None = None) -> Run:
    """Read results.json (and results.jsonl when present) from an eval output folder."""
    path = Path(path)
    summary_file = path / "results.json" if path.is_dir() else path
    folder = summary_file.parent
    data = json.loads(summary_file.read_text(encoding="utf-8"))
    per_task = folder / "results.jsonl"
    tasks = read_task_results(per_task) if per_task.exists() else []
    return Run(
        label=label or data.get("label") or folder.name,
        suite=data.get("suite", "?"),
        aggregate=data.get("aggregate", {}),
        config=data.get("config", {}),
        tasks=tasks,
        path=folder,
    )


def save(fig: plt.Figure, out_dir: str | Path, name: str) -> list[Path]:
    """Save a figure as PNG and SVG; returns both paths and closes the figure."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for ext in ("png", "svg"):
        p = out_dir / f"{name}.{ext}"
        fig.savefig(p, dpi=120, bbox_inches="tight")
        paths.append(p)
    plt.close(fig)
    return paths


def _by_suite(runs: list[Run]) -> OrderedDict[str, list[Run]]:
    groups: OrderedDict[str, list[Run]] = OrderedDict()
    for r in runs:
        groups.setdefault(r.suite, []).append(r)
    return groups


def _suite_metrics(runs: list[Run], kind: str = "headline") -> list[str]:
    """Metrics of a suite's runs to draw: ``headline`` (the suite's main rates), ``published`` (those the
    write-ups report: coverage and pass rates, or BFCL accuracy) or ``rubric`` (per-category pass rates)."""
    names = set().union(*(r.aggregate.get("metrics", {}).keys() for r in runs))
    bfcl = "accuracy" in names
    if kind == "rubric":
        return sorted(n for n in names if n.startswith("rubric/"))
    if kind == "published":
        wanted: tuple[str, ...] = ("accuracy",) if bfcl else PUBLISHED_METRICS
    else:
        wanted = BFCL_METRICS if bfcl else ATLAS_METRICS
    return [n for n in wanted if n in names]


def plot_before_after(
    runs: list[Run], out_dir: str | Path, name: str = "before_after", kind: str = "headline"
) -> list[Path]:
    """Grouped bars (one colour per run) of each suite's metrics with 95% bootstrap CIs as error bars.

    With two runs on the same tasks, the title of each metric says the paired difference and whether it
    lies outside the paired-bootstrap CI ("*")."""
    groups = OrderedDict((k, v) for k, v in _by_suite(runs).items() if _suite_metrics(v, kind))
    if not groups:
        return []
    fig, axes = plt.subplots(1, len(groups), figsize=(max(5.0, 4.6 * len(groups)), 4.4), squeeze=False)
    for ax, (suite, suite_runs) in zip(axes[0], groups.items(), strict=True):
        metrics = _suite_metrics(suite_runs, kind)
        diffs = {}
        if len(suite_runs) >= 2 and suite_runs[0].tasks and suite_runs[-1].tasks:
            try:
                diffs = paired_bootstrap(suite_runs[0].tasks, suite_runs[-1].tasks)
            except ValueError:
                diffs = {}
        x = np.arange(len(metrics))
        width = 0.8 / max(1, len(suite_runs))
        for i, run in enumerate(suite_runs):
            vals, lo, hi = [], [], []
            for m in metrics:
                est = run.metric(m) or {"value": np.nan, "ci_low": np.nan, "ci_high": np.nan}
                vals.append(est["value"])
                lo.append(est["value"] - est["ci_low"])
                hi.append(est["ci_high"] - est["value"])
            pos = x + (i - (len(suite_runs) - 1) / 2) * width
            ax.bar(pos, vals, width, label=run.label, color=COLORS[i % len(COLORS)])
            ax.errorbar(
                pos, vals, yerr=[np.nan_to_num(lo), np.nan_to_num(hi)], fmt="none", ecolor="k", capsize=3
            )
        labels = []
        for m in metrics:
            d = diffs.get(m)
            short = m.removeprefix("rubric/")
            labels.append(
                short
                if d is None or np.isnan(d.diff)
                else f"{short}\n{d.diff:+.2f}{'*' if d.outside_ci else ''}"
            )
        ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=8)
        ax.set_ylim(0, max(1.05, ax.get_ylim()[1]))
        n = suite_runs[0].aggregate.get("n_tasks", "?")
        ax.set_title(f"{suite} (n={n})")
        ax.legend(fontsize=8)
    fig.suptitle("Before vs after, 95% bootstrap CI (* = paired difference outside its CI)", fontsize=10)
    return save(fig, out_dir, name)


def plot_tool_usage(
    runs: list[Run], out_dir: str | Path, name: str = "tool_usage", top: int = 12
) -> list[Path]:
    """Tool usage, one row per suite: histogram of calls per task and each tool's share of the calls,
    one colour per run. Scale saw trained models concentrate their calls on fewer, higher-value tools."""
    groups = _by_suite(runs)
    fig, axes = plt.subplots(len(groups), 2, figsize=(11, 3.8 * len(groups)), squeeze=False)
    for (ax_hist, ax_tools), (suite, suite_runs) in zip(axes, groups.items(), strict=True):
        usage = [r.aggregate.get("tool_usage", {}) for r in suite_runs]
        hist = [u.get("calls_per_task_histogram", {}) for u in usage]
        x = np.arange(max([int(k) for h in hist for k in h] or [0]) + 1)
        width = 0.8 / max(1, len(suite_runs))
        for i, (run, h) in enumerate(zip(suite_runs, hist, strict=True)):
            total = max(1, sum(h.values()))
            shares = [h.get(str(k), 0) / total for k in x]
            pos = x + (i - (len(suite_runs) - 1) / 2) * width
            ax_hist.bar(pos, shares, width, label=run.label, color=COLORS[i % len(COLORS)])
        ax_hist.set_xticks(x)
        ax_hist.set_xlabel("tool calls in the episode")
        ax_hist.set_ylabel("share of tasks")
        ax_hist.legend(fontsize=8)
        ax_hist.set_title(f"{suite}: calls per task", fontsize=10)

        per_tool = [u.get("calls_per_tool", {}) for u in usage]
        totals: dict[str, int] = {}
        for pt in per_tool:
            for k, v in pt.items():
                totals[k] = totals.get(k, 0) + v
        tools = [k for k, _ in sorted(totals.items(), key=lambda kv: -kv[1])[:top]]
        y = np.arange(len(tools))
        height = 0.8 / max(1, len(suite_runs))
        for i, (run, pt) in enumerate(zip(suite_runs, per_tool, strict=True)):
            total = max(1, sum(pt.values()))
            shares = [pt.get(t, 0) / total for t in tools]
            ax_tools.barh(y + i * height, shares, height, label=run.label, color=COLORS[i % len(COLORS)])
        ax_tools.set_yticks(y + height * (len(suite_runs) - 1) / 2, tools, fontsize=7)
        ax_tools.invert_yaxis()
        ax_tools.set_xlabel("share of the run's calls")
        ax_tools.set_title(f"{suite}: top {len(tools)} tools", fontsize=10)
    fig.tight_layout()
    return save(fig, out_dir, name)


def plot_finish_rate(runs: list[Run], out_dir: str | Path, name: str = "finish_rate") -> list[Path]:
    """How episodes ended, per run (stacked shares of stop reasons); finish = an explicit finish call."""
    reasons = ("finish", "no_tool_call", "max_turns", "length", "error")
    fig, ax = plt.subplots(figsize=(max(4.0, 1.4 * len(runs) + 2), 4))
    bottom = np.zeros(len(runs))
    for j, reason in enumerate(reasons):
        shares = []
        for run in runs:
            counts = run.aggregate.get("stop_reasons", {})
            shares.append(counts.get(reason, 0) / max(1, sum(counts.values())))
        ax.bar([f"{r.label}\n{r.suite}" for r in runs], shares, bottom=bottom, label=reason, color=COLORS[j])
        bottom += np.array(shares)
    ax.set_ylabel("share of episodes")
    ax.set_ylim(0, 1.0)
    ax.legend(fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left")
    ax.set_title("How episodes ended")
    return save(fig, out_dir, name)


def read_metrics_jsonl(path: str | Path) -> list[MetricsRow]:
    """A training run's metrics.jsonl (one row per logged step). A last line cut short by a killed run is
    left out; any other bad line raises RecordError naming file and line."""
    return read_jsonl(path, MetricsRow, torn_tail=True)


def plot_training_curves(
    metrics_file: str | Path, out_dir: str | Path, name: str = "training_curves"
) -> list[Path]:
    """One panel per training metric found in metrics.jsonl, against the step."""
    rows = read_metrics_jsonl(metrics_file)
    panels = []
    for title, keys in CURVES:
        key = next((k for k in keys if any(r.values.get(k) is not None for r in rows)), None)
        if key:
            panels.append((title, key))
    if not panels:
        raise ValueError(
            f"{metrics_file}: no known training metric found (looked for {[c[1] for c in CURVES]})"
        )
    grpo_start = next((r.step for r in rows if r.phase == "grpo"), None)
    cols = min(4, len(panels))
    nrows = -(-len(panels) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(3.4 * cols, 2.8 * nrows), squeeze=False)
    for ax, (title, key) in zip(axes.flat, panels, strict=False):
        pts = [(r.step, r.values[key]) for r in rows if r.values.get(key) is not None]
        steps, vals = np.array(pts, dtype=float).T
        ax.plot(steps, vals, color=COLORS[1], lw=1.5)
        std_key = next((k for k in REWARD_STD_KEYS if any(k in r.values for r in rows)), None)
        if title.startswith("reward") and std_key:
            std = np.array(
                [r.values.get(std_key, np.nan) for r in rows if r.values.get(key) is not None], float
            )
            ax.fill_between(steps, vals - std, vals + std, color=COLORS[1], alpha=0.2)
        if grpo_start is not None and steps.min() < grpo_start:  # SFT warm start, then GRPO
            ax.axvline(grpo_start, color="k", lw=0.8, ls=":")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.tight_layout()
    return save(fig, out_dir, name)


# Learning-curve panels (summary.json's ``curve``): each metric's paired difference against step 0.
CURVE_METRICS = (
    ("pass@0.75", "pass@0.75 (primary)"),
    ("pass@0.50", "pass@0.50"),
    ("coverage", "coverage"),
    ("rubric/answer_correctness", "answer correctness"),
    ("tool_calls_per_task", "tool calls / task"),
    ("finish_rate", "finish rate"),
)


def plot_learning_curve(
    curve: list[dict[str, Any]], out_dir: str | Path, name: str = "learning_curve"
) -> list[Path]:
    """The dev-set learning curve of a run (``summary["curve"]``, ``mcp-rl train --curve``): for each
    metric, the value after every evaluated GRPO step (line) and the paired 95% CI of its difference
    from step 0, the warm start (band around step 0's value plus the difference)."""
    rows = sorted(curve, key=lambda r: r["step"])
    panels = [(key, title) for key, title in CURVE_METRICS if any(key in r["metrics"] for r in rows)]
    if len(rows) < 2 or not panels:
        raise ValueError("a learning curve needs step 0 and at least one GRPO step with their metrics")
    cols = min(3, len(panels))
    nrows = -(-len(panels) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(3.6 * cols, 2.8 * nrows), squeeze=False)
    for ax, (key, title) in zip(axes.flat, panels, strict=False):
        pts = [(r["step"], r["metrics"][key]) for r in rows if key in r["metrics"]]
        steps = np.array([s for s, _ in pts], float)
        base = np.array([m["before"] for _, m in pts], float)
        after = np.array([m["after"] for _, m in pts], float)
        low = base + np.array([m["ci_low"] for _, m in pts], float)
        high = base + np.array([m["ci_high"] for _, m in pts], float)
        ax.fill_between(steps, low, high, color=COLORS[1], alpha=0.2, label="paired 95% CI")
        ax.plot(steps, after, "o-", color=COLORS[1], lw=1.5, ms=4)
        ax.axhline(base[0], color="k", lw=0.8, ls=":", label="warm start")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("GRPO step", fontsize=8)
    axes.flat[0].legend(fontsize=7)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.tight_layout()
    return save(fig, out_dir, name)


def load_reference(path: str | Path = REFERENCE_FILE) -> list[dict[str, Any]]:
    """The published numbers with their sources (data/reference_results.json)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))["entries"]


def plot_reference(
    out_dir: str | Path,
    runs: list[Run] | None = None,
    reference: str | Path = REFERENCE_FILE,
    name: str = "reference",
) -> list[Path]:
    """Published before -> after numbers (percent), beside this kit's runs when given.

    Unverified entries (not found in the write-ups) are hatched and marked in their label."""
    entries = [e for e in load_reference(reference) if e.get("before") is not None]
    rows = [
        (
            f"{e['benchmark']} {e['metric']}\n{e['model']}{'' if e.get('verified') else ' (unverified)'}",
            e["before"],
            e["after"],
            bool(e.get("verified")),
        )
        for e in entries
    ]
    for suite, suite_runs in _by_suite(runs or []).items():
        if len(suite_runs) < 2:
            continue
        first, last = suite_runs[0], suite_runs[-1]
        for m in _suite_metrics(suite_runs, "published"):
            b, a = first.metric(m), last.metric(m)
            if b and a:
                rows.append(
                    (
                        f"this kit: {suite} {m}\n{first.label} -> {last.label}",
                        100 * b["value"],
                        100 * a["value"],
                        True,
                    )
                )
    fig, ax = plt.subplots(figsize=(8, 0.55 * len(rows) + 1.5))
    y = np.arange(len(rows))
    for i, (_, before, after, verified) in enumerate(rows):
        hatch = None if verified else "//"
        ax.barh(i - 0.18, before, 0.36, color=COLORS[0], hatch=hatch, label="before" if i == 0 else None)
        ax.barh(i + 0.18, after, 0.36, color=COLORS[1], hatch=hatch, label="after" if i == 0 else None)
        ax.text(after + 0.5, i + 0.18, f"{before:.1f} -> {after:.1f}", va="center", fontsize=7)
    ax.set_yticks(y, [r[0] for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("%")
    ax.set_xlim(0, 100)
    ax.legend(fontsize=8, loc="upper right")
    deltas = [e for e in load_reference(reference) if e.get("before") is None and e.get("delta") is not None]
    notes = "; ".join(
        f"{e['group'].split(':')[0]}: {e['delta']:+.1f} points on {e['benchmark']} ({e['model']})"
        for e in deltas
    )
    cites = sorted({e["cite"] for e in load_reference(reference) if e.get("cite")})
    if cites:  # the tables the per-model rows come from
        notes = (notes + ". " if notes else "") + "Per-model rows: " + "; ".join(cites)
    if notes:
        fig.text(
            0.01,
            -0.01,
            "Reported as a gain only: " + notes + ". Hatched: not found in the cited write-ups.",
            fontsize=7,
            wrap=True,
            va="top",
        )
    ax.set_title("Published results (sources in data/reference_results.json)", fontsize=10)
    return save(fig, out_dir, name)


KIND_PANELS = (("reward_mean", "reward by task kind"), ("zero_std_share", "zero-variance groups by kind"))


def kind_columns(rows: list[MetricsRow]) -> list[str]:
    """Task kinds with per-step diagnostics (``kinds/<kind>/...``, toolkit.train.diagnostics)."""
    names = {k for r in rows for k in r.values}
    return sorted({k.split("/")[1] for k in names if k.startswith("kinds/") and k.count("/") == 2})


def plot_kind_diagnostics(
    metrics_file: str | Path, out_dir: str | Path, name: str = "kind_diagnostics", window: int = 5
) -> list[Path]:
    """GRPO reward and zero-variance group share per task kind against the step, each as a running
    mean over the last ``window`` steps that sampled the kind (a step often samples one task)."""
    rows = [r for r in read_metrics_jsonl(metrics_file) if r.phase == "grpo"]
    kinds = kind_columns(rows)
    if not kinds:
        raise ValueError(f"{metrics_file}: no per-kind diagnostics (kinds/<kind>/...) to plot")
    fig, axes = plt.subplots(1, len(KIND_PANELS), figsize=(4.2 * len(KIND_PANELS), 3.0), squeeze=False)
    for ax, (column, title) in zip(axes.flat, KIND_PANELS, strict=True):
        for i, kind in enumerate(kinds):
            key = f"kinds/{kind}/{column}"
            pts = [(r.step, r.values[key]) for r in rows if r.values.get(key) is not None]
            if not pts:
                continue
            steps, vals = np.array(pts, dtype=float).T
            running = np.array([vals[max(0, j - window + 1) : j + 1].mean() for j in range(len(vals))])
            color = COLORS[(i + 1) % len(COLORS)]
            ax.scatter(steps, vals, s=8, color=color, alpha=0.35)
            ax.plot(steps, running, color=color, lw=1.5, label=f"{kind} ({len(vals)} steps)")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    return save(fig, out_dir, name)


# Seed-curve panels: (title, phases, key). The loss panel is the supervised phases (the warm start's SFT,
# each seed's RFT round, against the run's step); the others are GRPO's sampled episodes against the GRPO
# step, one point per optimizer step.
SEED_PANELS = (
    ("loss (SFT, then RFT)", ("sft", "rft"), "loss"),
    ("answer correct (sampled)", ("grpo",), "episodes/answer_correct"),
    ("reward", ("grpo",), "reward"),
    ("tool calls / episode", ("grpo",), "episodes/tool_calls_mean"),
    ("finish rate", ("grpo",), "episodes/finish_rate"),
)


def plot_seed_curves(
    curves: dict[str, str | Path], out_dir: str | Path, name: str = "seed_curves"
) -> list[Path]:
    """Several runs' training curves side by side (label -> metrics.jsonl): a claim's warm start and each
    GRPO seed, one line each, and on GRPO's panels the seeds' mean."""
    rows = {label: read_metrics_jsonl(path) for label, path in curves.items()}
    fig, axes = plt.subplots(1, len(SEED_PANELS), figsize=(3.3 * len(SEED_PANELS), 2.9), squeeze=False)
    for ax, (title, phases, key) in zip(axes.flat, SEED_PANELS, strict=True):
        on_grpo = phases == ("grpo",)
        lines = {}
        for i, (label, run) in enumerate(rows.items()):
            pts = [
                (r.phase_step if on_grpo else r.step, r.values[key])
                for r in run
                if r.phase in phases and r.values.get(key) is not None and (r.phase_step or not on_grpo)
            ]
            if not pts:
                continue
            x, y = np.array(pts, dtype=float).T
            lines[label] = dict(zip(x, y, strict=True))
            ax.plot(x, y, color=COLORS[i % len(COLORS)], lw=1.2, alpha=0.8, marker=".", ms=3, label=label)
        if on_grpo and len(lines) > 1:  # the seed mean, over the steps every seed logged
            common = sorted(set.intersection(*(set(line) for line in lines.values())))
            ax.plot(
                common,
                [np.mean([line[x] for line in lines.values()]) for x in common],
                "k",
                lw=2.2,
                label="mean",
            )
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("GRPO step" if on_grpo else "step", fontsize=8)
    handles = {}  # one legend for the figure: every label once, wherever it was drawn
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    fig.legend(handles.values(), handles.keys(), loc="center right", fontsize=8)
    fig.tight_layout(rect=(0, 0, 0.9, 1))
    return save(fig, out_dir, name)


def plot_all(
    result_dirs: list[str | Path],
    out_dir: str | Path,
    labels: list[str] | None = None,
    metrics_file: str | Path | None = None,
    reference: str | Path | None = REFERENCE_FILE,
) -> list[Path]:
    """Every figure the given runs support; what `mcp-rl plot` calls. Returns the files written."""
    if labels and len(labels) != len(result_dirs):
        raise ValueError("give one label per results folder")
    runs = [load_run(d, labels[i] if labels else None) for i, d in enumerate(result_dirs)]
    paths: list[Path] = []
    if runs:
        paths += plot_before_after(runs, out_dir)
        paths += plot_before_after(runs, out_dir, name="rubric_categories", kind="rubric")
        paths += plot_tool_usage(runs, out_dir)
        paths += plot_finish_rate(runs, out_dir)
    if metrics_file:
        paths += plot_training_curves(metrics_file, out_dir)
        if kind_columns(read_metrics_jsonl(metrics_file)):
            paths += plot_kind_diagnostics(metrics_file, out_dir)
    if reference:
        paths += plot_reference(out_dir, runs, reference)
    return paths
