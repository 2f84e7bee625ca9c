"""`mcp-rl rollout`: run a policy (or the gold replay) on a tasks file, write trajectories as JSONL.

Each trajectory is appended to ``<out>.partial`` (one flushed line) as soon as its episode ends, so a
run that is killed keeps every finished episode. At the end ``<out>`` is written in task order (the
``n`` samples of a task together, byte-identical for the same trajectories) and the partial file is
removed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import IO, Any

from toolkit.agent.output_cut import TOOL_OUTPUT_CUTS
from toolkit.argtypes import nonnegative_float, positive_int


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "rollout",
        help="run a policy (or gold) on tasks through the agent loop; write trajectories (JSONL)",
        description="Run the agent loop over a tasks file. POLICY: gold | hf:<name> | <name> "
        "(tiny-random, smollm2-135m, a Hugging Face id or folder) | openai:<model>@<base_url> | vllm:<model>.",
    )
    p.add_argument("--policy", required=True, help="gold, a model name, openai:<model>@<url> or vllm:<model>")
    p.add_argument("--tasks", required=True, help="tasks JSONL (records.Task)")
    p.add_argument("--out", required=True, help="trajectories JSONL to write")
    p.add_argument("--n", type=positive_int, default=1, help="samples per task (default 1)")
    p.add_argument("--adapter", default=None, help="PEFT LoRA adapter folder to load on the model")
    p.add_argument("--limit", type=positive_int, default=None, help="only the first N tasks")
    p.add_argument("--max-turns", type=positive_int, default=None, help="model turns per user turn")
    p.add_argument("--max-new-tokens", type=positive_int, default=None, help="tokens per generation")
    p.add_argument("--max-context-tokens", type=positive_int, default=None)
    p.add_argument("--max-tool-output-tokens", type=positive_int, default=None)
    p.add_argument(
        "--tool-output-cut",
        choices=TOOL_OUTPUT_CUTS,
        default=None,
        help="tail: keep an over-long output's first tokens (default); json: the same, and name the JSON fields the cut hid",
    )
    p.add_argument("--temperature", type=nonnegative_float, default=None, help="0 = greedy")
    p.add_argument("--no-finish-tool", action="store_true", help="do not offer the finish tool")
    p.add_argument("--strict-validation", action="store_true", help="no argument coercion")
    p.add_argument("--dtype", default=None, help="model dtype for transformers (e.g. bf16)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run_rollout)


def run_rollout(args: argparse.Namespace) -> int:
    from collections import Counter

    from tqdm import tqdm

    from toolkit.agent.loop import RolloutConfig, RolloutStats, check_environment, rollout
    from toolkit.agent.policies import make_policy
    from toolkit.models import check_adapter
    from toolkit.records import RecordError, Task, read_jsonl, write_jsonl

    tasks = read_jsonl(args.tasks, Task)
    if not tasks:  # an empty run would "succeed" and write an empty file
        raise RecordError(f"{args.tasks}: no tasks in the file (it is empty)")
    tasks = tasks[: args.limit]
    if args.adapter:
        check_adapter(args.adapter, args.policy)  # before the model loads
    overrides = {
        "max_turns": args.max_turns,
        "max_new_tokens": args.max_new_tokens,
        "max_context_tokens": args.max_context_tokens,
        "max_tool_output_tokens": args.max_tool_output_tokens,
        "tool_output_cut": args.tool_output_cut,
        "temperature": args.temperature,
    }
    config = RolloutConfig(
        finish_tool=not args.no_finish_tool,
        relaxed_validation=not args.strict_validation,
        seed=args.seed,
        **{k: v for k, v in overrides.items() if v is not None},
    )
    policy = make_policy(args.policy, adapter=args.adapter, dtype=args.dtype)
    stats = RolloutStats()
    out = Path(args.out)
    partial = partial_path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with (
        partial.open("w", encoding="utf-8") as sink,
        tqdm(total=len(tasks) * args.n, desc="rollout", unit="ep", disable=args.no_progress) as bar,
    ):

        def done(traj: Any) -> None:
            append_line(sink, traj.to_dict())
            bar.update(1)

        try:
            trajs = rollout(tasks, policy, config, n=args.n, on_done=done, stats=stats)
            check_environment(trajs)  # no trajectory file that reads as a model's results
        except BaseException:
            print(f"rollout stopped; finished trajectories are in {partial}", file=sys.stderr)
            raise
    # Task order for the final file; written aside and renamed, so <out> is never half written.
    staged = out.with_name(out.name + ".tmp")
    write_jsonl(staged, trajs)
    os.replace(staged, out)
    partial.unlink()
    stops = Counter(t.stop_reason for t in trajs)
    calls = [c for t in trajs for c in t.calls]
    failed = sum(not c.ok for c in calls)
    print(
        f"{len(trajs)} trajectories -> {args.out}; stop reasons {dict(stops)}; {len(calls)} tool calls, "
        f"{failed} failed; {stats.wall_s:.1f} s ({stats.outside_generation_share:.1%} outside generation)",
        file=sys.stderr,
    )
    return 0


def partial_path(out: str | Path) -> Path:
    """Where ``mcp-rl rollout --out OUT`` appends trajectories while it runs."""
    out = Path(out)
    return out.with_name(out.name + ".partial")


def append_line(sink: IO[str], record: dict[str, Any]) -> None:
    """One JSONL line, flushed (ASCII escapes: any text, lone surrogates included, can be written)."""
    sink.write(json.dumps(record, sort_keys=True) + "\n")
    sink.flush()
