"""Issue 49 lever: a second RFT round. The abstain-keeping round's adapter (runs/dev2-arms/abst-s0) as the
warm start of a run whose rft section is the same round (320 train tasks x 2 at the rollout temperature,
keep_no_call_if_gold_has_none), sampled with rollout.seed 100 (round 1 used 0), stopped after the round.
usage: python runs/iter2.py [OUT [SRC ROLLOUT_SEED]] (seeds 1-2: SRC runs/dev2-arms/abst-sS/run, seed 100+S)"""

import shutil
import sys
from pathlib import Path

from bench.reproduce_claim import derived
from toolkit.train.config import load_recipe
from toolkit.train.pipeline import run_recipe

if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/dev2-arms/iter2-s0/run")
    src = Path(sys.argv[2] if len(sys.argv) > 2 else "runs/dev2-arms/abst-s0/run")
    rollout_seed = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    if not (out / "tasks").exists():
        out.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src / "tasks", out / "tasks")
    recipe = derived(
        load_recipe(src / "recipe.json"),
        **{
            "warm_start": str(src / "rft" / "adapter"),
            "rollout.seed": rollout_seed,
            "rft.keep_no_call_if_gold_has_none": True,
        },
    )
    run_recipe(recipe, out, resume=True, stop_after="rft")
