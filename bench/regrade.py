"""Re-grade a shipped adapter pair with the commitment answer check, beside the check it replaced.

Until issue 48 an ``answer`` rubric item passed when the expected value appeared anywhere in the answer
(``legacy_answer_check`` below, kept here only for this side-by-side). This script evaluates a shipped
warm start and its GRPO adapter on the recipe's dev set and test sets (greedy, the recipe's evaluation
loop and backend: what ``mcp-rl train --evaluate --test`` did), then grades every trajectory twice and
prints pass@0.75 under both checks, the paired GRPO - warm start difference with its 95% CI, and how
many answers passed under the old check only (pasted, hedged, listed or stated inside a longer value).

    python -m bench.regrade data/adapters/cpu-learn runs/regrade-cpu-learn [--sets dev test-seed2026 ...]

Evaluations are written once into OUT/eval/<set>/{before,after} and read back on a second run.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from toolkit.checks import normalize as norm
from toolkit.records import Task, Trajectory, read_jsonl
from toolkit.rewards import rubric
from toolkit.rewards.base import answer_text

THRESHOLD = 0.75


def legacy_answer_check(spec: dict, task: Task, traj: Trajectory) -> tuple[str, str]:
    """The answer check before issue 48: the expected value anywhere in the answer."""
    text = answer_text(traj)
    ok = bool(text.strip()) and norm.contains(
        spec.get("normalize"), text, spec.get("value"), float(spec.get("tolerance", 0.0))
    )
    return ("pass", "states the value") if ok else ("fail", "does not state the value")


def legacy_clarification_check(spec: dict, task: Task, traj: Trajectory) -> tuple[str, str]:
    """The clarification check before issue 48: any question mark, cut or copied or not."""
    asked = "?" in (traj.final_answer or "")
    return ("pass" if asked and not traj.state_diff else "partial" if asked else "fail"), ""


def grade(tasks: dict[str, Task], trajs: list[Trajectory], legacy: bool) -> dict[str, dict[str, Any]]:
    """task id -> rubric score, pass@0.75 and the verdict of each answer item, under one check."""
    saved = dict(rubric.CHECKS)
    if legacy:
        rubric.CHECKS["answer"] = legacy_answer_check
        rubric.CHECKS["clarification"] = legacy_clarification_check
    try:
        reward = rubric.RubricReward()
        out = {}
        for traj in trajs:
            task = tasks[traj.task_id]
            res = reward(task, traj)
            items = {i["id"]: i for i in res.details["items"]}
            answers = [it.id for it in task.rubric if it.check.get("type") == "answer" and it.essential]
            # the old pass@0.75 read the score alone; the new one also needs every stated value
            gate = legacy or not res.details.get("answer_failed")
            out[traj.task_id] = {
                "score": res.score,
                "pass": float(res.score >= THRESHOLD - 1e-9 and gate),
                "answers": {a: (items[a]["verdict"], items[a]["reason"]) for a in answers},
            }
        return out
    finally:
        rubric.CHECKS.update(saved)


def why(reason: str) -> str:
    """The rule that failed an answer the old check passed."""
    for key, label in (
        ("pastes", "pasted tool output"),
        ("hedges", "hedged"),
        ("alternative", "hedged"),
        ("also states", "stated a competing value"),
        ("inside a longer", "inside a longer value"),
        ("token cap", "cut by the token cap"),
    ):
        if key in reason:
            return label
    return reason


def paired(before: dict[str, dict], after: dict[str, dict], key: str = "pass") -> dict[str, float]:
    import numpy as np

    ids = [t for t in after if t in before]
    b = np.array([before[t][key] for t in ids])
    a = np.array([after[t][key] for t in ids])
    idx = np.random.default_rng(0).integers(0, len(ids), size=(2000, len(ids)))
    diffs = a[idx].mean(1) - b[idx].mean(1)
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    return {
        "before": float(b.mean()),
        "after": float(a.mean()),
        "diff": float(a.mean() - b.mean()),
        "ci_low": float(lo),
        "ci_high": float(hi),
        "n": len(ids),
    }


def regrade_folder(tasks: dict[str, Task], folder: Path) -> dict[str, Any]:
    trajs = read_jsonl(folder / "trajectories.jsonl", Trajectory)
    old, new = grade(tasks, trajs, legacy=True), grade(tasks, trajs, legacy=False)
    only_old: Counter[str] = Counter()
    for tid, o in old.items():
        for item, (verdict, _) in o["answers"].items():
            if verdict == "pass" and new[tid]["answers"][item][0] != "pass":
                only_old[why(new[tid]["answers"][item][1])] += 1
    return {"old": old, "new": new, "answers_passing_only_under_old": dict(only_old)}


def adversarial_before_after(tasks_file: Path, rewards: tuple[str, ...] = ("rubric", "outcome")) -> str:
    """The adversarial policies (toolkit.eval.adversarial) on ``tasks_file``'s answer tasks, pass@0.75
    under the old answer check (no pass gate) and under the new one, as a Markdown table."""
    from contextlib import ExitStack
    from unittest import mock

    from toolkit.eval import adversarial

    tasks = read_jsonl(tasks_file, Task)
    rows = {}
    for label, legacy in (("old", True), ("new", False)):
        with ExitStack() as stack:
            if legacy:
                stack.enter_context(mock.patch.dict(rubric.CHECKS, {"answer": legacy_answer_check}))
                stack.enter_context(
                    mock.patch.dict(rubric.CHECKS, {"clarification": legacy_clarification_check})
                )
                stack.enter_context(mock.patch.object(rubric, "answers_failed", lambda task, grades: 0))
            table = adversarial.run_suite(tasks, adversarial.make_rewards(rewards))
        rows[label] = table
    n = sum(adversarial.has_answer_item(t) for t in tasks)
    lines = [
        f"{n} answer tasks of {tasks_file}; pass@0.75, old check -> new check",
        "",
        "| policy | " + " | ".join(rewards) + " |",
        "|---|" + "---|" * len(rewards),
    ]
    for policy in adversarial.POLICIES:
        cells = [
            f"{rows['old'][r][policy]['answer tasks']['pass']:.3f} -> {rows['new'][r][policy]['answer tasks']['pass']:.3f}"
            for r in rewards
        ]
        lines.append(f"| {policy} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.regrade", description=__doc__.split("\n\n")[0])
    parser.add_argument("adapters", type=Path, help="a shipped folder: recipe.json, warm_start/, grpo/")
    parser.add_argument("out", type=Path)
    parser.add_argument("--sets", nargs="*", help="dev and/or test-seed<S> (default: all)")
    parser.add_argument("--adversarial", type=Path, help="only: the adversarial table of this tasks file")
    args = parser.parse_args(argv)
    if args.adversarial:
        print(adversarial_before_after(args.adversarial))
        return

    from toolkit.runs import RunFolder, ShippedFolder, seed_set_name
    from toolkit.train.backends import make_backend
    from toolkit.train.config import load_recipe
    from toolkit.train.pipeline import choose_backend, evaluate_pair
    from toolkit.train.task_sources import read_tasks, resolve_task_files, test_sets

    shipped, out = ShippedFolder(args.adapters), RunFolder(args.out)  # out: tasks and evaluations, as a run's
    recipe = load_recipe(shipped.recipe_file)
    dev = read_tasks(resolve_task_files(recipe, args.out)[1], "eval")[: recipe.eval.get("n_tasks") or None]
    sets = [("dev", dev)] + [(seed_set_name(s), ts) for s, ts in test_sets(recipe, args.out)]
    sets = [(n, ts) for n, ts in sets if not args.sets or n in args.sets]
    backend = None
    report: dict[str, Any] = {"adapters": str(args.adapters), "threshold": THRESHOLD, "sets": {}}
    for name, tasks in sets:
        folder = out.eval_named(name)
        if not all((folder / side / "trajectories.jsonl").exists() for side in ("before", "after")):
            backend = backend or make_backend(choose_backend(recipe), recipe)
            print(f"[regrade] evaluating {name} ({len(tasks)} tasks) into {folder}", flush=True)
            evaluate_pair(recipe, shipped.warm_start, shipped.grpo, tasks, folder, backend)
        by_id = {t.id: t for t in tasks}
        before, after = regrade_folder(by_id, folder / "before"), regrade_folder(by_id, folder / "after")
        row = {
            "n_tasks": len(tasks),
            "old": paired(before["old"], after["old"]),
            "new": paired(before["new"], after["new"]),
            "warm_start_answers_passing_only_under_old": before["answers_passing_only_under_old"],
            "grpo_answers_passing_only_under_old": after["answers_passing_only_under_old"],
        }
        report["sets"][name] = row
        o, n = row["old"], row["new"]
        print(
            f"{name:15s} old {o['before']:.3f} -> {o['after']:.3f} {o['diff']:+.3f} "
            f"[{o['ci_low']:+.3f}, {o['ci_high']:+.3f}] | new {n['before']:.3f} -> {n['after']:.3f} "
            f"{n['diff']:+.3f} [{n['ci_low']:+.3f}, {n['ci_high']:+.3f}] | only-old answers: "
            f"warm {sum(row['warm_start_answers_passing_only_under_old'].values())} "
            f"grpo {sum(row['grpo_answers_passing_only_under_old'].values())}",
            flush=True,
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "regrade.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    print(f"[regrade] wrote {args.out / 'regrade.json'}")


if __name__ == "__main__":  # vLLM's engine starts in a spawned process: the guard keeps it from re-running
    main()
