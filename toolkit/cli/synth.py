"""`mcp-rl synth`: generate validated tasks, or print the tool dependency graph.

mcp-rl synth --n 2000 --n-eval 300 --seed 0 --out data/tasks      tasks + summary
mcp-rl synth --preset cpu --n 200 --seed 1 --out runs/tasks-cpu   short tasks for the CPU demo
mcp-rl synth --preset long --n 100 --out runs/tasks-long         Scale-like tasks: 8-11 calls, paging, date windows
mcp-rl synth --servers all --n 500 --out runs/tasks-all           every registered server, not only the core 11
mcp-rl synth --preset prove --n 300 --out runs/tasks-prove          PROVE's mix (docs/prove.md)
mcp-rl synth graph [--server helpdesk] [--json]                   the dependency graph

Your own MCP server (docs/own-server.md): tasks from what it returns, validated by replay on fresh servers
mcp-rl synth --server memory='node server-memory/dist/index.js' --env MEMORY_FILE_PATH={scratch}/memory.jsonl \
             --seed-dir my-memory/ --n 100 --out runs/tasks-memory
mcp-rl synth --server api=http://127.0.0.1:8000/mcp --n 100 --out runs/tasks-api      streamable HTTP (no writes)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from toolkit.argtypes import fraction, nonnegative_int, positive_float, positive_int
from toolkit.records import dumps


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "synth",
        help="synthesise tasks with rubrics, validated by replay (or: synth graph)",
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
    p.add_argument(
        "--server",
        action="append",
        default=None,
        help="NAME=COMMAND (stdio) or NAME=URL (streamable HTTP): make tasks for this server (repeatable); "
        "graph: NAME, only this kit server's tools",
    )
    own = p.add_argument_group("own server (--server NAME=...); [NAME:] limits an option to one server")
    own.add_argument("--env", action="append", default=[], help="[NAME:]KEY=VALUE for the server process")
    own.add_argument(
        "--cwd", action="append", default=[], help="[NAME:]DIR working folder (default: scratch)"
    )
    own.add_argument(
        "--seed-dir",
        action="append",
        default=[],
        help="[NAME:]DIR copied into each episode's fresh scratch folder; {scratch} in the command and "
        "--env is replaced by that folder's path",
    )
    own.add_argument("--read", action="append", default=[], help="TOOL: treat as read-only (explored)")
    own.add_argument("--write", action="append", default=[], help="TOOL: treat as a write (not explored)")
    own.add_argument("--skip", action="append", default=[], help="TOOL: never call or enable it")
    own.add_argument(
        "--example", action="append", default=[], help="TOOL=JSON example arguments (repeatable)"
    )
    own.add_argument(
        "--max-explore-calls", type=positive_int, default=300, help="exploration call budget per server"
    )
    own.add_argument(
        "--max-explore-seconds", type=positive_float, default=120.0, help="exploration time per server"
    )
    own.add_argument(
        "--call-timeout", type=positive_float, default=30.0, help="seconds per call and per server start"
    )
    own.add_argument("--no-writes", action="store_true", help="no write tasks")
    own.add_argument(
        "--teacher-model",
        default=None,
        help="an OpenAI-compatible model that proposes calls to explore and phrases prompts (optional)",
    )
    own.add_argument("--teacher-base-url", default=None, help="its endpoint (default $OPENAI_BASE_URL)")
    p.add_argument("--json", action="store_true", help="graph: print JSON")
    p.add_argument("--bfcl", action="store_true", help="graph: include the BFCL servers")
    p.set_defaults(func=handle)


def _preset_names() -> list[str]:
    from toolkit.synth.config import PRESETS

    return list(PRESETS)


def handle(args: argparse.Namespace) -> int:
    if args.action == "graph":
        args.server = args.server[-1] if args.server else None
        return _graph(args)
    if args.server:
        from toolkit.cli.synth_own import generate_own

        return generate_own(args)
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
