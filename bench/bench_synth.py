"""Synthesis throughput: validated tasks per second on this machine.

Runs the generator twice on the same config, side by side in one process: with replay validation
(every gold trajectory executed through MCP on a fresh world) and without it (templates, rubric,
distractors and dedup only). The ratio shows what validation costs.

    python -m bench.bench_synth [--n 300] [--preset default]
"""

from __future__ import annotations

import argparse
import time

from toolkit.synth.config import make_config
from toolkit.synth.generate import default_env, generate


def run(n: int, preset: str, validate: bool, env: tuple) -> tuple[float, int]:
    config = make_config(preset, n_train=n, n_eval=0, seed=123, validate=validate)
    start = time.perf_counter()
    result = generate(config, env=env)
    return time.perf_counter() - start, len(result.train)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--preset", default="default")
    args = parser.parse_args(argv)
    env = default_env()
    run(20, args.preset, True, env)  # warm up: builds the worlds and the servers' tool templates once
    t_val, n_val = run(args.n, args.preset, True, env)
    t_raw, n_raw = run(args.n, args.preset, False, env)
    print(f"synth ({args.preset}, {args.n} tasks)")
    print(f"  validated by replay : {n_val / t_val:8.1f} tasks/s  ({t_val:.2f} s)")
    print(f"  without validation  : {n_raw / t_raw:8.1f} tasks/s  ({t_raw:.2f} s)")
    print(f"  validation cost     : {t_val / t_raw:8.2f}x the time of synthesis alone")


if __name__ == "__main__":
    main()
