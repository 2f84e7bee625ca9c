# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/OWNER/mcp-rl-kit/blob/main/notebooks/01_mcp_environments.ipynb) · [executed copy with outputs](../docs/notebooks/01_mcp_environments.ipynb) (from `make docs-notebooks`)

# %%
# Colab only: fetch the kit and install it for this runtime (toolkit/colab.py decides what, by GPU,
# driver and Python). If it restarts the runtime (a library Colab had imported changed), run this cell
# again. Elsewhere (`make setup` did the install) this cell does nothing.
import os
import sys

if "google.colab" in sys.modules:
    import subprocess

    # The repository has no public address yet: set MCP_RL_REPO_URL to yours.
    REPO_URL = os.environ.get("MCP_RL_REPO_URL", "https://github.com/OWNER/mcp-rl-kit")
    if not os.path.isdir("/content/mcp-rl-kit"):
        subprocess.run(["git", "clone", "--depth", "1", REPO_URL, "/content/mcp-rl-kit"], check=True)
    sys.path.insert(0, "/content/mcp-rl-kit")
    from toolkit.colab import setup_runtime

    setup_runtime("/content/mcp-rl-kit")
    os.chdir("/content/mcp-rl-kit/notebooks")

# %% [markdown]
# # 01 · MCP environments: a seeded world behind real MCP servers
#
# Reinforcement learning on tool use needs environments a policy can act in thousands of times: every
# episode must start from a known state, must not see the writes of the episode next to it, and must be
# cheap to reset. It also needs the *real* interface: the kit's agent reaches its tools through the Model
# Context Protocol, exactly like a desktop assistant would, so what is trained is what gets deployed.
#
# Reference points. **PROVE** (IBM) ships 20 stateful MCP servers with 343 tools and session-scoped
# isolation, and grounds its task synthesis in live-sampled state. **Scale's MCP Tool Use** tasks span
# helpdesk (Zendesk-like), CRM, calendar, email, weather and finance servers, with *distractor* servers
# enabled beside the ones a task needs.
#
# This notebook builds the world, explores the servers as an MCP client, shows isolation and state diffs
# at work, and plugs in an external server. Everything runs on a CPU in seconds.

# %% tags=["parameters"]
# Parameters (papermill injects SMOKE=True in CI)
SMOKE = False
OUT_DIR = "../build/notebooks/01_mcp_environments"  # the server table and timings are saved here
SEED = 0  # world seed: same seed, same world
N_EPISODES = 64  # concurrent isolated episodes in the isolation demo
CALLS_PER_EPISODE = 20
TIMING_CALLS = 2000  # calls timed in the speed section

# %%
if SMOKE:
    N_EPISODES, CALLS_PER_EPISODE, TIMING_CALLS = 8, 5, 200
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import anyio
import pandas as pd

from toolkit.envs import open_episode
from toolkit.envs.external import ExternalServer
from toolkit.envs.registry import DOMAIN_SERVERS, server_names, tool_specs
from toolkit.envs.state import WorldState
from toolkit.envs.world import TODAY, generate_world, world_hash

ROOT = Path.cwd().parent if Path.cwd().name == "notebooks" else Path.cwd()
out = Path(OUT_DIR)
out.mkdir(parents=True, exist_ok=True)

# %% [markdown]
# ## 1. One coherent world
#
# `generate_world(seed)` builds a small business: staff (with last-login times), companies and their
# contacts, helpdesk tickets raised by those contacts and worked by support staff (tags, comments, status
# history, satisfaction), deals, orders of catalogue products, meetings, email threads, a file tree,
# stock quotes, weather by city and date, team chat. Entities reference each other by id, so one question
# can need several servers. Dates hang off a fixed "today", so a world never depends on the clock.

# %%
world = generate_world(SEED)
print(
    "today:",
    TODAY,
    "| world hash:",
    world_hash(world)[:16],
    "| same seed again:",
    world_hash(generate_world(SEED))[:16],
)
pd.DataFrame({"records": {name: len(coll) for name, coll in world.items()}}).T

# %%
# Follow one ticket across the world: requester -> company -> account manager.
ticket = world["tickets"]["t-1003"]
requester = world["customers"][ticket["requester_id"]]
company = world["companies"][requester["company_id"]]
manager = world["staff"][company["account_manager_id"]]
print(
    f"{ticket['id']} '{ticket['subject']}' ({ticket['status']}, {ticket['priority']}, tags {ticket['tags']})"
)
print(
    f"  raised by {requester['name']} ({requester['title']}) of {company['name']}, account manager {manager['name']}"
)
print(
    f"  status history: {[h['status'] for h in ticket['status_history']]}, satisfaction: {ticket['satisfaction']}"
)

