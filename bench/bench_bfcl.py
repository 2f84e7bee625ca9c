"""BFCL multi-turn: the kit's MCP servers vs bfcl-eval's own executor, and the gold sweep pass rate.

For every entry of the chosen categories the ground-truth calls run, turn by turn, three ways:

- kit/MCP: ``toolkit.envs.open_episode(task)`` (in-process MCP client sessions to the BFCL servers)
  and ``replay_gold``; timed with and without opening the episode;
- bfcl-eval: ``execute_multi_turn_func_call`` (instances set up first with an empty call list, as
  bfcl-eval's own inference does, then one call per turn with the turn's call strings, ``eval``-ed);
- direct: the same instances and ``call_method`` without MCP (the floor for any transport).

It checks the kit's result texts equal bfcl-eval's, scores every kit trajectory with ``BFCLReward``
(BFCL's official checker) and prints the pass rate per category (the gold must pass 100%) and the
trajectories scored per second. Ratios are against bfcl-eval measured in the same run, in CPU time.

    python -m bench.bench_bfcl                     # all 4 categories, 800 entries
    python -m bench.bench_bfcl --categories base --limit 50
    python -m bench.bench_bfcl --categories base --limit 40 --profile   # where an MCP call's time goes
"""

from __future__ import annotations

import argparse
import re
import sys
import time
import uuid
from collections import defaultdict

import anyio

# CPU seconds of this process: everything here runs in one thread, and CPU time is not inflated when
# other jobs share the machine (wall time is printed too).
_clock = time.process_time


