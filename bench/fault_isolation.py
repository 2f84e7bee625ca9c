"""Isolation under load: many concurrent episodes doing random writes through the real agent loop.

Every episode opens its own world (``toolkit.envs.open_episode``) on the same seed, so all of them
start from, and write to, the same shared base records (copy-on-write). A scripted model sends each
episode its own random plan of write calls (arguments drawn from the tool schemas, ids drawn from
the world, so many calls succeed and some fail on purpose). After the concurrent run, every episode
is replayed alone; its final state diff and every call's result must equal the concurrent run's. The
shared base world must still equal a freshly generated one.

    python -m bench.fault_isolation                    # 256 episodes
    python -m bench.fault_isolation --episodes 1024
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from typing import Any

from toolkit.agent.loop import RolloutConfig, run_episodes
from toolkit.agent.policies import GenerationRequest
from toolkit.agent.testing import ScriptedPolicy
from toolkit.records import Task, Trajectory

SEED = 5
SERVERS = [
    "helpdesk",
    "crm",
    "directory",
    "calendar",
    "email",
    "filesystem",
    "shop",
    "finance",
    "chat",
    "calculator",
]
ID_COLLECTIONS = {
    "ticket_id": "tickets",
    "source_id": "tickets",
    "target_id": "tickets",
    "requester_id": "customers",
    "customer_id": "customers",
    "contact_id": "customers",
    "assignee_id": "staff",
    "staff_id": "staff",
    "author_id": "staff",
    "organizer_id": "staff",
    "by": "staff",
    "company_id": "companies",
    "account_manager_id": "staff",
    "deal_id": "deals",
    "event_id": "events",
    "email_id": "emails",
    "product_id": "products",
    "order_id": "orders",
    "channel_id": "channels",
    "message_id": "messages",
    "symbol": "quotes",
}
LIST_IDS = {"attendee_ids": "staff", "member_ids": "staff", "tags": None, "to": None, "cc": None}


def write_tools() -> list[Any]:
    from toolkit.envs.registry import tool_specs

    return [s for s in tool_specs(SERVERS) if not s.annotations.get("readOnlyHint")]


def _string(rng: random.Random, name: str, schema: dict[str, Any], world: dict[str, Any]) -> str:
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if name in ID_COLLECTIONS:
        keys = list(world[ID_COLLECTIONS[name]])
        return rng.choice(keys) if keys and rng.random() < 0.9 else f"missing-{rng.randint(0, 9)}"
    if name in ("path", "source", "destination", "target"):
        return rng.choice(
            [*list(world["files"])[:8], f"/scratch/f{rng.randint(0, 5)}.txt", f"/f{rng.randint(0, 5)}.txt"]
        )
    if name in ("start", "close_date"):
        return f"2025-12-{rng.randint(1, 28):02d}" + ("T10:00:00" if name == "start" else "")
    if name == "email":
        return f"user{rng.randint(0, 99)}@example.com"
    return rng.choice(["alpha", "beta", "gamma", "delta"]) + f"-{rng.randint(0, 999)}"


def _value(rng: random.Random, name: str, schema: dict[str, Any], world: dict[str, Any]) -> Any:
    options = schema.get("anyOf")
    if options:
        schema = rng.choice([o for o in options if o.get("type") != "null"] or options)
    kind = schema.get("type")
    if kind == "string":
        return _string(rng, name, schema, world)
    if kind == "integer":
        return rng.randint(max(schema.get("minimum", 1), 1), min(schema.get("maximum", 60), 60))
    if kind == "number":
        return round(rng.uniform(1, 5000), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        if name == "items":
            return [{"product_id": rng.choice(list(world["products"])), "qty": rng.randint(1, 3)}]
        if LIST_IDS.get(name):
            return rng.sample(list(world[LIST_IDS[name]]), 2)
        if name in ("to", "cc"):
            return [f"user{rng.randint(0, 9)}@example.com"]
        return [rng.choice(["vip", "bug", "billing", "urgent"])]
    return None


def random_plan(
    rng: random.Random, tools: list[Any], world: dict[str, Any], n: int
) -> list[tuple[str, dict]]:
    """``n`` random write calls: required arguments always, optional ones half the time."""
    plan = []
    for _ in range(n):
        spec = rng.choice(tools)
        props = spec.input_schema.get("properties", {})
        required = set(spec.input_schema.get("required", []))
        args = {k: _value(rng, k, s, world) for k, s in props.items() if k in required or rng.random() < 0.5}
        plan.append((spec.name, {k: v for k, v in args.items() if v is not None}))
    return plan


def _turn(calls: list[tuple[str, dict]]) -> str:
    return "\n".join(
        f"<tool_call>\n{json.dumps({'name': n, 'arguments': a})}\n</tool_call>" for n, a in calls
    )


def make_run(n_episodes: int, calls: int, per_turn: int, seed: int = 0) -> tuple[list[Task], dict[str, list]]:
    from toolkit.envs.state import base_world

    tools = write_tools()
    world = base_world(SEED)
    tasks, plans = [], {}
    for k in range(n_episodes):
        task = Task(
            id=f"iso-{k}",
            split="eval",
            prompt="Make changes.",
            servers=SERVERS,
            tools=[t.name for t in tools],
            seed=SEED,
        )
        tasks.append(task)
        plans[task.id] = random_plan(random.Random(seed * 1_000_003 + k), tools, world, calls)
    return tasks, {tid: [p[i : i + per_turn] for i in range(0, len(p), per_turn)] for tid, p in plans.items()}


def rollout(tasks: list[Task], turns: dict[str, list], concurrency: int) -> list[Trajectory]:
    finish = '<tool_call>\n{"name": "finish", "arguments": {"answer": "done"}}\n</tool_call>'

    def script(req: GenerationRequest) -> str:
        chunks = turns[req.task.id]
        return _turn(chunks[req.step]) if req.step < len(chunks) else finish

    config = RolloutConfig(
        max_turns=max(len(v) for v in turns.values()) + 1,
        max_concurrent_episodes=concurrency,
        max_batch_size=concurrency,
        tool_timeout_s=60.0,
    )
    return asyncio.run(run_episodes(tasks, ScriptedPolicy(script), config))


def fingerprint(traj: Trajectory) -> str:
    """What must not depend on the other episodes: the state diff and every call's outcome."""
    calls = [(c.name, c.args, c.ok, c.result) for c in traj.calls]
    return json.dumps([traj.stop_reason, traj.state_diff, calls], sort_keys=True, default=str)


