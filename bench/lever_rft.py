"""Issue 49's RFT lever measured alone on the dev set: the frozen warm start against the same warm start
after one round of rejection-sampling fine-tuning on its own right-and-short episodes (no GRPO).

    python -m bench.lever_rft runs/lever-rft --rft-tasks 80 --generations 4 --out docs/cpu-proof/lever-rft.json

1. **round**: the recipe (default ``cpu-learn``) from the frozen warm start (``--warm-start``, default the
   shipped ``data/adapters/cpu-learn/warm_start``) with its ``rft`` section on (the first ``--rft-tasks``
   train tasks, ``--generations`` episodes each at the rollout temperature), stopped after the round
   (``run_recipe(stop_after="rft")``) into ``ROOT/run``.
2. **dev**: the first ``--dev-tasks`` dev tasks (the recipe's eval split), greedy with the recipe's
   evaluation loop: the warm start into ``ROOT/dev/warm_start`` and the round's adapter into
   ``ROOT/dev/rft``. ``--before DIR`` reads the warm start's results from an earlier evaluation of the
   same tasks instead (``results.jsonl``, matched by task id; pass the task files it ran on with
   ``--set tasks=... --set eval_tasks=...``: synth output changes with the code, so the same ids can name
   other tasks); then the warm start is evaluated again on ``--check-tasks`` of them spread over the set
   (``ROOT/dev/check``) and every one must score as recorded, or the command stops: a stored "before"
   from other code or other tasks would make the difference meaningless.
3. **out**: after - before, paired by task, 95% bootstrap CI over tasks, for in-template tasks, held-out
   templates and all (``toolkit.eval.claim``'s groups), per task kind, and the claim's guards (finish
   rate, calls per task, well-formed first calls); the round's counts (``summary.json``'s ``rft``).

Every stage is skipped when its outputs exist: run it again with the same arguments to go on.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.reproduce_claim import base_recipe, derived, say
from toolkit.argtypes import positive_int
from toolkit.records import Task, TaskResult, dumps, read_task_results, write_jsonl
from toolkit.train.claim_eval import ClaimEvaluator

SHIPPED_WARM_START = Path("data/adapters/cpu-learn/warm_start")


def difference(tasks: list[Task], before: list[TaskResult], after: list[TaskResult]) -> dict[str, Any]:
    """after - before per task on ``tasks`` (both must cover every one): the claim's groups, kinds, guards."""
    from toolkit.eval.claim import GROUPS, GUARDS, greedy_row, seed_mean_difference, template_group
    from toolkit.train.batching import task_kind

    rows = []
    for name, results in (("before", before), ("after", after)):
        got = {r.task_id: greedy_row(r) for r in results}
        missing = [t.id for t in tasks if t.id not in got]
        if missing:
            raise SystemExit(
                f"{name}: no result for {len(missing)} of {len(tasks)} tasks ({missing[0]}, ...)"
            )
        rows.append([got[t.id] for t in tasks])

    def block(selected: list[int], metric: str) -> dict[str, float]:
        b = np.array([rows[0][i][metric] for i in selected])
        a = np.array([[rows[1][i][metric] for i in selected]])
        return seed_mean_difference(b, a)

    everything = list(range(len(tasks)))
    out: dict[str, Any] = {}
    for group in GROUPS:
        selected = [i for i in everything if group == "all" or template_group(tasks[i]) == group]
        out[group] = {"greedy": block(selected, "pass")} if selected else None
    kinds = [task_kind(t) for t in tasks]
    out["per_kind"] = {
        kind: {"greedy": block([i for i in everything if kinds[i] == kind], "pass")}
        for kind in sorted(set(kinds))
    }
    out["guards"] = {guard: block(everything, guard) for guard in GUARDS}
    return out


def stored_before(before: Path, tasks: list[Task], folder: Path) -> None:
    """Copy the results of ``tasks`` from an earlier evaluation (``before/results.jsonl``) into ``folder``."""
    results = {r.task_id: r for r in read_task_results(before / "results.jsonl")}
    missing = [t.id for t in tasks if t.id not in results]
    if missing:
        raise SystemExit(f"{before}: no result for {len(missing)} dev tasks ({missing[0]}, ...)")
    folder.mkdir(parents=True, exist_ok=True)
    write_jsonl(folder / "results.jsonl", [results[t.id].to_dict() for t in tasks])
    (folder / "source.json").write_text(json.dumps({"copied_from": str(before)}) + "\n")


def spread(tasks: list[Task], n: int) -> list[Task]:
    """``n`` tasks evenly spaced over ``tasks`` (all when fewer): a check that reaches the end of the set,
    where a task file synthesised by other code differs first (ids are given in order)."""
    if n >= len(tasks):
        return list(tasks)
    return [tasks[round(i * (len(tasks) - 1) / (n - 1))] if n > 1 else tasks[0] for i in range(n)]