def _bfcl_executor_run(task) -> tuple[float, float, list[str]]:
    """(setup seconds, call seconds, result texts) for bfcl-eval's executor on the task's gold."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

    from toolkit.envs.bfcl import initial_config

    meta = task.metadata["bfcl"]
    model = f"bench_{uuid.uuid4().hex}"
    common = dict(
        initial_config=initial_config(meta),
        involved_classes=meta["involved_classes"],
        model_name=model,
        test_entry_id=meta["id"],
        long_context=meta["long_context"],
    )
    results: list[str] = []
    t0 = _clock()
    execute_multi_turn_func_call([], **common)
    t1 = _clock()
    for turn in meta["ground_truth"]:
        out, _ = execute_multi_turn_func_call(list(turn), **common)
        results.extend(out)
    t2 = _clock()
    for key in [k for k in vars(multi_turn_utils) if k.startswith(re.sub(r"[-./:]", "_", model))]:
        del vars(multi_turn_utils)[key]
    return t1 - t0, t2 - t1, results


def _direct_run(task) -> float:
    """Seconds for the gold calls on fresh instances through ``call_method`` (no MCP)."""
    from toolkit.envs.bfcl import call_method, class_of_tool, initial_config, new_instance

    meta = task.metadata["bfcl"]
    t0 = _clock()
    instances = {
        c: new_instance(c, initial_config(meta), meta["long_context"]) for c in meta["involved_classes"]
    }
    owner = class_of_tool()
    for g in task.gold:
        call_method(instances[owner[g.name]], g.name, g.arguments)
    return _clock() - t0


async def _kit_run(task):
    """(open seconds, call seconds, trajectory) through open_episode + replay_gold."""
    from toolkit.envs import open_episode
    from toolkit.synth.bfcl_tasks import replay_gold

    t0 = _clock()
    async with open_episode(task) as episode:
        t1 = _clock()
        traj = await replay_gold(task, episode)
        t2 = _clock()
    return t1 - t0, t2 - t1, traj


def profile_calls(tasks, top: int = 25) -> None:
    """cProfile of the gold calls alone (episodes opened outside the profile), sorted by own time."""
    import cProfile
    import pstats

    from toolkit.envs import open_episode

    profiler = cProfile.Profile()

    async def run() -> int:
        n = 0
        for task in tasks:
            async with open_episode(task) as episode:
                for gold in task.gold:
                    profiler.enable()
                    await episode.call_tool(gold.name, gold.arguments)
                    profiler.disable()
                    n += 1
        return n

    n = anyio.run(run)
    print(f"\ncProfile of {n} calls through the MCP client session (own time, top {top}):")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def main(argv: list[str] | None = None) -> int:
    from toolkit.rewards.bfcl import BFCLReward
    from toolkit.synth.bfcl_tasks import BFCL_CATEGORIES, load_bfcl_tasks

    parser = argparse.ArgumentParser(prog="python -m bench.bench_bfcl", description=__doc__.splitlines()[0])
    parser.add_argument("--categories", nargs="+", default=list(BFCL_CATEGORIES), choices=BFCL_CATEGORIES)
    parser.add_argument("--limit", type=int, default=None, help="entries per category (default: all)")
    parser.add_argument("--profile", action="store_true", help="also profile the MCP calls (cProfile)")
    args = parser.parse_args(argv)

    reward = BFCLReward()
    wall_start = time.perf_counter()
    t = defaultdict(float)  # seconds per path
    n_calls = 0
    mismatched: list[str] = []
    print(f"{'category':<14}{'entries':>8}{'gold calls':>11}{'gold pass':>11}")
    for category in args.categories:
        tasks = load_bfcl_tasks(category, limit=args.limit)
        passed, calls = 0, 0
        for task in tasks:
            setup, run, bfcl_results = _bfcl_executor_run(task)
            t["bfcl_setup"] += setup
            t["bfcl_calls"] += run
            t["direct"] += _direct_run(task)
            opened, called, traj = anyio.run(_kit_run, task)
            t["kit_open"] += opened
            t["kit_calls"] += called
            if [c.result for c in traj.calls] != bfcl_results:
                mismatched.append(task.id)
            start = _clock()
            result = reward(task, traj)
            t["score"] += _clock() - start
            passed += result.score == 1.0
            calls += len(task.gold)
            if result.score != 1.0:
                print(f"  FAIL {task.id}: {result.details.get('error_type')}", file=sys.stderr)
        n_calls += calls
        print(f"{category:<14}{len(tasks):>8}{calls:>11}{f'{passed}/{len(tasks)}':>11}")
        t["entries"] += len(tasks)

    bfcl_total = t["bfcl_setup"] + t["bfcl_calls"]
    kit_total = t["kit_open"] + t["kit_calls"]
    wall = time.perf_counter() - wall_start
    print(f"\n{n_calls} gold calls over {int(t['entries'])} entries, {wall:.1f} s wall for the whole run")
    print("calls per CPU-second; ratio = speed of the path / speed of bfcl-eval's executor")
    rows = [
        ("bfcl-eval executor, with setup", n_calls / bfcl_total, 1.0),
        ("kit MCP (open_episode + calls)", n_calls / kit_total, bfcl_total / kit_total),
        ("bfcl-eval executor, calls only", n_calls / t["bfcl_calls"], 1.0),
        ("kit MCP, calls only", n_calls / t["kit_calls"], t["bfcl_calls"] / t["kit_calls"]),
        ("direct call_method, with setup", n_calls / t["direct"], bfcl_total / t["direct"]),
    ]
    for name, rate, ratio in rows:
        print(f"  {name:<34}{rate:>10.0f} calls/s   x{ratio:.2f}")
    print(f"  episode open (MCP sessions + list_tools): {1e3 * t['kit_open'] / t['entries']:.2f} ms/entry")
    print(f"  BFCLReward (official checker): {t['entries'] / t['score']:.0f} trajectories scored/s")
    same = int(t["entries"]) - len(mismatched)
    print(f"  kit result texts identical to bfcl-eval's: {same}/{int(t['entries'])} entries")
    if mismatched:
        print(f"  differing: {', '.join(mismatched[:10])}", file=sys.stderr)
    if args.profile:
        profile_calls([t for c in args.categories for t in load_bfcl_tasks(c, limit=args.limit)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
