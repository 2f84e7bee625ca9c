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
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/OWNER/mcp-rl-kit/blob/main/notebooks/02_rubric_data.ipynb) · [executed copy with outputs](../docs/notebooks/02_rubric_data.ipynb) (from `make docs-notebooks`)

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
# # 02 · Tasks with rubrics, grounded in live state
#
# GRPO needs prompts, and a reward that can tell a good trajectory from a slightly worse one. Scale's MCP
# Tool Use dataset pairs each of its 3,000 prompts with many task-specific rubric items (Tool Selection,
# Query Construction, Multi-Step Planning, Answer Correctness; essential or optional), and the reward is
# the fraction of essential items passed. PROVE synthesises its tasks from a **tool dependency graph**,
# names only entities sampled from the **live server state**, adds perturbations (3-8 distractor tools,
# missing information, irrelevant requests), **replays** every gold trajectory on a fresh environment and
# drops what fails.
#
# This kit does both, and goes one step further than schema-only generators: every task carries a gold
# trajectory and **answer values computed from the world state**, and each rubric item has a
# machine-checkable spec, so the programmatic grader of notebook 03 can score it without a judge.
#
# The pipeline: template -> entities sampled from the world -> prompt (several wordings) -> gold calls +
# answers + rubric -> distractor tools -> replay through MCP on a fresh world (answers recomputed from the
# tool outputs must agree) -> near-duplicate removal -> train / held-out eval split.

# %% tags=["parameters"]
# Parameters (papermill injects SMOKE=True and OUT_DIR in CI)
SMOKE = False
OUT_DIR = "../build/notebooks/02_rubric_data"
N_TRAIN = 400  # train tasks to generate here (the sample shipped in data/tasks has 2,000)
N_EVAL = 60  # held-out eval tasks
SEED = 0
PRESET = "default"  # "cpu": 1-2 calls and few distractors, for the CPU training demo; "hard": long chains
GOLD_CHECK = 40  # tasks replayed by the gold policy and graded by the rubric reward

# %%
if SMOKE:
    N_TRAIN, N_EVAL, GOLD_CHECK = 30, 8, 10
from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from toolkit.synth import report
from toolkit.synth.library import library_graph

out = Path(OUT_DIR)
out.mkdir(parents=True, exist_ok=True)

# %% [markdown]
# ## 1. The tool dependency graph
#
# An edge `producer -> consumer` says the consumer takes an argument the producer returns. The edges come
# from four sources, kept on each edge: **declared** in the task templates' gold steps, an **output
# schema** property with the input's name, **tool names** (`search_contacts` produces a `contact_id`), and
# **state**: foreign keys found in the world itself (a ticket's `requester_id` is a customer key, so the
# tool that reads a ticket feeds the tool that takes a `contact_id`). The domain servers share one world,
# so edges cross servers; BFCL's servers keep their own state (`mcp-rl synth graph --bfcl`).

# %%
graph = library_graph()
print(graph.format_text(server="helpdesk"))

# %%
fig, axes = plt.subplots(1, 2, figsize=(18, 8), gridspec_kw={"width_ratios": [1, 1.4]})
report.draw_server_graph(graph, ax=axes[0])
report.draw_tool_graph(graph, ["helpdesk", "crm", "directory"], ax=axes[1])
plt.show()

# %% [markdown]
# ## 2. Sampling one task
#
# A template samples entities that exist (a ticket, its requester, that customer's company...), words the
# request in one of several phrasings, and emits the gold calls with their dependencies, the answer values
# read from the world, and the rubric. Here a foreign-key walk: each call needs the id the previous one
# returned. The layout follows the sample task in Scale's write-up.

# %%
task = report.sample_task("fk_chain", seed=3)
display(Markdown(report.format_task_markdown(task)))

# %%
# A write task is judged by the state change it must cause, a clarification task by asking back.
for template_id in ("crm_update_contact", "clarify_missing"):
    display(Markdown(report.format_task_markdown(report.sample_task(template_id, seed=1))))

# %% [markdown]
# ### A long task, as long as Scale's
# Scale's sample task takes 14 tool calls across a helpdesk and customer data and is graded by 47 rubric
# items. The `long` preset (`mcp-rl synth --preset long`) writes numbered multi-part requests of that
# kind on the core servers: a list read page by page with its cursor, date windows, id hops across
# servers, a closing write judged by the state change, and two whole servers enabled that the task does
# not need. Every one is replayed like the others, and the gold policy gets full marks.

# %%
long_task = report.sample_task("long_account_review", seed=0)
needed = long_task.metadata.get("needed_servers", long_task.servers)
print(f"{len(long_task.gold)} gold calls over {len(needed)} servers {sorted(needed)} (enabled: {len(long_task.servers)});",
      f"{len(long_task.rubric)} rubric items in {sorted({i.category for i in long_task.rubric})}")  # fmt: skip
display(Markdown(report.format_task_markdown(long_task)))

# %% [markdown]
# ## 3. Generate, replay, deduplicate, split
#
# `generate` draws templates by kind (lookups, aggregations, writes, multi-part prompts, foreign-key
# chains, clarification, abstention), forces a share of short (1-2 call) tasks, adds distractor tools,
# then replays every gold trajectory through MCP on a fresh world. A task survives only when every call
# succeeds, the answers recomputed from the replayed tool outputs equal the ones computed from the world,
# the expected state changes appear, and read-only tasks change nothing.
#
# The eval split uses worlds of its own **and** held-out elements: templates that train never sees,
# held-out phrasings, and held-out combinations of servers. The same seed gives byte-identical files
# (`mcp-rl synth --n N --seed S --out DIR`).

