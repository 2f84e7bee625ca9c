"""Environment speed: one tool call through each path, throughput of concurrent isolated episodes, reset cost.

    python -m bench.bench_envs [--quick]

Every figure is measured in this run and printed next to its baseline:
- per-call latency of the same read tool (view_ticket) called directly in Python (the limit), through
  the in-process MCP client (the SDK's direct dispatcher: the kit's fast path), through in-memory
  JSON-RPC streams (full framing + initialize handshake), and over stdio to `python -m toolkit.envs.serve`;
- tool calls per second with 64 concurrent isolated episodes (mixed reads and writes);
- reset cost: a copy-on-write WorldState vs deep-copying the world, and opening a whole episode.
"""

from __future__ import annotations

import argparse
import copy
import os
import random
import sys
import time

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from toolkit.envs import open_episode
from toolkit.envs.servers.helpdesk import Helpdesk
from toolkit.envs.state import WorldState, base_world

ARGS = {"ticket_id": "t-1007"}


def per_call(seconds: float, n: int) -> str:
    return f"{seconds / n * 1e6:9.1f} us/call"


async def time_calls(call, n: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) for n awaited calls."""
    await call()  # warm up
    t, c = time.perf_counter(), time.process_time()
    for _ in range(n):
        await call()
    return time.perf_counter() - t, time.process_time() - c


async def bench_paths(n: int, rounds: int = 5) -> dict[str, tuple[float, float]]:
    """Per-path (wall, CPU) seconds for n calls, measured in interleaved rounds so that a changing
    machine load hits every path alike."""
    helpdesk = Helpdesk(WorldState.from_seed(0))

    async def direct() -> None:
        helpdesk.view_ticket(**ARGS)

    params = StdioServerParameters(command=sys.executable, args=["-m", "toolkit.envs.serve", "helpdesk"],
                                   cwd=os.getcwd())  # fmt: skip
    out = {k: [0.0, 0.0] for k in ("direct python", "MCP inprocess", "MCP jsonrpc", "MCP stdio")}
    k = max(n // 5, 50)  # stdio is slow: fewer calls, scaled to n
    async with (
        open_episode(servers=["helpdesk"], transport="inprocess") as fast,
        open_episode(servers=["helpdesk"], transport="jsonrpc") as framed,
        Client(params, read_timeout_seconds=60) as stdio,
    ):
        paths = {
            "direct python": (direct, n),
            "MCP inprocess": (lambda: fast.call_tool("view_ticket", ARGS), n),
            "MCP jsonrpc": (lambda: framed.call_tool("view_ticket", ARGS), n),
            "MCP stdio": (lambda: stdio.call_tool("view_ticket", ARGS), k),
        }
        for _ in range(rounds):
            for name, (call, count) in paths.items():
                wall, cpu = await time_calls(call, count // rounds)
                out[name][0] += wall * n / count
                out[name][1] += cpu * n / count
    out["MCP stdio"][1] = float("nan")  # the server's CPU is in another process
    return {name: (wall, cpu) for name, (wall, cpu) in out.items()}


def plan(rng: random.Random, n: int) -> list[tuple[str, dict]]:
    calls = [
        lambda: ("search_tickets", {"status": rng.choice(["open", "pending"]), "limit": 5}),
        lambda: ("view_ticket", {"ticket_id": f"t-{rng.randint(1001, 1040)}"}),
        lambda: ("add_ticket_tags", {"ticket_id": f"t-{rng.randint(1001, 1040)}", "tags": ["bench"]}),
        lambda: ("get_company", {"company_id": f"co-{rng.randint(1, 8):03d}"}),
        lambda: (
            "update_deal",
            {"deal_id": f"d-{rng.randint(1, 16):03d}", "amount": 1000.0 * rng.randint(1, 9)},
        ),
        lambda: ("calculate", {"expression": f"{rng.randint(1, 99)} * 1.07"}),
    ]
    return [rng.choice(calls)() for _ in range(n)]


async def bench_concurrent(episodes: int, calls: int) -> tuple[float, float, float, int]:
    """(wall s including episode open/close, wall s of the call phase, CPU s of the call phase, calls)."""
    plans = [plan(random.Random(i), calls) for i in range(episodes)]
    ready, go = anyio.Event(), anyio.Event()
    opened = 0
    phase: dict[str, float] = {}

    async def one(i: int) -> None:
        nonlocal opened
        async with open_episode(servers=["helpdesk", "crm", "calculator"], seed=0) as tb:
            opened += 1
            if opened == episodes:
                ready.set()
            await go.wait()
            for name, args in plans[i]:
                r = await tb.call_tool(name, args)
                assert r.ok, r.text
            phase["end"] = time.perf_counter()

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(episodes):
            tg.start_soon(one, i)
        await ready.wait()
        phase["start"], cpu0 = time.perf_counter(), time.process_time()
        go.set()
        while len(phase) < 2 or phase["end"] < phase["start"]:
            await anyio.sleep(0.001)
        cpu = time.process_time() - cpu0
    return time.perf_counter() - t0, phase["end"] - phase["start"], cpu, episodes * calls


def _worker(episodes: int, calls: int) -> tuple[float, float, float, int]:
    return anyio.run(bench_concurrent, episodes, calls)


def bench_processes(procs: int, episodes: int, calls: int) -> tuple[float, int]:
    """The 64 episodes split over ``procs`` processes (one event loop per core): (calls/s, calls)."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(procs) as pool:
        pool.submit(_worker, 1, 1).result()  # warm the workers (imports) before timing
        list(pool.map(_worker, [1] * procs, [1] * procs))
        results = list(pool.map(_worker, [episodes // procs] * procs, [calls] * procs))
    total = sum(r[3] for r in results)
    return total / max(r[1] for r in results), total


async def bench_open(n: int) -> float:
    async with open_episode(servers=["helpdesk", "crm", "calculator"]):
        pass
    t = time.perf_counter()
    for _ in range(n):
        async with open_episode(servers=["helpdesk", "crm", "calculator"]):
            pass
    return (time.perf_counter() - t) / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer iterations (smoke)")
    args = ap.parse_args()
    n = 300 if args.quick else 3000
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f}, n={n}"
    )
    print("(one process, one event loop: it uses one core; on a busy machine trust the CPU-second figures)")

    paths = anyio.run(bench_paths, n)
    base_wall, base_cpu = paths["direct python"]
    print("\n1) one read tool call (view_ticket); stdio talks to a server subprocess")
    for k, (wall, cpu) in paths.items():
        cpu_txt = (
            f"{cpu / n * 1e6:8.1f} us CPU  x{cpu / base_cpu:7.0f}"
            if cpu == cpu
            else "   (server CPU in another process)"
        )
        print(f"  {k:<16} {per_call(wall, n)} wall  x{wall / base_wall:7.0f} | {cpu_txt}   vs direct")

    episodes, calls = 64, (20 if args.quick else 100)
    wall, phase, cpu, total = anyio.run(bench_concurrent, episodes, calls)
    print(f"\n2) {episodes} concurrent isolated episodes x {calls} mixed calls (helpdesk+crm+calculator)")
    print(
        f"  call phase: {total / phase:8.0f} calls/s wall, {total / cpu:8.0f} calls per CPU-second   (target >= 1000)"
    )
    print(f"  end to end incl. opening/closing 64 episodes: {total / wall:8.0f} calls/s")
    procs = min(os.cpu_count() or 1, 2)
    if procs > 1:
        rate, _ = bench_processes(procs, episodes, calls)
        print(
            f"  the same 64 episodes split over {procs} processes (call phases overlapped): {rate:8.0f} calls/s wall"
        )
    wall1, cpu1 = paths["MCP inprocess"]
    print(
        f"  vs one episode calling view_ticket sequentially: {n / wall1:8.0f} calls/s wall, {n / cpu1:8.0f} per CPU-second"
    )

    world = base_world(0)
    reps = 2000 if args.quick else 20000
    t = time.perf_counter()
    for _ in range(reps):
        WorldState.from_seed(0)
    cow = (time.perf_counter() - t) / reps
    t = time.perf_counter()
    for _ in range(max(reps // 100, 10)):
        copy.deepcopy(world)
    deep = (time.perf_counter() - t) / max(reps // 100, 10)
    opened = anyio.run(bench_open, 50 if args.quick else 300)
    print("\n3) reset cost per episode")
    print(f"  copy-on-write world state:  {cow * 1e6:9.2f} us   (target <= 1000 us)")
    print(
        f"  deep copy of the world:     {deep * 1e6:9.1f} us   (x{deep / cow:,.0f} the copy-on-write reset)"
    )
    print(f"  open+close a 3-server episode (state + pooled servers + MCP sessions): {opened * 1e3:7.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