# %% [markdown]
# ## 2. The server library
#
# Each server is a class whose tools are typed, documented methods: the MCP Python SDK turns the signature
# (with pydantic `Field` descriptions) into the input JSON Schema and the docstring into the description.
# Tools carry MCP annotations (`readOnlyHint`, `destructiveHint`, `idempotentHint`), long lists paginate
# (`limit` / `cursor`), and errors are MCP tool errors written for the model to recover from. When
# `bfcl-eval` is installed, BFCL's eight multi-turn environments appear here too, as MCP servers.

# %%
specs = tool_specs()
rows = []
for name in server_names():
    mine = [t for t in specs if t.server == name]
    rows.append(
        {
            "server": name,
            "tools": len(mine),
            "read-only": sum(bool(t.annotations.get("readOnlyHint")) for t in mine),
            "destructive": sum(bool(t.annotations.get("destructiveHint")) for t in mine),
        }
    )
table = pd.DataFrame(rows).set_index("server")
print(
    f"{len(DOMAIN_SERVERS)} domain servers, {table.loc[list(DOMAIN_SERVERS), 'tools'].sum()} domain tools;",
    f"{len(table)} servers and {len(specs)} tools in all",
)
table.to_csv(out / "servers.csv")
table

# %% [markdown]
# The first eleven servers are the kit's core (the `cpu`, `default` and `hard` task presets use only them,
# so their tasks never change when a server is added). Beside them sit fourteen of PROVE's domains (PROVE,
# arXiv 2606.03892, Table 2: 20 servers, 343 tools): banking, trading, payments, budget, marketplace,
# retail chain, food delivery, travel booking, maps, social media, IoT devices, vehicle, issue tracker and
# video meeting. Each adds its own collections to the same seeded world and points into the core: a bank
# account belongs to a CRM customer, a food order is placed by one, a trip is travelled by a staff member,
# an engineering issue may link helpdesk tickets.

# %%
core = ["helpdesk", "crm", "directory", "calendar", "email", "filesystem", "shop", "finance", "weather",
        "chat", "calculator"]  # fmt: skip
prove_domains = [n for n in DOMAIN_SERVERS if n not in core]
print(f"core: {len(core)} servers, {table.loc[core, 'tools'].sum()} tools;",
      f"PROVE domains: {len(prove_domains)} servers, {table.loc[prove_domains, 'tools'].sum()} tools")  # fmt: skip
w = world  # the seed-SEED world built in section 1
account = next(iter(w["bank_accounts"].values()))
owner = w["customers"][account["customer_id"]]
trip = next(iter(w["travel_trips"].values()))
print(f"bank account {account['id']} belongs to CRM customer {owner['id']} ({owner['name']})")
print(
    f"trip {trip['id']} {trip['origin']} -> {trip['destination']} is travelled by {w['staff'][trip['traveler_id']]['name']}"
)

# %%
spec = next(t for t in specs if t.name == "search_tickets")
print(spec.description)
print(json.dumps(spec.input_schema["properties"]["status"], indent=1))
print(spec.annotations)


# %% [markdown]
# ## 3. Talking to the servers as an MCP client
#
# `open_episode(...)` gives one isolated episode: a fresh world state and an MCP client session to each
# enabled server through the SDK's in-process transport (real requests and results, no sockets). With a
# task, only the task's tools are exposed. The agent loop only ever sees this `Toolbox`:
# `list_tools`, `call_tool`, `state_diff`. Tool problems never raise: they come back as
# `ToolResult(ok=False, text=...)` for the model to read.

# %%
async with open_episode(servers=["helpdesk", "crm", "calculator"], seed=SEED) as tb:
    print(len(await tb.list_tools()), "tools")
    r = await tb.call_tool("search_tickets", {"status": "open", "priority": "high", "limit": 3})
    print("search_tickets ->", r.ok, r.text[:300], "...")
    r = await tb.call_tool("view_ticket", {"ticket_id": "t-10003"})
    print("\nnot found     ->", r.ok, r.text)
    r = await tb.call_tool("set_ticket_priority", {"ticket_id": "t-1003", "priority": "sky-high"})
    print("\nbad argument  ->", r.ok, r.text[:160], "...")
    r = await tb.call_tool("set_ticket_status", {"ticket_id": "t-1001", "status": "open"})
    print("\nconflict      ->", r.ok, r.text)
    r = await tb.call_tool("calculate", {"expression": "(1200 * 0.15) + 99"})
    print("\ncalculator    ->", r.structured)


