"""Scripted drift episodes: what GRPO drifted into in the CPU proof's runs (docs/cpu-proof/README.md:
calling again after a failed call, calling until the turn cap, an extra identical call, finishing
without an answer), built from a real task and executed in a fresh episode of its environment
(``toolkit.rewards.replay.execute_calls``: real tool results, real state diffs), beside the episodes
that finish right and short. The table of how a reward orders them (docs/rewards.md) and the
ordering test of the ``outcome`` reward (tests/test_rewards_outcome.py) are built from these.

``python -m toolkit.study.drift --tasks data/tasks/eval.jsonl`` prints the table for the
first task of every kind under the outcome reward and the cpu-demo recipe's reward.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolkit.aio import run_sync
from toolkit.records import Task, Trajectory
from toolkit.rewards.base import Reward, combine, get_reward
from toolkit.rewards.gold import gold_answer

WRONG_ANSWER = "I looked it up: the value you asked about is zzz."  # states no expected value
GIVE_UP = "Sorry, the tool returned an error, so I cannot answer that."

# (name, what the episode does); tasks with gold calls
GOLD_SCENARIOS = (
    ("right+short", "the gold calls, the right answer"),
    ("right+redundant", "the gold calls with the first one made twice (identical), the right answer"),
    ("retry right", "a call with unparseable arguments, then the gold calls, the right answer"),
    ("wrong+short", "the gold calls, a wrong answer (a write: a wrong value written)"),
    ("retry wrong", "a call with unparseable arguments, then the gold calls, a wrong answer"),
    ("give up", "a call with unparseable arguments, then a reply that apologises"),
    ("wrong+redundant", "wrong+short with the first call made twice"),
    ("no answer", "the gold calls, then finish with an empty answer"),
    ("answer without calls", "no call, the right answer (a guess)"),
    ("to the cap", "the gold calls, then the first again until the turn cap; no reply"),
    ("cap calls, replied", "the same calls as 'to the cap', then the right answer"),
    ("truncated", "the gold calls, the right answer cut by the token cap (stop reason length)"),
)
# tasks without gold calls (abstain, clarify)
NO_GOLD_SCENARIOS = (
    ("right+short", "no call, the reply (decline / question)"),
    ("no answer", "no call, finish with an empty answer"),
    ("call, then reply", "a read call, then the reply"),
    ("to the cap", "read calls until the turn cap; no reply"),
    ("cap calls, replied", "the same calls as 'to the cap', then the reply"),
)


@dataclass
class Call:
    name: str
    args: dict[str, Any] | None  # None: unparseable arguments (the loop's bad_json error)
    turn: int = 0


def old_reward() -> Reward:
    """The cpu-demo recipe's reward (runs 1-18): ``rubric`` + 0.5 ``prove-kit`` with beta 0."""
    return combine(
        [(get_reward("rubric"), 1.0), (get_reward("prove-kit", beta=0.0), 0.5)], name="rubric+0.5*prove-kit"
    )


def episode(task: Task, calls: Sequence[Call], answer: str, stop_reason: str = "finish") -> Trajectory:
    """``calls`` executed in order in a fresh episode of ``task``, ending with ``answer`` and
    ``stop_reason`` (no reply is recorded at the turn cap)."""
    from toolkit.rewards.replay import execute_calls

    plan = [(c.name, copy.deepcopy(c.args), c.turn) for c in calls]
    traj = run_sync(execute_calls(task, plan, answer, policy="drift"))
    traj.stop_reason = stop_reason  # type: ignore[assignment]
    if stop_reason == "max_turns":  # the loop records no answer when the cap ends the episode
        traj.final_answer, traj.turn_answers = "", []
    return traj


def wrong_write(task: Task, schemas: dict[str, dict[str, Any]] | None = None) -> tuple[list[Call], bool]:
    """The gold calls with the value a ``state`` rubric item checks replaced by another one: another
    enum value, a number + 1, else the string with a suffix. Returns (calls, whether the new value is
    valid by the tool's schema: an enum value or a number, so the write happens with the wrong value;
    a suffixed id usually makes the call fail instead)."""
    from toolkit.rewards.matching import default_tool_schemas

    schemas = default_tool_schemas() if schemas is None else schemas
    fields = {it.check.get("field") for it in task.rubric if it.check.get("type") == "state"}
    calls = [Call(g.name, copy.deepcopy(g.arguments), g.turn) for g in task.gold]
    for call in reversed(calls):
        args = call.args or {}
        key = next((k for k in args if k in fields), None)
        if key is None:
            continue
        value = args[key]
        prop = (schemas.get(call.name) or {}).get("properties", {}).get(key, {})
        options = [o for o in _enum(prop) if o != value]
        if options:
            args[key] = options[0]
            return calls, True
        if isinstance(value, int | float) and not isinstance(value, bool):
            args[key] = value + 1
            return calls, True
        args[key] = f"{value}-x"
        return calls, False
    return calls, False


