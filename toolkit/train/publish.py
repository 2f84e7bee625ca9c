"""Copy a finished training run's record into the repository (``mcp-rl train --out RUN --publish DEST``).

What is kept is what a reader needs to check the claim without the run folder: ``summary.json`` (the
paired comparisons on the dev set and on every test set, the timings), ``recipe.json`` (the recipe as
run), ``metrics.jsonl`` (every logged step, with the per-kind diagnostics) and the figures drawn from
them. Adapters, checkpoints and per-episode logs stay in the run folder (large, and not evidence).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

KEPT_FILES = ("summary.json", "recipe.json", "metrics.jsonl")


def publish_run(run: str | Path, dest: str | Path) -> list[Path]:
    """Copy ``run``'s record to ``dest`` and draw its figures there; returns the files written.

    Raises FileNotFoundError naming the missing file when ``run`` is not a finished, evaluated run."""
    from toolkit.eval.plots import load_run, plot_all, plot_before_after, plot_learning_curve

    run, dest = Path(run), Path(dest)
    for name in KEPT_FILES:
        if not (run / name).is_file():
            raise FileNotFoundError(f"{run / name}: missing; publish needs a finished run")
    summary = json.loads((run / "summary.json").read_text())
    if "comparison" not in summary:
        raise FileNotFoundError(f"{run / 'summary.json'}: no comparison; run it with --evaluate first")
    before = run / "eval" / ("sft" if (run / "eval" / "sft").is_dir() else "base")
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for name in KEPT_FILES:
        shutil.copyfile(run / name, dest / name)
        written.append(dest / name)
    labels = [before.name + "-only" if before.name == "sft" else before.name, "sft+grpo"]
    written += plot_all(
        [before, run / "eval" / "grpo"],
        dest,
        labels=labels,
        metrics_file=run / "metrics.jsonl",
        reference=None,
    )
    if len(summary.get("curve") or []) > 1:  # mcp-rl train --curve
        written += plot_learning_curve(summary["curve"], dest)
    for seed in sorted(summary.get("test") or {}):
        folder = run / "eval" / f"test-seed{seed}"
        runs = [load_run(folder / before.name, labels[0]), load_run(folder / "grpo", labels[1])]
        written += plot_before_after(runs, dest, name=f"before_after_test_seed{seed}")
    return written
