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
# [![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/OWNER/mcp-rl-kit/blob/main/notebooks/05_results.ipynb) · [executed copy with outputs](../docs/notebooks/05_results.ipynb) (from `make docs-notebooks`)

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
# # 05 · Results: what GRPO added to the warm start, with confidence intervals
#
# Notebook 04 trained a policy in two stages: an SFT warm start, then GRPO. This notebook evaluates **that
# run**: its GRPO adapter ("after") against its own SFT-only warm start ("before"), on the same held-out
# tasks, so every difference is what GRPO added, and nothing else changed (same base model, same tasks, same
# greedy decoding). Then the same two models on BFCL, and the kit's numbers beside the published ones.
#
# - **kit-eval**: the run's held-out synthesized tasks (held-out templates and server combinations). Scored
#   like Scale's MCP Atlas evaluation: each task's rubric score is the fraction of its essential rubric items
#   passed; the **coverage rate** is the mean of that score over tasks, and the **pass rate at 0.50 / 0.75**
#   is the share of tasks whose score reaches the threshold. MCP-Atlas claim scoring (partial credit 0.5) is
#   reported beside it as `atlas_coverage`.
# - **bfcl-base** (and optionally miss-func / miss-param / long-context): BFCL v4 multi-turn, run through the
#   kit's MCP servers by the same agent loop, scored by BFCL's own checker (state + response check). A task
#   is right or wrong; **accuracy** is the share right.
#
# Why confidence intervals: a few dozen tasks give noisy rates. Every number here comes with a 95% bootstrap
# interval (resampling tasks), and before/after differences use a **paired** bootstrap on the same tasks,
# which cancels out per-task difficulty. A difference whose interval excludes zero is marked `outside_ci`.
#
# Also measured, because the Scale write-up saw them change with training: tool calls per task, the tool
# failure rate, and the **finish rate** (episodes ended by an explicit `finish` call rather than the
# iteration cap).

# %% [markdown]
# ## Parameters
#
# `TRAIN_RUN = None` takes notebook 04's run from beside this notebook's output folder (`make demo` runs
# 04, then 05). Any `mcp-rl train --out DIR` folder works too, e.g. the full CPU proof,
# `TRAIN_RUN = "../runs/cpu-demo"` after `make reproduce-cpu`. `SMOKE = True` (what CI injects) keeps the
# budgets tiny: two tasks per suite and short generations, on whatever (tiny) model 04 trained in smoke mode.

# %% tags=["parameters"]
SMOKE = False
OUT_DIR = "../build/notebooks/05_results"
TRAIN_RUN = None  # a `mcp-rl train --out DIR` folder; None: notebook 04's run (../04_grpo_training/run)
N_EVAL = (
    None  # held-out kit tasks when the run has no evaluation of its own (None: all of its held-out tasks)
)
BFCL_SUITES = ["bfcl-base"]  # add "bfcl-miss-func", "bfcl-miss-param", "bfcl-long-context"
BFCL_LIMIT = 3  # BFCL tasks per suite: a BFCL prompt is ~4-5k tokens per generation on a CPU
LOOP_CONFIG = {"max_turns": 3, "max_new_tokens": 96}  # agent-loop settings for BFCL (RolloutConfig fields)
SEED = 0
PROOF_RECORD = "../docs/cpu-proof/run13"  # a kept CPU proof run (summary, metrics, figures): run 13
CURVE_RECORD = "../docs/cpu-proof/run16"  # the same recipe to GRPO step 70 on a lent H100: the long curve

# %%
import json
from pathlib import Path

import pandas as pd
from IPython.display import HTML, Image, display

from toolkit.eval import plots, report
from toolkit.eval.suites import SMOKE_LOOP_CONFIG, run_eval
from toolkit.eval.viewer import viewer_for_dirs

if SMOKE:  # tiny budgets: a couple of tasks per suite, short generations
    N_EVAL, BFCL_LIMIT = 2, 2
    LOOP_CONFIG = {**LOOP_CONFIG, **SMOKE_LOOP_CONFIG}

out = Path(OUT_DIR)
out.mkdir(parents=True, exist_ok=True)
run = Path(TRAIN_RUN) if TRAIN_RUN else out.parent / "04_grpo_training" / "run"
if not (run / "adapter" / "adapter_config.json").exists():
    raise FileNotFoundError(
        f"no trained adapter in {run.resolve()}: run notebook 04 first (`make demo` runs both), "
        "or set TRAIN_RUN to a `mcp-rl train --out DIR` folder"
    )
