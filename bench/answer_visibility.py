"""How many tasks can be answered from what the model is shown, per way of cutting tool outputs.

For every task with an answer (writes have none to read), the gold calls are replayed on the task's
fresh world through MCP, each output is cut as the agent loop would cut it (``tail`` and ``json``,
``toolkit.agent.output_cut``) with the model's tokenizer, and the answer counts as visible when every
answer value appears as a JSON value (``: 5,``, ``"Jamal Ito"}``) in one of the outputs. Answers the
model must compute (averages, shares) are visible in none: the count is an upper bound on what copying
can reach. docs/cpu-proof/README.md, "Tool outputs cut to fit", has the table for the cpu-learn sets.

    python -m bench.answer_visibility runs/cpu-learn/tasks/eval.jsonl --tokens 128
    python -m bench.answer_visibility runs/cpu-learn/tasks/eval.jsonl --by-template
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from toolkit.agent.output_cut import TOOL_OUTPUT_CUTS, cut_tool_output
from toolkit.records import Task, read_jsonl


def answer_visible(value: object, outputs: Sequence[str]) -> bool:
    """``value`` appears as a JSON value (after ``:`` or ``[``, before ``,`` ``}`` or ``]``) in an output."""
    pattern = re.compile(r'[:\[] ?"?' + re.escape(str(value).lower()) + r'"?[,}\]]')
    return any(pattern.search(text.lower()) for text in outputs)


async def _gold_outputs(tasks: Sequence[Task]) -> list[list[str] | None]:
    """The gold calls' raw outputs per task (None: no gold call or no answer to read)."""
    from toolkit.envs import open_episode
    from toolkit.envs.state import WorldState
    from toolkit.synth.generate import default_env
    from toolkit.synth.replay import replay_task

    world_fn, _, _ = default_env()
    found: list[list[str] | None] = []
    state = WorldState(world_fn(tasks[0].seed))
    async with open_episode(None, servers=sorted({s for t in tasks for s in t.servers}), state=state) as box:
        for task in tasks:
            if not task.gold or not task.answers or task.metadata.get("kind") == "write":
                found.append(None)
                continue
            WorldState.__init__(state, world_fn(task.seed))  # the task's own fresh world
            outcome = await replay_task(task, box, None)
            found.append([r.text for r in outcome.results])
    return found


def visibility(tasks: Sequence[Task], tokenizer, limit: int, by: str | None = None) -> dict[str, Counter]:
    """``{group: Counter(tasks=, uncut=, <cut>=...)}``: tasks with an answer and how many have it in view
    uncut and after each cut; ``by`` a metadata key to group on (None: one group, "all")."""

    def encode(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    outputs = asyncio.run(_gold_outputs(tasks))
    table: dict[str, Counter] = {}
    for task, texts in zip(tasks, outputs, strict=True):
        if texts is None:
            continue
        row = table.setdefault(str(task.metadata.get(by)) if by else "all", Counter())
        row["tasks"] += 1
        views = {"uncut": texts} | {
            how: [cut_tool_output(t, limit, how, encode, tokenizer.decode) for t in texts]
            for how in TOOL_OUTPUT_CUTS
        }
        for name, shown in views.items():
            row[name] += all(answer_visible(v, shown) for v in task.answers.values())
    return table


def main(argv: Sequence[str] | None = None) -> None:
    from toolkit.models import load_tokenizer

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("tasks", nargs="+", type=Path, help="task JSONL files (the kit's own servers)")
    p.add_argument(
        "--tokens", type=int, default=128, help="the tool-output budget (rollout.max_tool_output_tokens)"
    )
    p.add_argument("--model", default="smollm2-135m", help="whose tokenizer counts the tokens")
    p.add_argument("--by-template", action="store_true", help="one row per template")
    args = p.parse_args(argv)
    tokenizer = load_tokenizer(args.model)
    for path in args.tasks:
        tasks = read_jsonl(path, Task)
        for group, row in sorted(
            visibility(tasks, tokenizer, args.tokens, "template" if args.by_template else None).items()
        ):
            print(json.dumps({"file": str(path), "group": group, **row}))


if __name__ == "__main__":
    main()
