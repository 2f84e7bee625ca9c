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
# Three results, in this order:
#
# 1. **The shipped adapters** (`data/adapters/cpu-learn/`): the warm start and the GRPO adapter of the
#    frozen `cpu-learn` recipe's full run, kept in the repository. Both are evaluated here on held-out tasks
#    synthesized fresh from a seed that no run used for training, tuning or its test sets, so the gain this
#    notebook shows is measured, not copied from a record. This is the tutorial's result.
# 2. **The claim** (`data/adapters/cpu-learn-rft3/`, once shipped): one frozen warm start and the GRPO
#    adapters of three training seeds, evaluated the same way; its number is the mean over the seeds.
# 3. **Notebook 04's own run**: a short live run (a few GRPO steps on 2 cores). It shows that the pipeline
#    runs and what its curves look like; it is too short to show a gain outside its confidence interval.
#
# Then both sides of the result on BFCL, and the kit's numbers beside the published ones.
#
# - **kit-eval**: held-out synthesized tasks (held-out templates and server combinations). Scored
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
# `SHIPPED_ADAPTERS = None` takes the shipped `cpu-learn` pair (`data/adapters/cpu-learn`, or
# `toolkit/data/adapters/cpu-learn` in an installed kit); `N_SHIPPED` held-out tasks from synth seed
# `SHIPPED_SEED` (2028: the dev set is seed 1, the test sets 2026, 2027, 2031 and 2032). The claim's
# adapters (`CLAIM_ADAPTERS`, issue 49) on `N_CLAIM` tasks of each of `CLAIM_TEST_SEEDS` (the claim's own
# test sets were seeds 7101 and 7102), greedy, plus `CLAIM_SAMPLES` sampled episodes a task. With
# `TRAIN_RUN = None`, notebook 04's run from beside this notebook's output folder is read (`make demo` runs
# 04, then 05); any `mcp-rl train --out DIR` folder works too. `SMOKE = True` (what CI injects) keeps the
# budgets tiny: two tasks per suite and short generations, on the tiny model notebook 04 trained in smoke
# mode.

# %% tags=["parameters"]
SMOKE = False
OUT_DIR = "../build/notebooks/05_results"
SHIPPED_ADAPTERS = None  # a `mcp-rl ship RUN DEST` folder; None: the shipped cpu-learn pair
N_SHIPPED = 200  # held-out tasks for the shipped pair (paired 95% CI about +-0.03 to +-0.05 at 200)
SHIPPED_SEED = 2028  # synth seed of those tasks: no run trains, tunes or tests on it
SHIPPED_BACKEND = None  # None: the shipped recipe's (vllm, or cpu where vLLM is not installed)
SHIPPED_RECORD = "../docs/cpu-proof/run25"  # the shipped run's published record (its learning curve)
CLAIM_ADAPTERS = None  # a claim's `mcp-rl ship ROOT DEST --claim` folder; None: data/adapters/cpu-learn-rft3
CLAIM_TEST_SEEDS = [4101]  # synth seeds of the claim's fresh test sets: no run trains, tunes or tests on them
N_CLAIM = 100  # tasks per test set (the claim used 2 x 300: fewer tasks, wider intervals)
CLAIM_SAMPLES = 2  # sampled episodes a task beside greedy, at the recipe's temperature (the claim used 4)
TRAIN_RUN = None  # a `mcp-rl train --out DIR` folder; None: notebook 04's run (../04_grpo_training/run)
N_EVAL = (
    None  # held-out kit tasks when the run has no evaluation of its own (None: all of its held-out tasks)
)
BFCL_SUITES = ["bfcl-base"]  # add "bfcl-miss-func", "bfcl-miss-param", "bfcl-long-context"
BFCL_LIMIT = 30  # BFCL tasks per suite and side (bfcl-base holds 108 held-out tasks); timing below
LOOP_CONFIG = {"max_turns": 3, "max_new_tokens": 96}  # agent-loop settings for BFCL (RolloutConfig fields)
SEED = 0
PROOF_RECORD = "../docs/cpu-proof/run13"  # a kept CPU proof run (summary, metrics, figures): run 13
CURVE_RECORD = "../docs/cpu-proof/run16"  # the same recipe to GRPO step 70 on a lent H100: the long curve

