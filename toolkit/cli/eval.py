"""`mcp-rl eval`, `mcp-rl compare`, `mcp-rl eval-claim` and `mcp-rl plot`."""

from __future__ import annotations

import argparse
import sys

from toolkit.argtypes import distinct_ints, nonnegative_float, nonnegative_int, positive_int
from toolkit.records import dumps


def register(subparsers: argparse._SubParsersAction) -> None:
    from toolkit.eval.suites import SUITES  # light: no model libraries
    from toolkit.train.backends import recipe_backend_choices

    p = subparsers.add_parser(
        "eval",
        help="evaluate a policy on a suite (kit-eval, bfcl-*) and write results with confidence intervals",
        description="Run a policy on a suite's tasks through the agent loop, score them, and write "
        "results.jsonl, trajectories.jsonl, results.json (aggregates with 95% bootstrap CIs and the "
        "run's config) and viewer.html into --out.",
    )
    p.add_argument(
        "--policy", required=True, help="'gold' (replays gold trajectories) or a model name / HF id"
    )
    p.add_argument("--adapter", default=None, help="LoRA adapter folder to load on top of the model")
    p.add_argument(
        "--recipe",
        default=None,
        help="a recipe name or file (a run's recipe.json): evaluate with its agent loop, as `train "
        "--evaluate` does (its rollout settings plus eval.rollout, greedy); the flags below override it",
    )
    p.add_argument("--suite", required=True, choices=sorted(SUITES))
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--limit", type=positive_int, default=None, help="only the first N tasks (smoke runs)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--tasks",
        default=None,
        help="kit-eval only: another tasks JSONL instead of the shipped data/tasks/eval.jsonl",
    )
    p.add_argument("--label", default=None, help="name of the run in plots and the viewer")
    p.add_argument(
        "--max-turns",
        type=positive_int,
        default=None,
        help="model generations per user turn (loop default 8)",
    )
    p.add_argument(
        "--max-new-tokens", type=positive_int, default=None, help="tokens per generation (loop default 256)"
    )
    p.add_argument(
        "--temperature",
        type=nonnegative_float,
        default=None,
        help="sampling temperature (eval default 0: greedy)",
    )
    p.add_argument("--json", action="store_true", help="print the aggregate metrics as JSON")
    p.set_defaults(func=_eval)

    c = subparsers.add_parser(
        "compare",
        help="paired comparison of two eval folders on the same tasks: after - before with 95%% CIs",
        description="Every metric of two eval output folders (results.jsonl), after - before on the tasks "
        "both ran, with its paired-bootstrap 95% interval; '*' marks a change outside it.",
    )
    c.add_argument("before", help="eval output folder (the baseline)")
    c.add_argument("after", help="eval output folder")
    c.add_argument(
        "--tasks",
        default=None,
        help="the tasks JSONL the folders were evaluated on: fills in the gold call counts of results "
        "written before they recorded them (calls_over_gold_per_task, calls_under_gold_per_task)",
    )
    c.add_argument("--json", action="store_true", help="print the differences as JSON")
    c.set_defaults(func=_compare)

    k = subparsers.add_parser(
        "eval-claim",
        help="evaluate shipped adapters (a claim's warm start and GRPO seeds, or a pair) on fresh test sets",
        description="Synthesize a test set per --test-seeds from the shipped recipe's synth settings (less "
        "any task it trains on), evaluate the warm start and every GRPO adapter of SHIPPED on each, greedy "
        "and (--samples K) K sampled episodes a task, into OUT, and write OUT/claim.json: the mean over the "
        "GRPO seeds of GRPO - warm start, paired by task, with 95% CIs and the guards "
        "(toolkit/train/claim_eval.py, toolkit/eval/claim.py). A stopped call goes on where it was.",
    )
    k.add_argument(
        "shipped", metavar="SHIPPED", help="an `mcp-rl ship` folder, e.g. data/adapters/cpu-learn-rft"
    )
    k.add_argument("out", metavar="OUT", help="folder for the test sets, evaluations and claim.json")
    k.add_argument(
        "--test-seeds",
        type=distinct_ints,
        required=True,
        help="synth seeds of the test sets, e.g. 4101,4102: seeds no run has trained, tuned or tested on",
    )
    k.add_argument("--tasks", type=positive_int, default=300, help="tasks per test set (300)")
    k.add_argument(
        "--samples",
        type=nonnegative_int,
        default=0,
        help="sampled episodes per task at the recipe's temperature (0: greedy only; else at least 2)",
    )
    k.add_argument(
        "--backend", choices=recipe_backend_choices(), default=None, help="default: the shipped recipe's"
    )
    k.set_defaults(func=_eval_claim)

    q = subparsers.add_parser(
        "plot",
        help="figures (PNG + SVG) from eval results, a training metrics.jsonl and the published numbers",
        description="Before/after bars with CIs (first vs last run of each suite, paired bootstrap), tool "
        "usage, how episodes ended, training curves (--metrics), and the reference panel of published results.",
    )
    q.add_argument("--results", nargs="+", default=[], help="eval output folders, before first")
    q.add_argument("--labels", nargs="+", default=None, help="one label per results folder")
    q.add_argument("--metrics", default=None, help="a training run's metrics.jsonl (or its folder)")
    q.add_argument("--out", required=True, help="folder for the figures")
    q.add_argument("--no-reference", action="store_true", help="leave out the published-results panel")
    q.add_argument(
        "--viewer", action="store_true", help="also write viewer.html comparing the runs side by side"
    )
    q.set_defaults(func=_plot)


