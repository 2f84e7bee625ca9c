"""Where GRPO's gain can come from: per held-out task, does the warm start pass greedily, pass in some
sampled episodes only, or never?

GRPO sharpens what the policy already samples: a task the warm start passes in some of k samples at the
training temperature but not greedily is where a greedy pass can be gained; a task no sample passes gives
GRPO nothing to reinforce there (unless it transfers from other tasks). This bench samples a policy k
times per task, scores every episode with the evaluation's rubric (pass at 0.75, as ``pass@0.75``), and
splits the tasks into three zones with the greedy results of the warm start; with the greedy results
after GRPO it counts what GRPO gained and lost in each zone. With the GRPO adapter sampled too
(``--after-samples``), a second table says whether GRPO reaches tasks no warm-start sample passed.
docs/cpu-proof/README.md, "Where GRPO's gain comes from", has the tables for run 25.

    python -m bench.gain_zones sample RUN ADAPTER OUT.jsonl [--samples 8] [--temperature 0.5]
    python -m bench.gain_zones table BEFORE/results.jsonl AFTER/results.jsonl OUT.jsonl [--after-samples A.jsonl]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path

from toolkit.eval.sampling import sample_scores
from toolkit.records import write_jsonl

PASS = 0.75  # the primary metric's threshold (pass@0.75)
ZONES = ("greedy-pass", "sampled-only", "never")


def _passed(row: dict) -> bool:
    """pass@0.75 as the evaluation counts it (issue 48): the score reaches 0.75 and no essential answer
    item failed (``answer_failed``, set by ``read_rows`` or written by ``sample``)."""
    return float(row["score"]) >= PASS - 1e-9 and not row.get("answer_failed", False)


def _answer_failed(rubric: list[dict]) -> bool:
    """A results.jsonl row's rubric verdicts: an essential answer item graded and not passed."""
    return any(
        it.get("essential") and it.get("check") == "answer" and it.get("verdict") not in (None, "pass")
        for it in rubric
    )


def read_rows(path: Path, legacy_grading: bool = False) -> list[dict]:
    """JSONL rows (an evaluation's results.jsonl, or scored samples); a bad or empty file names itself
    (and the line). A row must say whether its answer failed: results rows carry their rubric verdicts,
    sample rows ``answer_failed``. Rows written before issue 48 carry neither: ``legacy_grading`` reads
    them by score alone, the old pass@0.75, and nothing else does."""
    rows = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            row["task_id"], float(row["score"])  # noqa: B018 - both needed
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise SystemExit(f"{path}, line {n}: not a result row with task_id and score ({exc})") from exc
        if "answer_failed" not in row:
            rubric = row.get("rubric")
            if isinstance(rubric, list) and rubric and all("check" in it for it in rubric):
                row["answer_failed"] = _answer_failed(row["rubric"])
            elif not legacy_grading:
                raise SystemExit(
                    f"{path}, line {n}: no answer verdicts (written before issue 48's answer check); "
                    "--legacy-grading reads such rows by score alone, the old pass@0.75"
                )
        rows.append(row)
    if not rows:
        raise SystemExit(f"{path}: no rows")
    return rows


def reached(samples: Iterable[dict]) -> dict[str, bool]:
    """Per task id: does any of its sampled episodes pass?"""
    found: dict[str, bool] = defaultdict(bool)
    for row in samples:
        found[row["task_id"]] |= _passed(row)
    return found


def _table_keys(row: dict) -> tuple[str, str]:
    """The rows of the table a task counts in: its kind and the total."""
    return str(row.get("category") or "task"), "all"


def zone_table(before: Iterable[dict], after: Iterable[dict], samples: Iterable[dict]) -> dict[str, Counter]:
    """Per task kind (``category`` of the results), the tasks in each zone of the warm start, GRPO's greedy
    passes, and its gains and losses per zone. Every task of ``before`` needs samples and an ``after`` row."""
    sampled = reached(samples)
    after_pass = {r["task_id"]: _passed(r) for r in after}
    table: dict[str, Counter] = defaultdict(Counter)
    for row in before:
        tid = row["task_id"]
        if tid not in sampled or tid not in after_pass:
            raise SystemExit(f"task {tid}: no sampled episodes or no result after GRPO")
        greedy = _passed(row)
        zone = "greedy-pass" if greedy else ("sampled-only" if sampled[tid] else "never")
        for key in _table_keys(row):
            counts = table[key]
            counts["tasks"] += 1
            counts[zone] += 1
            counts["after: pass"] += after_pass[tid]
            counts[f"{zone}: gained" if not greedy else "greedy-pass: lost"] += after_pass[tid] != greedy
    return dict(table)