recipe = json.loads((run / "recipe.json").read_text())
MODEL = recipe["model"]
warm_start = run / "sft" / "adapter"
sides = {  # label -> adapter folder (None: the base model itself, for a run without a warm start)
    "before": str(warm_start) if warm_start.exists() else None,
    "after": str(run / "adapter"),
}
print(f"run {run}: base model {MODEL}")
print(f"  before = {sides['before'] or 'the base model (the run had no warm start)'}")
print(f"  after  = {sides['after']} (GRPO)")

# %% [markdown]
# ## Held-out kit tasks
#
# With `evaluate=True` (notebook 04's default), the run already evaluated both models greedily on its
# held-out tasks (`eval/sft/` or `eval/base/`, and `eval/grpo/`: `toolkit.eval.run_eval` folders), so they
# are read, not recomputed. Otherwise both adapters are evaluated here on the run's held-out tasks. The same
# from a shell: `mcp-rl eval --policy MODEL --adapter DIR --suite kit-eval --tasks FILE --out DIR`.

# %%
before_dir = next(
    (d for d in (run / "eval" / "sft", run / "eval" / "base") if (d / "results.jsonl").exists()), None
)
after_dir = run / "eval" / "grpo"
if before_dir is not None and (after_dir / "results.jsonl").exists():
    kit = {"before": before_dir, "after": after_dir}
    print(f"the run's own held-out evaluation: {before_dir} vs {after_dir}")
else:
    eval_file = next(
        (str(p) for p in (run / "tasks" / "eval.jsonl", Path(recipe.get("eval_tasks") or "")) if p.is_file()),
        None,  # None: the held-out sample shipped with the kit
    )
    kit = {side: out / "kit-eval" / side for side in sides}
    kit_loop = {k: v for k, v in recipe.get("rollout", {}).items() if k != "first_turn_only"}  # the run's
    kit_loop.update(SMOKE_LOOP_CONFIG if SMOKE else {})
    for side, adapter in sides.items():
        run_eval(
            MODEL,
            "kit-eval",
            kit[side],
            adapter=adapter,
            limit=N_EVAL,
            seed=SEED,
            tasks_file=eval_file,
            loop_config=kit_loop,
            label=f"{side} ({'GRPO' if side == 'after' else 'warm start'})",
        )
runs = {"kit-eval": kit}
report.metrics_table([kit["before"], kit["after"]], report.HEADLINE)

# %% [markdown]
# ## BFCL multi-turn with the trained model
#
# The same two models on BFCL's multi-turn tasks, through the kit's MCP servers and BFCL's own checker. The
# run never trained on BFCL: this is transfer, and on a 135M model with a few GRPO steps, expect little.

# %%
for suite in BFCL_SUITES:
    runs[suite] = {side: out / suite / side for side in sides}
    for side, adapter in sides.items():
        run_eval(
            MODEL,
            suite,
            runs[suite][side],
            adapter=adapter,
            limit=BFCL_LIMIT,
            seed=SEED,
            loop_config=LOOP_CONFIG,
            label=side,
        )
report.metrics_table([d for s in BFCL_SUITES for d in runs[s].values()], report.HEADLINE)

# %% [markdown]
# ## Before vs after, paired
#
# One row per metric: the change on the same tasks, its 95% paired-bootstrap interval, and whether zero lies
# outside it. Read `n_pairs` first: the bootstrap needs a few dozen tasks to mean anything. With two tasks
# (smoke mode) that both change the same way, the interval collapses to a point and says nothing.

# %%
pd.concat(
    [report.paired_table(r["before"], r["after"]).assign(suite=suite) for suite, r in runs.items()],
    ignore_index=True,
)

# %% [markdown]
# With more than one BFCL suite, BFCL multi-turn **overall** accuracy pools the tasks of all
# categories (each category's accuracy is listed beside it).

# %%
if len(BFCL_SUITES) > 1:
    for side in ("before", "after"):
        display(report.combined_table([runs[s][side] for s in BFCL_SUITES]).assign(run=side))

# %% [markdown]
# ## Figures
#
# `mcp-rl plot --results DIR... --out DIR` draws the same figures from the output folders (PNG and SVG):
# bars with CIs, tool usage (Scale saw trained models call fewer, better-chosen tools), how episodes ended
# (finish rate), the run's training curves from its `metrics.jsonl`, and the published numbers.

# %%
fig_dir = out / "figures"
dirs = [d for r in runs.values() for d in (r["before"], r["after"])]
metrics_file = run / "metrics.jsonl"
plots.plot_all(dirs, fig_dir, metrics_file=metrics_file if metrics_file.exists() else None)
for name in ("before_after", "rubric_categories", "tool_usage", "finish_rate", "training_curves"):
    png = fig_dir / f"{name}.png"
    if png.exists():
        display(Image(filename=str(png)))

