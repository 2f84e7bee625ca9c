"""vLLM's engine core in its own process (vLLM's default) vs in the calling process, on the CPU backend.

``VLLM_ENABLE_V1_MULTIPROCESSING`` (read when vLLM is imported) decides whether ``vllm.LLM`` runs its
engine core in a spawned process that the front end talks to over ZMQ, or in-process. On a machine with
few cores the spawned process re-imports vLLM and torch, and the two processes share the cores. This
bench starts an engine each way in a fresh process, alternating the modes ``--repeats`` times, and times
the engine start and a sampled rollout of ``--episodes`` episodes (batch 32, the cpu-demo recipe's
held-out tasks, its loop and dtype, real MCP servers). It reports each mode's median and the ratios
in-process / multiprocess measured in the same run.

    python -m bench.bench_vllm_inproc --episodes 32 --repeats 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODES = {"multiprocess": "1", "in-process": "0"}


def child(episodes: int, workdir: Path) -> dict[str, float]:
    """One engine start and one rollout, in this process (the mode is in the environment)."""
    import dataclasses

    from bench.bench_vllm import cpu_demo_tasks, time_rollout
    from toolkit.agent.policies import VLLMPolicy, vllm_dtype
    from toolkit.models import model_checkpoint

    recipe, _, tasks = cpu_demo_tasks(workdir)
    started = time.perf_counter()
    policy = VLLMPolicy(model_checkpoint(recipe.model), dtype=vllm_dtype(recipe.dtype))
    engine_s = time.perf_counter() - started
    chosen = (tasks * (episodes // max(1, len(tasks)) + 1))[:episodes]
    loop = dataclasses.replace(recipe.loop_config(), max_batch_size=32, max_concurrent_episodes=32, seed=0)
    row = time_rollout(policy, chosen, loop)
    policy.close()
    return {"engine_s": round(engine_s, 1), **row}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.episodes, Path(args.workdir))), flush=True)
        return
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-inproc-"))
    rows: dict[str, list[dict]] = {m: [] for m in MODES}
    for repeat in range(args.repeats):
        for mode, flag in MODES.items():
            env = {**os.environ, "VLLM_ENABLE_V1_MULTIPROCESSING": flag}
            cmd = [sys.executable, "-m", "bench.bench_vllm_inproc", "--child", "--workdir", str(workdir)]
            done = subprocess.run(
                [*cmd, "--episodes", str(args.episodes)], env=env, capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                raise SystemExit(f"{mode} run failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
            row = json.loads(done.stdout.strip().splitlines()[-1])
            rows[mode].append(row)
            print(json.dumps({"repeat": repeat, "mode": mode, **row}), flush=True)
    median = {m: {k: statistics.median(r[k] for r in rs) for k in ("engine_s", "wall_s", "tokens_per_s")}
              for m, rs in rows.items()}  # fmt: skip
    inproc, multi = median["in-process"], median["multiprocess"]
    print(json.dumps({
        "median": median,
        "engine_start_ratio_inproc_over_mp": round(inproc["engine_s"] / multi["engine_s"], 2),
        "tokens_per_s_ratio_inproc_over_mp": round(inproc["tokens_per_s"] / multi["tokens_per_s"], 2),
    }), flush=True)  # fmt: skip


if __name__ == "__main__":  # vLLM's multiprocess mode spawns a process that re-imports __main__
    main()