# %% [markdown]
# ## 4. Isolation and state diffs
#
# A state is copy-on-write over a shared base world: opening an episode copies nothing, the first write to
# a collection copies that collection's index, the first edit of a record copies that record. `state_diff`
# lists every record the episode changed (`"collection/key": {"before", "after"}`), which is what
# state-based rewards check (`{"type": "state", ...}` rubric items).

# %%
async with open_episode(seed=SEED) as a, open_episode(seed=SEED) as b:
    await a.call_tool("assign_ticket", {"ticket_id": "t-1003", "assignee_id": "st-001"})
    await a.call_tool(
        "add_ticket_comment", {"ticket_id": "t-1003", "body": "Reset link sent.", "public": True}
    )
    await a.call_tool("delete_email", {"email_id": "m-002"})
    seen_by_b = (await b.call_tool("view_ticket", {"ticket_id": "t-1003"})).structured
    print(
        "episode b still sees assignee",
        seen_by_b["assignee_id"],
        "and",
        len(seen_by_b["comments"]),
        "comments",
    )
    for key, change in a.state_diff().items():
        before, after = change["before"], change["after"]
        changed = sorted(k for k in (after or {}) if (before or {}).get(k) != after.get(k))
        print(f"  {key}: fields changed {changed}")
    print("episode b diff:", b.state_diff())
    snapshot = a.state.snapshot()  # a plain dict: start another episode from it

async with open_episode(servers=["helpdesk"], state=snapshot) as c:
    print(
        "episode from the snapshot sees assignee",
        (await c.call_tool("view_ticket", {"ticket_id": "t-1003"})).structured["assignee_id"],
    )


# %% [markdown]
# Many episodes at once: each does random writes concurrently with the others, then we replay its
# calls alone on a fresh world. Every final state must equal its own sequential replay.


# %%
def random_calls(rng, n):
    pool = [
        lambda: (
            "add_ticket_tags",
            {"ticket_id": f"t-{rng.randint(1001, 1040)}", "tags": [rng.choice("abc")]},
        ),
        lambda: (
            "set_ticket_status",
            {"ticket_id": f"t-{rng.randint(1001, 1040)}", "status": rng.choice(["pending", "solved"])},
        ),
        lambda: ("buy_stock", {"symbol": rng.choice(["ACMR", "FJDA"]), "shares": rng.randint(1, 20)}),
        lambda: (
            "write_file",
            {"path": f"/shared/n{rng.randint(0, 2)}.txt", "content": str(rng.random()), "overwrite": True},
        ),
    ]
    return [rng.choice(pool)() for _ in range(n)]


async def play(calls, interleave):
    async with open_episode(seed=SEED) as tb:
        for name, args in calls:
            await tb.call_tool(name, args)
            if interleave:
                await anyio.sleep(0)
        return world_hash(tb.state.snapshot())


plans = [random_calls(random.Random(i), CALLS_PER_EPISODE) for i in range(N_EPISODES)]
hashes = {}


async def run(i):
    hashes[i] = await play(plans[i], interleave=True)


t = time.perf_counter()
async with anyio.create_task_group() as tg:
    for i in range(N_EPISODES):
        tg.start_soon(run, i)
elapsed = time.perf_counter() - t
same = [hashes[i] == await play(plans[i], interleave=False) for i in range(N_EPISODES)]
print(
    f"{N_EPISODES} concurrent episodes, {N_EPISODES * CALLS_PER_EPISODE} calls in {elapsed:.2f} s;",
    f"{sum(same)}/{N_EPISODES} equal their sequential replay; {len(set(hashes.values()))} distinct final worlds",
)


# %% [markdown]
# ## 5. The filesystem sandbox
#
# The `filesystem` server is a virtual file tree stored in the world (nothing touches the disk). Paths are
# resolved against its root; `..` above the root, links pointing outside it (the world plants one,
# `/shared/escape`) and link loops are refused with an error the model can read.