def check_reproduces(stored: Path, again: Path) -> int:
    """Every task evaluated again scores as stored (pass, score, stop reason, calls); returns the count."""
    kept = {r.task_id: r for r in read_task_results(stored / "results.jsonl")}
    fresh = read_task_results(again / "results.jsonl")
    differ = [
        r.task_id
        for r in fresh
        if (r.score, r.stop_reason, r.n_calls)
        != (kept[r.task_id].score, kept[r.task_id].stop_reason, kept[r.task_id].n_calls)
    ]
    if differ:
        raise SystemExit(
            f"the warm start evaluated again differs from {stored} on {len(differ)} of {len(fresh)} tasks"
            f" ({differ[0]}, ...): the stored results are not this code's; run without --before"
        )
    return len(fresh)


def source_commit() -> str | None:
    """The commit the measurement ran from, with ``+dirty`` when the tree had changes (None: no git)."""

    def git(*cmd: str) -> str:
        return subprocess.run(["git", *cmd], capture_output=True, text=True, check=True).stdout.strip()

    try:
        return git("rev-parse", "--short", "HEAD") + (
            "+dirty" if git("status", "--porcelain", "--untracked-files=no") else ""
        )
    except (OSError, subprocess.CalledProcessError):
        return None


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from toolkit.runs import LeverFolder, has_adapter
    from toolkit.train.device import machine_line, probe
    from toolkit.train.pipeline import run_recipe
    from toolkit.train.rft import last_round_adapter, round_summaries
    from toolkit.train.task_sources import read_tasks, resolve_task_files

    root: Path = args.root
    started, commit = time.time(), source_commit()  # the code this run starts from, not the tree at its end
    recipe = derived(
        base_recipe(args),
        **{
            "warm_start": str(args.warm_start),
            "rft.num_generations": args.generations,
            "rft.max_tasks": args.rft_tasks,
        },
    )
    folder = LeverFolder(root)
    run = folder.run
    adapter = last_round_adapter(run, recipe.rft)  # with --set rft.rounds=N, the last round's
    if not has_adapter(adapter):
        say(f"RFT round from {args.warm_start} into {run.root}")
        run_recipe(recipe, run.root, resume=run.recipe_file.exists(), stop_after="rft")
        say("RFT round done", started)
    summary = json.loads(run.summary_file.read_text())

    tasks = read_tasks(resolve_task_files(recipe, run.root)[1], "eval")[: args.dev_tasks]
    with ClaimEvaluator(recipe, samples=0) as evaluator:  # greedy only
        before = folder.before
        checked = None
        if args.before is not None:
            if not (before / "results.jsonl").exists():
                stored_before(args.before, tasks, before)
            check = folder.check
            evaluator.greedy(args.warm_start, "warm start (check)", spread(tasks, args.check_tasks), check)
            checked = check_reproduces(before, check)
            say(f"the stored warm-start results reproduce on {checked} of {checked} tasks evaluated again")
        else:
            evaluator.greedy(args.warm_start, "warm start", tasks, before)
        after = folder.after("rft")
        evaluator.greedy(adapter, "rft", tasks, after)

    result = {
        "lever": "rft",
        "commit": commit,
        "cpu": machine_line(probe()),
        "warm_start": str(args.warm_start),
        "recipe": str(args.recipe),
        "set": list(args.set),
        "rft_tasks": args.rft_tasks,
        "generations": args.generations,
        "dev_tasks": len(tasks),
        "before": str(args.before) if args.before else "evaluated here",
        "before_checked_tasks": checked,
        **round_summaries(summary),
        "timings_s": summary.get("timings_s"),
        **difference(
            tasks, read_task_results(before / "results.jsonl"), read_task_results(after / "results.jsonl")
        ),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dumps(result, indent=1, sort_keys=True) + "\n")
    g = result["all"]["greedy"]
    say(
        f"dev pass@0.75 {g['before']:.3f} -> {g['after']:.3f} (diff {g['diff']:+.3f},"
        f" 95% CI [{g['ci_low']:+.3f}, {g['ci_high']:+.3f}], {g['n_tasks']} tasks); wrote {args.out}",
        started,
    )
    return result


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.lever_rft", description=__doc__.split("\n")[0])
    parser.add_argument("root", type=Path, help="the measurement's folder (run, evaluations); resumable")
    parser.add_argument("--out", type=Path, required=True, help="the JSON to write")
    parser.add_argument("--recipe", default="cpu-learn", help="recipe name or YAML path (default cpu-learn)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="recipe override")
    parser.add_argument("--warm-start", type=Path, default=SHIPPED_WARM_START, help="the frozen warm start")
    parser.add_argument("--rft-tasks", type=positive_int, default=80, help="train tasks sampled (80)")
    parser.add_argument("--generations", type=positive_int, default=4, help="episodes per train task (4)")
    parser.add_argument("--dev-tasks", type=positive_int, default=None, help="only the first N dev tasks")
    parser.add_argument("--before", type=Path, default=None, help="an earlier warm-start evaluation to reuse")
    parser.add_argument(
        "--check-tasks", type=positive_int, default=20, help="tasks re-evaluated to check --before"
    )
    parser.add_argument("--verbose", action="store_true", help="show the libraries' logs and warnings")
    args = parser.parse_args(argv)
    from toolkit.train.quiet import quiet_libraries

    quiet_libraries(args.verbose or None)
    measure(args)


if __name__ == "__main__":  # vLLM's engine starts in a spawned process: the guard keeps it from re-running
    main()
