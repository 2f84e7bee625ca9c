"""BFCL v4 multi-turn entries as kit tasks (categories base, miss_func, miss_param, long_context).

An entry becomes one ``Task``: the first user turn is the prompt, later turns are ``followups`` (a
turn where BFCL adds held-out functions, which has no user message, gets BFCL's own "I have updated
some more functions..." message), the ground truth is parsed with ``ast`` into ``GoldCall``s with
their turn, and ``metadata["bfcl"]`` keeps what BFCL's checker needs (id, category, initial_config
as JSON text (its key order matters; read it with ``toolkit.envs.bfcl.initial_config``),
involved_classes, long_context, the ground-truth call strings) plus ``missed_function``:
``{str(turn): [tool names]}`` for tools that are only offered from that turn on. ``task.tools`` holds
every tool of the involved classes, held-out ones included (the episode routes them, as bfcl-eval's
executor runs any method); the agent loop shows a held-out tool from its turn on (``tools_at_turn``).

Split: an entry's split comes from a hash of its index, which BFCL shares across the four categories
(``multi_turn_base_7`` and ``multi_turn_long_context_7`` are the same scenario), so training on any
category never sees a scenario held out for evaluation in another.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from toolkit.envs.bfcl import BFCL_SERVERS, bfcl_data_dir, parse_call, schema_problem, tool_names
from toolkit.envs.execute import execute_call
from toolkit.records import CallRecord, GoldCall, RubricItem, Task, Trajectory, iter_json_objects
from toolkit.toolbox import Toolbox

BFCL_CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
EVAL_FRACTION = 0.5  # Bespoke Labs' 50/50 split of BFCL multi-turn-base (reference 001)
SPLIT_SALT = "mcp-rl-kit/bfcl-multi-turn"

# What bfcl-eval sends in a turn that only adds held-out functions (DEFAULT_USER_PROMPT_FOR_ADDITIONAL_
# FUNCTION_FC in bfcl_eval.constants.default_prompts; read from there when available).
try:
    from bfcl_eval.constants.default_prompts import (
        DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC as ADDED_FUNCTIONS_PROMPT,
    )
except ImportError:  # pragma: no cover - bfcl-eval not installed
    ADDED_FUNCTIONS_PROMPT = "I have updated some more functions you can choose from. What about now?"

# bfcl-eval force-quits an entry (scored as failed) when a user turn goes past this many tool-calling
# steps (MAXIMUM_STEP_LIMIT); the kit's loop matches it with RolloutConfig(max_turns=MAX_STEPS_PER_TURN + 1)
# (the extra generation is the turn's answer). Note: two long_context entries have a 34-call gold turn,
# so a gold replay with one call per generation needs all of a turn's calls in one generation.
try:
    from bfcl_eval.constants.default_prompts import MAXIMUM_STEP_LIMIT as MAX_STEPS_PER_TURN
except ImportError:  # pragma: no cover
    MAX_STEPS_PER_TURN = 20


def category_name(category: str) -> str:
    """``"base"`` or ``"multi_turn_base"`` -> ``"base"``; anything else raises ValueError."""
    short = category.removeprefix("multi_turn_")
    if short not in BFCL_CATEGORIES:
        raise ValueError(f"unknown BFCL multi-turn category {category!r}; choose from {BFCL_CATEGORIES}")
    return short


def split_of(entry_id: str) -> str:
    """``"eval"`` or ``"train"``, deterministic from the entry's index (shared across categories)."""
    index = entry_id.rsplit("_", 1)[-1]
    digest = hashlib.sha256(f"{SPLIT_SALT}:{index}".encode()).hexdigest()
    return "eval" if int(digest[:8], 16) / 0x1_0000_0000 < EVAL_FRACTION else "train"


@functools.cache
def _load_category(category: str) -> tuple[tuple[dict[str, Any], tuple[tuple[str, ...], ...]], ...]:
    data = bfcl_data_dir()
    name = f"BFCL_v4_multi_turn_{category}.json"
    entries = _read_json_lines(data / name)
    answers = {a["id"]: a["ground_truth"] for a in _read_json_lines(data / "possible_answer" / name)}
    out = []
    for entry in entries:
        gt = answers.get(entry["id"])
        if gt is None or len(gt) != len(entry["question"]):
            raise ValueError(
                f"{name}: ground truth missing or with the wrong number of turns for {entry['id']}"
            )
        out.append((entry, tuple(tuple(turn) for turn in gt)))
    return tuple(out)


def _read_json_lines(path: Path) -> list[dict[str, Any]]:
    """Every entry of a BFCL data file (JSONL); a bad line is an error naming the file and line."""
    return [entry for _, entry in iter_json_objects(path, what="BFCL entry")]