def _enum(prop: dict[str, Any]) -> list[Any]:
    if "enum" in prop:
        return list(prop["enum"])
    return [v for alt in prop.get("anyOf", []) for v in alt.get("enum", [])]


def _read_probe(task: Task) -> Call:
    """A call a policy might make on a task that needs none: a listing or search tool the task names,
    without arguments."""
    needed = task.metadata.get("needed_tools") or task.tools
    reads = [t for t in needed if t.split("_", 1)[0] in ("list", "search", "get", "view", "find")]
    return Call((reads or sorted(needed))[0], {})


def drift_episodes(task: Task, max_turns: int = 3) -> dict[str, Trajectory]:
    """One executed episode per scenario (``GOLD_SCENARIOS`` or ``NO_GOLD_SCENARIOS``), by name.
    ``max_turns``: the recipe's generations per episode (cpu-demo: 3), where the turn cap falls."""
    right = gold_answer(task)
    if not task.gold:
        probe, cap = _read_probe(task), cap_calls(task, max_turns)
        return {
            "right+short": episode(task, [], right),
            "no answer": episode(task, [], ""),
            "call, then reply": episode(task, [probe], right),
            "to the cap": episode(task, cap, "", "max_turns"),
            "cap calls, replied": episode(task, cap, right),
        }
    gold = [Call(g.name, g.arguments, g.turn) for g in task.gold]
    first = gold[0]
    broken = Call(first.name, None, first.turn)
    writes = any(it.check.get("type") == "state" for it in task.rubric)
    wrong_calls = wrong_write(task)[0] if writes else gold
    cap = cap_calls(task, max_turns)
    return {
        "right+short": episode(task, gold, right),
        "right+redundant": episode(task, [first, *gold], right),
        "retry right": episode(task, [broken, *gold], right),
        "wrong+short": episode(task, wrong_calls, WRONG_ANSWER),
        "retry wrong": episode(task, [broken, *wrong_calls], WRONG_ANSWER),
        "give up": episode(task, [broken], GIVE_UP),
        "no answer": episode(task, gold, ""),
        "answer without calls": episode(task, [], right),
        "wrong+redundant": episode(task, [wrong_calls[0], *wrong_calls], WRONG_ANSWER),
        "to the cap": episode(task, cap, "", "max_turns"),
        "cap calls, replied": episode(task, cap, right),
        "truncated": episode(task, gold, right, "length"),
    }


def cap_calls(task: Task, max_turns: int = 3) -> list[Call]:
    """The calls of the "to the cap" episode: the gold calls, then the first again until ``max_turns``
    generations (one call each; a gold plan as long as the cap gets one more); a task without gold
    calls: a read call every generation."""
    if not task.gold:
        return [_read_probe(task)] * max_turns
    gold = [Call(g.name, g.arguments, g.turn) for g in task.gold]
    return gold + [gold[0]] * (max(max_turns, len(gold) + 1) - len(gold))


def drift_table(
    tasks: Sequence[Task], rewards: dict[str, Reward], max_turns: int = 3
) -> list[dict[str, Any]]:
    """One row per (task, scenario): kind, task id, scenario, calls, stop reason and each reward's score."""
    rows = []
    for task in tasks:
        for name, traj in drift_episodes(task, max_turns).items():
            row: dict[str, Any] = {
                "kind": task.metadata.get("kind", "?"),
                "task": task.id,
                "episode": name,
                "calls": len([c for c in traj.calls if c.name != "finish"]),
                "failed": sum(not c.ok for c in traj.calls),
                "stop": traj.stop_reason,
            }
            row.update({label: r(task, traj).score for label, r in rewards.items()})
            rows.append(row)
    return rows


