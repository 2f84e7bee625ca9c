"""Copy a finished training run's record into the repository (``mcp-rl publish RUN DEST``).

What is kept is what a reader needs to check the claim without the run folder: ``summary.json`` (the
paired comparisons on the dev set and on every test set, the timings), ``recipe.json`` (the recipe as
run), ``metrics.jsonl`` (every logged step, with the per-kind diagnostics) and the figures drawn from
them. Adapters, checkpoints and per-episode logs stay in the run folder (large, and not evidence).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from toolkit.runs import RunFolder


def publish_run(run: str | Path, dest: str | Path) -> list[Path]:
    """Copy ``run``'s record to ``dest`` and draw its figures there; returns the files written.

    Raises FileNotFoundError naming the missing file when ``run`` is not a finished, evaluated run."""
    from toolkit.eval.plots import load_run, plot_all, plot_before_after, plot_learning_curve

    run, dest = RunFolder(run), Path(dest)
    for path in run.published_files():
        if not path.is_file():
            raise FileNotFoundError(f"{path}: missing; publish needs a finished run")
    summary = json.loads(run.summary_file.read_text())
    if "comparison" not in summary:
        raise FileNotFoundError(f"{run.summary_file}: no comparison; run it with --evaluate first")
    warm = run.evaluated_warm_start()
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    # the published record keeps the run's file names: RunFolder reads it as it reads the run
    for src, copy in zip(run.published_files(), RunFolder(dest).published_files(), strict=True):
        shutil.copyfile(src, copy)
        written.append(copy)
    labels = ["sft-only" if warm else "base", "sft+grpo"]
    written += plot_all(
        [run.eval_before(warm), run.eval_after()],
        dest,
        labels=labels,
        metrics_file=run.metrics_file,
        reference=None,
    )
    if len(summary.get("curve") or []) > 1:  # mcp-rl train --curve
        written += plot_learning_curve(summary["curve"], dest)
    for seed in sorted(summary.get("test") or {}):
        runs = [load_run(run.eval_before(warm, seed), labels[0]), load_run(run.eval_after(seed), labels[1])]
        written += plot_before_after(runs, dest, name=f"before_after_test_seed{seed}")
    return written
