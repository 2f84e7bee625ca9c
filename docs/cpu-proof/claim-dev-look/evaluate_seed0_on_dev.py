# the GRPO seed-0 adapter of the claim on the dev set (greedy, the recipe's loop and backend): a look, not
# part of the protocol (dev tasks are the tuning set); written outside the claim's root
from pathlib import Path

from toolkit.train.claim_eval import ClaimEvaluator
from toolkit.train.resume import read_run_recipe
from toolkit.train.task_sources import read_tasks

if __name__ == "__main__":  # vLLM spawns its engine: the main module must not run on import
    run = Path("/work/frozen/runs/claim/grpo/seed-0")
    recipe = read_run_recipe(run)
    tasks = read_tasks(Path("/work/frozen/runs/claim/warm/sft-120/tasks/eval.jsonl"), "eval")
    ClaimEvaluator(recipe, 0).greedy(run / "adapter", "grpo-seed0", tasks, Path("/work/dev-seed0"))
