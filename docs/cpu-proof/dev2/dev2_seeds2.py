"""Session 17, seed means on dev 2 over seeds 0 and 1: the abstain-keeping first rounds (abst-round-sS) and
their second rounds (iter2-round-sS), each against the frozen warm start (toolkit.eval.claim over a root
assembled as dev2_seeds.py does), and the second round against its first (per task, the mean over seeds of
the second's pass minus the first's; 95% percentile bootstrap over tasks, 2,000 resamples, seed 0).
usage: python runs/dev2_seeds2.py"""

import json

import numpy as np
from dev2_seeds import SEED, D, assemble, passes

SEEDS = (0, 1)

if __name__ == "__main__":
    for name, prefix in (("seeds-abst-round", "abst-round-s"), ("seeds-iter2-round", "iter2-round-s")):
        c = assemble(name, [f"{prefix}{s}" for s in SEEDS])
        for g in ("all", "in_template"):
            b = c[g]["greedy"]
            print(
                f"{name} {g}: {b['before']:.3f} -> {b['after']:.3f}, {b['diff']:+.3f} [{b['ci_low']:+.3f}, {b['ci_high']:+.3f}]"
            )
        print(f"  per seed: {c['per_grpo_seed']}")
        guards = {**c["guards"], **c.get("calls_split", {})}
        print("  guards: " + ", ".join(f"{k} {v['diff']:+.3f}" for k, v in guards.items()))
        kinds = sorted(c["per_kind"].items())
        print(
            "  per kind: "
            + ", ".join(f"{k} {v['greedy']['after']:.3f} ({v['greedy']['diff']:+.3f})" for k, v in kinds)
        )
    tasks = [json.loads(line) for line in open(D / "claim-round-s0" / "tasks" / f"test-seed{SEED}.jsonl")]
    groups = {
        "all": [t["id"] for t in tasks],
        "in_template": [t["id"] for t in tasks if "template" not in t["metadata"].get("held_out", [])],
    }
    one = [passes(f"abst-round-s{s}") for s in SEEDS]
    two = [passes(f"iter2-round-s{s}") for s in SEEDS]
    rng = np.random.default_rng(0)
    for name, ids in groups.items():
        diff = np.array([np.mean([two[i][t] - one[i][t] for i in range(len(SEEDS))]) for t in ids])
        boots = [diff[rng.integers(0, len(diff), len(diff))].mean() for _ in range(2000)]
        lo, hi = np.percentile(boots, [2.5, 97.5])
        per = [np.mean([two[i][t] - one[i][t] for t in ids]) for i in range(len(SEEDS))]
        print(
            f"second round - first, {name} ({len(ids)}): {diff.mean():+.3f} [{lo:+.3f}, {hi:+.3f}]; per seed "
            + ", ".join(f"{p:+.3f}" for p in per)
        )
