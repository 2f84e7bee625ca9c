"""A soup of LoRA adapters: the tensor-by-tensor mean of adapters trained from the same warm start (GRPO
runs that differ in seed only), evaluated on a run's dev set like its GRPO adapter.

Two GRPO runs of one recipe gain much the same sampled-only tasks and lose different greedy passes
(docs/cpu-proof/README.md, "Run 33"). Averaging their weights (WARP's weight averaging of rewarded
policies) asks whether what the runs share survives the mean while what each drew alone cancels. The mean is
taken over the LoRA A and B matrices, which matches the mean of their products to first order when the
adapters start from the same warm start and move little. PEFT's ``add_weighted_adapter`` ("linear")
is not this mean: it weights A and B each by the square root of weight x scaling, so two weights of 0.5
give (B1 + B2)(A1 + A2) / 2 before scaling, and it needs the model loaded; a mean needs the two files.

    python -m bench.adapter_soup RUN OUT ADAPTER ADAPTER [ADAPTER ...]

writes OUT/adapter, evaluates it on RUN's held-out tasks with RUN's recipe (greedy, the recipe's
evaluation loop and backend) into OUT/eval and prints the paired comparison against RUN/eval/sft.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

WEIGHTS = "adapter_model.safetensors"
HEADLINE = ("pass@0.75", "pass@0.50", "coverage", "finish_rate", "tool_calls_per_task")


def average_adapters(adapters: list[Path], out: Path) -> Path:
    """The mean of ``adapters``' tensors, written with the first one's config and tokenizer files."""
    from safetensors.torch import load_file, save_file

    if len(adapters) < 2:
        raise ValueError("a soup needs at least two adapters")
    tensors = [load_file(a / WEIGHTS) for a in adapters]
    for a, t in zip(adapters[1:], tensors[1:], strict=True):
        if t.keys() != tensors[0].keys():
            raise ValueError(f"{a / WEIGHTS}: other tensors than {adapters[0] / WEIGHTS} (not the same LoRA)")
    out.mkdir(parents=True, exist_ok=True)
    for f in adapters[0].iterdir():
        if f.is_file() and f.name != WEIGHTS:
            shutil.copy(f, out / f.name)
    mean = {
        k: (sum(t[k].float() for t in tensors) / len(tensors)).to(tensors[0][k].dtype).contiguous()
        for k in tensors[0]
    }
    save_file(mean, out / WEIGHTS)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.adapter_soup", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("run", type=Path, help="a train run folder: its recipe, tasks/eval.jsonl, eval/sft")
    parser.add_argument("out", type=Path)
    parser.add_argument("adapters", type=Path, nargs="+")
    args = parser.parse_args(argv)
    from toolkit.runs import RunFolder

    run, soup_out = (
        RunFolder(args.run),
        RunFolder(args.out),
    )  # the soup's folder: adapter/ and eval/, as a run's
    soup = average_adapters(args.adapters, soup_out.adapter)

    from toolkit.train.backends import make_backend
    from toolkit.train.pipeline import choose_backend
    from toolkit.train.resume import read_run_recipe
    from toolkit.train.run_eval import compare, eval_loop_config, evaluate_adapter
    from toolkit.train.task_sources import read_tasks

    recipe = read_run_recipe(run.root)
    tasks = read_tasks(run.tasks.eval, "eval")
    backend = make_backend(choose_backend(recipe), recipe)  # as the run's own evaluation chose it
    evaluate_adapter(backend, soup, "soup", tasks, soup_out.eval, eval_loop_config(recipe))
    comparison = compare(run.eval_before(warm=True), soup_out.eval)
    for name in HEADLINE:
        d = comparison[name]
        print(
            f"{name:22s} {d['before']:.3f} -> {d['after']:.3f}  {d['diff']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}]"
        )


if __name__ == "__main__":  # vLLM's engine starts in a spawned process: the guard keeps it from re-running
    main()