# %% [markdown]
# ## Against the published numbers
#
# What the three write-ups report (sources and quotes in `data/reference_results.json`):
#
# - Scale, MCP Atlas, Qwen2.5-14B with LoRA r=32 and a rubric reward: coverage 23.5% -> 30.4%,
#   pass@0.50 15.8% -> 31.9%, pass@0.75 7.7% -> 17.3%.
# - Bespoke Labs, a held-out half of 200 BFCL v3 multi-turn-base questions, Qwen2.5-7B-Instruct with a
#   binary BFCL reward: 55% -> 78%.
# - PROVE (arXiv 2606.03892, Table 3), BFCL multi-turn overall: Qwen3-4B 18.8 -> 29.0 (+10.2, the headline
#   gain), Qwen3-8B 26.0 -> 26.9, Qwen2.5-7B 13.1 -> 16.8, Granite-4.1-8B 33.4 -> 33.5; tau2-bench average
#   +3.6, +3.5, +6.8, +6.4 points.
#
# These are different models, benchmarks and budgets from a 135M model on a CPU: compare the *direction*
# and the *shape* (pass@0.75 gaining more, relatively, than coverage; finish rate rising), not the levels.

# %%
display(report.reference_table())
display(Image(filename=str(fig_dir / "reference.png")))

# %% [markdown]
# The kit's own claim, next to them: a CPU proof run kept in `docs/cpu-proof/` (notebook 04 shows its
# curves). Pass@0.75 gained by GRPO over the warm start on the dev set, and on each **test set** (held-out
# tasks from synth seeds no run was tuned on) the record has, with the paired 95% CI; then the dev-set
# learning curve. Run 13, kept here, has the dev set and the curve only: no run has been scored on the
# test sets yet (docs/cpu-proof/README.md).

# %%
from toolkit.train.pipeline import PRIMARY_METRIC

kept = Path(PROOF_RECORD) / "summary.json"
if kept.exists():
    kept = json.loads(kept.read_text())
    rows = {"dev (tuned on)": kept["comparison"]}
    rows.update({f"test, seed {seed}": t["comparison"] for seed, t in sorted(kept.get("test", {}).items())})
    display(
        pd.DataFrame(
            {
                name: {k: c[PRIMARY_METRIC][k] for k in ("before", "after", "diff", "ci_low", "ci_high")}
                for name, c in rows.items()
            }
        ).T
    )
    if kept.get("curve"):  # `mcp-rl train --curve`: the dev set after every kept GRPO checkpoint
        display(
            pd.DataFrame(
                {row["step"]: {k: row["metrics"][PRIMARY_METRIC][k] for k in ("after", "diff", "ci_low", "ci_high")}
                 for row in kept["curve"]}
            ).T.rename_axis("GRPO step")
        )  # fmt: skip
else:
    print(f"no kept proof record at {Path(PROOF_RECORD).resolve()}")

# %% [markdown]
# How long the recipe needs: run 16 ran the same frozen recipe on a lent H100 (bf16, its own warm start,
# the same 200 dev tasks) to GRPO step 70, a checkpoint evaluated every 10 steps. Flat to step 30 (the
# CPU hour holds 26 steps), a gain outside the CI from step 50, level after.

# %%
long_curve = Path(CURVE_RECORD) / "summary.json"
if long_curve.exists():
    display(
        pd.DataFrame(
            {row["step"]: {k: row["metrics"][PRIMARY_METRIC][k] for k in ("after", "diff", "ci_low", "ci_high")}
             for row in json.loads(long_curve.read_text())["curve"]}
        ).T.rename_axis("GRPO step")
    )  # fmt: skip
    display(Image(filename=str(Path(CURVE_RECORD) / "learning_curve.png")))
else:
    print(f"no long-curve record at {Path(CURVE_RECORD).resolve()}")

# %% [markdown]
# ## Browse the episodes
#
# One static HTML file per comparison (no server, nothing loaded from outside): the prompt, every tool call
# and result, the final answer and each rubric item's verdict, before and after side by side. Open it in a
# browser; model text is escaped, so a hostile completion shows as text.

# %%
for suite, r in runs.items():
    page = viewer_for_dirs([r["before"], r["after"]], out / suite / "viewer_before_after.html")
    display(HTML(f'<a href="{page.resolve().as_uri()}" target="_blank">{suite}: {page}</a>'))
