"""Issue 49, session 17: per arm, the dev-2 tasks that need a call answered without any
(toolkit.eval.claim's no_call_when_needed), counted by kind. usage: python nocall.py (from /work)"""

import collections
import json

ARMS = {
    "warm start": "frozen2/runs/dev2/claim-round-s0/eval/test-seed5201/warm_start/results.jsonl",
    "claim-round-s0": "frozen2/runs/dev2/claim-round-s0/eval/test-seed5201/grpo-seed0/results.jsonl",
    "abst-round-s0": "frozen2/runs/dev2/abst-round-s0/eval/test-seed5201/grpo-seed0/results.jsonl",
    "iter2-round-s0": "frozen2/runs/dev2/iter2-round-s0/eval/test-seed5201/grpo-seed0/results.jsonl",
    "r2-round-s0": "frozen3/runs/dev2/r2-round-s0/eval/test-seed5201/grpo-seed0/results.jsonl",
    "r2m-round-s0": "frozen3/runs/dev2/r2m-round-s0/eval/test-seed5201/grpo-seed0/results.jsonl",
}

if __name__ == "__main__":
    for arm, path in ARMS.items():
        rows = [json.loads(line) for line in open(path)]
        kinds = collections.Counter(
            r["category"] for r in rows if r["n_gold_calls"] > 0 and r["n_calls"] == 0
        )
        print(f"{arm}: {sum(kinds.values())} of {len(rows)} ({dict(sorted(kinds.items()))})")
