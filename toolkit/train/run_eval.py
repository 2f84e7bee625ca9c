"""A run's held-out evaluations: a policy or an adapter on tasks (greedy, the recipe's evaluation loop)
through ``toolkit.eval.run_eval``, the paired comparison of two evaluations, and the learning curve."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolkit.records import Task
from toolkit.runs import EVAL_MARKER, RunFolder
from toolkit.train.config import Recipe
from toolkit.train.resume import done
from toolkit.train.runlog import log

PRIMARY_METRIC = "pass@0.75"  # share of held-out tasks with at least 3/4 of the essential rubric items


def evaluate_policy(policy: Any, tasks: list[Task], out_dir: Path, label: str, loop: Any) -> dict:
    """Held-out evaluation of a policy (greedy with the eval loop) through ``toolkit.eval.run_eval``."""
    from toolkit.agent.loop import rollout
    from toolkit.eval.suites import run_eval

    suite = "bfcl-base" if tasks and "bfcl" in tasks[0].metadata else "kit-eval"  # its scorers
    return run_eval(
        label,
        suite,
        out_dir,
        tasks=tasks,
        rollout=lambda ts: rollout(ts, policy, loop),
        label=label,
        loop_config={
            k: v for k, v in loop.__dict__.items() if isinstance(v, (int, float, str, bool, type(None)))
        },
    )


def eval_loop_config(recipe: Recipe) -> Any:
    """The held-out evaluation's agent loop: the recipe's rollout settings, greedy, with ``eval.rollout``."""
    return recipe.loop_config(temperature=0.0, **recipe.eval.get("rollout", {}))


def evaluate_adapter(
    backend: Any,
    adapter: Path | None,
    label: str,
    tasks: list[Task],
    folder: Path,
    loop: Any,
    resume: bool = True,
    say: str | None = None,
) -> dict | None:
    """Evaluate the base model plus ``adapter`` on ``tasks`` into ``folder``; a folder that holds results
    already is kept when ``resume`` (an evaluation is the same each time: by default it runs once).
    Returns the results (None when kept); its headline is logged after ``say`` (default: folder, label)."""
    if done(folder / EVAL_MARKER, resume):
        return None
    res = evaluate_policy(backend.eval_policy(adapter, label), tasks, folder, label, loop)
    backend.release()
    log(f"{say or f'{folder}, {label}'}: {headline(res)}")
    return res


def compare(before_dir: Path, after_dir: Path) -> dict[str, Any]:
    """Paired bootstrap (same tasks) of every metric: after - before with its 95% interval."""
    from toolkit.eval.metrics import compare_folders

    return {name: d.to_dict() for name, d in compare_folders(before_dir, after_dir).items()}


def learning_curve(
    backend: Any,
    run: RunFolder,
    eval_tasks: list[Task],
    eval_loop: Any,
    before_dir: Path,
    after_dir: Path,
    last_step: int,
    resume: bool = True,
) -> list[dict[str, Any]]:
    """The dev-set metrics along GRPO: the warm start (step 0, ``before_dir``), every kept checkpoint of
    the run before ``last_step`` (evaluated into ``eval/curve/step-N``, read back when done before) and
    the final adapter (``after_dir``). Each row: the step, then every metric's paired comparison against
    step 0 on the same tasks."""
    points = [(0, before_dir)]
    for step, ckpt in run.checkpoints():
        if not 0 < step < last_step:
            continue
        folder = run.eval_curve(step)
        evaluate_adapter(backend, ckpt, f"grpo-step{step}", eval_tasks, folder, eval_loop, resume)
        points.append((step, folder))
    points.append((last_step, after_dir))
    return [
        {"step": step, "folder": str(folder.relative_to(run.root)), "metrics": compare(before_dir, folder)}
        for step, folder in points
    ]


def log_primary(what: str, comparison: dict[str, Any]) -> None:
    primary = comparison.get(PRIMARY_METRIC)
    if primary:
        log(
            f"{what}: {PRIMARY_METRIC} {primary['before']:.3f} -> {primary['after']:.3f} "
            f"(diff {primary['diff']:+.3f}, paired 95% CI [{primary['ci_low']:+.3f}, {primary['ci_high']:+.3f}]: "
            f"{'zero is outside the interval' if primary['outside_ci'] else 'zero is INSIDE the interval'})"
        )


def headline(result: dict[str, Any]) -> str:
    metrics = result.get("aggregate", {}).get("metrics", {})
    parts = []
    for name in ("coverage", PRIMARY_METRIC, "pass@0.50", "finish_rate"):
        m = metrics.get(name)
        if m:
            parts.append(f"{name} {m['value']:.3f} [{m['ci_low']:.3f}, {m['ci_high']:.3f}]")
    return "; ".join(parts) or json.dumps(metrics)[:200]
