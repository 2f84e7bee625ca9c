"""`mcp-rl atlas`: run tasks in MCP-Atlas's published format, or write kit tasks in it (docs/mcp-atlas.md).

mcp-rl atlas run --tasks public_split.csv --policy gold --standin-judge --out runs/atlas
mcp-rl atlas run --tasks sample.parquet --policy vllm:Qwen/Qwen2.5-7B-Instruct \\
    --judge-base-url http://127.0.0.1:8001/v1 --judge-model Qwen/Qwen2.5-7B-Instruct --out runs/atlas
mcp-rl atlas export --tasks data/tasks/eval.jsonl --out atlas_eval.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from toolkit.argtypes import positive_int
from toolkit.records import dumps

NO_CUT = 2**40  # a tool-output budget no output reaches: the gold replay's outputs are kept whole


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "atlas",
        help="run MCP-Atlas-format tasks (claims judged) or export kit tasks to that format",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", choices=["run", "export"])
    p.add_argument(
        "--tasks", required=True, help="run: MCP-Atlas Parquet, CSV, JSONL or JSON; export: kit tasks JSONL"
    )
    p.add_argument("--out", required=True, help="run: output folder; export: .csv, .parquet or .jsonl file")
    p.add_argument(
        "--policy", default="gold", help="gold, a model name, openai:<model>@<url> or vllm:<model>"
    )
    p.add_argument("--npm-dir", default=".cache/npm/node_modules", help="where the npm MCP servers are")
    p.add_argument(
        "--external",
        action="append",
        default=[],
        metavar="NAME=COMMAND",
        help="another MCP server, NAME=COMMAND or NAME=URL, e.g. time='mcp-server-time' (repeatable; a "
        "command is started per episode in a scratch folder of its own)",
    )
    p.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="ATLAS=KIT",
        help="let a kit server answer for an MCP-Atlas server, e.g. calculator=calculator (repeatable; "
        "never done without it)",
    )
    p.add_argument("--limit", type=positive_int, default=None, help="only the first N records")
    p.add_argument("--max-turns", type=positive_int, default=10, help="model turns per episode")
    p.add_argument("--standin-judge", action="store_true", help="the deterministic stand-in judge (no LLM)")
    p.add_argument("--judge-base-url", default=None, help="OpenAI-compatible judge endpoint")
    p.add_argument("--judge-model", default=None)
    p.add_argument("--judge-api-key-env", default=None, help="environment variable with the judge's key")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from toolkit.eval.atlas_format import AtlasFormatError
    from toolkit.eval.watch import EndpointDown
    from toolkit.rewards.judge import JudgeUnreachable

    try:
        return _export(args) if args.action == "export" else _run(args)
    except AtlasFormatError as exc:
        print(f"mcp-rl atlas: bad MCP-Atlas record: {exc}", file=sys.stderr)
        return 2
    except (EndpointDown, JudgeUnreachable) as exc:  # the policy's or the judge's endpoint, not a score
        print(f"mcp-rl atlas: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # a bad --map / --external option
        print(f"mcp-rl atlas: {exc}", file=sys.stderr)
        return 2


def _export(args: argparse.Namespace) -> int:
    from toolkit.agent.loop import RolloutConfig, rollout
    from toolkit.agent.policies import GoldPolicy
    from toolkit.envs.registry import tool_specs
    from toolkit.eval.atlas_format import write_atlas_records
    from toolkit.eval.atlas_tasks import Skip, to_atlas_record
    from toolkit.records import Task, read_jsonl

    tasks = read_jsonl(args.tasks, Task)[: args.limit]
    # the outputs come from replaying each task's gold calls on the kit's servers, uncut: a record
    # holds what the server answered, whatever its length
    config = RolloutConfig(max_turns=args.max_turns, temperature=0.0, max_tool_output_tokens=NO_CUT)
    trajs = rollout(tasks, GoldPolicy(), config)
    records, skipped = [], []
    for task, traj in zip(tasks, trajs, strict=True):
        tool_server = {s.name: s.server for s in tool_specs(list(task.servers))}
        rec = to_atlas_record(task, traj, tool_server)
        (skipped if isinstance(rec, Skip) else records).append(rec)
    if not records:
        print(f"mcp-rl atlas export: none of {len(tasks)} tasks could be written", file=sys.stderr)
        return 1
    out = write_atlas_records(records, args.out)
    why = {}
    for s in skipped:
        why[s.reason] = why.get(s.reason, 0) + 1
    print(f"{len(records)} tasks -> {out} (MCP-Atlas format); {len(skipped)} not written: {why}")
    return 0


def _judge_config(args: argparse.Namespace) -> dict:
    return {"base_url": args.judge_base_url, "model": args.judge_model, "api_key_env": args.judge_api_key_env}


def _judge_failure(result: Any) -> str | None:
    """Why the judge's endpoint graded none of a task's claims, or None when it is not that."""
    from toolkit.rewards.judge import ENDPOINT_PROBLEM

    items = result.details.get("items", [])
    reasons = [it["reason"] for it in items if it["verdict"] is None]
    if items and len(reasons) == len(items) and reasons[0].startswith(ENDPOINT_PROBLEM):
        return reasons[0]
    return None


def _run(args: argparse.Namespace) -> int:
    from contextlib import ExitStack

    from toolkit.agent.loop import RolloutConfig, policy_failure, rollout
    from toolkit.agent.policies import make_policy
    from toolkit.envs.recipe import npm_servers, parse_server
    from toolkit.eval.atlas_tasks import (
        Skip,
        discover_servers,
        parse_maps,
        read_atlas_tasks,
        replay_fidelity,
        summarize,
        to_kit_task,
    )
    from toolkit.eval.watch import Progress, check_endpoint
    from toolkit.records import AtlasResultRow, write_jsonl
    from toolkit.rewards.atlas import AtlasReward

    records = read_atlas_tasks(args.tasks)[: args.limit]  # a bad record stops here, before any work
    maps = parse_maps(args.map)
    externals = npm_servers(args.npm_dir) | {
        r.name: r for r in (parse_server(spec, "--external") for spec in args.external)
    }
    pool = discover_servers(externals, maps)
    for name, why in pool.failed.items():
        print(f"server {name} did not start: {why}", file=sys.stderr)
    tasks, skipped = [], []
    for rec in records:
        task = to_kit_task(rec, pool)
        (skipped if isinstance(task, Skip) else tasks).append(task)
    for s in skipped:
        print(f"skipped {s.task}: {s.reason}", file=sys.stderr)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        judge = _judge_config(args)
        if args.standin_judge:
            from toolkit.rewards.standin import StandInJudge

            judge = stack.enter_context(StandInJudge()).judge_config()
        reward = AtlasReward(grader="claim-judge", judge=judge)
        if tasks:
            reward.grader.check_endpoint()  # a dead judge fails here, before the rollout
        policy = make_policy(args.policy)
        config = RolloutConfig(max_turns=args.max_turns, temperature=0.0)
        if args.policy == "gold":  # no context to fit: its outputs stay whole, as fidelity compares them
            config.max_tool_output_tokens = NO_CUT
        with Progress(len(tasks), "atlas") as progress:
            # each task carries its servers' recipes: every episode starts them fresh
            trajs = rollout(
                tasks,
                policy,
                config,
                on_done=lambda tr: progress.episode(error=tr.stop_reason == "error"),
            )
        # a failed episode is not scored: it is listed with its reason, as the endpoint's (the policy's
        # backend, the judge) or as the environment's (a server that failed or died)
        pairs = list(zip(tasks, trajs, strict=True))
        down = {t.id: f"policy endpoint error: {why}" for t, tr in pairs if (why := policy_failure(tr))}
        check_endpoint(list(down.values()), len(pairs), f"policy endpoint {args.policy}", "atlas")
        errors = {t.id: f"environment error: {tr.metadata.get('error')}" for t, tr in pairs if tr.stop_reason == "error" and t.id not in down}  # fmt: skip
        scored = [(t, tr) for t, tr in pairs if t.id not in errors and t.id not in down]
        if scored:
            print(f"[atlas] judging the claims of {len(scored)} tasks", file=sys.stderr, flush=True)
        results = reward.batch([t for t, _ in scored], [tr for _, tr in scored]) if scored else []
        graded = list(zip(scored, results, strict=True))
        judged = {t.id: why for (t, _), res in graded if (why := _judge_failure(res))}
        judge_url = reward.grader.base_url
        check_endpoint(list(judged.values()), len(graded), f"judge endpoint {judge_url}", "atlas", "tasks")
        down |= judged
        scored = [pair for pair, _ in graded if pair[0].id not in judged]
        results = [res for pair, res in graded if pair[0].id not in judged]
    write_jsonl(out / "tasks.jsonl", tasks)
    write_jsonl(out / "trajectories.jsonl", trajs)
    rows = [
        AtlasResultRow(
            task=task.id,
            coverage=res.score,
            passed=res.score >= 0.75,
            stop_reason=traj.stop_reason,
            calls=len(traj.calls),
            failed_calls=sum(not c.ok for c in traj.calls),
            claims=res.details.get("items", []),
        )
        for (task, traj), res in zip(scored, results, strict=True)
    ]
    write_jsonl(out / "results.jsonl", rows)
    summary = summarize(results, skipped, [t for t, _ in scored], errors)
    summary["endpoint_errors"] = down  # the policy's or the judge's: neither a score nor the environment's
    summary |= {"judge": "stand-in (not a language model)" if args.standin_judge else args.judge_model}
    summary |= {"servers_failed": pool.failed, "stand_ins": pool.stand_ins}
    if args.policy == "gold" and scored:
        summary["replay_fidelity"] = replay_fidelity(*zip(*scored, strict=True))
    (out / "summary.json").write_text(dumps(summary, indent=1) + "\n")
    cov = (
        f"coverage {summary['coverage']:.3f}, pass rate {summary['pass_rate']:.3f}"
        if results
        else "nothing run"
    )
    failed = f", {len(down)} failed on an endpoint" if down else ""
    print(
        f"{len(results)} tasks run, {summary['tasks_skipped']} skipped{failed}: {cov} -> {out}/summary.json"
    )
    for server, row in summary.get("replay_fidelity", {}).get("servers", {}).items():
        rate = "n/a" if row["match_rate"] is None else f"{row['match_rate']:.2f}"
        cut = f", {row['cut']} cut by the tool-output budget, not compared" if row.get("cut") else ""
        print(
            f"replay fidelity {server}: {row['matched']}/{row['compared']} outputs as recorded ({rate}){cut}"
        )
    return 0 if results else 1