# %%
from toolkit.cli.synth import format_summary
from toolkit.synth.config import make_config
from toolkit.synth.generate import generate

config = make_config(PRESET, n_train=N_TRAIN, n_eval=N_EVAL, seed=SEED)
result = generate(config)
print(format_summary(result.summary, result.timings))

# %%
report.plot_summary(result.summary, "train")
plt.show()

# %% [markdown]
# Replay is what keeps the data honest. Corrupt one expected answer and the validator notices: the
# value recomputed from the MCP tool outputs no longer matches.

# %%
import copy

from toolkit.envs import open_episode
from toolkit.synth.replay import validate_tasks_sync

broken = copy.deepcopy(next(t for t in result.train if t.metadata["kind"] == "aggregate"))
key = next(iter(broken.answers))
broken.answers[key] = "not the answer"
kept, drops, details = validate_tasks_sync(
    [broken], open_episode, recomputes=[lambda results: {key: "recomputed"}]
)
print(kept, dict(drops), details)

# %% [markdown]
# ## 4. The gold self-check
#
# The `gold` policy replays each task's gold calls through the same agent loop that training uses and
# answers with the expected values; the programmatic rubric reward must give it full marks. This is the
# fastest end-to-end check that environments, synthesis, loop and rewards agree.

# %%
from toolkit.agent.loop import rollout
from toolkit.agent.policies import make_policy
from toolkit.rewards.rubric import RubricReward

sample = (result.train + result.eval)[:GOLD_CHECK]
scores = [r.score for r in RubricReward().batch(sample, rollout(sample, make_policy("gold")))]
print(f"gold policy: mean rubric reward {sum(scores) / len(scores):.3f} over {len(scores)} tasks")
assert min(scores) == 1.0

# %% [markdown]
# BFCL-style tasks come from BFCL v4's own multi-turn entries instead of templates:
# `toolkit.synth.bfcl_tasks.load_bfcl_tasks(category)` turns each entry into the same `Task` record (later
# user turns in `followups`, gold calls with their turn), split by scenario so training never sees a
# scenario held out for evaluation. They run on the BFCL MCP servers through the same loop (notebook 05
# evaluates on them; loading bfcl-eval's data takes a few seconds, so this notebook only points at it).

# %% [markdown]
# ## 5. Export
#
# JSONL (one `Task` per line, the schema in `toolkit/records.py`) and a Hugging Face `datasets.Dataset`
# with a conversational `prompt` column and the whole task as a JSON string in `task`, which is what the
# GRPO trainer of notebook 04 consumes.

# %%
from toolkit.records import write_jsonl
from toolkit.synth.dataset import load_tasks_dataset

write_jsonl(out / "train.jsonl", result.train)
write_jsonl(out / "eval.jsonl", result.eval)
dataset = load_tasks_dataset(out / "train.jsonl")
print(dataset)
print(dataset[0]["prompt"])

# %% [markdown]
# ## 6. Your own MCP server
#
# Everything above is for the kit's own servers. For a server of yours, `mcp-rl synth-own --server
# NAME=COMMAND` (or `NAME=URL`) does the same without templates (docs/own-server.md): it lists the tools
# and sorts them into reads and writes (annotations, then names), calls the reads breadth first with
# arguments from their schemas and from values seen in earlier outputs, each call on two fresh servers at
# once (a value that differs between them, such as a timestamp, is never used), and makes lookups, chains,
# aggregates, writes checked by a read afterwards, and abstentions from what came back. Every task is
# replayed on fresh servers before it is kept, and records how to start the server, so `open_episode(task)`
# (and `rollout`, `train`, `eval`) start it per episode in a fresh copy of the seed folder.
#
# Here: npm `@modelcontextprotocol/server-memory` (which the kit did not write) on a seeded memory file.

# %%
from toolkit.synth import demo_servers
from toolkit.synth.own_server import synthesize

why_not = demo_servers.available("memory")
if why_not:
    print(f"server-memory is not available here ({why_not}); `make setup` installs it")
else:
    if not (out / "seed-memory").exists():
        demo_servers.seed_memory(out / "seed-memory")
    recipe = demo_servers.recipe("memory", (out / "seed-memory").resolve())
    own = synthesize([recipe], n=12 if SMOKE else 60, n_eval=3 if SMOKE else 10, seed=SEED,
                     max_seconds=20 if SMOKE else 120, log=print)  # fmt: skip
    rep = own.summary["servers"]["memory"]
    if rep.get("failed"):
        raise RuntimeError(f"server-memory: {rep['failed']}")
    print("tools:", rep["explored"]["why"])
    print("made:", rep["made"], "kept:", rep["kept_by_kind"], "dropped:", rep["dropped"])
    for t in own.train[:6]:
        print(f"[{t.metadata['kind']}] {t.prompt}\n    gold: {[(g.name, g.arguments) for g in t.gold]}"
              f"\n    answers: {t.answers}  rubric items: {len(t.rubric)}")  # fmt: skip

# %% [markdown]
# A write task's rubric has a `state` item on a *probe*: a read the episode makes when it opens and
# after every write. The gold policy must get full marks on every kind, writes included.

# %%
if not why_not:
    writes = [t for t in own.train + own.eval if t.metadata["kind"] == "write"]
    if writes:
        print(writes[0].prompt, "->", [i.check for i in writes[0].rubric if i.check["type"] == "state"][0])
    own_tasks = own.train + own.eval
    own_scores = [r.score for r in RubricReward().batch(own_tasks, rollout(own_tasks, make_policy("gold")))]
    print(f"own server, gold policy: mean rubric reward {sum(own_scores) / len(own_scores):.3f} "
          f"over {len(own_scores)} tasks")  # fmt: skip
    assert min(own_scores) == 1.0
