"""Outside the protocol (the dev set is the tuning set): protocol v2's adapters on dev set 2 (synth seed
5201, 300 tasks, docs/cpu-proof/dev2/test-seed5201.jsonl.gz), each in a claim-layout root under
runs/dev2v2/<arm> against v2's frozen warm start (runs/claim-v2/warm_start), greedy, so that
toolkit.eval.claim gives the protocol's groups and guards. The warm start's evaluation is made once and
copied; ../dev2/dev2_table.py --root runs/dev2v2 prints the lines.

usage (from the repository root of a frozen worktree):
    python docs/cpu-proof/claim-v2/dev2_look.py ARM=ADAPTER [ARM=ADAPTER ...]"""

import gzip
import shutil
import sys
from pathlib import Path

from toolkit.runs import ClaimFolder
from toolkit.train.claim_eval import ClaimEvaluator, evaluate_test_sets
from toolkit.train.config import load_recipe

SEED, N = 5201, 300
ROOT = Path("runs/dev2v2")
WARM = Path("runs/claim-v2/warm_start")
TASKS = Path("docs/cpu-proof/dev2/test-seed5201.jsonl.gz")


def main(argv):
    recipe = load_recipe(Path("runs/claim-v2/grpo/seed-0/recipe.json"))
    with ClaimEvaluator(recipe, 0) as ev:
        first = None
        for name, adapter in (a.split("=", 1) for a in argv):
            claim = ClaimFolder(ROOT / name)
            tasks = claim.test_tasks(SEED)
            tasks.parent.mkdir(parents=True, exist_ok=True)
            if not tasks.exists():  # dev set 2 as the sixteenth session drew it, byte for byte
                tasks.write_bytes(gzip.decompress(TASKS.read_bytes()))
            if first is not None:  # the warm start's evaluation, made once
                w_src, w_dst = (
                    ClaimFolder(first).evaluation(SEED, "warm_start"),
                    claim.evaluation(SEED, "warm_start"),
                )
                w_dst.mkdir(parents=True, exist_ok=True)
                for f in w_src.iterdir():
                    if f.is_file() and not (w_dst / f.name).exists():
                        shutil.copy(f, w_dst / f.name)
            evaluate_test_sets(
                recipe, {"warm_start": WARM, "grpo-seed0": Path(adapter)}, [SEED], N, claim.root, ev
            )
            print(f"[dev2v2] {name} evaluated", flush=True)
            first = first or claim.root


if __name__ == "__main__":
    main(sys.argv[1:])
