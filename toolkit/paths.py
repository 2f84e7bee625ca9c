"""Where things live: the repository's data, the build folder for executed notebooks, run outputs.

Notebooks and commands use these instead of paths relative to the current directory, so they work
from JupyterLab (cwd = notebooks/), papermill, Colab and the command line alike.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = REPO_ROOT / "data"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
BUILD_DIR = REPO_ROOT / "build"
RUNS_DIR = REPO_ROOT / "runs"


def cache_dir() -> Path:
    """The kit's cache (converted model checkpoints): $MCP_RL_CACHE or ~/.cache/mcp-rl-kit."""
    path = Path(os.environ.get("MCP_RL_CACHE") or Path.home() / ".cache" / "mcp-rl-kit")
    path.mkdir(parents=True, exist_ok=True)
    return path
