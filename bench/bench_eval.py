"""Greedy held-out evaluation speed: LoRA adapter kept apart vs merged, one padded batch vs length buckets.

The training pipeline evaluates the SFT-only and the GRPO model on the same held-out tasks, greedily,
through the agent loop (``toolkit.train.run_eval.evaluate_policy``). On a CPU that time goes mostly to
prefilling prompts of 400-1,400 tokens (tool schemas), left-padded to the longest prompt of the batch.
Variants, each timed on the same tasks in this process, in the order given:

- ``adapter``: ``PeftModel`` with the LoRA layers beside the base weights, one call per batch (baseline);
- ``buckets``: the same with ``RolloutConfig.max_padding`` (length buckets);
- ``merged``: the adapter merged into the weights (``merge_and_unload``), one call per batch;
- ``merged+buckets``: both.

Besides time, each variant reports how many episodes ended with the same final answer and the same tool
calls as the baseline: merging rounds the weights (bf16) and padding changes the numerics of the batch,
so greedy decoding may differ on a few episodes.

    python -m bench.bench_eval --run runs/cpu-demo --limit 32
"""

from __future__ import annotations

import argparse
import json
import time

VARIANTS = ("adapter", "buckets", "merged", "merged+buckets")


def _signature(traj) -> tuple:
    return (traj.final_answer, tuple((c.name, json.dumps(c.args, sort_keys=True)) for c in traj.calls))


def run(args: argparse.Namespace) -> dict:
    """Time every variant in ``args.variants`` on the run's first ``args.limit`` held-out tasks."""
    from toolkit.agent.loop import RolloutStats, rollout
    from toolkit.agent.policies import TransformersPolicy
    from toolkit.models import load_policy
    from toolkit.runs import RunFolder
    from toolkit.train.config import load_recipe
    from toolkit.train.task_sources import read_tasks, resolve_task_files

    run = RunFolder(args.run)
    recipe = load_recipe(str(run.recipe_file))
    _, eval_file = resolve_task_files(recipe, run.root)
    tasks = read_tasks(eval_file, "eval")[: args.limit]
    adapter = run.sft_adapter
    rows, baseline = [], None
    models = {}
    for variant in args.variants:
        merged = variant.startswith("merged")
        if merged not in models:
            model, tokenizer = load_policy(recipe.model, adapter=str(adapter), dtype=recipe.dtype)
            models[merged] = (model.merge_and_unload() if merged else model, tokenizer)
        model, tokenizer = models[merged]
        loop = recipe.loop_config(
            temperature=0.0, max_padding=args.max_padding if variant.endswith("buckets") else 0.0
        )
        policy = TransformersPolicy(model, tokenizer, name=variant)
        stats = RolloutStats()
        start = time.perf_counter()
        trajs = rollout(tasks, policy, loop, stats=stats)
        wall = time.perf_counter() - start
        sigs = [_signature(t) for t in trajs]
        baseline = baseline or (wall, sigs)
        rows.append(
            {
                "variant": variant,
                "wall_s": round(wall, 1),
                "generate_s": round(stats.generate_s, 1),
                "speedup": round(baseline[0] / wall, 2),
                "same_as_first": sum(a == b for a, b in zip(sigs, baseline[1], strict=True)),
                "episodes": len(trajs),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return {"tasks": len(tasks), "max_padding": args.max_padding, "rows": rows}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--run", required=True, help="a `mcp-rl train` run folder with sft/adapter and tasks/"
    )
    parser.add_argument("--limit", type=int, default=32, help="held-out tasks")
    parser.add_argument("--max-padding", type=float, default=0.3)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    args = parser.parse_args(argv)
    result = run(args)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
