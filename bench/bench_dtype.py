"""bf16 vs float32 on this machine's CPU, in one run: what the cpu-demo recipe's ``bf16-if-native`` decides.

bf16 is fast on a CPU only where it is computed natively (AVX512-BF16 or AMX on x86); elsewhere torch
falls back to a slow path. Every row runs both dtypes on the same model, tasks and budgets:

- update: one LoRA forward + backward of SmolLM2-135M over gold cpu-demo episodes (``--update-rows``
  rows cut to ``--update-len`` tokens), the work of an SFT or GRPO micro-batch;
- transformers: greedy agent-loop episodes on held-out cpu-demo tasks, batched (``--episodes``);
- vllm: the same episodes through vLLM's CPU backend with the engine in that dtype (engine start
  reported on its own line, outside the ratio); skipped where vLLM is not installed.

    python -m bench.bench_dtype                       # about 10 minutes on an AVX2-only 2-core CPU
    python -m bench.bench_dtype --parts update --update-rows 1
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bench_vllm import cpu_demo_tasks, time_rollout

DTYPES = ("bf16", "fp32")


def cpu_report() -> dict[str, Any]:
    import torch

    from toolkit.models import native_bf16, resolve_dtype_name

    cpuinfo = Path("/proc/cpuinfo")
    names = (
        [line for line in cpuinfo.read_text().splitlines() if line.startswith("model name")]
        if cpuinfo.exists()
        else []
    )
    model = names[0].split(":", 1)[1].strip() if names else platform.processor()
    return {
        "cpu": model,
        "torch_capability": torch.backends.cpu.get_cpu_capability(),
        "avx512_bf16": bool(getattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)()),
        "amx": bool(getattr(torch.cpu, "_is_amx_tile_supported", lambda: False)()),
        "native_bf16": native_bf16(),
        "bf16_if_native": resolve_dtype_name("bf16-if-native"),
        "threads": torch.get_num_threads(),
    }


def part_update(recipe: Any, tasks: list[Any], rows: int, length: int) -> dict[str, Any]:
    import torch
    from peft import get_peft_model

    from toolkit.models import load_policy
    from toolkit.train.config import build_lora_config
    from toolkit.train.sft import gold_trajectories, sft_rows

    out: dict[str, Any] = {"rows": rows, "tokens_per_row": length}
    for dtype in DTYPES:
        model, tokenizer = load_policy(recipe.model, dtype=dtype)
        examples = sft_rows(gold_trajectories(tasks[:rows], recipe.loop_config()), tokenizer)
        ids = [e["input_ids"][:length] for e in examples]
        width = min(len(i) for i in ids)  # equal lengths: no padding, the same tokens for both dtypes
        batch = torch.tensor([i[:width] for i in ids])
        model = get_peft_model(model, build_lora_config(recipe))
        model.train()
        model(input_ids=batch[:, :8], labels=batch[:, :8]).loss.backward()  # warm-up, untimed
        started = time.perf_counter()
        model(input_ids=batch, labels=batch).loss.backward()
        out[dtype] = {"seconds": round(time.perf_counter() - started, 2), "tokens": int(batch.numel())}
        print(json.dumps({"update": {dtype: out[dtype]}}), flush=True)
    out["bf16_over_fp32"] = round(out["bf16"]["seconds"] / out["fp32"]["seconds"], 2)
    return out


def part_generation(kind: str, recipe: Any, tasks: list[Any], episodes: int) -> dict[str, Any]:
    from toolkit.agent.policies import TransformersPolicy, VLLMPolicy, vllm_dtype
    from toolkit.models import load_policy

    loop = dataclasses.replace(
        recipe.loop_config(), temperature=0.0, max_batch_size=episodes, max_concurrent_episodes=episodes
    )
    chosen = (tasks * (episodes // max(1, len(tasks)) + 1))[:episodes]
    out: dict[str, Any] = {"episodes": episodes}
    for dtype in DTYPES:
        started = time.perf_counter()
        if kind == "vllm":
            policy = VLLMPolicy(recipe.model, dtype=vllm_dtype(dtype))
        else:
            policy = TransformersPolicy(*load_policy(recipe.model, dtype=dtype))
        start_s = round(time.perf_counter() - started, 1)
        out[dtype] = {**time_rollout(policy, chosen, loop), "start_s": start_s}
        if kind == "vllm":
            policy.close()
        print(json.dumps({kind: {dtype: out[dtype]}}), flush=True)
    out["fp32_over_bf16_tokens_per_s"] = round(
        out["fp32"]["tokens_per_s"] / max(1e-9, out["bf16"]["tokens_per_s"]), 2
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", nargs="+", default=["update", "transformers", "vllm"])
    parser.add_argument("--update-rows", type=int, default=2)
    parser.add_argument("--update-len", type=int, default=512)
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-dtype-"))
    report: dict[str, Any] = {"machine": cpu_report()}
    print(json.dumps(report), flush=True)
    recipe, train_tasks, eval_tasks = cpu_demo_tasks(workdir)
    if "update" in args.parts:
        report["update"] = part_update(recipe, train_tasks, args.update_rows, args.update_len)
    if "transformers" in args.parts:
        report["transformers"] = part_generation("transformers", recipe, eval_tasks, args.episodes)
    if "vllm" in args.parts:
        if importlib.util.find_spec("vllm") is None:
            report["vllm"] = "skipped: vLLM is not installed"
        else:
            report["vllm"] = part_generation("vllm", recipe, eval_tasks, args.episodes)
    (workdir / "bench_dtype.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":  # vLLM starts its engine in a process that re-imports this module
    main()
