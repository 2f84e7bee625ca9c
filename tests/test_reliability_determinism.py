"""Determinism: the same seed on a CPU gives byte-identical synthesized tasks, identical gold
rollouts and identical rewards, across processes with different hash seeds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TIMING_KEYS = {"latency", "env_s", "wall_s", "elapsed_s", "generate_s", "timings"}


def _cli(args: list[str], cwd: Path, hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    proc = subprocess.run(
        [sys.executable, "-m", "toolkit.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=cwd,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def without_timings(value):
    """The record with wall-clock measurements removed (they are the only thing allowed to differ)."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def pipeline(root: Path, seed: int, hash_seed: str, synth_only: bool = False) -> dict[str, object]:
    """synth -> gold rollout -> score (two rewards), in fresh processes; everything it produced."""
    out = root / f"s{seed}-h{hash_seed}"
    _cli(
        ["synth", "--n", "8", "--n-eval", "3", "--seed", str(seed), "--out", str(out), "--no-progress"],
        root,
        hash_seed,
    )
    tasks = out / "train.jsonl"
    if synth_only:
        return {"train": tasks.read_bytes()}
    _cli(["rollout", "--policy", "gold", "--tasks", str(tasks), "--out", str(out / "gold.jsonl"), "--no-progress"], root, hash_seed)  # fmt: skip
    scores = {
        reward: json.loads(
            _cli(
                [
                    "score",
                    "--reward",
                    reward,
                    "--json",
                    "--tasks",
                    str(tasks),
                    "--trajectories",
                    str(out / "gold.jsonl"),
                ],
                root,
                hash_seed,
            )
        )  # fmt: skip
        for reward in ("rubric", "prove")
    }
    gold = [without_timings(json.loads(line)) for line in (out / "gold.jsonl").read_text().splitlines()]
    return {
        "train": tasks.read_bytes(),
        "eval": (out / "eval.jsonl").read_bytes(),
        "gold": gold,
        "scores": scores,
    }


@pytest.mark.integration
def test_same_seed_same_tasks_rollouts_and_rewards(tmp_path):
    a = pipeline(tmp_path, seed=11, hash_seed="1")
    b = pipeline(tmp_path, seed=11, hash_seed="2")
    assert a["train"] == b["train"] and a["eval"] == b["eval"]  # byte-identical files
    assert a["gold"] == b["gold"]
    assert a["scores"] == b["scores"]
    assert a["scores"]["rubric"]["aggregate"]["full_marks"] == 1.0  # the gold self-check holds too
    c = pipeline(tmp_path, seed=12, hash_seed="1", synth_only=True)
    assert c["train"] != a["train"]  # the seed matters: the check can fail
