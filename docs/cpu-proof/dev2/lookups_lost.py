"""Lookups a seed-0 round passed on dev set 2 and its GRPO adapter failed, with what GRPO did on them.
usage: python runs/lookups_lost.py"""

import json

from toolkit.eval.metrics import task_passed
from toolkit.records import read_task_results


def load(arm):
    d = f"runs/dev2/{arm}/eval/test-seed5201/grpo-seed0/"
    res = {r.task_id: r for r in read_task_results(d + "results.jsonl")}
    trajs = {json.loads(line)["task_id"]: json.loads(line) for line in open(d + "trajectories.jsonl")}
    return res, trajs


if __name__ == "__main__":
    tasks = {
        json.loads(line)["id"]: json.loads(line)
        for line in open("runs/dev2/claim-round-s0/tasks/test-seed5201.jsonl")
    }
    for before, after in (("claim-round-s0", "claim-grpo-s0"), ("abst-round-s0", "abst-grpo-s0")):
        (a, _), (b, btr) = load(before), load(after)
        lookups = [t for t in a if tasks[t]["metadata"]["kind"] == "lookup"]
        lost = [t for t in lookups if task_passed(a[t]) and not task_passed(b[t])]
        won = [t for t in lookups if not task_passed(a[t]) and task_passed(b[t])]
        print(f"{before} -> {after}: lookups lost {len(lost)}, won {len(won)}")
        for t in lost:
            r = b[t]
            calls = [c.get("name") for c in btr[t].get("calls") or []]
            print(
                f"- {tasks[t]['prompt'][:80]} | gold {r.n_gold_calls} calls, made {calls}, {r.stop_reason} | {(btr[t]['final_answer'] or '')[:90]}"
            )
