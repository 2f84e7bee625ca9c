"""`mcp-rl atlas`: run tasks in MCP-Atlas's public format, or write kit tasks in it (docs/mcp-atlas.md).

mcp-rl atlas run --tasks sample.jsonl --policy gold --standin-judge --out runs/atlas
mcp-rl atlas run --tasks sample.jsonl --policy vllm:Qwen/Qwen2.5-7B-Instruct \\
    --judge-base-url http://127.0.0.1:8001/v1 --judge-model Qwen/Qwen2.5-7B-Instruct --out runs/atlas
mcp-rl atlas export --tasks data/tasks/eval.jsonl --out atlas_eval.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "atlas",
        help="run MCP-Atlas-format tasks (claims judged) or export kit tasks to that format",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", choices=["run", "export"])
    p.add_argument("--tasks", required=True, help="run: MCP-Atlas JSONL/JSON; export: kit tasks JSONL")
    p.add_argument("--out", required=True, help="run: output folder; export: JSONL file to write")
    p.add_argument(
        "--policy", default="gold", help="gold, a model name, openai:<model>@<url> or vllm:<model>"
    )
    p.add_argument("--npm-dir", default=".cache/npm/node_modules", help="where the npm MCP servers are")
    p.add_argument(
        "--external",
        action="append",
        default=[],
        metavar="NAME=COMMAND",
        help="another stdio MCP server, e.g. time='mcp-server-time' (repeatable; started per episode)",
    )
    p.add_argument("--limit", type=int, default=None, help="only the first N records")
    p.add_argument("--max-turns", type=int, default=10, help="model turns per episode")
    p.add_argument("--standin-judge", action="store_true", help="the deterministic stand-in judge (no LLM)")
    p.add_argument("--judge-base-url", default=None, help="OpenAI-compatible judge endpoint")
    p.add_argument("--judge-model", default=None)
    p.add_argument("--judge-api-key-env", default=None, help="environment variable with the judge's key")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from toolkit.eval.atlas_tasks import AtlasFormatError

    try:
        return _export(args) if args.action == "export" else _run(args)
    except AtlasFormatError as exc:
        print(f"mcp-rl atlas: bad MCP-Atlas record: {exc}", file=sys.stderr)
        return 2


def _export(args: argparse.Namespace) -> int:
    from toolkit.eval.atlas_tasks import from_kit_task
    from toolkit.records import Task, read_jsonl

    tasks = read_jsonl(args.tasks, Task)[: args.limit]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for task in tasks:
            f.write(json.dumps(from_kit_task(task), ensure_ascii=False) + "\n")
    print(f"{len(tasks)} tasks -> {out} (MCP-Atlas format)")
    return 0


def _run(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    from toolkit.agent.loop import RolloutConfig, rollout
    from toolkit.agent.policies import make_policy
    from toolkit.eval.atlas_tasks import (
        discover_tools,
        episode_opener,
        npm_servers,
        parse_externals,
        read_atlas_tasks,
        summarize,
        to_kit_task,
    )
    from toolkit.records import write_jsonl
    from toolkit.rewards.atlas import AtlasReward

    records = read_atlas_tasks(args.tasks)[: args.limit]  # a bad record stops here, before any work
    externals = npm_servers(args.npm_dir) | parse_externals(args.external)
    tool_servers = discover_tools(externals)
    tasks, skipped = [], {}
    for rec in records:
        task = to_kit_task(rec, tool_servers)
        if isinstance(task, str):
            skipped[rec.task] = task
        else:
            tasks.append(task)
    for tid, why in skipped.items():
        print(f"skipped {tid}: {why}", file=sys.stderr)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        if args.standin_judge:
            from toolkit.rewards.standin import StandInJudge

            judge = stack.enter_context(StandInJudge()).judge_config()
        else:
            judge = {
                "base_url": args.judge_base_url,
                "model": args.judge_model,
                "api_key_env": args.judge_api_key_env,
            }
        reward = AtlasReward(grader="judge", judge=judge)
        policy = make_policy(args.policy)
        config = RolloutConfig(max_turns=args.max_turns, temperature=0.0)
        trajs = rollout(tasks, policy, config, open_episode=episode_opener(externals)) if tasks else []
        results = reward.batch(tasks, trajs) if tasks else []
    write_jsonl(out / "tasks.jsonl", tasks)
    write_jsonl(out / "trajectories.jsonl", trajs)
    with (out / "results.jsonl").open("w", encoding="utf-8") as f:
        for task, traj, res in zip(tasks, trajs, results, strict=True):
            row = {"task": task.id, "coverage": res.score, "passed": res.score >= 0.75}
            row |= {
                "stop_reason": traj.stop_reason,
                "calls": len(traj.calls),
                "failed_calls": sum(not c.ok for c in traj.calls),
            }
            f.write(json.dumps(row | {"claims": res.details.get("items", [])}, default=str) + "\n")
    summary = summarize(results, skipped)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    cov = (
        f"coverage {summary['coverage']:.3f}, pass rate {summary['pass_rate']:.3f}"
        if results
        else "nothing run"
    )
    print(f"{len(tasks)} tasks run, {len(skipped)} skipped: {cov} -> {out}/summary.json")
    return 0
