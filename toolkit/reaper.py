"""Nothing the kit starts outlives it, however it ends (SIGKILL included).

Every place that starts a process (a vLLM engine or server, an MCP stdio server) first calls ``watch()``.
The first call in a process puts a per-run marker, ``MCP_RL_RUN_ID=<random id>``, in ``os.environ``, so
every child started afterwards and all its descendants carry it (vLLM's spawned EngineCore too), and
starts a small watchdog process. The watchdog holds the read end of a pipe whose write end only the kit
holds: when the kit exits, cleanly or killed by any signal, the read ends, and the watchdog stops every
process still carrying the marker, with their descendants (SIGTERM, then SIGKILL after a grace). After a
clean shutdown the kit has stopped them all already, and the watchdog finds nothing.

A child forked without exec (vLLM's engine under the ``fork`` start method) keeps the kit's start-up
environment, which has no marker: it sends its pid down the pipe instead, and closes its copy of the
write end, so that the kit's death still ends the read.

Linux only (``/proc``); elsewhere ``watch()`` only sets the marker. Run as a script, this file is the
watchdog itself (stdlib only, so it starts fast).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid

MARKER = "MCP_RL_RUN_ID"
GRACE_S = 2.0  # between SIGTERM and SIGKILL

_lock = threading.Lock()
_owner = 0  # pid of the process whose watchdog runs (a forked child starts its own)
_write_fd = -1
_run_id = ""
_watchdog_process: subprocess.Popen | None = None  # held, so that no "still running" warning comes at exit


def watch() -> dict[str, str]:
    """Start this process's watchdog (once) and return the marker, ``{MARKER: id}``, for a child whose
    environment is built from scratch (the MCP SDK's stdio client passes on only a few variables)."""
    global _owner, _write_fd, _run_id, _watchdog_process
    with _lock:
        if _owner != os.getpid():
            # A new id also when the marker was inherited (a kit process started by another run): this
            # process's death must not take down the run that started it.
            _run_id = uuid.uuid4().hex
            if sys.platform == "linux":
                read_fd, _write_fd = os.pipe()  # not inheritable: exec'd children never hold the write end
                env = {k: v for k, v in os.environ.items() if k != MARKER}
                _watchdog_process = subprocess.Popen(
                    [sys.executable, "-I", "-S", __file__, _run_id, str(read_fd)],
                    pass_fds=(read_fd,),
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,  # holds no pipe of ours open (a caller reading our output)
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,  # a Ctrl-C or a kill of our process group leaves it running
                )
                os.close(read_fd)
            os.environ[MARKER] = _run_id
            _owner = os.getpid()
    return {MARKER: _run_id}


def _forked_child() -> None:
    global _write_fd, _lock
    _lock = threading.Lock()  # another thread may have held it at the fork
    if _write_fd >= 0:
        try:
            os.write(_write_fd, f"{os.getpid()}\n".encode())
        except OSError:  # the watchdog is gone
            pass
        os.close(_write_fd)
        _write_fd = -1


os.register_at_fork(after_in_child=_forked_child)


# ---- the watchdog --------------------------------------------------------------------------------------


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(parent pid, start time, state) of a process, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()  # after the name, which may hold spaces
    except (OSError, IndexError):
        return None
    return int(fields[1]), int(fields[19]), fields[0].decode()


def _marked(pid: int, needle: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return needle in b"\0" + f.read()
    except OSError:  # another user's process, or gone
        return False


def targets(run_id: str, forked: dict[int, int] | None = None) -> dict[int, int]:
    """pid -> start time of the processes carrying ``run_id``'s marker or in ``forked`` (pid -> start
    time), and of all their descendants."""
    procs = {int(p): s for p in os.listdir("/proc") if p.isdigit() and (s := _stat(int(p))) is not None}
    needle = f"\0{MARKER}={run_id}\0".encode()
    forked = forked or {}
    found = [p for p, (_, start, _) in procs.items() if forked.get(p) == start or _marked(p, needle)]
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    for pid in found:  # grows while walking: the descendants, whatever their environment
        found += [c for c in children.get(pid, []) if c not in found]
    return {p: procs[p][1] for p in found if p != os.getpid()}


def reap(run_id: str, forked: dict[int, int] | None = None, grace: float = GRACE_S) -> None:
    """Stop ``targets(run_id, forked)``: SIGTERM, then SIGKILL for those still alive after ``grace``."""
    victims: dict[int, int] = {}

    def alive(pid: int) -> bool:  # the same process (not a reused pid), and not a zombie
        stat = _stat(pid)
        return stat is not None and stat[1] == victims[pid] and stat[2] != "Z"

    for sig in (signal.SIGTERM, signal.SIGKILL):
        victims.update(targets(run_id, forked))
        for pid in [p for p in victims if alive(p)]:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + grace
        while any(alive(p) for p in victims) and time.monotonic() < deadline:
            time.sleep(0.05)


def _watchdog(run_id: str, fd: int) -> None:
    forked: dict[int, int] = {}
    pending = b""
    while chunk := os.read(fd, 4096):  # b"": no process holds the write end any more, the kit is gone
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            if (stat := _stat(int(line))) is not None:
                forked[int(line)] = stat[1]
    reap(run_id, forked)


if __name__ == "__main__":
    _watchdog(sys.argv[1], int(sys.argv[2]))