# %%
async with open_episode(servers=["filesystem"], seed=SEED) as tb:
    for path in [
        "/docs/README.md",
        "/shared/policies/sla.md",
        "../../etc/passwd",
        "/docs/../../etc/passwd",
        "/shared/escape/passwd",
        "/etc/passwd",
    ]:
        r = await tb.call_tool("read_file", {"path": path})
        print(f"{path:<26} ok={r.ok!s:<5} {(r.structured or {}).get('content', r.text)[:70]!r}")
    print("state diff after all that:", tb.state_diff())


# %% [markdown]
# ## 6. External MCP servers
#
# Any MCP server plugs into the same episode: a stdio command or a streamable-HTTP URL. Here the kit's own
# servers run as a separate process (`python -m toolkit.envs.serve`, the same as `mcp-rl serve`), then the
# reference npm server `@modelcontextprotocol/server-memory` (a knowledge graph) if Node and the package
# are installed (`make setup` puts it in .cache/npm). Each episode starts its own process, so a crashed server is simply restarted by
# the next episode, and every call has a timeout.

# %%
weather_proc = ExternalServer(
    "weather-stdio",
    command=[sys.executable, "-m", "toolkit.envs.serve", "weather", "--seed", str(SEED)],
    cwd=str(ROOT),
)
external = [weather_proc]
memory_js = ROOT / ".cache/npm/node_modules/@modelcontextprotocol/server-memory/dist/index.js"
if shutil.which("node") and memory_js.exists():
    external.append(
        ExternalServer(
            "memory",
            command=["node", str(memory_js)],
            env={"MEMORY_FILE_PATH": str(Path(tempfile.mkdtemp()) / "memory.jsonl")},
        )
    )
else:
    print(
        "npm server-memory not installed: `make setup` installs it into .cache/npm when node/npm are available"
    )

async with open_episode(servers=["crm"], external=external, timeout=30) as tb:
    by_server = pd.Series([t.server for t in await tb.list_tools()]).value_counts()
    print(by_server.to_dict())
    print((await tb.call_tool("get_forecast", {"city": "Oslo", "days": 2})).text[:200])
    if "memory" in by_server:
        await tb.call_tool(
            "create_entities",
            {
                "entities": [
                    {"name": "Acme Robotics", "entityType": "company", "observations": ["renewal due in Q1"]}
                ]
            },
        )
        print((await tb.call_tool("search_nodes", {"query": "Acme"})).text[:200])


# %% [markdown]
# ## 7. What a call costs
#
# The same read tool called directly in Python (the floor), through the in-process MCP client (the kit's
# fast path: the SDK's direct dispatcher, no JSON-RPC framing), and through in-memory JSON-RPC streams.
# The full benchmark, with stdio and 64 concurrent episodes, is `python -m bench.bench_envs`.

# %%
from toolkit.envs.servers.helpdesk import Helpdesk

direct = Helpdesk(WorldState.from_seed(SEED))
t = time.perf_counter()
for _ in range(TIMING_CALLS):
    direct.view_ticket("t-1007")
timings = {"direct python": (time.perf_counter() - t) / TIMING_CALLS}
for transport in ("inprocess", "jsonrpc"):
    async with open_episode(servers=["helpdesk"], transport=transport) as tb:
        await tb.call_tool("view_ticket", {"ticket_id": "t-1007"})
        t = time.perf_counter()
        for _ in range(TIMING_CALLS):
            await tb.call_tool("view_ticket", {"ticket_id": "t-1007"})
        timings[f"MCP {transport}"] = (time.perf_counter() - t) / TIMING_CALLS
t = time.perf_counter()
for _ in range(1000):
    WorldState.from_seed(SEED)
timings["reset (new episode state)"] = (time.perf_counter() - t) / 1000
(out / "timings.json").write_text(json.dumps({k: v * 1e6 for k, v in timings.items()}, indent=1))
pd.DataFrame({"microseconds": {k: round(v * 1e6, 1) for k, v in timings.items()}})

# %% [markdown]
# The protocol costs two to three orders of magnitude over a bare Python call (these are wall-clock
# figures: on a busy machine they grow; `bench.bench_envs` also reports CPU time). Even so a call stays
# well under a millisecond on an idle core, while a policy needs tens of milliseconds per generated token
# on a CPU: the tools are not the bottleneck. Resetting is nearly free, so GRPO can give every sample of
# every group its own world.
#
# Next: notebook 02 synthesises tasks with rubrics from this world.
