"""One lever against another on the dev set, seed by seed: for each pair ``A:B`` (arm A and arm B of the
same seed, e.g. the same RFT samples kept two ways), A - B paired by task, then the mean over the pairs
with a percentile bootstrap CI over tasks (the claim's rule, ``toolkit.eval.claim``), for pass@0.75 and
the claim's guards.

    python -m bench.arm_versus docs/cpu-proof/keep-no-call \\
        rft-all320-s0-call:rft-all320-s0 rft-all320-s1-call:rft-all320-s1 rft-all320-s2-call:rft-all320-s2

Reads each arm's ``ARM/dev/results.jsonl`` or, as the committed records keep it, ``results.jsonl.gz``.
``--per-kind`` adds, for every arm named, each task kind's passes and calls per task beside the gold
trajectories' (where the calls went).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np

from toolkit.eval.claim import CALL_SPLIT, GUARDS, greedy_row, seed_mean_difference
from toolkit.records import TaskResult, read_task_results

KEYS = ("pass", *GUARDS, *CALL_SPLIT)


def arm_results(root: Path, arm: str) -> list[TaskResult]:
    """One arm's greedy dev results."""
    folder = root / arm / "dev"
    found = [p for p in (folder / "results.jsonl", folder / "results.jsonl.gz") if p.is_file()]
    if not found:
        raise SystemExit(f"{folder}: no results.jsonl(.gz)")
    return read_task_results(found[0])  # the kit's JSONL reader opens .gz itself


def arm_rows(root: Path, arm: str) -> dict[str, dict[str, float]]:
    """task id -> what the claim reads of its greedy episode, for one arm's dev evaluation."""
    return {r.task_id: greedy_row(r) for r in arm_results(root, arm)}


def per_kind(root: Path, arms: list[str]) -> dict[str, dict[str, dict[str, float]]]:
    """kind -> arm -> tasks, passed, calls per task and gold calls per task (the kind is the result's
    ``category``, the task kind for kit-eval tasks)."""
    table: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    for arm in arms:
        by_kind: dict[str, list[dict[str, float]]] = defaultdict(list)
        for r in arm_results(root, arm):
            row = greedy_row(r)
            by_kind[r.category or "unknown"].append({**row, "gold": float(r.n_gold_calls or 0)})
        for kind, rows in by_kind.items():
            table[kind][arm] = {
                "tasks": len(rows),
                "passed": sum(x["pass"] for x in rows),
                "calls_per_task": float(np.mean([x["calls_per_task"] for x in rows])),
                "gold_calls_per_task": float(np.mean([x["gold"] for x in rows])),
            }
    return dict(sorted(table.items()))


def versus(root: Path, pairs: list[tuple[str, str]]) -> dict[str, dict[str, float]]:
    """Per key, the mean over the pairs of (A - B), paired by task, with its CI over tasks."""
    sides = [(arm_rows(root, a), arm_rows(root, b)) for a, b in pairs]
    ids = sorted(sides[0][0])
    for a, b in sides:
        if sorted(a) != ids or sorted(b) != ids:
            raise SystemExit("the arms were evaluated on different dev tasks")
    # the seed-mean difference of A - B against a zero "before": the mean over pairs, CI over tasks
    return {
        key: seed_mean_difference(
            np.zeros(len(ids)), np.array([[a[i][key] - b[i][key] for i in ids] for a, b in sides])
        )
        for key in KEYS
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.arm_versus", description=__doc__.split("\n\n")[0])
    ap.add_argument("root", type=Path, help="a lever_sweep ROOT (or a record of one)")
    ap.add_argument("pairs", nargs="+", metavar="A:B", help="arm A against arm B (same seed)")
    ap.add_argument("--per-kind", action="store_true", help="each kind's passes and calls, arm by arm")
    args = ap.parse_args(argv)
    pairs = []
    for pair in args.pairs:
        a, sep, b = pair.partition(":")
        if not (sep and a and b):
            ap.error(f"{pair!r}: expected A:B")
        pairs.append((a, b))
    for key, r in versus(args.root, pairs).items():
        print(
            f"{key}: A - B over {r['n_seeds']} pair(s), {r['n_tasks']} tasks: "
            f"{r['diff']:+.3f} [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
        )
    if args.per_kind:
        arms = list(dict.fromkeys(arm for pair in pairs for arm in pair))
        for kind, by_arm in per_kind(args.root, arms).items():
            gold = next(iter(by_arm.values()))["gold_calls_per_task"]
            cells = [
                f"{arm} {int(v['passed'])}/{v['tasks']} passed, {v['calls_per_task']:.2f} calls"
                for arm, v in by_arm.items()
            ]
            print(f"{kind} (gold {gold:.2f} calls a task): " + "; ".join(cells))


if __name__ == "__main__":
    main()