# %%
import json
import os
import shutil
from pathlib import Path

import pandas as pd
from IPython.display import HTML, Image, display

from toolkit.eval import plots, report
from toolkit.eval.suites import SMOKE_LOOP_CONFIG, run_eval
from toolkit.eval.viewer import viewer_for_dirs
from toolkit.runs import RunFolder, ShippedFolder, has_adapter
from toolkit.train.run_eval import PRIMARY_METRIC

os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")  # vLLM logs a dozen warnings per engine start, on stdout
if SMOKE:  # tiny budgets: a couple of tasks per suite, short generations
    N_EVAL, N_SHIPPED, BFCL_LIMIT = 2, 2, 2
    LOOP_CONFIG = {**LOOP_CONFIG, **SMOKE_LOOP_CONFIG}

out = Path(OUT_DIR)
out.mkdir(parents=True, exist_ok=True)
fig_dir = out / "figures"
run = Path(TRAIN_RUN) if TRAIN_RUN else out.parent / "04_grpo_training" / "run"
if not has_adapter(RunFolder(run).adapter):
    print(
        f"no trained adapter in {run.resolve()}: notebook 04's section below is skipped (run notebook 04 "
        "first, as `make demo` does, or set TRAIN_RUN to a `mcp-rl train --out DIR` folder)"
    )
    run = None

# %% [markdown]
# ## The shipped adapters
#
# `mcp-rl ship RUN data/adapters/cpu-learn` copied a finished run's warm start (`sft/adapter`)
# and GRPO adapter (`adapter`) into the repository: LoRA weights in bfloat16 (about 10 MB each), each
# checked to give its source's logits up to bf16 rounding, with the recipe as run (`recipe.json`) and a
# `record.json` (the run, the commands, sha256 of every file, the run's own dev and test comparisons).
#
# Here both are evaluated afresh, greedy, on `N_SHIPPED` tasks synthesized from seed `SHIPPED_SEED` with the
# recipe's own synth settings, less any task whose prompt the run trained on: exactly what
# `mcp-rl train --test` does for the recipe's test sets (`toolkit.train.task_sources.held_out_set` and
# `toolkit.train.pipeline.evaluate_pair`, the same code), with the recipe's rollout settings and backend.
#
# In smoke mode the shipped pair is not used: it fits `smollm2-135m`, and CI runs the tiny random model.
# The section then ships notebook 04's smoke run the same way and evaluates that, so every step runs.

# %%
from toolkit.train.pipeline import evaluate_pair
from toolkit.train.ship import load_shipped, ship_adapters, shipped_folder
from toolkit.train.task_sources import held_out_set

shipped_dir = Path(SHIPPED_ADAPTERS) if SHIPPED_ADAPTERS else shipped_folder()
shipped = None
if SMOKE:
    if ShippedFolder(shipped_dir).record_file.exists():
        print(f"smoke mode: {shipped_dir} fits {load_shipped(shipped_dir).model}, not the smoke model")
    if run is not None:
        print(f"smoke mode: shipping notebook 04's smoke run {run} instead, to run every step on it")
        shipped = load_shipped(ship_adapters(run, out / "shipped-smoke").parent)
elif ShippedFolder(shipped_dir).record_file.exists():
    shipped = load_shipped(shipped_dir)
else:
    print(
        f"no shipped adapters in {shipped_dir.resolve()}: a finished run ships them with\n"
        f"  mcp-rl ship RUN {shipped_dir}\n"
        "(RUN: e.g. `make reproduce-cpu-learn`'s run folder); this section is skipped"
    )

