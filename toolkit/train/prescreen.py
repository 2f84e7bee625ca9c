"""Screen GRPO's task pool with the warm start before training: keep the tasks it sometimes gets right.

GRPO learns from a group only when its episodes differ in what the reward pays for; a task the warm
start always (or never) answers right gives a flat group, which dynamic sampling then drops and refills
at the cost of another generation round (issue 31: 40-64 extra episodes a step in run 25, most of them
on aggregates and chains no sample ever got right). Sampled on the dev set, the warm start of run 25
answered 115 of 200 tasks wrong in all 8 samples; GRPO's gains came from the 34 tasks that greedy
decoding failed and some sample passed (docs/cpu-proof/README.md, "Where GRPO's gain comes from").

``screen_pool`` samples every candidate task ``samples`` times with the warm start at the rollout
temperature, scores the episodes with the recipe's reward (its ``spread_on`` component, as dynamic
sampling does) and keeps the tasks whose spread reaches ``min_spread``: the tasks where GRPO has
something to rank. This is the offline form of DAPO's dynamic sampling (a pass-rate filter on the
prompt pool, as in Polaris and Skywork-OR1's data filtering); dynamic sampling still runs during
training for the groups that turn flat as the policy moves.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkit.records import PoolRow, RecordError, Task, Trajectory, read_jsonl, write_jsonl
from toolkit.train.batching import group_spread, task_kind


@dataclass
class PoolScreen:
    """Per-task screening results and the kept pool."""

    rows: list[PoolRow] = field(default_factory=list)

    def kept_ids(self) -> set[str]:
        return {r.task_id for r in self.rows if r.kept}

    def summary(self) -> dict[str, Any]:
        """Screened and kept tasks, overall and per kind (``summary.json``'s ``grpo_pool``)."""
        screened = Counter(r.kind for r in self.rows)
        kept = Counter(r.kind for r in self.rows if r.kept)
        return {
            "screened": len(self.rows),
            "kept": sum(kept.values()),
            "by_kind": {k: {"screened": screened[k], "kept": kept[k]} for k in sorted(screened)},
        }

    def write(self, path: Path) -> None:
        write_jsonl(path, self.rows)

    @classmethod
    def read(cls, path: Path) -> PoolScreen:
        """The screen written by ``write``; a bad line raises RecordError (a ValueError) naming file:line."""
        rows = read_jsonl(path, PoolRow)
        if not rows:
            raise RecordError(f"{path}: no pool rows")
        return cls(rows)


def sample_tasks(
    backend: Any, adapter: Path | None, label: str, tasks: Sequence[Task], loop: Any, n: int
) -> list[Trajectory]:
    """Each task sampled ``n`` times (task by task, n each, as ``toolkit.agent.loop.rollout`` returns them)
    with ``adapter`` (None: the base model) through the agent loop GRPO samples with, ``loop`` its
    settings; what the backend loaded is released after. The prescreen and the RFT round sample so."""
    from toolkit.agent.loop import rollout, watch_episodes
    from toolkit.eval.watch import Progress

    policy = backend.eval_policy(adapter, label)
    try:  # "[rft] 40/192 episodes, 5.1 s/episode" on stderr: a round of samples runs for many minutes
        with Progress(len(tasks) * n, label) as progress, watch_episodes(lambda _: progress.episode()):
            return rollout(list(tasks), policy, loop, n=n)
    finally:
        backend.release()


def screen_pool(
    tasks: Sequence[Task],
    sample: Callable[[list[Task], int], list[Trajectory]],
    score: Callable[[list[Task], list[Trajectory]], list[float]],
    *,
    samples: int,
    min_spread: float,
    spread: str = "range",
) -> PoolScreen:
    """Sample each task ``samples`` times (``sample(tasks, n)`` returns the episodes task by task, n each,
    as ``toolkit.agent.loop.rollout`` does) and keep those whose ``score`` spread reaches ``min_spread``."""
    if samples < 2:
        raise ValueError(f"screening needs at least 2 samples a task (a spread), got {samples}")
    tasks = list(tasks)
    trajs = sample(tasks, samples)
    if len(trajs) != len(tasks) * samples:
        raise ValueError(f"screening sampled {len(trajs)} episodes for {len(tasks)} tasks x {samples}")
    expanded = [t for t in tasks for _ in range(samples)]
    values = score(expanded, trajs)
    rows = []
    for i, task in enumerate(tasks):
        group = values[i * samples : (i + 1) * samples]
        scored = [v for v in group if not math.isnan(v)]
        width = group_spread(group, spread)
        rows.append(
            PoolRow(
                task_id=task.id,
                kind=task_kind(task),
                mean=round(sum(scored) / len(scored), 4) if scored else None,
                spread=round(width, 4),
                kept=width >= min_spread,
            )
        )
    return PoolScreen(rows)


def screened_tasks(tasks: Sequence[Task], screen: PoolScreen) -> list[Task]:
    """The tasks the screen kept, in their order. None kept is an error: GRPO would have nothing to rank."""
    kept = screen.kept_ids()
    chosen = [t for t in tasks if t.id in kept]
    if not chosen:
        raise ValueError(
            f"pool screening kept none of {len(screen.rows)} tasks: the warm start's samples never differ"
            " in what the reward pays for (lower grpo_sampling.min_spread, or raise prescreen_samples)"
        )
    return chosen
