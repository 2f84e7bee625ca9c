# issue 49's claim arithmetic over the dev set (seed 1) for GRPO seed 0 alone: greedy, in-template vs held-out
from pathlib import Path

from toolkit.eval.claim import compute_claim, criteria_lines
from toolkit.records import Task, read_jsonl, read_task_results

root = Path("/work/frozen/runs/claim")
tasks = read_jsonl(root / "warm/sft-120/tasks/eval.jsonl", Task)
greedy = {
    "warm_start": read_task_results(root / "warm/sft-120/eval/dev/results.jsonl"),
    "grpo-seed0": read_task_results(Path("/work/dev-seed0/results.jsonl")),
}
print("\n".join(criteria_lines(compute_claim({"test-seed1": tasks}, {"test-seed1": greedy}))))