if shipped is not None:
    shipped_recipe = shipped.recipe()
    print(f"shipped: {shipped.folder} ({shipped.record['recipe']} recipe, base model {shipped.model})")
    print(f"  from run {shipped.record['run']}; reproduce: {shipped.record['commands']['reproduce']}")
    shipped_out = out / "shipped"
    shutil.rmtree(shipped_out, ignore_errors=True)  # tasks and evaluations made afresh each time
    shipped_tasks = held_out_set(shipped_recipe, SHIPPED_SEED, N_SHIPPED, shipped_out)
    backend = SHIPPED_BACKEND or ("cpu" if SMOKE else None)  # vLLM's CPU kernels reject the tiny model
    pair_dir = RunFolder(shipped_out).eval  # tasks and evaluations laid out as a run's
    evaluate_pair(shipped_recipe, shipped.warm_start, shipped.grpo, shipped_tasks, pair_dir, backend=backend)
    shipped_dirs = {"before": pair_dir / "before", "after": pair_dir / "after"}

# %% [markdown]
# GRPO against its warm start on the same fresh tasks, paired: pass@0.75 (the share of tasks whose rubric
# score reaches 0.75 with no essential answer item failed: an answer that hedges or pastes fails), coverage,
# the finish rate and tool calls per task.

# %%
if shipped is not None:
    shipped_table = report.paired_table(
        shipped_dirs["before"],
        shipped_dirs["after"],
        metrics=(PRIMARY_METRIC, "coverage", "finish_rate", "tool_calls_per_task"),
    )
    display(shipped_table)
    p = shipped_table.set_index("metric").loc[PRIMARY_METRIC]
    if p["ci_low"] > 0:
        verdict = "lies above zero: GRPO's gain holds on tasks no run has seen"
    elif p["ci_high"] < 0:
        verdict = "lies below zero: GRPO made the warm start worse on these tasks"
    else:
        verdict = "contains zero: on these tasks the gain cannot be told from noise"
    print(
        f"{PRIMARY_METRIC}: warm start {p['before']:.3f} -> GRPO {p['after']:.3f}, {p['diff']:+.3f}, paired "
        f"95% CI [{p['ci_low']:+.3f}, {p['ci_high']:+.3f}] on {len(shipped_tasks)} tasks from seed "
        f"{SHIPPED_SEED}: the interval {verdict}."
    )
    runs_shipped = [
        plots.load_run(shipped_dirs["before"], "warm start"),
        plots.load_run(shipped_dirs["after"], "GRPO"),
    ]
    for png in plots.plot_before_after(runs_shipped, fig_dir, name="shipped_before_after"):
        if png.suffix == ".png":
            display(Image(filename=str(png)))

# %% [markdown]
# What the shipped run reported itself when it was made (`record.json`, from its `summary.json`): pass@0.75
# on its dev set (seed 1, the tasks the recipe was tuned on) and on its test sets (seeds 2026, 2027, 2031
# and 2032, evaluated once with the recipe frozen). Then its dev-set learning curve, from the run's
# published record (`SHIPPED_RECORD`, `mcp-rl publish RUN docs/cpu-proof/...`).

# %%
if shipped is not None:
    if shipped.record.get("comparison"):
        columns = ["before", "after", "diff", "ci_low", "ci_high", "n_pairs", "outside_ci"]
        display(pd.DataFrame(shipped.record["comparison"]).T.reindex(columns=columns))
    else:
        print(f"{shipped.layout.record_file}: the run had no evaluation of its own (no summary.json)")
    curve_file = RunFolder(SHIPPED_RECORD).summary_file  # a published record: the run's summary.json
    if not SMOKE and curve_file.exists() and json.loads(curve_file.read_text()).get("curve"):
        display(
            pd.DataFrame(
                {row["step"]: {k: row["metrics"][PRIMARY_METRIC][k] for k in ("after", "diff", "ci_low", "ci_high")}
                 for row in json.loads(curve_file.read_text())["curve"]}
            ).T.rename_axis("GRPO step")
        )  # fmt: skip
        if (Path(SHIPPED_RECORD) / "learning_curve.png").exists():
            display(Image(filename=str(Path(SHIPPED_RECORD) / "learning_curve.png")))
    else:
        print(f"no learning curve of the shipped run at {curve_file.resolve()} (set SHIPPED_RECORD)")

