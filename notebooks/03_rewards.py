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
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/OWNER/mcp-rl-kit/blob/main/notebooks/03_rewards.ipynb) · [executed copy with outputs](../docs/notebooks/03_rewards.ipynb) (from `make docs-notebooks`)

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
# # 03 · Rewards: scoring tool-use trajectories
#
# GRPO learns from *differences* between the samples of one prompt: each sample's advantage is its reward
# minus the group mean. A reward that gives every sample of a group the same number teaches nothing on
# that prompt. This notebook puts the kit's rewards side by side on the same trajectories and measures
# exactly that.
#
# The rewards (all pure functions `(task, trajectory) -> RewardResult(score, breakdown, details)`):
#
# | name | what it measures | range | source |
# |---|---|---|---|
# | `rubric` | fraction of the task's *essential* rubric items passed (programmatic grader) | [0, 1] | Scale, MCP Tool Use |
# | `rubric-judge` | the same, items graded by an LLM judge from their text | [0, 1] | Scale (Claude Sonnet 4.5 as judge) |
# | `atlas` | MCP-Atlas claim coverage: fulfilled 1 / partial 0.5 / not 0, with pass@0.50 and pass@0.75 | [0, 1] | MCP Atlas |
# | `prove` | as published: 0.5 validity + 0.5 coverage (order as a factor) + 0.15 efficiency + 0.2 tool-name precision + 0.1 argument match; abstention 1 or 0 | (-inf, 1.3] | PROVE, arXiv 2606.03892 |
# | `prove-kit` | the kit's normalised PROVE variant (the cpu-demo recipe's; docs/prove.md) | (-inf, 1] | kit |
# | `graduated` | atomic validity (name, then keys and types, then values) + orchestration consistency | [0, 1] | ToolOrchestrationReward |
# | `toolrl` | format {0, 1} + correctness [-3, 3] | [-3, 4] | ToolRL |
# | `bfcl` | BFCL's official multi-turn state + response check (BFCL tasks only) | {0, 1} | Bespoke Labs recipe |
# | `binary` | 1 when every essential rubric item passed, else 0 (`binarize(rubric)`) | {0, 1} | task completion |
#
# Scale's write-up puts the point plainly: a trajectory that completes 3 of 5 essential steps earns 0.6,
# not 0.0, and without that density most training batches would carry no gradient.

# %% tags=["parameters"]
# Parameters (papermill injects SMOKE=True and OUT_DIR in CI)
SMOKE = False
OUT_DIR = "../build/notebooks/03_rewards"
N_TASKS = 24  # tasks for the side-by-side table and the groups
GROUP_SIZE = 8  # samples per prompt (GRPO num_generations)
# Simulated policies: (min, max) perturbations per sample; "weak" never reproduces the gold exactly
POLICIES = {"weak": (2, 4), "medium": (1, 3), "strong": (0, 1)}
EXECUTE = True  # re-execute perturbed calls in real episodes (synthesized tasks only)
TASKS_DIR = None  # folder of tasks JSONL (default: the shipped data/tasks, else the example tasks)
ROLLOUTS = None  # a trajectories JSONL from `mcp-rl rollout` to use instead of perturbations
JUDGE_NOISE = 0.1  # share of verdicts the stand-in judge flips (ignored with a real judge)
LOCAL_JUDGE = None  # e.g. "smollm2-135m": serve a transformers model in-process as the judge (slow on CPU)
SEED = 0

# %%
if SMOKE:
    N_TASKS, GROUP_SIZE = 6, 4
from pathlib import Path

import pandas as pd

from toolkit.rewards import as_trl_reward_func, get_reward
from toolkit.study import comparisons
from toolkit.study.calibration import calibration_report

out_dir = Path(OUT_DIR)
out_dir.mkdir(parents=True, exist_ok=True)
pd.set_option("display.precision", 3)
tasks, source = comparisons.load_tasks(TASKS_DIR, limit=N_TASKS, seed=SEED)
execute = EXECUTE and source != "examples"
print(f"{len(tasks)} tasks from {source}; gold chain lengths: {sorted(len(t.gold) for t in tasks)}")

# %% [markdown]
# ## The gold trajectory gets full marks from every reward
#
# `gold` replays each task's gold calls in a fresh episode (real tool results, real state diff) and
# answers with the synthesizer's reference answer. Every reward must give it its maximum: this is the
# cheapest end-to-end check that environments, synthesis and rewards agree.

# %%
golds = comparisons.gold_trajectories(tasks, source)
rewards = comparisons.default_rewards()
full = pd.DataFrame(
    {
        name: [r(t, g).score / r.range[1] for t, g in zip(tasks, golds, strict=True)]
        for name, r in rewards.items()
    },
    index=[t.id for t in tasks],
)
print("share of gold trajectories at full marks:")
(full >= 1 - 1e-9).mean().to_frame("full marks").T

# %% [markdown]
# ## Side by side: five ways to do a task
#
# Each scenario edits the gold trajectory: *partial* keeps the first half of the calls and answers
# wrongly, *wrong order* reverses the calls (dependent steps now come before what they depend on),
# *over budget* makes every call three times, *hallucinated tool* adds a call to a tool that does not
# exist. Scores are divided by each reward's maximum (ToolRL by 4) so the columns compare.

