"""Planted API keys: run the kit's commands and notebooks with fake keys set, search every output.

Sets fake ``OPENAI_API_KEY``, ``MCP_RL_JUDGE_API_KEY``, ``HF_TOKEN`` and ``ANTHROPIC_API_KEY``, then
runs synth, a gold rollout, scoring through the (stand-in) LLM judge with the key (sent to the judge,
which is its purpose), scoring against a judge that is down, and the notebooks in smoke mode. Every
file written under the run folder and the kit cache, and every stdout / stderr, is searched for each
key (plain, reversed and base64).

    python -m bench.fault_secrets                  # CLI + notebooks 01 02 03
    python -m bench.fault_secrets --notebooks ""   # CLI only
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLANTED = {
    "OPENAI_API_KEY": "sk-PLANTED-openai-7f3c9a1b2d4e6f80",
    "MCP_RL_JUDGE_API_KEY": "sk-PLANTED-judge-0a1b2c3d4e5f6789",
    "HF_TOKEN": "hf_PLANTEDtoken0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-PLANTED-0123456789",
}


def forms(secret: str) -> set[str]:
    return {secret, secret[::-1], base64.b64encode(secret.encode()).decode()}


def search(root: Path, texts: list[str]) -> tuple[list[str], int, int]:
    """(hits, files scanned, bytes scanned)."""
    wanted = {f for s in PLANTED.values() for f in forms(s)}
    hits = [f"output #{i}" for i, t in enumerate(texts) if any(w in t for w in wanted)]
    n_files = n_bytes = 0
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        n_files, n_bytes = n_files + 1, n_bytes + len(data)
        text = data.decode("utf-8", errors="replace")
        hits += [str(path) for w in wanted if w in text]
    return hits, n_files, n_bytes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notebooks", default="01 02 03", help="notebook numbers to run in smoke mode")
    args = ap.parse_args(argv)
    from toolkit.rewards.standin import StandInJudge

    root = Path(tempfile.mkdtemp(prefix="fault_secrets_"))
    env = {**os.environ, **PLANTED, "MCP_RL_CACHE": str(root / "cache")}
    out = root / "run"
    texts: list[str] = []
    failures: list[str] = []

    def cli(*a: str) -> subprocess.CompletedProcess:
        p = subprocess.run([sys.executable, "-m", "toolkit.cli", *a], capture_output=True, text=True, env=env,
                           cwd=root, timeout=1800)  # fmt: skip
        texts.extend([p.stdout, p.stderr])
        if p.returncode:
            failures.append(f"{' '.join(a[:2])}: rc {p.returncode}: {p.stderr[-300:]}")
        return p

    start = time.perf_counter()
    tasks = out / "tasks" / "train.jsonl"
    cli("synth", "--n", "12", "--n-eval", "4", "--seed", "2", "--out", str(out / "tasks"), "--no-progress")
    cli(
        "rollout",
        "--policy",
        "gold",
        "--tasks",
        str(tasks),
        "--out",
        str(out / "gold.jsonl"),
        "--no-progress",
    )
    with StandInJudge() as judge:
        config = {"base_url": judge.base_url, "model": judge.model, "api_key_env": "MCP_RL_JUDGE_API_KEY",
                  "cache_path": str(out / "judge_cache.jsonl")}  # fmt: skip
        cli("score", "--reward", "rubric-judge", "--json", "--tasks", str(tasks), "--trajectories",
            str(out / "gold.jsonl"), "--config", json.dumps(config))  # fmt: skip
    down = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "OPENAI_API_KEY", "max_retries": 1,
            "backoff": 0.01, "timeout": 0.5}  # fmt: skip
    cli("score", "--reward", "rubric-judge", "--tasks", str(tasks), "--trajectories", str(out / "gold.jsonl"),
        "--config", json.dumps(down))  # fmt: skip
    if args.notebooks.split():
        cli("notebooks", "run", "--smoke", "--only", *args.notebooks.split(), "--out", str(out / "notebooks"))
    hits, n_files, n_bytes = search(root, texts)
    notebooks = (
        sorted(p.name for p in (out / "notebooks").glob("*.ipynb")) if (out / "notebooks").exists() else []
    )
    print(f"run folder {root}; {time.perf_counter() - start:.0f} s; notebooks executed: {notebooks}")
    for f in failures:
        print(f"  command failed: {f}")
    for h in hits[:10]:
        print(f"  LEAK: {h}")
    print(
        f"FIGURE planted_keys keys={len(PLANTED)} commands={len(texts) // 2} notebooks={len(notebooks)} "
        f"files_scanned={n_files} bytes_scanned={n_bytes} leaks={len(hits)} failed_commands={len(failures)}"
    )
    return 1 if hits else 0


if __name__ == "__main__":
    sys.exit(main())