# %% [markdown]
# Those comparisons were graded the way answers were graded when run 25 was made: the expected value
# anywhere in the answer passed. Since issue 48 an answer passes only when it commits to the value (no
# competing value, no pasted tool output, no hedge). `python -m bench.regrade` evaluated the shipped pair
# again on each of those sets (greedy, the recipe's loop and backend) and graded every trajectory both ways;
# `record.json` keeps both under `grading.regrade_issue48`. The "old" rows differ from the table above by a
# task or two because the evaluation ran again (vLLM's CPU backend is not bit-reproducible between engine
# starts, and the shipped adapters are the bf16 copies); the "new" rows are the kit's grade today.

# %%
if shipped is not None:
    grading = shipped.record.get("grading", {})
    regrade = grading.get("regrade_issue48")
    if regrade:
        regraded = {}
        for name, result in {"dev": regrade["dev"], **regrade["test_sets"]}.items():
            if isinstance(result, str):  # a set not re-graded yet says why
                print(f"{name}: {result}")
                continue
            for way in ("old", "new"):
                row = result[f"{way}_grading"]
                regraded[(name, way)] = {k: row[k] for k in ("before", "after", "diff", "ci_low", "ci_high")}
        display(pd.DataFrame(regraded).T.rename_axis(["set", "grading"]).round(3))
        print(
            f"re-graded on {regrade['machine']}:\n  {regrade['command'].replace('--sets dev', '--sets SET')}"
        )
    else:  # a pair shipped since issue 48 was graded by the commitment check when it was made
        print(grading.get("comparison") or "the comparisons above were graded by the commitment answer check")

# %% [markdown]
# ## The claim: three GRPO seeds against one frozen warm start
#
# One GRPO run can be a lucky seed. Issue 49's claim (its third protocol, `make reproduce-claim-v3`, in
# `docs/cpu-proof/README.md`) froze one warm start, trained the `cpu-learn-rft3` recipe from it (two rounds
# of rejection-sampling fine-tuning on the model's own right episodes, then GRPO on lookups and writes) with
# three training seeds, and `mcp-rl ship ROOT DEST --claim` kept the warm start and every seed's adapter in
# `data/adapters/cpu-learn-rft3`.
#
# Here they are evaluated afresh on test sets from seeds no run has used (`CLAIM_TEST_SEEDS`), with
# `toolkit.train.claim_eval`, the code the claim itself ran; `mcp-rl eval-claim DEST OUT --test-seeds ...`
# is the same from the command line. Each number is the **mean over the GRPO seeds** of GRPO - warm start,
# paired by task, with its 95% bootstrap interval over tasks; apart for tasks of the templates trained on
# (`in_template`) and of templates held out of training (`held_out_templates`). The guards say what a
# higher pass rate must not have bought: fewer finished episodes, more calls per task, worse first calls,
# or answering without the call a task needs.
#
# In smoke mode the smoke pair shipped above stands in: a claim of one GRPO seed, two tasks.

# %%
from toolkit.eval.claim import GROUPS, criteria_lines
from toolkit.train.claim_eval import evaluate_shipped_claim

claim_dir = Path(CLAIM_ADAPTERS) if CLAIM_ADAPTERS else shipped_folder("cpu-learn-rft3")
claim_shipped = None
if SMOKE:
    claim_shipped = shipped  # the smoke pair shipped above (None when notebook 04 has not run)
    N_CLAIM, CLAIM_SAMPLES = 2, 2
elif ShippedFolder(claim_dir).record_file.exists():
    claim_shipped = load_shipped(claim_dir)
else:
    print(
        f"no shipped claim in {claim_dir.resolve()}: `make reproduce-cpu` makes one (hours on a CPU), then\n"
        f"  mcp-rl ship runs/reproduce-cpu {claim_dir} --claim runs/reproduce-cpu/claim.json\n"
        "ships it; this section is skipped"
    )

