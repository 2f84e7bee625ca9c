"""The training run's own log lines (``[mcp-rl train HH:MM:SS] ...``), written by the main process only."""

from __future__ import annotations

import os
import time


def is_main_process() -> bool:
    """Rank 0 under ``accelerate launch`` / torchrun (read from the environment: the process group
    does not exist yet when the run starts)."""
    return int(os.environ.get("RANK", "0")) == 0


def log(msg: str) -> None:
    if not is_main_process():
        return
    print(f"[mcp-rl train {time.strftime('%H:%M:%S')}] {msg}", flush=True)
