"""Nothing the kit starts outlives it (issue 51: a run killed with SIGKILL left its vLLM EngineCore
processes behind). ``toolkit.reaper``'s watchdog stops every process carrying the run's marker, their
descendants and the children the kit forked, once the kit is gone, and no process of another run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from toolkit.records import Task

ROOT = Path(__file__).resolve().parents[1]
MCP_RL = Path(sys.executable).with_name("mcp-rl")


def start_time(pid: int) -> int | None:
    """A live process's start time (None when it is gone or a zombie)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == b"Z" else int(fields[19])


def with_token(token: str) -> dict[int, int]:
    """pid -> start time of the live processes whose command line holds ``token``."""
    found = {}
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{p}/cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline and (start := start_time(int(p))) is not None:
            found[int(p)] = start
    return found


def survivors(procs: dict[int, int], seconds: float = 10.0) -> dict[int, int]:
    """Those of ``procs`` (pid -> start time) still alive after up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while (alive := {p: s for p, s in procs.items() if start_time(p) == s}) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def kill(procs: dict[int, int]) -> None:
    """Clean up after a failed test: only the processes this test started (same pid and start time)."""
    for pid, start in procs.items():
        if start_time(pid) == start:
            os.kill(pid, signal.SIGKILL)


# A kit process: starts its watchdog, a child whose grandchild has an empty environment (no marker), and
# a forked child that never execs (vLLM's engine under the fork start method); prints them, then sleeps.
KIT = """
import json, os, subprocess, sys, time
from toolkit import reaper
marker = reaper.watch()
sleeper = [sys.executable, "-c", "import time; time.sleep(300)", sys.argv[1]]
starter = "import subprocess, sys; p = subprocess.Popen(sys.argv[1:], env={}); print(p.pid, flush=True); p.wait()"
child = subprocess.Popen([sys.executable, "-c", starter, *sleeper], stdout=subprocess.PIPE)
grandchild = int(child.stdout.readline())
forked = os.fork()
if forked == 0:
    time.sleep(300)
    os._exit(0)
print(json.dumps({"marker": marker, "pids": [child.pid, grandchild, forked]}), flush=True)
time.sleep(300)
"""


def test_the_watchdog_stops_children_grandchildren_and_forks_of_a_killed_process_only():
    token, inherited = uuid.uuid4().hex, uuid.uuid4().hex
    # a kit process started by another run (it inherits that run's marker), and a process of that run
    env = {**os.environ, "MCP_RL_RUN_ID": inherited}
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], env=env)
    kit = subprocess.Popen([sys.executable, "-c", KIT, token], env=env, cwd=ROOT, stdout=subprocess.PIPE)
    started: dict[int, int] = {}
    try:
        ready = json.loads(kit.stdout.readline())
        run_id = ready["marker"]["MCP_RL_RUN_ID"]
        assert run_id != inherited  # its own id: its death does not take down the run that started it
        started = {p: start_time(p) for p in ready["pids"]}
        watchdog = with_token(run_id)
        assert len(watchdog) == 1, "one watchdog, named by the run's id"
        assert None not in started.values()

        kit.send_signal(signal.SIGKILL)
        kit.wait()
        assert not survivors(started), "the killed kit's children, grandchild and fork outlived it"
        assert not survivors(watchdog), "the watchdog exits once it has reaped"
        assert start_time(other.pid) is not None, "a process of another run was stopped"
    finally:
        kill(started)
        kit.kill()
        other.kill()
        kit.wait()
        other.wait()


def test_a_clean_exit_leaves_no_watchdog():
    code = "from toolkit import reaper; print(reaper.watch()['MCP_RL_RUN_ID'], flush=True)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert not survivors(with_token(out.stdout.strip()), seconds=5)


# An MCP stdio server that never answers the handshake and does not exit when its stdin closes (like a
# vLLM engine, it needs killing), with a sleeping child of its own. It says when both are up.
STUBBORN_SERVER = """
import subprocess, sys, time
from pathlib import Path
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", sys.argv[1]])
Path(sys.argv[2]).write_text("up")
time.sleep(300)
"""


@pytest.mark.integration
def test_a_killed_rollout_leaves_no_mcp_server_behind(tmp_path):
    token = uuid.uuid4().hex
    server, up = tmp_path / "server.py", tmp_path / "up"
    server.write_text(STUBBORN_SERVER)
    command = [sys.executable, str(server), token, str(up)]
    own = {"recipes": [{"name": "stubborn", "command": command, "startup_timeout": 300}]}
    task = Task("t0", "eval", "Say hi.", servers=[], tools=[], seed=0, metadata={"own_server": own})
    (tmp_path / "tasks.jsonl").write_text(json.dumps(task.to_dict()) + "\n")
    cmd = [str(MCP_RL), *"rollout --policy gold --tasks tasks.jsonl --out out.jsonl --no-progress".split()]
    kit = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    servers: dict[int, int] = {}
    try:
        deadline = time.monotonic() + 120
        while not up.exists() and kit.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert up.exists(), f"the server never started: {kit.poll()=}"
        # the server and its child; on a loaded machine /proc can lag the "up" file by a moment
        while len(servers := with_token(token)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(servers) == 2, f"expected the server and its child, found {servers}"

        kit.send_signal(signal.SIGKILL)
        kit.wait()
        assert not survivors(servers), "the killed rollout's MCP server (or its child) outlived it"
    finally:
        kill(servers)
        kit.kill()
        kit.wait()