if claim_shipped is not None:
    print(f"claim: {claim_shipped.folder}, sides {', '.join(claim_shipped.sides)}")
    claim_out = out / "claim"
    shutil.rmtree(claim_out, ignore_errors=True)  # test sets and evaluations made afresh each time
    fresh = evaluate_shipped_claim(
        claim_shipped, CLAIM_TEST_SEEDS, N_CLAIM, claim_out, CLAIM_SAMPLES, "cpu" if SMOKE else None
    )
    columns = ["before", "after", "diff", "ci_low", "ci_high", "n_tasks", "n_seeds"]
    display(
        pd.DataFrame(
            {(group, way): fresh[group][way] for group in GROUPS if fresh[group] for way in ("greedy", "sampled")
             if way in fresh[group]}
        ).T.reindex(columns=columns).rename_axis(["tasks", "pass@0.75"]).round(3)
    )  # fmt: skip
    display(
        pd.DataFrame({f"GRPO seed {s}": d for s, d in fresh["per_grpo_seed"].items()}).T.round(3)
    )  # each seed's own greedy diff: the mean above is not one seed's luck
    display(pd.DataFrame(fresh["guards"]).T.reindex(columns=columns[:5]).rename_axis("guard").round(3))
    display(
        pd.DataFrame({kind: b["greedy"] for kind, b in fresh["per_kind"].items()})
        .T.reindex(columns=columns[:6])
        .rename_axis("task kind")
        .round(3)
    )
    print("\n".join(criteria_lines(fresh)))

# %% [markdown]
# What the claim recorded when it was made (`record.json` keeps its `claim.json`): the same tables on its
# own test sets, seeds 7101 and 7102, 300 tasks each, greedy and 4 sampled episodes a task.

# %%
if claim_shipped is not None:
    made = claim_shipped.record.get("claim")
    if made:
        print("\n".join(criteria_lines(made)))
    else:
        print(f"{claim_shipped.layout.record_file}: no claim recorded (a pair, or shipped without --claim)")

# %% [markdown]
# The learning curves the claim's runs logged (`curves/` in the shipped folder, each run's `metrics.jsonl`):
# the warm start's SFT loss and each seed's RFT round after it, then GRPO's sampled episodes step by step,
# one line per seed and their mean. The per-step numbers are noisy (each step samples a few tasks); the
# fresh evaluation above is the measure, the curves say how each seed got there.

# %%
if claim_shipped is not None:
    if claim_shipped.curves:
        for png in plots.plot_seed_curves(
            {side.replace("_", " "): path for side, path in claim_shipped.curves.items()},
            fig_dir,
            "claim_curves",
        ):
            if png.suffix == ".png":
                display(Image(filename=str(png)))
    else:
        print(
            f"{claim_shipped.folder}: no training curves shipped (a pair, or a claim shipped before they were)"
        )

# %% [markdown]
# ## Notebook 04's run: a short live run
#
# Notebook 04 trained its own policy in a few minutes: a warm start and a few GRPO steps, on 2 cores. Its
# GRPO adapter ("after") against its own SFT-only warm start ("before"), on the same held-out tasks: what
# such a short run changes is usually smaller than the interval around it. It is shown so that a reader can
# see a run of their own go through every stage; the result is the shipped pair above.
#
# With `evaluate=True` (notebook 04's default), the run already evaluated both models greedily on its
# held-out tasks (`eval/sft/` or `eval/base/`, and `eval/grpo/`: `toolkit.eval.run_eval` folders), so they
# are read, not recomputed. Otherwise both adapters are evaluated here on the run's held-out tasks. The same
# from a shell: `mcp-rl eval --policy MODEL --adapter DIR --suite kit-eval --tasks FILE --out DIR`.