# %%
table = comparisons.scenario_table(tasks, golds, rewards, execute=execute)
table

# %% [markdown]
# Read the columns as different teachers. The rubric forgives repeated calls and (unless an
# ordering item exists) the order; PROVE charges calls over the budget `B = n + ceil(n/2)` and
# dependency-order mistakes; the graduated reward cares about order and per-call correctness but not
# repetition; ToolRL compares call multisets, so order is invisible to it. None is "right": they encode
# what you want the policy to learn, and `combine([(r1, w1), (r2, w2)])` mixes them.
#
# One trajectory, every component (the breakdowns are what TRL logs per reward function):

# %%
from toolkit.study.perturb import scenario

task, gold = next(
    ((t, g) for t, g in zip(tasks, golds, strict=True) if len(t.gold) >= 2), (tasks[0], golds[0])
)
wrong = scenario(task, gold, "wrong order")
print(task.prompt)
print("gold calls:", [g.name for g in task.gold], "| wrong order:", [c.name for c in wrong.calls])
pd.DataFrame({name: pd.Series(r(task, wrong).breakdown) for name, r in rewards.items() if name != "binary"}).T

# %% [markdown]
# ## Judge vs. program: calibration
#
# The LLM judge reads each rubric item's *text*; the programmatic grader runs its *check spec*. Where both
# exist, their agreement (accuracy and Cohen's kappa, overall and per rubric category) says how far the
# judge can be trusted on items that only a judge can grade. Set `MCP_RL_JUDGE_BASE_URL`,
# `MCP_RL_JUDGE_MODEL` (and the key's variable name in `MCP_RL_JUDGE_API_KEY_ENV`) to use a real judge,
# e.g. a vLLM server, or set `LOCAL_JUDGE` to serve a transformers model in-process (the embedded
# SmolLM2-135M is far too small to judge: expect mostly ungraded items). **Without either, this cell uses the local stand-in judge: a deterministic keyword
# heuristic behind the same HTTP API, not a language model. Its numbers exercise the machinery and say
# nothing about any real judge.**

# %%
lo, hi = POLICIES["medium"]
groups = comparisons.sample_groups(
    tasks, golds, GROUP_SIZE, seed=SEED, execute=execute, rollouts=ROLLOUTS, min_edits=lo, max_edits=hi
)
calib_tasks = [t for t, g in groups for _ in g][: 4 * len(groups)]
calib_trajs = [tr for _, g in groups for tr in g][: 4 * len(groups)]
grader, label, server = comparisons.judge_grader(noise=JUDGE_NOISE, local_model=LOCAL_JUDGE)
try:
    report = calibration_report(calib_tasks, calib_trajs, grader)
finally:
    if server is not None:
        server.__exit__(None, None, None)
print(
    f"judge: {label} | {len(calib_trajs)} trajectories | ungraded: {report['ungraded']} | requests: {dict(grader.stats)}"
)
comparisons.calibration_frames(report)

# %% [markdown]
# ## Zero-variance groups: why dense rewards give GRPO something to learn from
#
# For each task, a group of samples (rollouts from `mcp-rl rollout` when `ROLLOUTS` is set; otherwise
# perturbations of the gold trajectory: dropped, swapped, repeated and corrupted calls, malformed
# arguments, unknown and distractor tools, wrong or empty answers). A group whose samples all score the
# same has zero advantage everywhere: no gradient from that prompt. The binary completion reward leaves
# many such groups when the policy is weak (no sample completes the whole task, all score 0) and again
# when it is strong (all complete it, all score 1); dense rewards still separate partly-right samples
# from wrong ones. Three simulated policy strengths below (`POLICIES`), or your rollouts (`ROLLOUTS`).

# %%
if ROLLOUTS:
    zv = comparisons.zero_variance_table(groups, rewards)[["zero_variance_share"]].rename(
        columns={"zero_variance_share": "rollouts"}
    )
else:
    zv, _ = comparisons.zero_variance_by_policy(
        tasks, golds, rewards, GROUP_SIZE, POLICIES, seed=SEED, execute=execute
    )
ax = comparisons.plot_zero_variance(zv)
ax.figure.tight_layout()
ax.figure.savefig(out_dir / "zero_variance.png", dpi=120)
zv

# %% [markdown]
# ## Using a reward in training
#
# `as_trl_reward_func` turns any reward into a TRL reward function. The kit's GRPO `rollout_func` returns
# each sample's `trajectory` as an extra field and the dataset carries a `task` column; TRL passes both to
# reward functions as keyword arguments (see `trl/trainer/grpo_trainer.py`). An unscorable sample (say,
# every judge reply failed) returns `None`, which TRL leaves out of the group baseline.

# %%
fn = as_trl_reward_func(get_reward("prove"))
sample = groups[0]
print(
    fn.__name__,
    fn(
        prompts=[None] * len(sample[1]),
        completions=[None] * len(sample[1]),
        task=[sample[0].to_dict()] * len(sample[1]),
        trajectory=[tr.to_dict() for tr in sample[1]],
    ),
)
