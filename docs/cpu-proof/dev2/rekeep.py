"""Issue 49: a claim seed's RFT round re-kept with rft.keep_no_call_if_gold_has_none (its samples read back,
not drawn again), fine-tuned, stopped after the round. usage: python runs/rekeep.py RUN_FOLDER"""

import sys
from pathlib import Path

from bench.reproduce_claim import derived
from toolkit.train.config import load_recipe
from toolkit.train.pipeline import run_recipe

if __name__ == "__main__":
    out = Path(sys.argv[1])
    recipe = derived(load_recipe(out / "recipe.json"), **{"rft.keep_no_call_if_gold_has_none": True})
    run_recipe(recipe, out, resume=True, allow_recipe_change=True, stop_after="rft")