def retry_habit_break_even(scores: dict[str, float], answer_right: float) -> float | None:
    """The share of failed first calls above which a blanket "always make a second call" habit pays
    under a reward, from one task's scenario scores (``GOLD_SCENARIOS`` names -> score).

    Without the habit an episode is right+short or wrong+short when the first call works, and gives up
    when it fails; with it, right/wrong+redundant and retry right/wrong. ``answer_right``: the share of
    episodes that end with the right answer (a). The habit pays where p * gain > (1 - p) * cost:
    cost = a (right+short - right+redundant) + (1 - a) (wrong+short - wrong+redundant),
    gain = a (retry right - give up) + (1 - a) (retry wrong - give up). Returns the p where both are
    equal, 0.0 when the habit costs nothing, None when it never pays."""
    a = answer_right
    cost = a * (scores["right+short"] - scores["right+redundant"]) + (1 - a) * (
        scores["wrong+short"] - scores["wrong+redundant"]
    )
    gain = a * (scores["retry right"] - scores["give up"]) + (1 - a) * (
        scores["retry wrong"] - scores["give up"]
    )
    if cost <= 1e-12:
        return 0.0
    if gain <= 1e-12:
        return None
    return cost / (cost + gain)


def break_even_markdown(rows: list[dict[str, Any]], labels: Sequence[str], shares: Sequence[float]) -> str:
    """``retry_habit_break_even`` per task with gold calls, reward and answer-right share, as a table."""
    head = ["kind", *(f"{lb}, a = {a:g}" for lb in labels for a in shares)]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for task in dict.fromkeys(r["task"] for r in rows):
        mine = {r["episode"]: r for r in rows if r["task"] == task}
        if "retry right" not in mine:
            continue
        cells = [next(iter(mine.values()))["kind"]]
        for lb in labels:
            scores = {name: r[lb] for name, r in mine.items()}
            for a in shares:
                p = retry_habit_break_even(scores, a)
                cells.append("never" if p is None else f"{p:.2f}")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def markdown(rows: list[dict[str, Any]], labels: Sequence[str]) -> str:
    """``drift_table`` rows as a markdown table, with each reward's rank of the episode within its task
    (1 = best; ties share the best rank)."""
    head = ["kind", "episode", "calls (failed)", "stop", *(f"{lb} (rank)" for lb in labels)]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        same = [r for r in rows if r["task"] == row["task"]]
        cells = [row["kind"], row["episode"], f"{row['calls']} ({row['failed']})", row["stop"]]
        for lb in labels:
            rank = 1 + sum(r[lb] > row[lb] + 1e-9 for r in same)
            cells.append(f"{row[lb]:.3f} ({rank})")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def first_of_each_kind(tasks: Sequence[Task], kinds: Sequence[str]) -> list[Task]:
    """The first task of each kind; for a kind with writes, the first whose wrong write is a valid
    value (so "wrong+short" writes the wrong value rather than failing)."""

    def fits(t: Task) -> bool:
        writes = any(it.check.get("type") == "state" for it in t.rubric)
        return not writes or wrong_write(t)[1]

    picked = []
    for kind in kinds:
        task = next((t for t in tasks if t.metadata.get("kind") == kind and fits(t)), None)
        if task is None:
            raise ValueError(f"no task of kind {kind!r} in the file")
        picked.append(task)
    return picked


def main(argv: Sequence[str] | None = None) -> int:
    from toolkit.records import Task, read_jsonl

    p = argparse.ArgumentParser(prog="python -m toolkit.study.drift", description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", required=True, help="tasks JSONL (e.g. data/tasks/eval.jsonl)")
    p.add_argument("--kinds", nargs="+", default=["lookup", "aggregate", "write", "chain", "abstain"])
    p.add_argument("--ids", nargs="+", help="task ids instead of the first task of each kind")
    p.add_argument("--max-turns", type=int, default=3, help="the recipe's rollout.max_turns (cpu-demo: 3)")
    args = p.parse_args(argv)
    tasks = read_jsonl(args.tasks, Task)
    if not tasks:
        print(f"error: {args.tasks}: no tasks in the file", file=sys.stderr)
        return 2
    if args.ids:
        by_id = {t.id: t for t in tasks}
        missing = [i for i in args.ids if i not in by_id]
        if missing:
            print(f"error: {args.tasks}: no task with id(s) {missing}", file=sys.stderr)
            return 2
        picked = [by_id[i] for i in args.ids]
    else:
        try:
            picked = first_of_each_kind(tasks, args.kinds)
        except ValueError as exc:
            print(f"error: {args.tasks}: {exc}", file=sys.stderr)
            return 2
    rewards = {"outcome": get_reward("outcome"), "old": old_reward()}
    rows = drift_table(picked, rewards, args.max_turns)
    print(markdown(rows, list(rewards)))
    print("\nShare of failed first calls above which 'always call twice' pays (a: share of right answers):\n")
    print(break_even_markdown(rows, list(rewards), (0.0, 0.15, 1.0)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
