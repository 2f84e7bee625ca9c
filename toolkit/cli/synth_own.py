"""`mcp-rl synth-own`: tasks for your own MCP server (docs/own-server.md), made from what it returns and
validated by replay on fresh servers.

mcp-rl synth-own --server memory='node server-memory/dist/index.js' --env MEMORY_FILE_PATH={scratch}/memory.jsonl \
                 --seed-dir my-memory/ --n 100 --out runs/tasks-memory
mcp-rl synth-own --server api=http://127.0.0.1:8000/mcp --n 100 --out runs/tasks-api      streamable HTTP (no writes)
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from toolkit.argtypes import nonnegative_int, positive_float, positive_int
from toolkit.envs.recipe import ServerRecipe, parse_server
from toolkit.records import dumps


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "synth-own",
        help="synthesise tasks for your own MCP server, validated by replay on fresh servers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--server",
        action="append",
        required=True,
        help="NAME=COMMAND (stdio) or NAME=URL (streamable HTTP): make tasks for this server (repeatable)",
    )
    p.add_argument("--n", type=positive_int, default=200, help="number of train tasks (default 200)")
    p.add_argument(
        "--n-eval", type=nonnegative_int, default=None, help="number of eval tasks (default 15%% of --n)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--out", type=Path, required=True, help="output folder: train.jsonl, eval.jsonl, summary.json"
    )
    own = p.add_argument_group("servers and tools; [NAME:] limits an option to one server")
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
    p.set_defaults(func=generate_own)


def _targeted(values: list[str], names: list[str], option: str) -> dict[str, list[str]]:
    """``[NAME:]VALUE`` options per server: a NAME: prefix picks one server, none means every server."""
    out: dict[str, list[str]] = {n: [] for n in names}
    for v in values:
        head, sep, rest = v.partition(":")
        if sep and head in out:
            out[head].append(rest)
        elif sep and head.isidentifier() and "=" not in head and len(names) > 1 and option != "--env":
            raise ValueError(f"{option} {v!r}: no server named '{head}' (servers: {', '.join(names)})")
        else:
            for n in names:
                out[n].append(v)
    return out


def build_recipes(args: argparse.Namespace) -> list[ServerRecipe]:
    recipes = [parse_server(spec) for spec in args.server]
    names = [r.name for r in recipes]
    if len(set(names)) != len(names):
        raise ValueError(f"--server: two servers are named the same ({', '.join(names)})")
    envs = _targeted(args.env, names, "--env")
    cwds = _targeted(args.cwd, names, "--cwd")
    seeds = _targeted(args.seed_dir, names, "--seed-dir")
    for r in recipes:
        for kv in envs[r.name]:
            key, sep, value = kv.partition("=")
            if not sep or not key:
                raise ValueError(f"--env {kv!r}: expected [NAME:]KEY=VALUE")
            r.env[key] = value
        if len(cwds[r.name]) > 1 or len(seeds[r.name]) > 1:
            raise ValueError(f"server '{r.name}': one --cwd and one --seed-dir at most")
        if cwds[r.name]:
            r.cwd = cwds[r.name][0]
        if seeds[r.name]:
            seed = Path(seeds[r.name][0])
            if not seed.is_dir():
                raise ValueError(f"--seed-dir {seed}: not a folder")
            r.seed = str(seed.resolve())
        if r.url is not None and (r.env or r.cwd or r.seed):
            raise ValueError(
                f"server '{r.name}' is a URL: --env, --cwd and --seed-dir apply to commands only"
            )
    return recipes


def _overrides(args: argparse.Namespace) -> dict[str, str]:
    out: dict[str, str] = {}
    for kind in ("read", "write", "skip"):
        for tool in getattr(args, kind):
            if tool in out and out[tool] != kind:
                raise ValueError(f"tool '{tool}' is given as both --{out[tool]} and --{kind}")
            out[tool] = kind
    return out


def _examples(specs: list[str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for spec in specs:
        tool, sep, raw = spec.partition("=")
        try:
            value = json.loads(raw) if sep else None
        except ValueError as exc:
            raise ValueError(f"--example {spec!r}: not JSON after '=': {exc}") from exc
        if not tool or not isinstance(value, dict):
            raise ValueError(f"--example {spec!r}: expected TOOL='{{\"arg\": value}}'")
        out.setdefault(tool.strip(), []).append(value)
    return out


def generate_own(args: argparse.Namespace) -> int:
    from toolkit.records import write_jsonl
    from toolkit.synth.own_server import synthesize

    try:
        recipes = build_recipes(args)
        overrides, examples = _overrides(args), _examples(args.example)
    except ValueError as exc:
        print(f"mcp-rl synth-own: {exc}", file=sys.stderr)
        return 2
    teacher = None
    if args.teacher_model:
        from toolkit.synth.paraphrase import make_client

        teacher = (make_client(args.teacher_base_url), args.teacher_model)
    out: Path = args.out
    for r in recipes:  # the task set keeps its own copy of the seed, so later edits cannot change it
        if r.seed is not None:
            copy = (out / "seeds" / r.name).resolve()
            if copy != Path(r.seed):
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(r.seed, copy, symlinks=True)
            r.seed = str(copy)
    n_eval = args.n_eval if args.n_eval is not None else max(1, round(args.n * 0.15))
    result = synthesize(
        recipes,
        n=args.n,
        n_eval=n_eval,
        seed=args.seed,
        log=lambda s: print(s, file=sys.stderr),
        overrides=overrides,
        examples=examples,
        max_calls=args.max_explore_calls,
        max_seconds=args.max_explore_seconds,
        writes=not args.no_writes,
        timeout=args.call_timeout,
        teacher=teacher,
    )
    write_jsonl(out / "train.jsonl", result.train)
    write_jsonl(out / "eval.jsonl", result.eval)
    (out / "summary.json").write_text(dumps(result.summary, indent=1, sort_keys=True) + "\n")
    print(format_report(result.summary))
    print(
        f"wrote {out}/train.jsonl ({len(result.train)}), {out}/eval.jsonl ({len(result.eval)}), {out}/summary.json"
    )
    failed = [n for n, r in result.summary["servers"].items() if r.get("failed")]
    if not result.train and not result.eval:
        print("mcp-rl synth-own: no task was kept (see the report above)", file=sys.stderr)
        return 1
    return 1 if failed else 0


def format_report(summary: dict[str, Any]) -> str:
    lines = []
    for name, r in summary["servers"].items():
        if r.get("failed"):
            lines.append(f"{name}: FAILED: {r['failed']}")
            continue
        e = r["explored"]
        lines.append(
            f"{name}: {e['tools']} tools ({len(e['reads'])} read, {len(e['writes'])} write); explored "
            f"{e['calls']} calls ({e['errors']} errors, {e['unstable_outputs']} unstable) in "
            f"{e['seconds']}s, stopped: {e['stopped']}"
        )
        lines.append("  made: " + ", ".join(f"{k} {v}" for k, v in r["made"].items()))
        lines.append(
            f"  kept {r['kept']} of {r['candidates']} candidates: "
            + ", ".join(f"{k} {v}" for k, v in sorted(r["kept_by_kind"].items()))
        )
        if r["dropped"]:
            lines.append("  dropped: " + ", ".join(f"{k} {v}" for k, v in r["dropped"].items()))
        if e.get("uncallable"):
            lines.append("  never called: " + ", ".join(f"{k} ({v})" for k, v in e["uncallable"].items()))
        if r.get("teacher"):
            lines.append(
                f"  teacher: {r['teacher'].get('proposals', '')}; {r['teacher'].get('phrased', 0)} prompts phrased"
            )
        if r.get("writes_skipped"):
            lines.append(f"  writes: {r['writes_skipped']}")
        lines.append("  seconds: " + ", ".join(f"{k} {v}" for k, v in r["seconds"].items()))
    for split, s in summary["splits"].items():
        lines.append(
            f"{split}: {s['tasks']} tasks: " + ", ".join(f"{k} {v}" for k, v in sorted(s["by_kind"].items()))
        )
    return "\n".join(lines)
