"""`mcp-rl train`: run a training recipe (SFT warm start + GRPO), optionally evaluate before/after, or
resume a run; `mcp-rl recipes`: the shipped recipes.

mcp-rl train --recipe cpu-demo --out runs/cpu-demo --evaluate      the CPU demo (notebook 04, make demo)
mcp-rl train --recipe cpu-learn --out runs/cpu-learn --evaluate --curve --test
                                                                    the CPU proof (make reproduce-cpu-learn)
mcp-rl train --recipe bespoke --model Qwen/Qwen2.5-1.5B-Instruct --out runs/b --max-steps 200
mcp-rl train --out runs/cpu-demo --resume                          continue a killed run (its recipe.json)
mcp-rl train --out runs/cpu-demo --resume --test                   evaluate once on the recipe's test sets
mcp-rl train --out runs/cpu-demo --resume --max-steps 40 --allow-recipe-change
                                                                    train on past the recipe's steps (recorded)
mcp-rl train --recipe cpu-demo --out RUN --evaluate --curve --set grpo.save_steps=5 --set grpo.save_total_limit=null
                                                                    the dev-set learning curve, every 5 steps
mcp-rl recipes                                                      the shipped recipes
mcp-rl publish RUN DEST, mcp-rl ship RUN DEST                       a finished run's record; its adapters
"""

from __future__ import annotations

import argparse
from pathlib import Path

from toolkit.argtypes import positive_int
from toolkit.cli import moved_option
from toolkit.train.backends import backend_choices

DEFAULT_RECIPE = "cpu-demo"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "train",
        help="SFT warm start + GRPO from a named recipe",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--recipe",
        default=None,
        help=f"recipe name or YAML path (default {DEFAULT_RECIPE}; with --resume, the run's own recipe.json)",
    )
    p.add_argument("--model", default=None, help="override the recipe's model (name, HF id or folder)")
    p.add_argument("--max-steps", type=positive_int, default=None, help="override the number of GRPO steps")
    p.add_argument("--sft-steps", type=positive_int, default=None, help="override the number of SFT steps")
    p.add_argument("--tasks", default=None, help="override the train tasks file")
    p.add_argument("--eval-tasks", default=None, help="override the held-out tasks file")
    p.add_argument("--out", default=None, help="run folder (required)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --out where it stopped, with its recipe.json (a differing recipe is refused)",
    )
    p.add_argument(
        "--allow-recipe-change",
        action="store_true",
        help="with --resume: continue although the recipe differs from recipe.json (recorded in summary.json)",
    )
    p.add_argument("--evaluate", action="store_true", help="held-out eval before and after GRPO")
    p.add_argument(
        "--test",
        action="store_true",
        help="after training, evaluate the warm start and GRPO adapters once on the recipe's eval.test_sets",
    )
    p.add_argument(
        "--curve",
        action="store_true",
        help="with --evaluate: also evaluate every kept GRPO checkpoint on the dev set (the learning curve)",
    )
    p.add_argument(
        "--backend",
        choices=backend_choices(),
        default=None,
        help="override the recipe's (vllm-server: generation on a running vLLM server, --vllm-url)",
    )
    p.add_argument(
        "--vllm-url",
        default=None,
        help="the vllm-server backend's server, e.g. http://127.0.0.1:8000/v1 (also $MCP_RL_VLLM_URL)",
    )
    p.add_argument("--merge", action="store_true", help="also save the base model with the adapter merged")
    p.add_argument(
        "--threads", type=positive_int, default=None, help="torch CPU threads (also $MCP_RL_THREADS)"
    )
    p.add_argument(
        "--report-to", default="none", help="tensorboard, wandb, ... (TrainingArguments.report_to)"
    )
    p.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="recipe override, e.g. grpo.beta=0.01"
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="show the libraries' logs and warnings (vLLM, transformers, TRL, torch); also $MCP_RL_VERBOSE=1",
    )
    # train's former modes, commands of their own now
    moved_option(p, "--list", "mcp-rl recipes", nargs=0)
    moved_option(p, "--publish", "mcp-rl publish RUN DEST")
    moved_option(p, "--ship", "mcp-rl ship RUN DEST")
    p.set_defaults(func=handle)

    r = subparsers.add_parser(
        "recipes",
        help="list the shipped training recipes (train --recipe NAME, eval --recipe NAME)",
        description="The recipes shipped in toolkit/train/recipes/, each with its description.",
    )
    r.set_defaults(func=list_shipped_recipes)


def list_shipped_recipes(args: argparse.Namespace) -> int:
    from toolkit.train.config import list_recipes, load_recipe

    for name in list_recipes():
        print(f"{name:10s} {load_recipe(name).description}")
    return 0


def parse_overrides(args: argparse.Namespace) -> tuple[dict, list[str]]:
    """CLI flags and --set KEY=VALUE pairs as dotted recipe overrides (values parsed as YAML), and the
    keys --set explicitly to null (``--set sft=null``: no warm start)."""
    overrides = {
        "model": args.model,
        "grpo.max_steps": args.max_steps,
        "sft.max_steps": args.sft_steps,
        "tasks": args.tasks,
        "eval_tasks": args.eval_tasks,
    }
    given, unset = parse_set_items(args.set)
    return {**overrides, **given}, unset


def parse_set_items(items: list[str]) -> tuple[dict, list[str]]:
    """``KEY=VALUE`` items as dotted recipe overrides (values parsed as YAML), and the keys set to null."""
    from toolkit.train.config import load_yaml

    overrides, unset = {}, []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--set expects KEY=VALUE, got {item!r}")
        parsed = load_yaml(value)
        if parsed is None:
            unset.append(key.strip())
        else:
            overrides[key.strip()] = parsed
    return overrides, unset


def handle(args: argparse.Namespace) -> int:
    from toolkit.train.config import load_recipe, with_overrides

    if not args.out:
        raise ValueError("--out DIR is required")
    if args.allow_recipe_change and not args.resume:
        raise ValueError("--allow-recipe-change goes with --resume (a new run has no recipe to differ from)")
    if args.resume and args.recipe is None:  # the run continues as it was made, not as cpu-demo
        from toolkit.train.pipeline import read_run_recipe

        recipe = read_run_recipe(Path(args.out))
    else:
        recipe = load_recipe(args.recipe or DEFAULT_RECIPE)
    overrides, unset = parse_overrides(args)
    if recipe.sft is None or "sft" in unset:
        overrides.pop("sft.max_steps", None)
    recipe = with_overrides(recipe, overrides, unset=unset)

    from toolkit.train.quiet import quiet_libraries

    quiet_libraries(args.verbose or None)  # before vLLM, TRL or transformers are imported
    from toolkit.train.pipeline import check_task_file, run_recipe, set_threads

    # named by their flags here; run_recipe checks the recipe's own files the same way
    check_task_file(args.tasks and recipe.tasks, "--tasks")
    check_task_file(args.eval_tasks and recipe.eval_tasks, "--eval-tasks")
    set_threads(args.threads)
    run_recipe(  # its closing lines say where the adapter and summary.json are, and what to run next
        recipe,
        args.out,
        resume=args.resume,
        evaluate=args.evaluate,
        test=args.test,
        curve=args.curve,
        backend=args.backend,
        merge=args.merge,
        report_to=args.report_to,
        vllm_url=args.vllm_url,
        allow_recipe_change=args.allow_recipe_change,
    )
    return 0
