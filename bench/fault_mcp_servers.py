"""Fault injection: external MCP stdio servers that die, hang or speak malformed JSON-RPC.

Each fault is a small fake server under ``tests/data/reliability/`` started through the kit's own
external-server path (``toolkit.envs.external.ExternalServer`` in ``open_episode``) and driven by the
real agent loop with a scripted model. Per fault, a run of several episodes: the first hits the
fault, the later ones check that the server was started afresh and works (``echo`` answers, and a
new process id for the crash fault). The whole run sits under a hard deadline: a hung run is a
failure, never a wait.

Faults: ``crash`` (the server exits while answering), ``kill`` (SIGKILL from outside mid-episode),
``hang`` (a tool call never returns), ``hang_init`` (the server never answers the handshake), and the
malformed modes of ``malformed_server.py`` (``garbage``, ``wrong_id``, ``bad_result``, ``bad_error``,
``not_jsonrpc``, ``huge_line``).

    python -m bench.fault_mcp_servers
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from contextlib import asynccontextmanager
from typing import Any

from toolkit.agent.loop import RolloutConfig, run_episodes
from toolkit.agent.policies import GenerationRequest
from toolkit.agent.testing import ScriptedPolicy
from toolkit.paths import REPO_ROOT
from toolkit.records import Task, Trajectory

DATA = REPO_ROOT / "tests" / "data" / "reliability"
MALFORMED_MODES = ("garbage", "wrong_id", "bad_result", "bad_error", "not_jsonrpc", "huge_line")
FAULTS = ("crash", "kill", "hang", "hang_init", *MALFORMED_MODES)


def server_command(fault: str) -> list[str]:
    if fault in ("crash", "kill"):
        return [sys.executable, str(DATA / "crash_server.py")]
    if fault in ("hang", "hang_init"):
        return [sys.executable, str(DATA / "hang_server.py"), "init" if fault == "hang_init" else "call"]
    return [sys.executable, str(DATA / "malformed_server.py"), fault]


def fault_tools(fault: str) -> list[str]:
    if fault in ("crash", "kill"):
        return ["echo", "pid", "crash"]
    if fault in ("hang", "hang_init"):
        return ["echo", "hang"]
    return ["get"]


def _call(name: str, args: dict[str, Any]) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>"


FINISH = _call("finish", {"answer": "done"})


def _last_tool_text(req: GenerationRequest) -> str:
    return next((m.get("content") or "" for m in reversed(req.messages) if m.get("role") == "tool"), "")


def script_for(fault: str, first: bool) -> Any:
    """What the scripted model does: hit the fault in the first episode, check health in later ones."""

    def script(req: GenerationRequest) -> str:
        s = req.step
        if fault in ("crash", "kill"):
            if not first:
                return [_call("pid", {}), _call("echo", {"text": "alive"}), FINISH][min(s, 2)]
            if fault == "crash":
                return [
                    _call("echo", {"text": "before"}),
                    _call("crash", {}),
                    _call("echo", {"text": "after"}),
                    FINISH,
                ][min(s, 3)]
            if s == 0:
                return _call("pid", {})
            if s == 1:  # kill the server from outside, then call it
                pid = int(_last_tool_text(req))
                os.kill(pid, signal.SIGKILL)
                return _call("echo", {"text": "after"})
            return FINISH
        if fault in ("hang", "hang_init"):
            steps = [
                _call("echo", {"text": "before"}),
                _call("hang", {}),
                _call("echo", {"text": "after"}),
                FINISH,
            ]
            return (steps if first else [steps[0], FINISH])[min(s, 3 if first else 1)]
        return [_call("get", {}), FINISH][min(s, 1)]

    return script


def run_fault(fault: str, episodes: int = 3, timeout: float = 3.0, deadline: float = 120.0) -> dict[str, Any]:
    """One run of ``episodes`` sequential episodes against a fresh fake server each; a summary dict."""
    from toolkit.envs import open_episode
    from toolkit.envs.external import ExternalServer

    server = ExternalServer("fake", command=server_command(fault), startup_timeout=timeout)
    tasks = [
        Task(
            id=f"{fault}-{k}",
            split="eval",
            prompt="Use the tools.",
            servers=[],
            tools=fault_tools(fault),
            seed=0,
        )
        for k in range(episodes)
    ]
    scripts = {t.id: script_for(fault, first=k == 0) for k, t in enumerate(tasks)}
    policy = ScriptedPolicy(lambda req: scripts[req.task.id](req))

    @asynccontextmanager
    async def opener(task: Task):
        async with open_episode(task, servers=[], external=[server], timeout=timeout) as tb:
            yield tb

    config = RolloutConfig(max_turns=6, tool_timeout_s=timeout * 2, max_concurrent_episodes=1)
    start = time.perf_counter()
    hung = False
    crash = None
    trajs: list[Trajectory] = []

    async def go() -> list[Trajectory]:
        return await asyncio.wait_for(run_episodes(tasks, policy, config, open_episode=opener), deadline)

    try:
        trajs = asyncio.run(go())
    except TimeoutError:
        hung = True
    except Exception as exc:  # the figure: a fault must not end the run
        crash = f"{type(exc).__name__}: {exc}"
    wall = time.perf_counter() - start
    return summarize(fault, trajs, hung=hung, crash=crash, wall=wall)


PERSISTENT = ("hang_init", *MALFORMED_MODES)  # faults every episode hits again (each with a new process)


def summarize(
    fault: str, trajs: list[Trajectory], *, hung: bool, crash: str | None, wall: float
) -> dict[str, Any]:
    """Did the fault come back as an error, did the run go on, and did later episodes get a working server?

    For a one-off fault (crash, kill, hang) the later episodes must succeed on a new server process;
    for a persistent one (a server that is always broken) every episode must end and report the error.
    """
    first, later = (trajs[0], trajs[1:]) if trajs else (None, [])

    def reported(t: Trajectory) -> bool:
        return t.stop_reason == "error" or any(not c.ok for c in t.calls)

    pids = [c.result for t in trajs for c in t.calls if c.name == "pid" and c.ok]
    if fault in PERSISTENT:
        recovered = bool(later) and all(reported(t) for t in later)
    else:
        healthy = all(t.stop_reason == "finish" and t.calls and all(c.ok for c in t.calls) for t in later)
        recovered = bool(later) and healthy and len(set(pids)) == len(pids)
    failed = [c for c in first.calls if not c.ok] if first else []
    return {
        "fault": fault,
        "episodes": len(trajs),
        "hung": hung,
        "crash": crash,
        "wall_s": round(wall, 1),
        "first_stop": first.stop_reason if first else None,
        "first_errors": [c.error[:90] for c in failed]
        or ([first.metadata.get("error", "")[:90]] if first else []),
        "fault_reported": bool(first) and reported(first),
        "later_episodes_ok": recovered,
        "distinct_pids": len(set(pids)),
        "n_pids": len(pids),
    }


def leftover_processes() -> list[str]:
    """Fake-server processes still alive (the kit must stop every server it started)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
        except OSError:
            continue
        if str(DATA) in cmd:
            out.append(f"{pid}: {cmd.replace(chr(0), ' ')}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=4, help="episodes per fault (the first hits it)")
    ap.add_argument("--timeout", type=float, default=3.0, help="episode timeout (connect, list, call)")
    ap.add_argument("--faults", default=",".join(FAULTS))
    args = ap.parse_args(argv)
    rows = [run_fault(f, args.episodes, args.timeout) for f in args.faults.split(",")]
    time.sleep(1.0)
    left = leftover_processes()
    print(
        f"{'fault':<12} {'eps':>3} {'hung':>5} {'crash':>5} {'wall_s':>6}  {'first stop':<12} reported  later ok  error"
    )
    for r in rows:
        print(
            f"{r['fault']:<12} {r['episodes']:>3} {r['hung']!s:>5} {bool(r['crash'])!s:>5} {r['wall_s']:>6}  "
            f"{r['first_stop']!s:<12} {r['fault_reported']!s:<9} {r['later_episodes_ok']!s:<8}  {(r['first_errors'] or [''])[0]}"
        )
    bad = [
        r["fault"]
        for r in rows
        if r["hung"] or r["crash"] or not r["fault_reported"] or not r["later_episodes_ok"]
    ]
    print(
        f"FIGURE mcp_server_faults faults={len(rows)} episodes={sum(r['episodes'] for r in rows)} "
        f"hung_runs={sum(r['hung'] for r in rows)} crashed_runs={sum(bool(r['crash']) for r in rows)} "
        f"not_recovered={bad} leftover_server_processes={len(left)}"
    )
    return 1 if bad or left else 0


if __name__ == "__main__":
    sys.exit(main())
