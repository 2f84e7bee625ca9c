"""`mcp-rl publish` and `mcp-rl ship`: a finished training run's record and its adapters, kept in the
repository.

mcp-rl publish runs/cpu-learn docs/cpu-proof/run25           summary, recipe, metrics and figures
mcp-rl ship runs/cpu-learn data/adapters/cpu-learn           warm-start and GRPO adapters (bf16, checked)
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "publish",
        help="keep a finished run's record (summary, recipe, metrics, figures) in the repository",
        description="Copy the finished, evaluated run in RUN (summary.json, recipe.json, metrics.jsonl) to "
        "DEST and draw its figures there (toolkit/train/publish.py).",
    )
    p.add_argument("run", metavar="RUN", help="a finished run folder (mcp-rl train --out RUN --evaluate)")
    p.add_argument("dest", metavar="DEST", help="where the record goes, e.g. docs/cpu-proof/run25")
    p.set_defaults(func=publish)

    s = subparsers.add_parser(
        "ship",
        help="ship a finished run's warm-start and GRPO adapters (bf16, checked) in the repository",
        description="Copy the warm-start and GRPO adapters of the finished run in RUN to DEST in bfloat16, "
        "each checked against its source's logits, with the run's recipe and a record.json "
        "(toolkit/train/ship.py). DEST is replaced only when every check passed.",
    )
    s.add_argument("run", metavar="RUN", help="a finished run folder (sft/adapter and adapter)")
    s.add_argument("dest", metavar="DEST", help="where the pair goes, e.g. data/adapters/cpu-learn")
    s.set_defaults(func=ship)


def publish(args: argparse.Namespace) -> int:
    from toolkit.train.publish import publish_run

    for path in publish_run(args.run, args.dest):
        print(path)
    return 0


def ship(args: argparse.Namespace) -> int:
    from toolkit.train.ship import ship_adapters

    print(ship_adapters(args.run, args.dest))
    return 0
