"""One training run from a recipe: tasks -> (SFT warm start) -> held-out eval -> (RFT round) -> GRPO ->
held-out eval -> paired comparison. ``run_recipe`` checks the recipe, picks a backend and runs
``run_stages``; the stages are written once (``toolkit.train.stages``), each resumable by one rule
(``toolkit.train.resume``). A backend (``toolkit.train.backends``: transformers + PEFT;
``toolkit.train.unsloth_backend``: Unsloth + vLLM on one GPU) supplies model loading, generation and
weight sync. ``mcp-rl train --backend`` picks it.

The run folder's layout (``out``) is ``toolkit.runs.RunFolder``'s: ``recipe.json`` (the recipe as run;
``resume`` continues with it, a recipe that differs is refused unless ``allow_recipe_change``, and an
allowed change is recorded in ``summary.json``'s ``recipe_changes``), ``tasks/``, ``sft/adapter/``,
``rft/`` (with the recipe's ``rft`` section: ``samples.jsonl``, ``adapter/``), ``grpo/checkpoint-N/``,
``adapter/`` (``merged/`` with ``merge=True``), ``metrics.jsonl``, ``eval/`` (dev, ``curve/step-N``
with ``curve=True``, ``test-seed<S>`` with ``test=True``) and ``summary.json``. Every stage is skipped
on ``resume`` when its output exists, so a killed run picks up where it stopped.

Where the tasks come from: ``toolkit.train.task_sources``; the evaluations: ``toolkit.train.run_eval``.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from toolkit.records import Task
from toolkit.runs import RunFolder, has_adapter
from toolkit.train.backends import make_backend
from toolkit.train.config import Recipe
from toolkit.train.resume import read_run_recipe, record_recipe_change, resumed_recipe, write_run_recipe
from toolkit.train.run_eval import PRIMARY_METRIC, compare, eval_loop_config, evaluate_adapter
from toolkit.train.runlog import is_main_process, log
from toolkit.train.stages import (
    close_run,
    evaluate_after,
    evaluate_before,
    evaluate_test_sets,
    open_run,
    train_grpo,
    train_rft,
    warm_start,
)
from toolkit.train.task_sources import (
    check_task_file,
    grpo_tasks,
    load_train_tasks,
    resolve_task_files,
    synthesize_tasks,
)

# imported from here by the command line and by tests: the run's entry points and its task sources
__all__ = [
    "PRIMARY_METRIC",
    "check_task_file",
    "choose_backend",
    "eval_loop_config",
    "evaluate_pair",
    "grpo_tasks",
    "load_train_tasks",
    "make_backend",
    "read_run_recipe",
    "resolve_task_files",
    "run_recipe",
    "run_stages",
    "set_threads",
    "synthesize_tasks",
    "vllm_installed",
]


def set_threads(threads: int | None) -> None:
    """Torch CPU threads (``--threads`` or ``$MCP_RL_THREADS``). On a shared 2-core machine two
    threads per process oversubscribe the cores: measured 12x slower than one thread under load."""
    n = threads or int(os.environ.get("MCP_RL_THREADS", "0") or 0)
    if n > 0:
        import torch

        torch.set_num_threads(n)


def vllm_installed() -> bool:
    return importlib.util.find_spec("vllm") is not None


def choose_backend(recipe: Recipe, backend: str | None = None) -> str:
    """The backend's name: ``backend``, else the recipe's (whose ``vllm`` falls back to ``cpu`` where vLLM
    is not installed), ``auto`` resolved by ``detect_backend``."""
    from toolkit.train.device import detect_backend

    requested = backend or recipe.backend
    if backend is None and requested == "vllm" and not vllm_installed():
        # the recipe's choice, not the user's: where vLLM does not install (not x86-64 Linux), the
        # same stages run with transformers generation, slower (README, "vLLM on the CPU")
        log("the recipe asks for the vllm backend, and vLLM is not installed: using cpu")
        requested = "cpu"
    chosen = detect_backend(requested)
    if chosen == "gpu":  # Unsloth patches TRL's trainers only when imported before TRL
        from toolkit.train.unsloth_backend import import_unsloth

        import_unsloth()
    return chosen


STOP_AFTER = (None, "sft", "rft")  # run_recipe's stop_after: every stage, or up to the warm start / RFT round


def check_stop_after(stop_after: str | None) -> None:
    if stop_after not in STOP_AFTER:
        raise ValueError(f"stop_after must be None, 'sft' or 'rft', got {stop_after!r}")


def run_recipe(
    recipe: Recipe,
    out_dir: str | Path,
    *,
    resume: bool = False,
    evaluate: bool = False,
    test: bool = False,
    curve: bool = False,
    backend: str | Any | None = None,
    merge: bool = False,
    report_to: str | list[str] = "none",
    vllm_url: str | None = None,
    allow_recipe_change: bool = False,
    stop_after: str | None = None,
) -> dict[str, Any]:
    """Run a recipe end to end; returns the run summary (also written to ``out/summary.json``).

    ``stop_after="sft"``: the warm start only (issue 49's protocol trains several and freezes one);
    ``"rft"``: the warm start and the RFT round, no GRPO (``bench.lever_rft`` measures the round alone).

    ``backend``: ``auto`` | ``cpu`` | ``gpu`` | ``vllm`` | ``vllm-server`` (default: the recipe's; a
    recipe's ``vllm`` falls back to ``cpu`` where vLLM is not installed), or a backend object.
    ``vllm_url``: the OpenAI root of the vLLM server the ``vllm-server`` backend generates on.
    ``resume`` of a run whose ``recipe.json`` differs from ``recipe`` raises ``RecipeChangeError``
    naming the keys, unless ``allow_recipe_change`` (then the change is recorded in ``summary.json``'s
    ``recipe_changes``)."""
    from toolkit.models import check_model_name
    from toolkit.train.config import check_recipe_types, schedule_warnings
    from toolkit.train.device import backend_words, machine_line, probe

    check_stop_after(stop_after)  # before anything is written
    out = Path(out_dir)
    run = RunFolder(out)
    if is_main_process():
        if not resume and run.recipe_file.exists():
            raise FileExistsError(
                f"{out} holds a run already: pass --resume to continue it, or another --out"
            )
    changes: dict[str, Any] = {}
    if resume and run.recipe_file.exists():
        recipe, changes = resumed_recipe(recipe, out, allow_recipe_change)
    check_model_name(recipe.model)  # an unknown name fails in one line, before any stage
    chosen = choose_backend(recipe, backend) if backend is None or isinstance(backend, str) else None
    check_recipe_types(recipe)  # a bad key or value fails now, not after the warm start (imports TRL)
    check_task_file(recipe.tasks, f"recipe {recipe.name!r}: tasks")
    check_task_file(recipe.eval_tasks, f"recipe {recipe.name!r}: eval_tasks")
    if recipe.warm_start is not None and not has_adapter(Path(recipe.warm_start)):
        raise FileNotFoundError(f"recipe {recipe.name!r}: warm_start {recipe.warm_start} holds no adapter")
    for warning in schedule_warnings(recipe):
        log(f"warning: {warning}")
    if chosen is not None:
        from toolkit.models import resolve_dtype_name

        dtype = resolve_dtype_name(recipe.dtype) or "fp32"
        info = probe()
        log(f"recipe {recipe.name}: model {recipe.model}, dtype {dtype}, backend {chosen}")
        log(f"machine: {machine_line(info)}")
        log(backend_words(chosen, info, vllm_url))
        options = {"url": vllm_url} if chosen == "vllm-server" else {}
        backend = make_backend(chosen, recipe, **options)
    if is_main_process():
        out.mkdir(parents=True, exist_ok=True)
        if changes:
            record_recipe_change(out, changes)
        write_run_recipe(run, recipe)
    try:
        return run_stages(
            recipe,
            out,
            backend,
            resume=resume,
            evaluate=evaluate,
            test=test,
            curve=curve,
            merge=merge,
            report_to=report_to,
            stop_after=stop_after,
        )
    finally:
        # a backend made here stops its engine with the run; one handed in is the caller's
        if chosen is not None:
            backend.close()


def run_stages(
    recipe: Recipe,
    out: Path,
    backend: Any,
    *,
    resume: bool = False,
    evaluate: bool = False,
    test: bool = False,
    curve: bool = False,
    merge: bool = False,
    report_to: Any = "none",
    stop_after: str | None = None,
) -> dict[str, Any]:
    """The stages, once for every backend (``toolkit.train.stages``); each is skipped on ``resume`` when
    its output exists. ``evaluate``: the dev set before and after GRPO (one process evaluates; the
    others only train). ``test``: after training, evaluate the warm start and the GRPO adapter on each of
    the recipe's ``eval.test_sets`` (``summary["test"]``, keyed by seed). ``curve`` (with ``evaluate``):
    every kept GRPO checkpoint on the dev set too (``summary["curve"]``)."""
    evaluate = evaluate and is_main_process()
    check_stop_after(stop_after)
    run = open_run(recipe, RunFolder(out), backend, resume=resume, evaluate=evaluate, report_to=report_to)
    warm_start(run)
    if stop_after == "sft":
        return close_run(run)
    if evaluate:
        evaluate_before(run)
    train_rft(run)
    if stop_after == "rft":
        return close_run(run)
    train_grpo(run)
    if merge:
        backend.merge(run.folder.adapter, run.folder.merged)
    if evaluate:
        evaluate_after(run, curve=curve)
    if test and is_main_process():
        evaluate_test_sets(run)
    return close_run(run)


def evaluate_pair(
    recipe: Recipe,
    before: Path | None,
    after: Path,
    tasks: list[Task],
    out: Path,
    backend: str | Any | None = None,
) -> dict[str, Any]:
    """Two adapters of ``recipe``'s model (``before`` None: the base model) on the same ``tasks``, greedy
    with the recipe's evaluation loop and backend, into ``out/before`` and ``out/after`` (each evaluated
    once: a folder with results is kept); returns the paired comparison of every metric (``compare``).
    What ``--test`` does for each test set."""
    made = backend is None or isinstance(backend, str)
    if made:
        backend = make_backend(choose_backend(recipe, backend), recipe)
    loop = eval_loop_config(recipe)
    try:
        evaluate_adapter(backend, before, "before", tasks, out / "before", loop)
        evaluate_adapter(backend, after, "after", tasks, out / "after", loop)
    finally:
        if made:
            backend.close()
    return compare(out / "before", out / "after")