def entry_to_task(entry: dict[str, Any], ground_truth: list[list[str]] | tuple[tuple[str, ...], ...]) -> Task:
    """One BFCL multi-turn entry (and its ground truth) as a ``Task``."""
    entry_id = entry["id"]
    category = category_name(entry_id.rsplit("_", 1)[0])
    classes = list(entry["involved_classes"])
    missed = {str(turn): list(names) for turn, names in entry.get("missed_function", {}).items()}
    held_out = {name for names in missed.values() for name in names}

    turns = []
    for messages in entry["question"]:
        user = [m["content"] for m in messages if m.get("role") == "user"]
        turns.append("\n".join(user) if user else ADDED_FUNCTIONS_PROMPT)

    gold: list[GoldCall] = []
    last_on_class: dict[str, int] = {}
    for turn, calls in enumerate(ground_truth):
        for text in calls:
            name, args = parse_call(text)
            cls = _class_of(name, classes, entry_id)
            # BFCL's gold lists are ordered; a call depends on the previous call on the same stateful
            # instance (cd before ls), MathAPI calls are stateless and independent.
            deps = [last_on_class[cls]] if cls in last_on_class and cls != "MathAPI" else []
            last_on_class[cls] = len(gold)
            gold.append(GoldCall(name=name, arguments=args, depends_on=deps, turn=turn))

    # Ground-truth calls the kit's loop would refuse although BFCL runs them: a tool called before the
    # turn that offers it (miss_func_49), arguments that break BFCL's own schema (base_173's string id).
    offered_at = {name: int(t) for t, names in missed.items() for name in names}
    quirks = {}
    for i, g in enumerate(gold):
        if offered_at.get(g.name, 0) > g.turn:
            quirks[i] = (
                f"{g.name} is called at turn {g.turn}, before it is offered (turn {offered_at[g.name]})"
            )
        elif (problem := schema_problem(g.name, g.arguments)) is not None:
            quirks[i] = f"{g.name} arguments break its BFCL schema ({problem})"

    tools = [name for cls in classes for name in tool_names(cls)]
    if held_out - set(tools):
        raise ValueError(f"{entry_id}: missed functions {sorted(held_out - set(tools))} not in {classes}")
    return Task(
        id=entry_id,
        split=split_of(entry_id),
        prompt=turns[0],
        servers=[BFCL_SERVERS[cls] for cls in classes],
        tools=tools,
        seed=0,
        gold=gold,
        rubric=_rubric(gold, quirks),
        followups=turns[1:],
        metadata={
            "kind": "bfcl",
            "chain_length": len(gold),
            "n_turns": len(turns),
            "bfcl": {
                "id": entry_id,
                "category": category,
                # JSON text: key order matters to BFCL and must survive sorted-key JSONL
                "initial_config": json.dumps(entry.get("initial_config", {}), ensure_ascii=False),
                "involved_classes": classes,
                "long_context": category == "long_context",
                "missed_function": missed,
                "excluded_function": list(entry.get("excluded_function", [])),
                "path": list(entry.get("path", [])),
                "ground_truth": [list(turn) for turn in ground_truth],
                "gold_quirks": {str(i): why for i, why in quirks.items()},
            },
        },
    )


def _class_of(name: str, classes: list[str], entry_id: str) -> str:
    for cls in classes:
        if name in tool_names(cls):
            return cls
    raise ValueError(f"{entry_id}: gold call {name!r} is not a function of {classes}")


def _rubric(gold: list[GoldCall], quirks: dict[int, str] | None = None) -> list[RubricItem]:
    """One programmatic item per gold call (tool and argument values), for the kit's rubric rewards;
    BFCL's own verdict is ``toolkit.rewards.bfcl.BFCLReward``. Items of quirky gold calls (which the
    kit's loop refuses, see ``gold_quirks``) are optional, so they never count against a policy."""
    quirks = quirks or {}
    return [
        RubricItem(
            id=f"call{i}",
            text=f"Turn {g.turn}: calls {g.name} with {json.dumps(g.arguments, sort_keys=True)}"
            + (f" (optional: {quirks[i]})" if i in quirks else ""),
            category="query_construction" if g.arguments else "tool_selection",
            essential=i not in quirks,
            check={"type": "tool_args", "tools": [g.name], "args": dict(g.arguments)},
        )
        for i, g in enumerate(gold)
    ]


