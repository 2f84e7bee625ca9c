"""GRPO step time and peak memory: the kit's trainer vs plain TRL GRPOTrainer, same model and budgets.

- kit: ``KitGRPOTrainer`` with the agent loop as ``rollout_func`` (MCP episodes on isolated worlds,
  token bookkeeping, env mask, the rubric reward from the trajectory), one model turn per episode.
- TRL: ``GRPOTrainer`` with its own generation on the very same prompt text (system + tool schemas +
  user message, rendered by the loop's template) and a constant reward.

Same model, dtype, LoRA, group size, batch, new-token budget and sampling; generation is forced to
run the full ``max_new_tokens`` in both (EOS suppressed) so both do the same model work. Each variant
runs in its own process: the step time is TRL's ``step_time`` (median over the steps after the first),
peak memory is the process's max RSS. The ratio kit / TRL is the kit's overhead (target: <= 1.10).

    python -m bench.bench_train                              # smollm2-135m bf16, 4 steps
    python -m bench.bench_train --model tiny-random --steps 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TASKS = Path(__file__).resolve().parent.parent / "tests" / "data" / "train_tasks.jsonl"


def _common(args: argparse.Namespace, out: str) -> dict:
    return dict(
        output_dir=out,
        max_steps=args.steps,
        per_device_train_batch_size=args.batch,
        num_generations=args.generations,
        learning_rate=1e-5,
        beta=0.0,
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        report_to="none",
        logging_steps=1,
        save_strategy="no",
        remove_unused_columns=False,
        max_completion_length=args.new_tokens,
        temperature=1.0,
        seed=0,
    )


class _NoEos:
    """Logits processor: never sample EOS, so every completion is exactly max_new_tokens long."""

    def __init__(self, eos_id: int):
        self.eos_id = eos_id

    def __call__(self, input_ids, scores):
        scores[:, self.eos_id] = float("-inf")
        return scores


def _force_full_length(model, tokenizer) -> None:
    from transformers import LogitsProcessorList

    original = model.generate

    def generate(*a, **kw):
        procs = LogitsProcessorList(kw.pop("logits_processor", None) or [])
        procs.append(_NoEos(tokenizer.eos_token_id))
        kw["min_new_tokens"] = 0
        return original(*a, logits_processor=procs, **kw)

    model.generate = generate


def run_variant(variant: str, args: argparse.Namespace) -> dict:
    """One variant in this process; prints a JSON line with step times and peak RSS."""
    import torch
    from peft import LoraConfig, get_peft_model
    from trl import GRPOConfig

    from toolkit.agent.chat import ChatFormat
    from toolkit.agent.loop import RolloutConfig, default_system_prompt, rollout
    from toolkit.agent.policies import GoldPolicy
    from toolkit.models import load_policy
    from toolkit.records import Task, read_jsonl

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    tasks = read_jsonl(TASKS, Task)
    model, tok = load_policy(args.model, dtype=args.dtype)
    model = get_peft_model(
        model, LoraConfig(task_type="CAUSAL_LM", r=16, lora_alpha=32, target_modules="all-linear")
    )
    _force_full_length(model, tok)
    loop = RolloutConfig(
        max_turns=1, max_new_tokens=args.new_tokens, max_context_tokens=4096, temperature=1.0
    )
    out = tempfile.mkdtemp(prefix=f"bench-train-{variant}-")
    config = GRPOConfig(**_common(args, out))
    if variant == "kit":
        from toolkit.train.grpo import build_grpo_trainer

        trainer = build_grpo_trainer(model, tok, tasks, config, loop, reward="rubric")
    else:
        from datasets import Dataset
        from trl import GRPOTrainer

        from toolkit.train.trl_adapter import install_logprob_fallback

        install_logprob_fallback()  # TRL 1.15 on a CPU torch build: the same LM head as the kit variant
        # the exact prompt text the kit's loop renders (tools from a gold replay's metadata)
        fmt = ChatFormat(tok)
        trajs = rollout(tasks, GoldPolicy(), loop)
        system = default_system_prompt(loop.finish_tool)
        prompts = [
            fmt.prompt_text(
                [{"role": "system", "content": system}, {"role": "user", "content": t.prompt}],
                tr.metadata["tools"],
            )
            for t, tr in zip(tasks, trajs, strict=True)
        ]

        def constant_reward(completions, **kwargs):
            return [float(len(c) % 2) for c in completions]  # cheap, with some variance

        trainer = GRPOTrainer(
            model=model,
            reward_funcs=[constant_reward],
            args=config,
            train_dataset=Dataset.from_dict({"prompt": prompts}),
            processing_class=tok,
        )
    trainer.train()
    times = [h["step_time"] for h in trainer.state.log_history if "step_time" in h]
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"variant": variant, "step_times": times, "peak_rss_mib": peak_kib / 1024}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=int(os.environ.get("MCP_RL_THREADS", "2")))
    parser.add_argument("--variant", choices=["kit", "trl"], default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.variant:
        print("RESULT " + json.dumps(run_variant(args.variant, args)), flush=True)
        return 0
    results = {}
    for variant in ("trl", "kit"):  # separate processes: clean peak memory, no shared caches
        cmd = [sys.executable, "-m", "bench.bench_train", "--variant", variant]
        cmd += [
            "--model",
            args.model,
            "--dtype",
            args.dtype,
            "--steps",
            str(args.steps),
            "--batch",
            str(args.batch),
        ]
        cmd += ["--generations", str(args.generations), "--new-tokens", str(args.new_tokens)]
        cmd += ["--threads", str(args.threads)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
        line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
        if proc.returncode != 0 or line is None:
            print(proc.stdout[-2000:], proc.stderr[-3000:], file=sys.stderr)
            return 1
        results[variant] = json.loads(line[len("RESULT ") :])
    for r in results.values():
        steady = r["step_times"][1:] or r["step_times"]
        r["median_step_s"] = statistics.median(steady)
    kit, trl = results["kit"], results["trl"]
    ratio = kit["median_step_s"] / trl["median_step_s"]
    print(
        f"model {args.model} ({args.dtype}), {args.batch} completions/step, group {args.generations}, {args.new_tokens} new tokens"
    )
    print(
        f"  plain TRL GRPOTrainer : {trl['median_step_s']:.2f} s/step   peak RSS {trl['peak_rss_mib']:.0f} MiB"
    )
    print(
        f"  kit (agent loop)      : {kit['median_step_s']:.2f} s/step   peak RSS {kit['peak_rss_mib']:.0f} MiB"
    )
    print(
        f"  step time ratio kit/TRL: {ratio:.3f} (target <= 1.10)   memory ratio: {kit['peak_rss_mib'] / trl['peak_rss_mib']:.3f}"
    )
    print(json.dumps({"ratio": ratio, **results}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
