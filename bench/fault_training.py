"""Fault injection: SIGKILL a training run mid-GRPO, resume it, check it finishes and lost nothing.

Runs ``mcp-rl train`` (recipe cpu-demo on the tiny random model, smallest budgets, a checkpoint every
step) in its own process group, waits until GRPO has saved ``checkpoint-K`` and logged a step, kills
the whole group with SIGKILL, then runs the same command with ``--resume``. Checks:

- the resumed run says it resumes from the last checkpoint, finishes every GRPO step, writes the
  final adapter and the run summary;
- ``metrics.jsonl`` is append-only: the bytes present at the kill are an exact prefix of the final
  file, and every line of the final file is valid JSON (no torn line).

    python -m bench.fault_training                 # 4 GRPO steps, killed after checkpoint-2
    python -m bench.fault_training --steps 2 --kill-after 1
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from toolkit.paths import REPO_ROOT
from toolkit.runs import RunFolder, has_adapter

SMALLEST = [
    "--recipe", "cpu-demo", "--model", "tiny-random",
    "--sft-steps", "1", "--set", "sft.max_examples=2",  # a one-step warm start: GRPO is what is killed
    "--set", "sft.per_device_train_batch_size=2",
    "--set", "synth.n=8", "--set", "synth.n_eval=2",
    "--set", "grpo.per_device_train_batch_size=4", "--set", "grpo.num_generations=2",
    "--set", "grpo.save_steps=1", "--set", "grpo.save_total_limit=10",
    "--set", "rollout.max_new_tokens=8", "--set", "rollout.max_turns=1", "--set", "rollout.max_batch_size=4",
]  # fmt: skip


def train_command(out: Path, steps: int, resume: bool) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "toolkit.cli",
        "train",
        *SMALLEST,
        "--max-steps",
        str(steps),
        "--out",
        str(out),
    ]
    return cmd + (["--resume"] if resume else [])


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "MCP_RL_THREADS": "1",
        "TRL_EXPERIMENTAL_SILENCE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }


def checkpoint_ready(out: Path, k: int) -> bool:
    return (RunFolder(out).checkpoint(k) / "trainer_state.json").exists()


def grpo_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return [r for r in rows if r.get("phase") == "grpo"]


def run(out: Path, steps: int = 4, kill_after: int = 2, timeout: float = 540.0) -> dict[str, Any]:
    """Kill after checkpoint-``kill_after``, resume, and report what survived."""
    folder = RunFolder(out)
    metrics = folder.metrics_file
    out.parent.mkdir(parents=True, exist_ok=True)
    log = out.parent / f"{out.name}.first.log"
    start = time.monotonic()
    with log.open("w") as fh:
        proc = subprocess.Popen(
            train_command(out, steps, resume=False), stdout=fh, stderr=subprocess.STDOUT, env=_env(),
            cwd=REPO_ROOT, start_new_session=True,
        )  # fmt: skip
        killed_at = None
        while time.monotonic() - start < timeout:
            if proc.poll() is not None:
                break
            if checkpoint_ready(out, kill_after) and len(grpo_lines(metrics)) >= kill_after:
                time.sleep(1.0)  # into the next step: rollouts running, nothing saved yet
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                killed_at = time.monotonic() - start
                break
            time.sleep(0.2)
        else:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if killed_at is None:
        return {
            "error": f"the run ended (rc {proc.returncode}) or timed out before checkpoint-{kill_after}; see {log}"
        }
    at_kill = metrics.read_bytes() if metrics.exists() else b""
    checkpoints = sorted(p.name for _, p in folder.checkpoints(with_adapter=False))
    resumed = subprocess.run(
        train_command(out, steps, resume=True), capture_output=True, text=True, env=_env(), cwd=REPO_ROOT,
        timeout=timeout,
    )  # fmt: skip
    final = metrics.read_bytes() if metrics.exists() else b""
    lines = final.decode("utf-8", errors="replace").splitlines()
    torn = [i + 1 for i, line in enumerate(lines) if not _is_json(line)]
    summary = json.loads(folder.summary_file.read_text()) if folder.summary_file.exists() else {}
    logged_steps = [r["phase_step"] for r in grpo_lines(metrics) if "loss" in r]
    resume_line = next((x for x in resumed.stdout.splitlines() if "resuming GRPO from" in x), "")
    return {
        "killed_after_s": round(killed_at, 1),
        "checkpoints_at_kill": checkpoints,
        "metrics_lines_at_kill": at_kill.count(b"\n"),
        "resume_rc": resumed.returncode,
        "resume_stderr_tail": resumed.stderr[-1500:] if resumed.returncode else "",
        "resumed_from": resume_line.split("resuming GRPO from", 1)[-1].strip() if resume_line else None,
        "grpo_steps_done": summary.get("grpo_steps"),
        "final_adapter": has_adapter(folder.adapter),
        "metrics_prefix_preserved": final.startswith(at_kill),
        "metrics_lines_final": len(lines),
        "torn_lines": torn,
        "grpo_steps_logged": logged_steps,
        "wall_s": round(time.monotonic() - start, 1),
    }


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--kill-after", type=int, default=2, help="kill once this checkpoint is saved")
    ap.add_argument("--out", default=None, help="run folder (default: a temporary one)")
    args = ap.parse_args(argv)
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="fault_training_")) / "run"
    r = run(out, args.steps, args.kill_after)
    print(json.dumps(r, indent=1))
    ok = (
        "error" not in r
        and r["resume_rc"] == 0
        and r["grpo_steps_done"] == args.steps
        and r["final_adapter"]
        and r["metrics_prefix_preserved"]
        and not r["torn_lines"]
    )
    print(
        f"FIGURE training_sigkill steps={args.steps} killed after checkpoint-{args.kill_after} "
        f"resumed_from={r.get('resumed_from')} finished={r.get('grpo_steps_done')}/{args.steps} "
        f"metrics lines before kill preserved={r.get('metrics_prefix_preserved')} torn={len(r.get('torn_lines') or [])} ok={ok}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
