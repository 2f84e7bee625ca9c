"""Issue 49 lever: a second RFT round. The abstain-keeping round's adapter (runs/dev2-arms/abst-s0) as the
warm start of a run whose rft section is the same round (320 train tasks x 2 at the rollout temperature,
keep_no_call_if_gold_has_none), sampled with rollout.seed 100 (round 1 used 0), stopped after the round."""

import shutil
import sys
from pathlib import Path

from bench.reproduce_claim import derived
from toolkit.train.config import load_recipe
from toolkit.train.pipeline import run_recipe

if __name__ == "__main__":
    src = Path("runs/dev2-arms/abst-s0/run")
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/dev2-arms/iter2-s0/run")
    if not (out / "tasks").exists():
        out.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src / "tasks", out / "tasks")
    recipe = derived(
        load_recipe(src / "recipe.json"),
        **{
            "warm_start": str(src / "rft" / "adapter"),
            "rollout.seed": 100,
            "rft.keep_no_call_if_gold_has_none": True,
        },
    )
    run_recipe(recipe, out, resume=True, stop_after="rft")