def load_bfcl_tasks(category: str, limit: int | None = None, *, split: str | None = None) -> list[Task]:
    """The BFCL v4 multi-turn ``category`` (base | miss_func | miss_param | long_context) as tasks, in
    BFCL's order; ``split="train"|"eval"`` keeps one split; ``limit`` keeps the first N after that."""
    short = category_name(category)
    if split not in (None, "train", "eval"):
        raise ValueError(f"split must be 'train', 'eval' or None, not {split!r}")
    tasks = []
    for entry, gt in _load_category(short):
        if split is not None and split_of(entry["id"]) != split:
            continue
        tasks.append(entry_to_task(entry, gt))
        if limit is not None and len(tasks) >= limit:
            break
    return tasks


def first_turn_only(task: Task) -> Task:
    """The task cut to its first user turn (Bespoke Labs trained on "only the first query of each
    example", reference 001): no followups, turn-0 gold and ground truth; BFCLReward scores it on that
    turn alone. The id is kept (the split and the checker key on the BFCL entry id)."""
    meta = copy.deepcopy(task.metadata)
    meta["bfcl"]["ground_truth"] = meta["bfcl"]["ground_truth"][:1]
    meta["bfcl"]["missed_function"] = {
        t: n for t, n in meta["bfcl"]["missed_function"].items() if int(t) == 0
    }
    meta["bfcl"]["first_turn_only"] = True
    meta["n_turns"] = 1
    gold = [g for g in task.gold if g.turn == 0]
    meta["chain_length"] = len(gold)
    quirks = {int(i): why for i, why in meta["bfcl"].get("gold_quirks", {}).items() if int(i) < len(gold)}
    meta["bfcl"]["gold_quirks"] = {str(i): why for i, why in quirks.items()}
    return dataclasses.replace(
        task, followups=[], gold=copy.deepcopy(gold), rubric=_rubric(gold, quirks), metadata=meta
    )


def is_bfcl_task(task: Task) -> bool:
    return "bfcl" in task.metadata


def turn_prompts(task: Task) -> list[str]:
    """The user message of every turn: the prompt, then the followups."""
    return [task.prompt, *task.followups]


def tools_at_turn(task: Task, turn: int) -> list[str]:
    """Tool names offered to the model at ``turn``: the task's tools minus those held out until a
    later turn (BFCL miss_func)."""
    missed = (task.metadata.get("bfcl") or {}).get("missed_function") or {}
    later = {name for t, names in missed.items() if int(t) > turn for name in names}
    return [name for name in task.tools if name not in later]


def gold_by_turn(task: Task) -> list[list[GoldCall]]:
    """The gold calls grouped by turn (one list per user turn, possibly empty)."""
    turns: list[list[GoldCall]] = [[] for _ in range(1 + len(task.followups))]
    for call in task.gold:
        turns[call.turn].append(call)
    return turns


__all__ = [
    "ADDED_FUNCTIONS_PROMPT",
    "BFCL_CATEGORIES",
    "EVAL_FRACTION",
    "category_name",
    "entry_to_task",
    "MAX_STEPS_PER_TURN",
    "first_turn_only",
    "gold_by_turn",
    "is_bfcl_task",
    "load_bfcl_tasks",
    "replay_gold",
    "split_of",
    "tools_at_turn",
    "turn_prompts",
]


async def replay_gold(task: Task, toolbox: Toolbox, *, final_answer: str = "Done.") -> Trajectory:
    """Run the task's gold calls through ``toolbox`` turn by turn, one call per assistant step, and
    return the trajectory a perfect policy would produce (user message per turn, tool messages,
    a short final answer per turn). Used by tests, the bench and as the reference gold policy.

    Calls go through the loop's executor (``toolkit.envs.execute``: its timeout and error kinds) but,
    as bfcl-eval's executor does, the episode decides what runs: a gold call before its tool is
    offered, or with arguments that break BFCL's schema (``gold_quirks``), is made all the same."""
    messages: list[dict[str, Any]] = []
    calls: list[CallRecord] = []
    turn_answers: list[str] = []
    for turn, (prompt, gold) in enumerate(zip(turn_prompts(task), gold_by_turn(task), strict=True)):
        messages.append({"role": "user", "content": prompt})
        for step, g in enumerate(gold):
            call_id = f"call_{turn}_{step}"
            messages.append(
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": g.name, "arguments": json.dumps(g.arguments)},
                        }
                    ],
                }
            )
            done = await execute_call(toolbox, g.name, dict(g.arguments), tools=None, turn=turn, step=step)
            messages.append(
                {"role": "tool", "tool_call_id": call_id, "name": g.name, "content": done.record.result}
            )
            calls.append(done.record)
        messages.append({"role": "assistant", "content": final_answer})
        turn_answers.append(final_answer)
    return Trajectory(
        task_id=task.id,
        messages=messages,
        calls=calls,
        final_answer=final_answer,
        stop_reason="no_tool_call",
        turn_answers=turn_answers,
        metadata={"policy": "gold"},
    )
