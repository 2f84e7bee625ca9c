"""`mcp-rl publish` and `mcp-rl ship`: a finished training run's record and its adapters, kept in the
repository.

mcp-rl publish runs/cpu-learn docs/cpu-proof/run25           summary, recipe, metrics and figures
mcp-rl ship runs/cpu-learn data/adapters/cpu-learn           warm-start and GRPO adapters (bf16, checked)
mcp-rl ship runs/claim data/adapters/cpu-learn-rft --claim docs/cpu-proof/claim.json
                                                             a claim's warm start and every GRPO seed
"""

from __future__ import annotations

import argparse
import sys


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
        help="ship a finished run's (or claim's) warm-start and GRPO adapters (bf16, checked) in the repository",
        description="Copy the warm-start and GRPO adapters of the finished run in RUN to DEST in bfloat16, "
        "each checked against its source's logits, with the run's recipe and a record.json "
        "(toolkit/train/ship.py). RUN may be a claim's root (bench.reproduce_claim: it has protocol.json): "
        "then its frozen warm start and every GRPO seed's adapter are shipped. DEST is replaced only when "
        "every check passed.",
    )
    s.add_argument(
        "run", metavar="RUN", help="a finished run folder (sft/adapter and adapter) or a claim's root"
    )
    s.add_argument("dest", metavar="DEST", help="where the adapters go, e.g. data/adapters/cpu-learn")
    s.add_argument("--claim", metavar="FILE", help="a claim's root only: its claim.json, kept in the record")
    s.set_defaults(func=ship)


def publish(args: argparse.Namespace) -> int:
    from toolkit.train.publish import publish_run

    for path in publish_run(args.run, args.dest):
        print(path)
    return 0


def ship(args: argparse.Namespace) -> int:
    from toolkit.runs import ClaimFolder
    from toolkit.train.ship import ship_adapters, ship_claim

    if ClaimFolder(args.run).protocol_file.is_file():
        print(ship_claim(args.run, args.dest, args.claim))
        return 0
    if args.claim:
        print(f"--claim: {args.run} is not a claim's root (no protocol.json)", file=sys.stderr)
        return 2
    print(ship_adapters(args.run, args.dest))
    return 0