def run(n_episodes: int = 256, calls: int = 12, per_turn: int = 4, seed: int = 0) -> dict[str, Any]:
    from toolkit.envs.state import base_world
    from toolkit.envs.world import generate_world, world_hash

    tasks, turns = make_run(n_episodes, calls, per_turn, seed)
    start = time.perf_counter()
    together = rollout(tasks, turns, concurrency=n_episodes)
    concurrent_s = time.perf_counter() - start
    start = time.perf_counter()
    alone = [rollout([t], {t.id: turns[t.id]}, concurrency=1)[0] for t in tasks]
    replay_s = time.perf_counter() - start
    leaks = [t.task_id for t, a in zip(together, alone, strict=True) if fingerprint(t) != fingerprint(a)]
    ok_writes = sum(c.ok for t in together for c in t.calls)
    return {
        "episodes": n_episodes,
        "calls": sum(len(t.calls) for t in together),
        "ok_writes": ok_writes,
        "changed_records": sum(len(t.state_diff) for t in together),
        "distinct_final_states": len({json.dumps(t.state_diff, sort_keys=True) for t in together}),
        "stop_reasons": sorted({t.stop_reason for t in together}),
        "leaks": leaks,
        "base_world_intact": world_hash(base_world(SEED)) == world_hash(generate_world(SEED)),
        "concurrent_s": round(concurrent_s, 1),
        "replay_s": round(replay_s, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=256)
    ap.add_argument("--calls", type=int, default=12, help="write calls per episode")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    r = run(args.episodes, args.calls, seed=args.seed)
    print(json.dumps(r, indent=1))
    print(
        f"FIGURE isolation episodes={r['episodes']} concurrent write calls={r['calls']} (ok {r['ok_writes']}), "
        f"changed records={r['changed_records']}, cross-episode leaks={len(r['leaks'])}, "
        f"base world intact={r['base_world_intact']}"
    )
    return 0 if not r["leaks"] and r["base_world_intact"] else 1


if __name__ == "__main__":
    sys.exit(main())
