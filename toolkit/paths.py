"""Where things live: the package's data, the build folder for executed notebooks, run outputs.

Notebooks and commands use these instead of paths relative to the current directory, so they work
from JupyterLab (cwd = notebooks/), papermill, Colab and the command line alike.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
# The source checkout (notebooks/, tests/, bench/ live there; a wheel install has none of them).
REPO_ROOT = PACKAGE_DIR.parent
IN_CHECKOUT = (REPO_ROOT / "pyproject.toml").is_file()
# Data the kit reads at run time (the task sample, the published reference numbers): the top-level
# data/ of a checkout (editable installs too), or its copy inside the package in a wheel (setup.py
# copies data/ to toolkit/data at build time; there is one copy in the repository).
DATA_DIR = REPO_ROOT / "data" if IN_CHECKOUT else PACKAGE_DIR / "data"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
# Outputs go into the checkout when running from one, else into the current directory.
WORK_DIR = REPO_ROOT if IN_CHECKOUT else Path.cwd()
BUILD_DIR = WORK_DIR / "build"
RUNS_DIR = WORK_DIR / "runs"


def cache_dir() -> Path:
    """The kit's cache (converted model checkpoints): $MCP_RL_CACHE or ~/.cache/mcp-rl-kit."""
    path = Path(os.environ.get("MCP_RL_CACHE") or Path.home() / ".cache" / "mcp-rl-kit")
    path.mkdir(parents=True, exist_ok=True)
    return path
