"""`mcp-rl synth`: generate validated tasks on the kit's own servers, or print their tool dependency graph.

mcp-rl synth --n 2000 --n-eval 300 --seed 0 --out data/tasks      tasks + summary
mcp-rl synth --preset cpu --n 200 --seed 1 --out runs/tasks-cpu   short tasks for the CPU demo
mcp-rl synth --preset long --n 100 --out runs/tasks-long         Scale-like tasks: 8-11 calls, paging, date windows
mcp-rl synth --servers all --n 500 --out runs/tasks-all           every registered server, not only the core 11
mcp-rl synth --preset prove --n 300 --out runs/tasks-prove          PROVE's mix (docs/prove.md)
mcp-rl synth graph [--server helpdesk] [--json]                   the dependency graph

Tasks for your own MCP server: `mcp-rl synth-own --server NAME=COMMAND|URL ...` (docs/own-server.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from toolkit.argtypes import fraction, nonnegative_int, positive_int
from toolkit.records import dumps


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "synth",
        help="synthesise tasks on the kit's own servers, validated by replay (or: synth graph)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", nargs="?", choices=["generate", "graph"], default="generate")
    p.add_argument("--n", type=positive_int, default=200, help="number of train tasks (default 200)")
    p.add_argument(
        "--n-eval", type=nonnegative_int, default=None, help="number of eval tasks (default 15%% of --n)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--out", type=Path, default=None, help="output folder: train.jsonl, eval.jsonl, summary.json"
    )
    p.add_argument("--preset", default="default", help="task mix preset: " + " | ".join(_preset_names()))
    p.add_argument(
        "--servers",
        default=None,
        help="server set: core (the first 11 servers, the presets' default), all, or a comma-separated list",
    )
    p.add_argument("--min-calls", type=positive_int, default=None, help="shortest gold chain")
    p.add_argument("--max-calls", type=positive_int, default=None, help="longest gold chain")
    p.add_argument("--min-distractors", type=nonnegative_int, default=None)
    p.add_argument("--max-distractors", type=nonnegative_int, default=None)
    p.add_argument("--short-share", type=fraction, default=None, help="share of tasks with 1-2 calls")
    p.add_argument("--n-worlds", type=positive_int, default=None, help="world seeds per split")
    p.add_argument(
        "--drill-share",
        type=fraction,
        default=None,
        help="train-only drill tasks added per train task (docs/templates.md, Drills; default 0)",
    )
    p.add_argument("--no-validate", action="store_true", help="skip replay validation (debugging only)")
    p.add_argument(
        "--paraphrase-model", default=None, help="paraphrase prompts with this model (off by default)"
    )
    p.add_argument(
        "--paraphrase-base-url", default=None, help="OpenAI-compatible endpoint for --paraphrase-model"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    graph = p.add_argument_group("graph (synth graph)")
    graph.add_argument(
        "--server", action=GraphServer, default=None, help="NAME: only this kit server's tools"
    )
    graph.add_argument("--json", action="store_true", help="print JSON")
    graph.add_argument("--bfcl", action="store_true", help="include the BFCL servers")
    p.set_defaults(func=handle)


class GraphServer(argparse.Action):
    """``--server NAME`` picks a kit server for `synth graph`; ``--server NAME=COMMAND|URL`` was how tasks
    for an own server were asked for, and is refused here with one line naming `synth-own` (exit 2)."""

    def __call__(self, parser, namespace, value, option_string=None) -> None:
        if "=" in str(value):
            parser.exit(
                2,
                f"{parser.prog}: error: --server {value.partition('=')[0]}=...: tasks for your own server are "
                "a command of their own now: mcp-rl synth-own --server NAME=COMMAND|URL ...\n",
            )
        setattr(namespace, self.dest, value)


def _preset_names() -> list[str]:
    from toolkit.synth.config import PRESETS

    return list(PRESETS)


def handle(args: argparse.Namespace) -> int:
    if args.action == "graph":
        return _graph(args)
    graph_only = [
        flag
        for flag, given in (("--server", args.server), ("--json", args.json), ("--bfcl", args.bfcl))
        if given
    ]
    if graph_only:  # one meaning per flag: these shape the graph, never the tasks
        print(
            f"mcp-rl synth: error: {', '.join(graph_only)} only for `mcp-rl synth graph` (tasks for your own "
            "server: mcp-rl synth-own --server NAME=COMMAND|URL ...)",
            file=sys.stderr,
        )
        return 2
    return _generate(args)


def _graph(args: argparse.Namespace) -> int:
    from toolkit.synth.library import library_graph

    graph = library_graph(include_bfcl=args.bfcl)
    if args.json:
        print(dumps(graph.to_dict(), indent=1, sort_keys=True))
    else:
        print(graph.format_text(server=args.server))
    return 0


def _generate(args: argparse.Namespace) -> int:
    from toolkit.records import write_jsonl
    from toolkit.synth.config import make_config
    from toolkit.synth.generate import generate

    if args.out is None:
        print("mcp-rl synth: --out DIR is required", file=sys.stderr)
        return 2
    n_eval = args.n_eval if args.n_eval is not None else max(1, round(args.n * 0.15))
    config = make_config(
        args.preset,
        n_train=args.n,
        n_eval=n_eval,
        seed=args.seed,
        min_calls=args.min_calls,
        max_calls=args.max_calls,
        min_distractors=args.min_distractors,
        max_distractors=args.max_distractors,
        short_share=args.short_share,
        n_worlds=args.n_worlds,
        drill_share=args.drill_share,
        server_set=args.servers,
        validate=not args.no_validate,
        paraphrase_model=args.paraphrase_model,
        paraphrase_base_url=args.paraphrase_base_url,
    )
    result = generate(config, progress=not args.no_progress and sys.stderr.isatty())
    out: Path = args.out
    write_jsonl(out / "train.jsonl", result.train)
    write_jsonl(out / "eval.jsonl", result.eval)
    (out / "summary.json").write_text(dumps(result.summary, indent=1, sort_keys=True) + "\n")
    print(format_summary(result.summary, result.timings))
    print(
        f"wrote {out}/train.jsonl ({len(result.train)}), {out}/eval.jsonl ({len(result.eval)}), {out}/summary.json"
    )
    return 0


def format_summary(summary: dict[str, Any], timings: dict[str, float] | None = None) -> str:
    """The summary as a short text report: one block per split."""
    lines = []
    for split, s in summary["splits"].items():
        secs = f" in {timings[split]:.1f}s" if timings and split in timings else ""
        lines.append(f"{split}: {s['tasks']} tasks (target {s['target']}){secs}, {s['templates']} templates")
        for key in (
            "by_kind",
            "by_chain_length",
            "by_server",
            "rubric_items_by_category",
            "held_out",
            "drops",
            "leaked_by_template",
        ):
            if s.get(key):
                lines.append(
                    f"  {key.replace('_', ' ')}: " + ", ".join(f"{k} {v}" for k, v in s[key].items())
                )
        if s.get("prove_mix"):
            mix = s["prove_mix"]
            lines.append(
                f"  PROVE mix: {s['tasks']} of a pool of {mix['pool']} ({mix['near_duplicate_call_sets']} "
                f"near-duplicate call sets dropped), realised: " + json.dumps(mix["realised"])
            )
        lines.append(
            f"  mean tools enabled {s['mean_tools_enabled']}, mean prompt {s['mean_prompt_chars']} chars, "
            f"essential share {s['essential_share']}"
        )
    return "\n".join(lines)
