"""Re-score a GRPO run's rollout log offline (``mcp-rl rescore``): every episode of
``<run>/grpo/rollouts.jsonl`` against its task, with any registered rewards, to see how a new reward
would have ordered the episodes the policy actually sampled.

A rollout log line (``toolkit.records.RolloutRecord``) keeps the step, task id, stop reason,
parse-error count, final answer, calls and messages, but not the state diff: the episode's successful
calls are executed again, in order, in a fresh episode of the task (``replay.execute_calls``; the kit's
environments are deterministic from the task's seed) to recover it, so that write tasks' ``state``
rubric items can be graded. ``replay=False`` skips that (writes then fail their state items).

Each episode is also put in a *pattern* (``drift_pattern``), the drift classes of the CPU proof's runs,
and the summary gives each reward's mean score per pattern, and how often two rewards order a pair of
episodes of the same group (step, dynamic-sampling round, task) differently.

The log holds every episode the policy sampled, the groups dynamic sampling replaced or silenced
included (``kept`` false; logs written before that field hold the kept groups only): all are scored,
each under its own group, and every scored episode carries ``kept`` (true when the log does not say).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolkit.aio import run_sync
from toolkit.records import (
    FINISH_TOOL,
    CallRecord,
    RecordError,
    RolloutRecord,
    Task,
    Trajectory,
    iter_jsonl,
    read_jsonl,
)
from toolkit.rewards.base import Reward, answer_text, model_calls
from toolkit.rewards.finished import REPLIED
from toolkit.runs import RunFolder

PATTERNS = (
    "finished short",
    "finished, extra calls",
    "retry after a failed call",
    "finished without an answer",
    "turn cap",
    "token cap",
    "error",
)


def read_rollouts(path: str | Path) -> list[tuple[int, Trajectory]]:
    """(step, trajectory) for every line of a rollout log (or of a run folder's: ``RunFolder.rollouts_file``);
    a bad line raises RecordError naming the file and line, and so does an empty file; a torn last line
    (a run killed mid-write) is forgiven. The record's ``round`` and ``kept`` go into the trajectory's
    metadata (``RolloutRecord.to_trajectory``)."""
    path = Path(path)
    if path.is_dir():
        path = RunFolder(path).rollouts_file
    out = [(rec.step, rec.to_trajectory()) for rec in iter_jsonl(path, RolloutRecord, torn_tail=True)]
    if not out:
        raise RecordError(f"{path}: no rollout records in the file (it is empty)")
    return out


def recover_state(task: Task, traj: Trajectory) -> Trajectory:
    """``traj`` with the state diff its successful calls leave, executed again in a fresh episode."""
    from toolkit.rewards.replay import execute_calls

    plan = [(c.name, dict(c.args or {}), c.turn) for c in traj.calls if c.ok and c.name != FINISH_TOOL]
    replayed = run_sync(execute_calls(task, plan, traj.final_answer, policy="rescore"))
    traj.state_diff = replayed.state_diff
    return traj


def drift_pattern(task: Task, traj: Trajectory) -> str:
    """Which of ``PATTERNS`` an episode falls in (the first that applies, in that order of checks:
    how it stopped, then its calls)."""
    if traj.stop_reason == "max_turns":
        return "turn cap"
    if traj.stop_reason == "length":
        return "token cap"
    if traj.stop_reason not in REPLIED:
        return "error"
    if not answer_text(traj).strip():
        return "finished without an answer"
    calls: list[CallRecord] = model_calls(traj)
    if any(not c.ok for c in calls[:-1]):
        return "retry after a failed call"
    if len(calls) > len(task.gold):
        return "finished, extra calls"
    return "finished short"


def rescore_rollouts(
    tasks_path: str | Path,
    rollouts_path: str | Path,
    rewards: dict[str, Reward],
    replay: bool = True,
) -> dict[str, Any]:
    """Score every episode of ``rollouts_path`` against its task in ``tasks_path`` with each of
    ``rewards`` (label -> Reward). Returns ``{"episodes": [...], "summary": {...}}``."""
    tasks = {t.id: t for t in read_jsonl(tasks_path, Task)}
    if not tasks:
        raise RecordError(f"{tasks_path}: no tasks in the file (it is empty)")
    logged = read_rollouts(rollouts_path)
    missing = sorted({tr.task_id for _, tr in logged} - set(tasks))
    if missing:
        raise RecordError(
            f"{rollouts_path}: episodes of unknown task id(s) {missing[:5]} (not in {tasks_path})"
        )
    trajs = [recover_state(tasks[tr.task_id], tr) if replay else tr for _, tr in logged]
    ts = [tasks[tr.task_id] for tr in trajs]
    scores = {label: [r.score for r in reward.batch(ts, trajs)] for label, reward in rewards.items()}
    episodes = []
    for i, ((step, traj), task) in enumerate(zip(logged, ts, strict=True)):
        episodes.append(
            {
                "step": step,
                "round": traj.metadata["round"],
                "kept": traj.metadata["kept"],
                "task_id": traj.task_id,
                "kind": task.metadata.get("kind"),
                "pattern": drift_pattern(task, trajs[i]),
                "stop_reason": traj.stop_reason,
                "n_calls": len(model_calls(traj)),
                "n_gold": len(task.gold),
                **{label: scores[label][i] for label in rewards},
            }
        )
    return {"episodes": episodes, "summary": summarize(episodes, list(rewards))}


def episode_groups(episodes: Sequence[dict[str, Any]]) -> dict[tuple[int, int, str], list[dict[str, Any]]]:
    """Scored episodes by GRPO group: same step, refill round and task (a task drawn again in a later
    refill round of a step is another group)."""
    groups: dict[tuple[int, int, str], list[dict[str, Any]]] = defaultdict(list)
    for ep in episodes:
        groups[(ep["step"], ep.get("round", 0), ep["task_id"])].append(ep)
    return groups


def summarize(episodes: Sequence[dict[str, Any]], labels: Sequence[str]) -> dict[str, Any]:
    """Each reward's mean per pattern, and for every two rewards how many within-group pairs (same step,
    round and task; pairs tied under both left out) they order differently: in opposite directions, or
    tied under one and not the other."""
    by_pattern: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for ep in episodes:
        by_pattern[ep["pattern"]].append(ep)
    patterns = {
        p: {"n": len(eps), **{lb: sum(e[lb] for e in eps) / len(eps) for lb in labels}}
        for p in PATTERNS
        if (eps := by_pattern.get(p))
    }
    groups = episode_groups(episodes)
    discordant = {}
    for a_i, a in enumerate(labels):
        for b in labels[a_i + 1 :]:
            pairs = opposite = 0
            for eps in groups.values():
                for i, x in enumerate(eps):
                    for y in eps[i + 1 :]:
                        da, db = x[a] - y[a], x[b] - y[b]
                        if abs(da) < 1e-9 and abs(db) < 1e-9:
                            continue
                        pairs += 1
                        opposite += da * db < 0 or (abs(da) < 1e-9) != (abs(db) < 1e-9)
            discordant[f"{a} vs {b}"] = {"pairs": pairs, "ordered differently": opposite}
    return {"n": len(episodes), "groups": len(groups), "patterns": patterns, "discordant": discordant}


def markdown_summary(summary: dict[str, Any], labels: Sequence[str]) -> str:
    """The per-pattern means as a markdown table."""
    lines = [
        "| pattern | episodes | " + " | ".join(f"{lb} (mean)" for lb in labels) + " |",
        "|" + "---|" * (len(labels) + 2),
    ]
    for pattern, row in summary["patterns"].items():
        lines.append(f"| {pattern} | {row['n']} | " + " | ".join(f"{row[lb]:.3f}" for lb in labels) + " |")
    for pair, row in summary["discordant"].items():
        lines.append(
            f"\n{pair}: {row['ordered differently']} of {row['pairs']} within-group pairs ordered differently"
        )
    return "\n".join(lines)
