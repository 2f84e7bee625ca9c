"""Trajectories scored per second by each programmatic reward.

The workload: for every task, its gold trajectory plus perturbed copies (``toolkit.study.perturb``,
record level, nothing executed), so the rewards see a realistic mix of good and broken episodes.
Tasks come from ``--tasks FILE`` (e.g. data/tasks/train.jsonl) or the kit's example tasks.
The baseline, measured in the same run, is what every scoring path pays anyway: turning the task
and trajectory dicts (TRL's ``task`` column and rollout ``trajectory`` field) back into records.
Ratios are reward time over baseline time.

    python -m bench.bench_rewards                         # example tasks, 2000 trajectories
    python -m bench.bench_rewards --tasks data/tasks/train.jsonl --n 5000
"""

from __future__ import annotations

import argparse
import random
import time


def _workload(tasks_path: str | None, n: int, seed: int):
    from toolkit.records import Task, read_jsonl
    from toolkit.rewards.gold import gold_trajectory
    from toolkit.study.examples import example_gold, example_tasks
    from toolkit.study.perturb import sample_group

    if tasks_path:
        tasks = read_jsonl(tasks_path, Task)
        golds = [gold_trajectory(t) for t in tasks]
    else:
        tasks = example_tasks()
        golds = [example_gold(t) for t in tasks]
    rng = random.Random(seed)
    pairs = []
    while len(pairs) < n:
        i = rng.randrange(len(tasks))
        pairs.extend((tasks[i], tr) for tr in sample_group(tasks[i], golds[i], 8, rng))
    return pairs[:n]


def _rate(fn, pairs, repeat: int) -> float:
    """Best-of-``repeat`` trajectories per second."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for task, traj in pairs:
            fn(task, traj)
        best = min(best, time.perf_counter() - t0)
    return len(pairs) / best


def main(argv: list[str] | None = None) -> int:
    from toolkit.records import Task, Trajectory
    from toolkit.rewards import combine, get_reward
    from toolkit.study.examples import TOOL_SCHEMAS

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", default=None, help="tasks JSONL (default: the kit's example tasks)")
    p.add_argument("--n", type=int, default=2000, help="trajectories in the workload")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    pairs = _workload(args.tasks, args.n, args.seed)
    dicts = [(t.to_dict(), tr.to_dict()) for t, tr in pairs]
    base = _rate(lambda td, trd: (Task.from_dict(td), Trajectory.from_dict(trd)), dicts, args.repeat)

    schemas = {} if args.tasks else {"tool_schemas": TOOL_SCHEMAS}  # --tasks: the kit's registry
    rewards = {
        n: get_reward(n, **(schemas if n == "prove" else {}))
        for n in ["rubric", "atlas", "prove", "graduated", "toolrl"]
    }
    rewards["rubric+prove"] = combine([(rewards["rubric"], 0.5), (rewards["prove"], 0.5)])
    for r in rewards.values():  # warm up (lazy schema load, imports)
        r(*pairs[0])
    print(f"{len(pairs)} trajectories, {len({t.id for t, _ in pairs})} tasks, best of {args.repeat}")
    print(f"{'reward':<14} {'traj/s':>10} {'us/traj':>9} {'time vs baseline':>17}")
    print(f"{'baseline':<14} {base:>10.0f} {1e6 / base:>9.1f} {1.0:>16.2f}x   (records from dicts)")
    for name, r in rewards.items():
        rate = _rate(r, pairs, args.repeat)
        print(f"{name:<14} {rate:>10.0f} {1e6 / rate:>9.1f} {base / rate:>16.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
