"""Synthesis throughput: validated tasks per second on this machine, before and after shared-episode replay.

Runs the generator on the same config three ways, side by side in one process:
- replay in one episode per task (how every batch was validated before): a fresh MCP session per server
  and task, tools listed, servers bound;
- replay in one shared episode per batch, its world state reset per task (the default for the kit's own
  servers): the same MCP client, transport and tool code for every call, without the per-task startup;
- no validation (templates, rubric, distractors and dedup only).
Both validated runs must write identical tasks; the ratios are the figures to quote (absolute rates move
with the machine's load).

    python -m bench.bench_synth [--n 300] [--preset default] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

from toolkit.synth.config import make_config
from toolkit.synth.generate import default_env, generate


def run(n: int, preset: str, env: tuple, validate: bool = True, shared: bool = True) -> tuple[float, list]:
    config = make_config(preset, n_train=n, n_eval=0, seed=123, validate=validate)
    start = time.perf_counter()
    result = generate(config, env=env, shared_episode=shared)
    return time.perf_counter() - start, [t.to_dict() for t in result.train]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--preset", default="default")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs per way")
    args = parser.parse_args(argv)
    env = default_env()
    run(20, args.preset, env)  # warm up: builds the worlds and the servers' tool templates once
    run(20, args.preset, env, shared=False)
    best: dict[str, float] = {}
    outputs: dict[str, list] = {}
    for _ in range(args.repeat):  # interleaved, so a load spike on the shared machine hits all three
        for way, kw in (
            ("per_task", {"shared": False}),
            ("shared", {"shared": True}),
            ("none", {"validate": False}),
        ):
            secs, tasks = run(args.n, args.preset, env, **kw)
            best[way] = min(best.get(way, secs), secs)
            outputs[way] = tasks
    if outputs["per_task"] != outputs["shared"]:
        raise SystemExit("shared-episode replay kept different tasks than per-task replay")
    n = len(outputs["shared"])
    print(f"synth ({args.preset}, {n} tasks, best of {args.repeat})")
    print(
        f"  validated, episode per task (before) : {n / best['per_task']:8.1f} tasks/s  ({best['per_task']:.2f} s)"
    )
    print(
        f"  validated, shared episode (after)    : {n / best['shared']:8.1f} tasks/s  ({best['shared']:.2f} s)"
    )
    print(f"  without validation                   : {n / best['none']:8.1f} tasks/s  ({best['none']:.2f} s)")
    print(f"  speed-up of validated synthesis      : {best['per_task'] / best['shared']:8.2f}x")
    print(
        f"  validation cost before / after       : {best['per_task'] / best['none']:8.2f}x / "
        f"{best['shared'] / best['none']:.2f}x the time of synthesis alone"
    )
    print("  identical tasks from both replays    : yes")


if __name__ == "__main__":
    main()
