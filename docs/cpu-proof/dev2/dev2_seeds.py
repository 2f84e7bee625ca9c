"""Seed means on dev 2: the claim's three rounds and three round + GRPO adapters, each against the frozen
warm start (toolkit.eval.claim over a root assembled from the per-arm evaluations), and GRPO against its own
round (per task, the mean over seeds of GRPO's pass minus its round's; 95% percentile bootstrap over tasks,
2,000 resamples, seed 0, the claim's rule). usage: python runs/dev2_seeds.py"""

import json
import shutil
from pathlib import Path

import numpy as np

from toolkit.eval.claim import compute_claim, read_root
from toolkit.eval.metrics import task_passed
from toolkit.records import read_task_results

SEED, D = 5201, Path("runs/dev2")


def evaluation(arm, label="grpo-seed0"):
    return D / arm / "eval" / f"test-seed{SEED}" / label


def assemble(name, arms):
    root = D / name
    (root / "tasks").mkdir(parents=True, exist_ok=True)
    shutil.copy(D / arms[0] / "tasks" / f"test-seed{SEED}.jsonl", root / "tasks")
    for label, src in [("warm_start", evaluation(arms[0], "warm_start"))] + [
        (f"grpo-seed{s}", evaluation(a)) for s, a in enumerate(arms)
    ]:
        dst = root / "eval" / f"test-seed{SEED}" / label
        if not dst.exists():
            shutil.copytree(src, dst)
    claim = compute_claim(*read_root(root))
    (root / "claim.json").write_text(json.dumps(claim, indent=1, sort_keys=True) + "\n")
    return claim


def passes(arm):
    return {r.task_id: float(task_passed(r)) for r in read_task_results(evaluation(arm) / "results.jsonl")}


if __name__ == "__main__":
    for name, prefix in (("seeds-round", "claim-round-s"), ("seeds-grpo", "claim-grpo-s")):
        c = assemble(name, [f"{prefix}{s}" for s in range(3)])
        for g in ("all", "in_template"):
            b = c[g]["greedy"]
            print(
                f"{name} {g}: {b['before']:.3f} -> {b['after']:.3f}, {b['diff']:+.3f} [{b['ci_low']:+.3f}, {b['ci_high']:+.3f}]"
            )
        print(f"  per seed: {c['per_grpo_seed']}")
        print(
            "  guards: "
            + ", ".join(
                f"{k} {v['diff']:+.3f}" for k, v in {**c["guards"], **c.get("calls_split", {})}.items()
            )
        )
        print(
            "  per kind: "
            + ", ".join(
                f"{k} {v['greedy']['after']:.3f} ({v['greedy']['diff']:+.3f})"
                for k, v in sorted(c["per_kind"].items())
            )
        )
    tasks = [json.loads(line) for line in open(D / "claim-round-s0" / "tasks" / f"test-seed{SEED}.jsonl")]
    groups = {
        "all": [t["id"] for t in tasks],
        "in_template": [t["id"] for t in tasks if "template" not in t["metadata"].get("held_out", [])],
    }
    r = [passes(f"claim-round-s{s}") for s in range(3)]
    g = [passes(f"claim-grpo-s{s}") for s in range(3)]
    rng = np.random.default_rng(0)
    for name, ids in groups.items():
        diff = np.array([np.mean([g[s][t] - r[s][t] for s in range(3)]) for t in ids])
        boots = [diff[rng.integers(0, len(diff), len(diff))].mean() for _ in range(2000)]
        lo, hi = np.percentile(boots, [2.5, 97.5])
        per = [np.mean([g[s][t] - r[s][t] for t in ids]) for s in range(3)]
        print(
            f"GRPO - its round, {name} ({len(ids)}): {diff.mean():+.3f} [{lo:+.3f}, {hi:+.3f}]; per seed "
            + ", ".join(f"{p:+.3f}" for p in per)
        )
