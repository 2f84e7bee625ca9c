"""Builds notebooks/05_results.ipynb (run: .venv/bin/python notebooks/_build/build_05_results.py)."""

from pathlib import Path

import nbformat as nbf

md = nbf.v4.new_markdown_cell
code = nbf.v4.new_code_cell
cells = []
cells.append(
    md("""# 05 · Results: before vs after training, with confidence intervals

This notebook evaluates a policy **before** and **after** training on the kit's suites, the way the
published work reports it, and puts the kit's numbers beside theirs:

- **kit-eval**: the held-out synthesized tasks (held-out templates and server combinations). Scored like
  Scale's MCP Atlas evaluation: each task's rubric score is the fraction of its essential rubric items
  passed; the **coverage rate** is the mean of that score over tasks, and the **pass rate at 0.50 / 0.75**
  is the share of tasks whose score reaches the threshold. MCP-Atlas claim scoring (partial credit 0.5)
  is reported beside it as `atlas_coverage`.
- **bfcl-base / bfcl-miss-func / bfcl-miss-param / bfcl-long-context**: BFCL v4 multi-turn, run through the
  kit's MCP servers by the same agent loop, scored by BFCL's own checker (state + response check). A
  task is right or wrong; **accuracy** is the share right.

Why confidence intervals: a few dozen tasks give noisy rates. Every number here comes with a 95% bootstrap
interval (resampling tasks), and before/after differences use a **paired** bootstrap on the same tasks,
which cancels out per-task difficulty. A difference whose interval excludes zero is marked `outside_ci`.

Also measured, because the Scale write-up saw them change with training: tool calls per task, the tool
failure rate, and the **finish rate** (episodes ended by an explicit `finish` call rather than the
iteration cap).""")
)
cells.append(
    md("""## Parameters

`SMOKE = True` (what CI injects) runs two tiny evaluations: a tiny randomly initialised model (same
tokenizer and chat template as the embedded SmolLM2) on a couple of tasks per suite with short generations, and the `gold` policy (replays each task's reference trajectory: the
ceiling, and a self-check that scores 100%) standing in for a trained model. For the real comparison,
set `TRAIN_RUN` to the folder of a training run (notebook 04 or `mcp-rl train --recipe cpu-demo --out
runs/cpu-demo`): its `adapter/` is evaluated as "after" and its `metrics.jsonl` gives the training curves.
`ADAPTER` alone points at any LoRA folder. The base model must be the one the adapter was trained on.""")
)
params = code("""SMOKE = False
OUT_DIR = "../runs/05_results"
MODEL = "smollm2-135m"  # the base model ("tiny-random", "smollm2-135m" or a Hugging Face id)
SMOKE_MODEL = "tiny-random"  # what smoke mode evaluates instead (fast on any CPU)
TRAIN_RUN = None  # a `mcp-rl train --out DIR` folder: its adapter/ and metrics.jsonl are used
ADAPTER = None  # a trained LoRA adapter folder; None -> the gold policy stands in as "after"
SUITES = ["kit-eval", "bfcl-base"]  # add "bfcl-miss-func", "bfcl-miss-param", "bfcl-long-context"
# CPU budgets (`make demo`): the untrained base model never makes a well-formed call, and a BFCL prompt
# is ~4-5k tokens per generation, so a few tasks with short turns already show every table and figure.
LIMIT = {"kit-eval": 20, "bfcl-base": 3}  # tasks per suite (None = all; one number for every suite)
TRAIN_METRICS = None  # a training run's metrics.jsonl, for the training curves
TASKS_FILE = None  # kit-eval tasks; None = data/tasks/eval.jsonl (the committed held-out sample)
LOOP_CONFIG = {"max_turns": 3, "max_new_tokens": 96}  # agent-loop settings: RolloutConfig fields
SEED = 0""")
params.metadata["tags"] = ["parameters"]
cells.append(params)
cells.append(
    code("""from pathlib import Path

from IPython.display import HTML, Image, display

from toolkit.eval import plots, report
from toolkit.eval.suites import SMOKE_LOOP_CONFIG, run_eval
from toolkit.eval.viewer import viewer_for_dirs

if SMOKE:  # tiny budgets: a tiny model, a couple of tasks per suite, short generations
    MODEL = SMOKE_MODEL
    LIMIT = 2
    SUITES = ["kit-eval", "bfcl-base"]
    LOOP_CONFIG = {**LOOP_CONFIG, **SMOKE_LOOP_CONFIG}

if TRAIN_RUN:  # a training run folder holds the adapter and the per-step metrics
    ADAPTER = ADAPTER or str(Path(TRAIN_RUN) / "adapter")
    TRAIN_METRICS = TRAIN_METRICS or str(Path(TRAIN_RUN) / "metrics.jsonl")

out = Path(OUT_DIR)
out.mkdir(parents=True, exist_ok=True)
before_spec = MODEL
after_spec, after_adapter = (MODEL, ADAPTER) if ADAPTER else ("gold", None)
print(f"before: {before_spec}   after: {after_spec}{' + ' + str(after_adapter) if after_adapter else ''}")""")
)
cells.append(
    md("""## Evaluate

`run_eval` runs the policy through the agent loop on each suite's tasks, scores every trajectory, and writes
an output folder per run: `results.jsonl` (one line per task), `trajectories.jsonl`, `results.json`
(aggregates with CIs and the run's config: model, adapter, seed, package versions) and `viewer.html`.
The same thing on the command line: `mcp-rl eval --policy MODEL [--adapter DIR] --suite NAME --out DIR`.""")
)
cells.append(
    code("""runs = {}
for suite in SUITES:
    runs[suite] = {
        "before": out / suite / "before",
        "after": out / suite / "after",
    }
    limit = LIMIT.get(suite) if isinstance(LIMIT, dict) else LIMIT
    common = dict(limit=limit, seed=SEED, tasks_file=TASKS_FILE, loop_config=LOOP_CONFIG)
    run_eval(before_spec, suite, runs[suite]["before"], label="base", **common)
    run_eval(after_spec, suite, runs[suite]["after"], adapter=after_adapter,
             label="trained" if ADAPTER else "gold", **common)

report.metrics_table([d for r in runs.values() for d in (r["before"], r["after"])], report.HEADLINE)""")
)
cells.append(
    md("""## Before vs after, paired

One row per metric: the change on the same tasks, its 95% paired-bootstrap interval, and whether zero lies
outside it. Read `n_pairs` first: the bootstrap needs a few dozen tasks to mean anything. With two tasks
(smoke mode) that both change the same way, the interval collapses to a point and says nothing.""")
)
cells.append(
    code("""import pandas as pd

pd.concat([report.paired_table(r["before"], r["after"]) for r in runs.values()], ignore_index=True)""")
)
cells.append(
    md(
        """With more than one BFCL suite, BFCL multi-turn **overall** accuracy pools the tasks of all
categories (each category's accuracy is listed beside it)."""
    )
)
cells.append(
    code(
        """bfcl = [s for s in runs if s.startswith("bfcl-")]
if len(bfcl) > 1:
    for side in ("before", "after"):
        display(report.combined_table([runs[s][side] for s in bfcl]).assign(run=side))"""
    )
)
cells.append(
    md("""## Figures

`mcp-rl plot --results DIR... --out DIR` draws the same figures from the output folders (PNG and SVG):
bars with CIs, tool usage (Scale saw trained models call fewer, better-chosen tools), how episodes ended
(finish rate), training curves from a run's `metrics.jsonl`, and the published numbers.""")
)
cells.append(
    code("""fig_dir = out / "figures"
dirs = [d for r in runs.values() for d in (r["before"], r["after"])]
paths = plots.plot_all(dirs, fig_dir, metrics_file=TRAIN_METRICS)
for name in ("before_after", "rubric_categories", "tool_usage", "finish_rate", "training_curves"):
    png = fig_dir / f"{name}.png"
    if png.exists():
        display(Image(filename=str(png)))""")
)
cells.append(
    md("""## Against the published numbers

What the three write-ups report (sources and quotes in `data/reference_results.json`):

- Scale, MCP Atlas, Qwen2.5-14B with LoRA r=32 and a rubric reward: coverage 23.5% -> 30.4%,
  pass@0.50 15.8% -> 31.9%, pass@0.75 7.7% -> 17.3%.
- Bespoke Labs, a held-out half of 200 BFCL v3 multi-turn-base questions, Qwen2.5-7B-Instruct with a
  binary BFCL reward: 55% -> 78%.
- PROVE (arXiv 2606.03892, Table 3), BFCL multi-turn overall: Qwen3-4B 18.8 -> 29.0 (+10.2, the headline
  gain), Qwen3-8B 26.0 -> 26.9, Qwen2.5-7B 13.1 -> 16.8, Granite-4.1-8B 33.4 -> 33.5; tau2-bench average
  +3.6, +3.5, +6.8, +6.4 points.

These are different models, benchmarks and budgets from a 135M model on a CPU: compare the *direction*
and the *shape* (pass@0.75 gaining more, relatively, than coverage; finish rate rising), not the levels.""")
)
cells.append(
    code("""display(report.reference_table())
display(Image(filename=str(fig_dir / "reference.png")))""")
)
cells.append(
    md("""## Browse the episodes

One static HTML file per comparison (no server, nothing loaded from outside): the prompt, every tool call
and result, the final answer and each rubric item's verdict, before and after side by side. Open it in a
browser; model text is escaped, so a hostile completion shows as text.""")
)
cells.append(
    code("""viewers = []
for suite, r in runs.items():
    page = viewer_for_dirs([r["before"], r["after"]], out / suite / "viewer_before_after.html")
    viewers.append(page)
    display(HTML(f'<a href="{page.resolve().as_uri()}" target="_blank">{suite}: {page}</a>'))""")
)
nb = nbf.v4.new_notebook(
    cells=cells,
    metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    },
)
nbf.write(nb, Path(__file__).resolve().parents[1] / "05_results.ipynb")
