"""The BFCL benchmark runs, checks the gold against bfcl-eval and prints its profile (tiny sizes)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from toolkit.paths import REPO_ROOT

pytest.importorskip("bfcl_eval")


def test_bench_bfcl_compares_with_bfcl_eval_and_profiles_the_mcp_calls():
    proc = subprocess.run(
        [sys.executable, "-m", "bench.bench_bfcl", "--categories", "base", "--limit", "2", "--profile"],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "2/2" in out  # the gold passes the official checker
    assert "kit result texts identical to bfcl-eval's: 2/2 entries" in out
    assert "x1.00" in out and "kit MCP, calls only" in out
    assert "cProfile of" in out and "validate_python" in out
