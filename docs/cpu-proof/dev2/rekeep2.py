"""Issue 49 lever, session 17: a mixed two-round arm. The claim's first round (no no-call episodes kept),
then a second round that keeps the right no-call episodes of tasks whose gold makes no call
(rft.keep_no_call_if_gold_has_none): runs/r2's second-round samples re-kept (read back, not drawn again),
fine-tuned from round 1's adapter into rft-2/adapter (round 1's adapter is found, so the rule reaches only
round 2); stopped before GRPO. usage: python runs/rekeep2.py runs/r2m/seed-S"""

import sys
from pathlib import Path

from bench.reproduce_claim import derived
from toolkit.train.config import load_recipe
from toolkit.train.pipeline import run_recipe

if __name__ == "__main__":
    out = Path(sys.argv[1])
    recipe = derived(
        load_recipe(out / "recipe.json"), **{"rft.rounds": 2, "rft.keep_no_call_if_gold_has_none": True}
    )
    run_recipe(recipe, out, resume=True, allow_recipe_change=True, stop_after="rft")