def reach_table(
    before: Iterable[dict], samples: Iterable[dict], after_samples: Iterable[dict]
) -> dict[str, Counter]:
    """Per task kind, the tasks that some sampled episode passes, before and after GRPO: whether GRPO
    widened what the policy can reach, or only made greedy decoding pick what it already sampled."""
    was, now = reached(samples), reached(after_samples)
    table: dict[str, Counter] = defaultdict(Counter)
    for row in before:
        tid = row["task_id"]
        for key in _table_keys(row):
            counts = table[key]
            counts["tasks"] += 1
            counts["reached before"] += was[tid]
            counts["reached after"] += now[tid]
            counts["newly reached"] += now[tid] and not was[tid]
            counts["no longer reached"] += was[tid] and not now[tid]
    return dict(table)


def format_table(table: dict[str, Counter], cols: list[str] | None = None) -> str:
    cols = cols or [
        "tasks",
        *ZONES,
        "sampled-only: gained",
        "never: gained",
        "greedy-pass: lost",
        "after: pass",
    ]
    lines = ["| kind | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for kind in sorted(table, key=lambda k: (k == "all", k)):
        lines.append(f"| {kind} | " + " | ".join(str(table[kind][c]) for c in cols) + " |")
    return "\n".join(lines)


def _sample(args: argparse.Namespace) -> None:
    from toolkit.agent.policies import VLLMPolicy
    from toolkit.models import BF16_IF_NATIVE, merged_checkpoint
    from toolkit.runs import RunFolder
    from toolkit.train.resume import read_run_recipe
    from toolkit.train.task_sources import read_tasks

    recipe = read_run_recipe(Path(args.run))
    tasks = read_tasks(RunFolder(args.run).tasks.eval, "eval")[: args.limit]
    merged = merged_checkpoint(recipe.model, args.adapter, dtype=recipe.dtype or BF16_IF_NATIVE)
    policy = VLLMPolicy(str(merged), name="sampled")
    rows = sample_scores(tasks, policy, recipe.loop_config(temperature=args.temperature), args.samples)
    write_jsonl(args.out, rows)
    print(f"{len(rows)} episodes ({len(tasks)} tasks x {args.samples}) -> {args.out}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.gain_zones", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample", help="sample a run's adapter k times per dev task, rubric-scored")
    s.add_argument("run", help="a training run folder (its recipe.json and tasks/eval.jsonl)")
    s.add_argument("adapter", help="the LoRA adapter to sample (e.g. RUN/sft/adapter)")
    s.add_argument("out", help="JSONL of scored episodes to write")
    s.add_argument("--samples", type=int, default=8)
    s.add_argument("--temperature", type=float, default=0.5, help="the recipe's rollout temperature")
    s.add_argument("--limit", type=int, default=None, help="only the first N tasks")
    t = sub.add_parser("table", help="the zones table from greedy results and sampled episodes")
    t.add_argument("before", help="the warm start's greedy results.jsonl")
    t.add_argument("after", help="the GRPO adapter's greedy results.jsonl on the same tasks")
    t.add_argument("samples", help="the warm start's sampled episodes (from `sample`)")
    t.add_argument("--after-samples", help="the GRPO adapter's sampled episodes: a second table, reach")
    t.add_argument(
        "--legacy-grading",
        action="store_true",
        help="read rows written before issue 48 (no answer verdicts) by score alone, the old pass@0.75",
    )
    args = parser.parse_args(argv)
    if args.command == "sample":
        if __name__ != "__main__":  # vLLM starts its engine in a process that re-imports __main__
            raise SystemExit("run `sample` as python -m bench.gain_zones")
        _sample(args)
    else:

        def read(path: str) -> list[dict]:
            return read_rows(Path(path), legacy_grading=args.legacy_grading)

        before, samples = read(args.before), read(args.samples)
        print(format_table(zone_table(before, read(args.after), samples)))
        if args.after_samples:
            reach = reach_table(before, samples, read(args.after_samples))
            cols = ["tasks", "reached before", "reached after", "newly reached", "no longer reached"]
            print("\nSome sampled episode passes (reach):\n" + format_table(reach, cols))


if __name__ == "__main__":
    main()
