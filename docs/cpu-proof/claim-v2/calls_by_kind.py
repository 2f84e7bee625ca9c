"""Calls per task by kind on dev set 2, and the tasks with calls over and under the gold count, for the
arms of runs/dev2v2 (outside the protocol). From a frozen worktree's root:

    python docs/cpu-proof/claim-v2/calls_by_kind.py --root runs/dev2v2 warm_start=lw-s0 abst2-s0 lw-s0

NAME=ARM reads ARM's warm-start evaluation under NAME; a bare ARM reads its adapter's evaluation."""

import argparse
import json
from collections import defaultdict
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path("runs/dev2v2"))
    parser.add_argument("arms", nargs="+")
    args = parser.parse_args()
    for arm in args.arms:
        name, _, warm_of = arm.partition("=")
        side = "warm_start" if warm_of else "grpo-seed0"
        path = args.root / (warm_of or name) / "eval" / "test-seed5201" / side / "results.jsonl"
        by_kind: dict[str, list[dict]] = defaultdict(list)
        for line in path.read_text().splitlines():
            row = json.loads(line)
            by_kind[row["category"]].append(row)
        cells = []
        for kind, rows in sorted(by_kind.items()):
            calls = sum(r["n_calls"] for r in rows) / len(rows)
            over = sum(r["n_calls"] > r["n_gold_calls"] for r in rows)
            under = sum(r["n_calls"] < r["n_gold_calls"] for r in rows)
            cells.append(f"{kind} ({len(rows)}) {calls:.2f} calls, {over} over / {under} under")
        print(f"{name}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
