"""Issue 49, a dev set with the test sets' kind mix: synth seed 5201, 300 tasks, drawn like the claim's test
sets (toolkit.train.claim_eval.claim_test_set, the recipe's synth settings, train prompts filtered out).
One claim-layout root per arm under runs/dev2/<arm>: warm_start (the frozen 120-step warm start of the
claim) against the arm's adapter as grpo-seed0, so `python -m toolkit.eval.claim runs/dev2/<arm>` gives
the protocol's tables on the dev set. The warm start's evaluation is made once and copied.

usage: python runs/dev2_eval.py ARM=ADAPTER [ARM=ADAPTER ...] [--samples 4]"""

import shutil
import sys
from pathlib import Path

from toolkit.runs import ClaimFolder
from toolkit.train.claim_eval import ClaimEvaluator, evaluate_test_sets
from toolkit.train.config import load_recipe

SEED, N = 5201, 300
ROOT = Path("runs/dev2")
WARM = Path("runs/claim/warm_start")


def main(argv):
    samples = 0
    if "--samples" in argv:
        i = argv.index("--samples")
        samples = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2 :]
    recipe = load_recipe(Path("runs/dev2-arms/abst-s0/run/recipe.json"))
    arms = [a.split("=", 1) for a in argv]
    with ClaimEvaluator(recipe, samples) as ev:
        first = None
        for name, adapter in arms:
            root = ROOT / name
            claim = ClaimFolder(root)
            if first is not None:  # the same test set and the warm start's evaluation, copied
                src = ClaimFolder(first)
                claim.test_tasks(SEED).parent.mkdir(parents=True, exist_ok=True)
                if not claim.test_tasks(SEED).exists():
                    shutil.copy(src.test_tasks(SEED), claim.test_tasks(SEED))
                w_src, w_dst = src.evaluation(SEED, "warm_start"), claim.evaluation(SEED, "warm_start")
                for f in w_src.iterdir():
                    if f.is_file() and not (w_dst / f.name).exists():
                        w_dst.mkdir(parents=True, exist_ok=True)
                        shutil.copy(f, w_dst / f.name)
            evaluate_test_sets(recipe, {"warm_start": WARM, "grpo-seed0": Path(adapter)}, [SEED], N, root, ev)
            print(f"[dev2] {name} evaluated", flush=True)
            first = first or root


if __name__ == "__main__":
    main(sys.argv[1:])