def _eval(args: argparse.Namespace) -> int:
    from toolkit.eval.suites import run_eval
    from toolkit.models import check_adapter

    if args.adapter:
        check_adapter(args.adapter, args.policy)  # before the model loads or --out is made

    loop = recipe_loop(args.recipe) if args.recipe else {}
    loop |= {
        k: v
        for k, v in {
            "max_turns": args.max_turns,
            "max_new_tokens": args.max_new_tokens,
            "temperature": args.temperature,
        }.items()
        if v is not None
    }
    summary = run_eval(
        args.policy,
        args.suite,
        args.out,
        adapter=args.adapter,
        limit=args.limit,
        seed=args.seed,
        tasks_file=args.tasks,
        label=args.label,
        loop_config=loop or None,
    )
    metrics = summary["aggregate"]["metrics"]
    if args.json:
        print(dumps(metrics, indent=2))
    else:
        print(
            f"{summary['suite']} / {summary['label']}: {summary['aggregate']['n_tasks']} tasks -> {args.out}"
        )
        for name, m in metrics.items():
            print(f"  {name:32s} {m['value']:8.3f}  [{m['ci_low']:.3f}, {m['ci_high']:.3f}]")
    return 0


def _eval_claim(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from toolkit.eval.claim import criteria_lines
    from toolkit.train.claim_eval import evaluate_shipped_claim
    from toolkit.train.ship import load_shipped

    if args.samples == 1:
        print("mcp-rl eval-claim: error: --samples is 0 (greedy only) or at least 2", file=sys.stderr)
        return 2
    shipped = load_shipped(args.shipped)
    out = Path(args.out)
    claim = evaluate_shipped_claim(shipped, args.test_seeds, args.tasks, out, args.samples, args.backend)
    claim["shipped"] = json.loads((out / "shipped.json").read_text())
    (out / "claim.json").write_text(dumps(claim, indent=1, sort_keys=True) + "\n")
    for line in criteria_lines(claim):
        print(line)
    print(f"wrote {out / 'claim.json'}")
    return 0


def recipe_loop(recipe: str) -> dict:
    """The agent-loop settings ``train --evaluate`` uses for ``recipe`` (the pipeline's own function), as
    ``run_eval``'s loop_config; without the seed, which --seed sets."""
    from dataclasses import asdict

    from toolkit.train.config import load_recipe
    from toolkit.train.pipeline import eval_loop_config

    loop = asdict(eval_loop_config(load_recipe(recipe)))
    loop.pop("seed")
    return loop


def _compare(args: argparse.Namespace) -> int:
    from toolkit.eval.metrics import compare_folders
    from toolkit.records import Task, read_jsonl

    gold = {t.id: len(t.gold) for t in read_jsonl(args.tasks, Task)} if args.tasks else None
    diffs = compare_folders(args.before, args.after, gold, source=args.tasks or "")
    if args.json:
        print(dumps({name: d.to_dict() for name, d in diffs.items()}, indent=2))
        return 0
    n = next(iter(diffs.values())).n_pairs if diffs else 0
    print(f"{args.before} -> {args.after}: {n} tasks in both")
    for name, d in diffs.items():
        mark = "*" if d.outside_ci else " "
        print(
            f"  {name:32s} {d.before:7.3f} -> {d.after:7.3f}  {d.diff:+.3f} [{d.ci_low:+.3f}, {d.ci_high:+.3f}] {mark}"
        )
    return 0


def _plot(args: argparse.Namespace) -> int:
    from pathlib import Path

    from toolkit.eval.plots import REFERENCE_FILE, plot_all
    from toolkit.runs import RunFolder

    metrics = Path(args.metrics) if args.metrics else None
    if metrics is not None and metrics.is_dir():
        metrics = RunFolder(metrics).metrics_file
    paths = plot_all(
        args.results,
        args.out,
        labels=args.labels,
        metrics_file=metrics,
        reference=None if args.no_reference else REFERENCE_FILE,
    )
    if args.viewer and args.results:
        from toolkit.eval.viewer import viewer_for_dirs

        paths.append(viewer_for_dirs(args.results, Path(args.out) / "viewer.html", labels=args.labels))
    for p in paths:
        print(p)
    return 0
