"""Sum what attrib.sh measured: greedy passes on test seed 3101's tasks whose gold makes no call, for the
warm start and each seed's RFT round (run again here) beside the claim's own greedy results.

    PYTHONPATH=. python docs/cpu-proof/claim/attrib_sum.py   # from the repository, runs/ in the frozen worktree
"""

import collections
import json
from pathlib import Path

from toolkit.eval.metrics import task_passed
from toolkit.records import read_task_results

ATTRIB = Path("/work/frozen/runs/claim-attrib")
CLAIM = Path("/work/frozen/runs/claim/eval/test-seed3101")


def show(label: str, path: Path, kind: dict[str, str]) -> None:
    rows = [r for r in read_task_results(path) if r.task_id in kind]
    passed = collections.Counter(kind[r.task_id] for r in rows if task_passed(r))
    total = collections.Counter(kind[r.task_id] for r in rows)
    calls = sum(r.n_calls > 0 for r in rows)
    print(
        f"{label:18s} abstain {passed['abstain']}/{total['abstain']}  clarify {passed['clarify']}/{total['clarify']}"
        f"  episodes with a call {calls}/{len(rows)}"
    )


def main() -> None:
    lines = (ATTRIB / "nocall-3101.jsonl").read_text().splitlines()
    kind = {json.loads(line)["id"]: json.loads(line)["metadata"]["kind"] for line in lines}
    for name in ["warm_start", "rft-seed0", "rft-seed1", "rft-seed2"]:
        if (ATTRIB / name / "results.jsonl").exists():
            show("rerun " + name, ATTRIB / name / "results.jsonl", kind)
    for name in ["warm_start", "grpo-seed0", "grpo-seed1", "grpo-seed2"]:
        show("claim " + name, CLAIM / name / "results.jsonl", kind)


if __name__ == "__main__":
    main()
