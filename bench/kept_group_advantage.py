"""What GRPO's kept groups paid for calling beyond the gold count: from ``mcp-rl rescore --out`` rows
(one scored episode each, with ``step``, ``round``, ``task_id``, ``kept``, ``n_calls``, ``n_gold`` and the
reward's score), each kept episode's advantage as reward minus its group's mean (before any std
scaling), for the episodes with more calls than the gold trajectory and for the rest.

    mcp-rl rescore --tasks TRAIN.jsonl --rollouts RUN/grpo/rollouts.jsonl --reward outcome --out S.jsonl
    python -m bench.kept_group_advantage S.jsonl [S2.jsonl ...]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from toolkit.records import iter_json_objects
from toolkit.study.rescore import episode_groups


def over_gold_advantage(rows: list[dict[str, Any]], reward: str = "outcome") -> dict[str, Any]:
    """Counts and mean advantages of the kept episodes over the gold call count and of the others."""
    groups = episode_groups([row for row in rows if row["kept"]])
    over, rest = [], []
    for group in groups.values():
        mean = sum(r[reward] for r in group) / len(group)
        for r in group:
            (over if r["n_calls"] > r["n_gold"] else rest).append(r[reward] - mean)
    return {
        "logged": len(rows),
        "kept_groups": len(groups),
        "over_gold": len(over),
        "over_gold_positive": sum(a > 0 for a in over),
        "over_gold_mean_advantage": sum(over) / len(over) if over else None,
        "others": len(rest),
        "others_mean_advantage": sum(rest) / len(rest) if rest else None,
    }


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The scored rows of ``path`` (plain or, as the committed records keep them, gzipped JSONL); a bad
    line or an empty file names itself."""
    try:
        rows = [obj for _, obj in iter_json_objects(path, what="rescore row")]
    except ValueError as exc:  # RecordError: file and line
        raise SystemExit(str(exc)) from exc
    if not rows:
        raise SystemExit(f"{path}: empty")
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m bench.kept_group_advantage", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("scored", nargs="+", type=Path, help="mcp-rl rescore --out files")
    ap.add_argument("--reward", default="outcome", help="the reward column (outcome)")
    args = ap.parse_args(argv)
    for path in args.scored:
        r = over_gold_advantage(read_rows(path), args.reward)
        fmt = lambda x: "-" if x is None else f"{x:+.3f}"  # noqa: E731
        print(
            f"{path}: {r['logged']} episodes logged, {r['kept_groups']} kept groups; over the gold count "
            f"{r['over_gold']} (advantage > 0 in {r['over_gold_positive']}), mean advantage "
            f"{fmt(r['over_gold_mean_advantage'])}; the others {r['others']}, {fmt(r['others_mean_advantage'])}"
        )


if __name__ == "__main__":
    main()
