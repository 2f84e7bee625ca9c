"""Evaluate a GRPO run's warm start, checkpoints and final adapter on the dev set while it trains.

Run beside `mcp-rl train` (without --evaluate) on a GPU machine: it writes the same folders the pipeline's
own evaluation and learning curve write (eval/sft, eval/curve/step-N, eval/grpo), so a later
`mcp-rl train --resume --evaluate --curve` only reads them back and writes summary.json.
Usage: python watch.py RUN MAX_STEPS
"""

import json
import sys
import time
from pathlib import Path

from toolkit.train.backends import TransformersBackend
from toolkit.train.config import load_recipe
from toolkit.train.pipeline import (
    _headline,
    checkpoint_steps,
    evaluate_policy,
    read_tasks,
    resolve_task_files,
)

run, max_steps = Path(sys.argv[1]), int(sys.argv[2])


def log(msg):
    print(f"[watch {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def wait_for(path):
    while not path.exists():
        time.sleep(5)
    time.sleep(5)  # let the writer finish the folder


wait_for(run / "recipe.json")
recipe = load_recipe(run / "recipe.json")
backend = TransformersBackend(recipe)
wait_for(run / "tasks" / "eval.jsonl")
_, eval_file = resolve_task_files(recipe, run)
tasks = read_tasks(eval_file, "eval")[: recipe.eval.get("n_tasks") or None]
loop = recipe.loop_config(temperature=0.0, **recipe.eval.get("rollout", {}))


def evaluate(adapter, folder, label):
    if (folder / "results.json").exists():
        return
    t0 = time.time()
    res = evaluate_policy(backend.eval_policy(adapter, label), tasks, folder, label, loop)
    backend.release()
    log(f"{label} in {time.time() - t0:.0f} s: {_headline(res)}")


wait_for(run / "sft" / "adapter" / "adapter_model.safetensors")
evaluate(run / "sft" / "adapter", run / "eval" / "sft", "sft-only")
while True:
    done = (run / ".grpo-done").exists()
    for step, ckpt in checkpoint_steps(run / "grpo"):
        if step < max_steps and (ckpt / "trainer_state.json").exists():
            evaluate(ckpt, run / "eval" / "curve" / f"step-{step}", f"grpo-step{step}")
    if done:
        break
    time.sleep(10)
evaluate(run / "adapter", run / "eval" / "grpo", "grpo")
log("done: " + json.dumps(sorted(p.parent.name for p in run.glob("eval/**/results.json"))))
