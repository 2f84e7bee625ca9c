"""The BFCL benchmark runs, checks the gold against bfcl-eval and prints its profile (tiny sizes)."""

from __future__ import annotations

import re
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
    # Every speed row: a positive rate, and a ratio that is that rate over bfcl-eval's measured in the
    # same run (the "with setup" rows against the first row, the "calls only" rows against the third).
    rows = {
        m["path"].strip(): (float(m["rate"]), float(m["ratio"]))
        for m in re.finditer(r"^\s+(?P<path>\S.*?)\s+(?P<rate>\d+) calls/s\s+x(?P<ratio>[\d.]+)$", out, re.M)
    }
    assert set(rows) == {
        "bfcl-eval executor, with setup",
        "kit MCP (open_episode + calls)",
        "bfcl-eval executor, calls only",
        "kit MCP, calls only",
        "direct call_method, with setup",
    }, out
    assert all(rate > 0 for rate, _ in rows.values())
    baseline = {
        "with": rows["bfcl-eval executor, with setup"][0],
        "only": rows["bfcl-eval executor, calls only"][0],
    }
    for path, (rate, ratio) in rows.items():
        base = baseline["only" if "calls only" in path else "with"]
        assert ratio == pytest.approx(rate / base, abs=0.006), (path, rate, base, ratio)
    assert float(re.search(r"episode open .*?: ([\d.]+) ms/entry", out)[1]) > 0
    assert float(re.search(r"BFCLReward .*?: (\d+) trajectories scored/s", out)[1]) > 0
    assert "cProfile of" in out and "validate_python" in out
