"""External MCP stdio servers that die, hang or send malformed JSON-RPC (CI-sized version of
``python -m bench.fault_mcp_servers``, which runs every fault with more episodes).

Contract: the fault comes back to the model as a tool error (or the episode ends with stop reason
``error``), the run goes on, the next episode gets a freshly started server, nothing hangs and no
server process is left behind.
"""

from __future__ import annotations

import importlib.util
import time

import pytest

from toolkit.paths import REPO_ROOT


def _load_bench():
    spec = importlib.util.spec_from_file_location(
        "fault_mcp_servers", REPO_ROOT / "bench" / "fault_mcp_servers.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fm = _load_bench()
pytestmark = pytest.mark.integration


@pytest.mark.parametrize("fault", ["kill", "hang", "hang_init", "garbage"])
def test_server_fault_is_reported_and_the_run_goes_on(fault):
    # 5 s, not 2: starting a Python stdio server took over 2 s on 2 loaded cores, and the next episode's
    # server then failed to start (kill) or failed before it could hang (hang)
    row = fm.run_fault(fault, episodes=2, timeout=5.0, deadline=90.0)
    assert not row["hung"], row
    assert row["crash"] is None, row
    assert row["episodes"] == 2
    assert row["fault_reported"], row
    assert row["later_episodes_ok"], row
    if fault == "hang":
        assert any("timeout" in e for e in row["first_errors"]), row
        time.sleep(0.5)
        assert fm.leftover_processes() == []  # the blocked server was stopped with its episode
    if fault == "kill":
        assert row["distinct_pids"] == row["n_pids"] == 2  # restarted: a new process the second time