# %%
runs = {}  # suite -> {"before": eval folder, "after": eval folder}: notebook 04's run
if run is not None:
    run_folder = RunFolder(run)
    recipe = json.loads(run_folder.recipe_file.read_text())
    MODEL = recipe["model"]
    warm_start = run_folder.sft_adapter
    sides = {  # label -> adapter folder (None: the base model itself, for a run without a warm start)
        "before": str(warm_start) if warm_start.exists() else None,
        "after": str(run_folder.adapter),
    }
    print(f"notebook 04's run {run}: base model {MODEL}")
    print(f"  before = {sides['before'] or 'the base model (the run had no warm start)'}")
    print(f"  after  = {sides['after']} (GRPO)")
    before_dir = next(
        (
            d
            for d in (run_folder.eval_before(True), run_folder.eval_before(False))
            if (d / "results.jsonl").exists()
        ),
        None,
    )
    after_dir = run_folder.eval_after()
    if before_dir is not None and (after_dir / "results.jsonl").exists():
        kit = {"before": before_dir, "after": after_dir}
        print(f"the run's own held-out evaluation: {before_dir} vs {after_dir}")
    else:
        eval_file = next(
            (str(p) for p in (run_folder.tasks.eval, Path(recipe.get("eval_tasks") or "")) if p.is_file()),
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
    runs["kit-eval"] = kit
    display(report.metrics_table([kit["before"], kit["after"]], report.HEADLINE))
    display(report.paired_table(kit["before"], kit["after"]))

# %% [markdown]
# ## BFCL multi-turn
#
# The shipped pair (or, without it, notebook 04's) on BFCL's multi-turn tasks, through the kit's MCP
# servers and BFCL's own checker. No run trained on BFCL: this is transfer, and it can go either way (GRPO
# on the kit's tasks rewards the kit's habits, which BFCL need not). The line under the tables says, from
# the paired intervals, which signals GRPO moved and which way. With vLLM installed, both generate on
# vLLM's CPU backend (the merged weights, as the held-out evaluations do): BFCL prompts carry every
# function doc of their classes, 4-5k tokens before the first turn, and transformers spent about 20 times
# as long per task (measured below).
#
# What a 135M model can be expected to do here: **nothing right**. BFCL counts a task right only when every
# turn leaves the same state as the ground truth. Measured once on an earlier warm start (`cpu-demo`'s 20
# SFT steps on smollm2-135m; the shipped one had 60, as `cpu-learn` has; a 2-core AMD EPYC with AVX-512
# BF16, beside a training run):
#
#     mcp-rl eval --policy vllm:smollm2-135m --adapter RUN/sft/adapter --suite bfcl-base --limit 4 \
#         --max-turns 3 --max-new-tokens 96 --out OUT
#
# gave accuracy 0 of 4, every one of its 12 calls failed (tool failure rate 1.0: made-up tool names such as
# `create_team_notes.txt`, the finish tool's placeholder `{"answer": ...}` as arguments, a parameter
# `file_name` that `find` does not take), all 4 episodes ran into the 3-call turn cap in the first user turn,
# and 2 of 4 first calls were well formed (parsed, and named an offered tool). So the finer signals are the
# ones a 135M model can move: the share of **well-formed first calls**, the **tool failure rate** and **tool
# calls per task**. Accuracy is shown with an exact (Clopper-Pearson) interval as well, because a bootstrap
# of all-zero results gives [0, 0]: 0 right of 30 still allows up to 11.6% (`exact_high`).
#
# `BFCL_LIMIT = 30` per side: on that machine, beside a training run (which slows it about 2x), one BFCL
# task took 7.1 s on vLLM (4 tasks in 28.5 s after a 21 s engine start) and 139 s with transformers
# (2 tasks, fp32). In the run of this executed copy (`mcp-rl notebooks run --only 04 05`, a 2-core AMD EPYC
# with AVX2 only, alone), where vLLM's CPU engine samples in float32 on a slow path, the 2 x 30 tasks took
# 1,318 s, about 22 s an episode; on a 2-core AMD EPYC with AVX-512 BF16 (a fresh clone's `make demo`,
# alone) they took 260 s, 3.4 s an episode (docs/benchmarks.md).

# %%
bfcl_sides, bfcl_model = None, None
if shipped is not None:
    bfcl_sides, bfcl_model = {"before": shipped.warm_start, "after": shipped.grpo}, shipped.model
elif run is not None:
    bfcl_sides, bfcl_model = sides, MODEL
bfcl_runs = {}
if bfcl_sides is None:
    print("no adapters to evaluate on BFCL (neither shipped adapters nor notebook 04's run)")
else:
    from toolkit.train.pipeline import vllm_installed

    # vLLM's CPU attention rejects the tiny smoke model (head size 16): transformers there
    policy = f"vllm:{bfcl_model}" if vllm_installed() and bfcl_model != "tiny-random" else bfcl_model
    for suite in BFCL_SUITES:
        bfcl_runs[suite] = {side: out / suite / side for side in bfcl_sides}
        for side, adapter in bfcl_sides.items():
            run_eval(
                policy,
                suite,
                bfcl_runs[suite][side],
                adapter=str(adapter) if adapter else None,
                limit=BFCL_LIMIT,
                seed=SEED,
                loop_config=LOOP_CONFIG,
                label={"before": "warm start", "after": "GRPO"}[side],
            )
    display(report.accuracy_table([d for s in BFCL_SUITES for d in bfcl_runs[s].values()]))
    display(
        pd.concat(
            [
                report.paired_table(r["before"], r["after"], metrics=report.BFCL_SIGNALS)
                for r in bfcl_runs.values()
            ],
            ignore_index=True,
        )
    )

# %%
# The transfer in words, from the paired table above: the signals GRPO moved outside their 95% CI, and
# which way (accuracy, well-formed first calls and the finish rate are better higher, tool failures lower).
HIGHER_IS_BETTER = {
    "accuracy": True,
    "first_call_well_formed": True,
    "finish_rate": True,
    "tool_failure_rate": False,
}
for suite, pair in bfcl_runs.items():
    table = report.paired_table(pair["before"], pair["after"], metrics=report.BFCL_SIGNALS)
    table = table.set_index("metric")
    moved = {"worse": [], "better": [], "changed": []}
    for metric, row in table[table["outside_ci"].astype(bool)].iterrows():
        if metric in HIGHER_IS_BETTER:
            side = "better" if (row["diff"] > 0) == HIGHER_IS_BETTER[metric] else "worse"
        else:  # calls per task: more or fewer is neither by itself
            side = "changed"
        moved[side].append(
            f"{metric} {row['before']:.3f} -> {row['after']:.3f} ({row['diff']:+.3f} "
            f"[{row['ci_low']:+.3f}, {row['ci_high']:+.3f}])"
        )
    verdict = {
        (True, False): "GRPO made the transfer worse",
        (False, True): "GRPO made the transfer better",
        (True, True): "GRPO made the transfer better on some signals and worse on others",
        (False, False): "GRPO moved no signal of the transfer outside its interval",
    }[bool(moved["worse"]), bool(moved["better"])]
    print(f"{suite}, GRPO against its warm start on {int(table['n_pairs'].max())} tasks: {verdict}")
    for side, said in moved.items():
        if said:
            print(f"  {side}: " + "; ".join(said))

# %% [markdown]
# With more than one BFCL suite, BFCL multi-turn **overall** accuracy pools the tasks of all
# categories (each category's accuracy is listed beside it).

# %%
if len(bfcl_runs) > 1:
    for side in ("before", "after"):
        display(report.combined_table([bfcl_runs[s][side] for s in BFCL_SUITES]).assign(run=side))

# %% [markdown]
# ## Figures
#
# `mcp-rl plot --results DIR... --out DIR` draws the same figures from the output folders (PNG and SVG):
# bars with CIs, tool usage (Scale saw trained models call fewer, better-chosen tools), how episodes ended
# (finish rate), notebook 04's training curves from its `metrics.jsonl`, and the published numbers. The
# kit-eval panels are notebook 04's run; the BFCL panels the pair evaluated on BFCL above.

# %%
dirs = [d for r in (*runs.values(), *bfcl_runs.values()) for d in (r["before"], r["after"])]
metrics_file = RunFolder(run).metrics_file if run is not None else None
plots.plot_all(dirs, fig_dir, metrics_file=metrics_file if metrics_file and metrics_file.exists() else None)
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
# learning curve. Run 13 (the older cpu-demo recipe), kept here, has the dev set and the curve only; the
# shipped run (run 25, above; run 22 before it) is the latest whose recipe was frozen and scored on test sets
# (docs/cpu-proof/README.md).

# %%
kept = RunFolder(PROOF_RECORD).summary_file  # a published record
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
long_curve = RunFolder(CURVE_RECORD).summary_file
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
pairs = {**({"shipped": shipped_dirs} if shipped is not None else {}), **runs, **bfcl_runs}
for name, r in pairs.items():
    page = viewer_for_dirs([r["before"], r["after"]], out / name / "viewer_before_after.html")
    display(HTML(f'<a href="{page.resolve().as_uri()}" target="_blank">{name}: {page}</a>'))
