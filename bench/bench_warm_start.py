"""How the warm start's gold episodes and the prompts fit the sampler, before and after issue 31.

On the cpu-demo tasks (the recipe's synth settings: preset cpu, seed 1, 320 train and 200 dev tasks)
with the SmolLM2-135M tokenizer and the recipe's rollout budgets; no model runs, a few seconds:

- turns: share of gold model turns longer than ``max_new_tokens`` (64), per task kind, for turns that
  call tools and turns that answer (``finish``), with the gold replay as before (independent calls in
  one turn) and with ``one_call_per_turn``; and the longest turn per kind;
- tool outputs: the tool messages of the warm start's episodes (the first ``sft.max_examples`` train
  tasks) in tokens, cut as before (no tokenizer: 4 characters a token, 512 characters) and as now (the
  model's tokenizer, 128 tokens, as when sampling);
- prompts: tokens of the first prompt of the 200 dev tasks, per tool format (``json`` without
  ``compact_schemas``, ``json`` with it: the cpu-demo recipe, ``compact``, ``compact_args``), and of
  the SFT rows.

    python -m bench.bench_warm_start [--out FILE.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any


def _turn_table(trajs: list[Any], kinds: dict[str, str], max_new: int) -> dict[str, dict[str, Any]]:
    from toolkit.records import FINISH_TOOL
    from toolkit.train.sft import model_turns

    table: dict[str, Counter] = defaultdict(Counter)
    longest: dict[str, int] = defaultdict(int)
    for traj in trajs:
        kind = kinds[traj.task_id]
        assistant = [m for m in traj.messages if m["role"] == "assistant"]
        for message, ids in zip(assistant, model_turns(traj), strict=True):
            names = [c["function"]["name"] for c in message.get("tool_calls") or []]
            which = "call" if names and FINISH_TOOL not in names else "answer"
            table[kind][f"{which}_turns"] += 1
            table[kind][f"{which}_over"] += len(ids) > max_new
            longest[kind] = max(longest[kind], len(ids))
    out = {}
    for kind, c in sorted(table.items()):
        out[kind] = {
            "call_over": f"{c['call_over']}/{c['call_turns']}",
            "call_over_share": round(c["call_over"] / c["call_turns"], 3) if c["call_turns"] else None,
            "answer_over": f"{c['answer_over']}/{c['answer_turns']}",
            "answer_over_share": round(c["answer_over"] / c["answer_turns"], 3)
            if c["answer_turns"]
            else None,
            "longest_turn": longest[kind],
        }
    return out


def _stats(values: list[int]) -> dict[str, float]:
    return {"n": len(values), "mean": round(statistics.mean(values), 1), "max": max(values)} if values else {}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="cpu-demo")
    parser.add_argument("--out", type=Path, default=None, help="write the report here (JSON)")
    args = parser.parse_args(argv)

    from toolkit.agent.loop import rollout
    from toolkit.agent.testing import ScriptedPolicy, turns
    from toolkit.models import load_tokenizer
    from toolkit.train.config import load_recipe
    from toolkit.train.sft import gold_trajectories, warm_start_rows
    from toolkit.train.task_sources import read_tasks, synthesize_tasks

    recipe = load_recipe(args.recipe)
    tok = load_tokenizer(recipe.model)
    loop = recipe.loop_config()
    with tempfile.TemporaryDirectory() as folder:
        train_file, eval_file = synthesize_tasks(recipe.synth, Path(folder))
        splits = {"train": read_tasks(train_file, "train"), "dev": read_tasks(eval_file, "eval")}
    report: dict[str, Any] = {
        "recipe": recipe.name,
        "synth": recipe.synth,
        "max_new_tokens": loop.max_new_tokens,
    }

    # 1. gold turns against the turn cap
    report["turns"] = {}
    for split, tasks in splits.items():
        kinds = {t.id: str(t.metadata.get("kind")) for t in tasks}
        for label, one in (("before (independent calls in one turn)", False), ("one_call_per_turn", True)):
            trajs = gold_trajectories(tasks, loop, tokenizer=tok, one_call_per_turn=one)
            report["turns"][f"{split}, {label}"] = _turn_table(trajs, kinds, loop.max_new_tokens)

    # 2. tool outputs of the warm start's episodes
    sft_tasks = splits["train"][: (recipe.sft or {}).get("max_examples") or len(splits["train"])]
    encode = lambda text: len(tok(text, add_special_tokens=False)["input_ids"])  # noqa: E731
    report["tool_outputs"] = {}
    for label, tokenizer in (("before (no tokenizer: characters)", None), ("now (model tokenizer)", tok)):
        trajs = gold_trajectories(sft_tasks, loop, tokenizer=tokenizer)
        sizes = [encode(m["content"]) for t in trajs for m in t.messages if m["role"] == "tool"]
        over = sum(n > loop.max_tool_output_tokens + 20 for n in sizes)  # 20: the truncation marker
        report["tool_outputs"][label] = {**_stats(sizes), "over_budget_plus_marker": over}

    # 3. prompt tokens per tool format, and SFT row tokens
    report["prompt_tokens_dev"] = {}
    report["sft_row_tokens"] = {}
    variants = {
        "json, full schemas": {"tool_format": "json", "compact_schemas": False},
        "json, compact_schemas (cpu-demo)": {"tool_format": "json", "compact_schemas": True},
        "compact": {"tool_format": "compact", "compact_schemas": True},
        "compact_args": {"tool_format": "compact_args", "compact_schemas": True},
    }
    for label, settings in variants.items():
        variant = dataclasses.replace(loop, max_turns=1, temperature=0.0, **settings)
        trajs = rollout(splits["dev"][:200], ScriptedPolicy(turns("ok"), tok), variant)
        report["prompt_tokens_dev"][label] = _stats([len(t.prompt_ids) for t in trajs])
        rows, _ = warm_start_rows(
            sft_tasks,
            dataclasses.replace(loop, **settings),
            tok,
            max_length=(recipe.sft or {}).get("max_length"),
        )
        report["sft_row_tokens"][label] = _stats([len(r["input_ids"]) for r in rows])

    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return report


if __name__ == "__main__":
    main()
