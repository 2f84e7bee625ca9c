"""Issue 49 lever, session 17: the claim's recipe with `rft.rounds: 2` (the kit's own rounds, 0839f2d), on a
copy of a claim seed's run (its warm start and first round kept): round 2 samples the same 320 train tasks x 2
with round 1's adapter, rollout seed S + 100, keeps by the claim's rules (no no-call episodes) and fine-tunes
it into rft-2/adapter; stopped before GRPO. usage: python runs/rounds2.py runs/r2/seed-S"""

import sys
from pathlib import Path

from bench.reproduce_claim import derived
from toolkit.train.config import load_recipe
from toolkit.train.pipeline import run_recipe

if __name__ == "__main__":
    out = Path(sys.argv[1])
    recipe = derived(load_recipe(out / "recipe.json"), **{"rft.rounds": 2})
    run_recipe(recipe, out, resume=True, allow_recipe_change=True, stop_after="rft")
