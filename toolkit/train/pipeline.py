"""One training run from a recipe: tasks -> (SFT warm start) -> held-out eval -> GRPO -> held-out eval
-> paired comparison. The stages are written once (``run_stages``); a backend
(``toolkit.train.backends``: transformers + PEFT; ``toolkit.train.unsloth_backend``: Unsloth + vLLM on
one GPU) supplies model loading, generation and weight sync. ``mcp-rl train --backend`` picks it.

Run folder layout (``out``):

- ``recipe.json``: the recipe as run (after overrides). ``resume`` continues with it: a recipe that
  differs is refused (naming the keys) unless ``allow_recipe_change``, and an allowed change is recorded
  in ``summary.json``'s ``recipe_changes`` (when, what, and which outputs the old recipe had made)
- ``tasks/``: tasks synthesised for the run when the recipe names no task files
- ``sft/adapter/``: the warm-start LoRA adapter
- ``grpo/checkpoint-N/``: TRL checkpoints (adapter, optimiser, scheduler, RNG): ``--resume`` continues
- ``adapter/``: the final LoRA adapter (``merged/`` too with ``merge=True``)
- ``metrics.jsonl``: one JSON object per logged step (``step``, ``phase``: sft | grpo, TRL's metrics)
- ``eval/sft/``, ``eval/grpo/``: ``toolkit.eval.run_eval`` folders; ``summary.json``: the comparison
- ``tasks/test-seed<S>/``, ``eval/test-seed<S>/{sft,grpo}/``: with ``test=True``, each of the recipe's
  ``eval.test_sets`` (tasks from a seed no run was tuned on), evaluated once; ``summary.json``'s ``test``
- ``eval/curve/step-N/``: with ``curve=True``, every kept GRPO checkpoint evaluated on the dev set, the
  learning curve in ``summary.json``'s ``curve`` (keep them with ``grpo.save_steps`` and
  ``grpo.save_total_limit: null``)

Every stage is skipped on ``resume`` when its output exists, so a killed run picks up where it stopped.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import time
from pathlib import Path
from typing import Any

from toolkit.records import RecordError, Task, dumps, read_jsonl, write_jsonl
from toolkit.train.config import Recipe, synth_config

PRIMARY_METRIC = "pass@0.75"  # share of held-out tasks with at least 3/4 of the essential rubric items


def set_threads(threads: int | None) -> None:
    """Torch CPU threads (``--threads`` or ``$MCP_RL_THREADS``). On a shared 2-core machine two
    threads per process oversubscribe the cores: measured 12x slower than one thread under load."""
    n = threads or int(os.environ.get("MCP_RL_THREADS", "0") or 0)
    if n > 0:
        import torch

        torch.set_num_threads(n)


def is_main_process() -> bool:
    """Rank 0 under ``accelerate launch`` / torchrun (read from the environment: the process group
    does not exist yet when the run starts)."""
    return int(os.environ.get("RANK", "0")) == 0


def _log(msg: str) -> None:
    if not is_main_process():
        return
    print(f"[mcp-rl train {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---- tasks -------------------------------------------------------------------------------------------


def synthesize_tasks(settings: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """Generate train/eval tasks with ``toolkit.synth`` (deterministic for a seed) into ``out_dir``."""
    from toolkit.synth.generate import generate

    result = generate(synth_config(settings))
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(out_dir / "train.jsonl", result.train)
    write_jsonl(out_dir / "eval.jsonl", result.eval)
    (out_dir / "summary.json").write_text(dumps(result.summary, indent=1, sort_keys=True) + "\n")
    return out_dir / "train.jsonl", out_dir / "eval.jsonl"


BFCL_PREFIX = "bfcl:"  # e.g. tasks: "bfcl:multi_turn_base" (BFCL's held-out split is the eval split)


def resolve_task_files(recipe: Recipe, out: Path) -> tuple[str | Path, str | Path | None]:
    """Where the train and eval tasks come from: the recipe's files, a ``bfcl:<category>`` source,
    or (when the recipe names no train file and has a ``synth`` section) tasks generated once into
    ``out/tasks``. A named file that is missing is an error, not a reason to train on other tasks."""
    if recipe.tasks and recipe.tasks.startswith(BFCL_PREFIX):
        return recipe.tasks, recipe.eval_tasks or recipe.tasks
    train = Path(recipe.tasks) if recipe.tasks else None
    evalf = Path(recipe.eval_tasks) if recipe.eval_tasks else None
    if train is not None:
        for path in (train, evalf):
            if path is not None and not path.is_file():
                raise FileNotFoundError(f"{path}: no such tasks file")
        return train, evalf
    if recipe.synth:
        cached = out / "tasks"
        if (cached / "train.jsonl").exists() and (cached / "eval.jsonl").exists():
            return cached / "train.jsonl", cached / "eval.jsonl"
        _log(f"synthesising tasks into {cached} ({recipe.synth})")
        return synthesize_tasks(recipe.synth, cached)
    raise FileNotFoundError(f"{recipe.tasks}: no tasks; run `mcp-rl synth --out ...` or pass --tasks")


def check_task_file(source: str | Path | None, what: str) -> None:
    """A named tasks file exists, parses and holds tasks: checked before any stage runs, so a typo in
    ``--tasks`` is one line and not a run on other tasks. (``bfcl:`` sources are BFCL's own data.)"""
    if not source or str(source).startswith(BFCL_PREFIX):
        return
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"{what} {path}: no such file")
    if not read_jsonl(path, Task):  # a bad line raises RecordError naming the file and the line
        raise RecordError(f"{what} {path}: no tasks in the file (it is empty)")


def read_tasks(source: str | Path, split: str) -> list[Task]:
    """Tasks of one split from a JSONL file or a ``bfcl:<category>`` source."""
    if str(source).startswith(BFCL_PREFIX):
        from toolkit.synth.bfcl_tasks import load_bfcl_tasks

        return load_bfcl_tasks(str(source)[len(BFCL_PREFIX) :], split=split)
    tasks = read_jsonl(source, Task)
    if split == "eval":
        return [t for t in tasks if t.split == "eval"]
    return [t for t in tasks if t.split != "eval"]


def load_train_tasks(recipe: Recipe, source: str | Path) -> list[Task]:
    """The training tasks, filtered by the recipe (kinds, first user turn only, count)."""
    from toolkit.train.grpo import first_turn_only

    tasks = read_tasks(source, "train")
    if recipe.task_kinds:
        tasks = _of_kinds(tasks, recipe.task_kinds)
    if recipe.rollout.get("first_turn_only"):
        tasks = [first_turn_only(t) for t in tasks]
    return tasks[: recipe.max_tasks] if recipe.max_tasks else tasks


def grpo_tasks(recipe: Recipe, tasks: list[Task]) -> list[Task]:
    """The training tasks GRPO samples from: those of ``grpo_task_kinds`` when the recipe sets it.

    A kind the warm-started model never solves gives groups with one reward for all episodes: zero
    advantage, no gradient, a step spent for nothing (README, "The CPU proof")."""
    if not recipe.grpo_task_kinds:
        return tasks
    chosen = _of_kinds(tasks, recipe.grpo_task_kinds)
    if not chosen:
        raise ValueError(
            f"grpo_task_kinds {sorted(recipe.grpo_task_kinds)}: none of the {len(tasks)} training tasks"
            " has such a kind"
        )
    return chosen


def screened_grpo_pool(
    recipe: Recipe, backend: Any, warm: Path | None, tasks: list[Task], loop: Any, folder: Path, resume: bool
) -> tuple[list[Task], dict[str, Any], dict[str, Any] | None]:
    """GRPO's tasks and ``grpo_sampling`` section, screened by the warm start when the recipe sets
    ``grpo_sampling.prescreen_samples`` (``toolkit.train.prescreen``): the kept tasks, the section with
    ``kind_weights`` cut to the kinds still present, and the screen's summary (None when off). The
    screen is written to ``folder/pool.jsonl`` and read back on ``resume``."""
    from toolkit.agent.loop import rollout
    from toolkit.train.batching import SamplingConfig, reward_scorer, task_kind
    from toolkit.train.grpo import reward_funcs
    from toolkit.train.prescreen import POOL_FILE, PoolScreen, screen_pool, screened_tasks

    pool = grpo_tasks(recipe, tasks)
    config = SamplingConfig.from_recipe(recipe.grpo_sampling)
    sampling = dict(recipe.grpo_sampling)
    if not config.prescreen_samples:
        return pool, sampling, None
    weights = config.kind_weights
    if weights is not None:  # a kind GRPO never samples is not worth screening
        pool = [t for t in pool if weights.get(task_kind(t), 0) > 0]
    path = folder / POOL_FILE
    if resume and path.exists():
        screen = PoolScreen.read(path)
    else:
        funcs = reward_funcs(recipe.reward, recipe.reward_config)
        policy = backend.eval_policy(warm, "prescreen")
        try:
            screen = screen_pool(
                pool,
                lambda ts, n: rollout(ts, policy, loop, n=n),
                reward_scorer(
                    funcs, recipe.grpo.get("reward_weights") or [1.0] * len(funcs), config.spread_on
                ),
                samples=config.prescreen_samples,
                min_spread=config.min_spread,
                spread=config.spread,
            )
        finally:
            backend.release()
        screen.write(path)
    chosen = screened_tasks(pool, screen)
    if weights is not None:
        present = {task_kind(t) for t in chosen}
        sampling["kind_weights"] = {k: weights[k] for k in sorted(present)}  # pool: weight > 0 only
    return chosen, sampling, screen.summary()


def _of_kinds(tasks: list[Task], kinds: list[str]) -> list[Task]:
    wanted = set(kinds)
    return [t for t in tasks if t.metadata.get("kind") in wanted]


def test_sets(recipe: Recipe, out: Path) -> list[tuple[int, list[Task]]]:
    """The recipe's ``eval.test_sets`` as (seed, tasks) (``held_out_set`` for each)."""
    specs = recipe.eval.get("test_sets") or []
    return [(int(s["seed"]), held_out_set(recipe, int(s["seed"]), int(s.get("n", 200)), out)) for s in specs]


def held_out_set(recipe: Recipe, seed: int, n: int, out: Path) -> list[Task]:
    """The eval split of the recipe's ``synth`` settings generated from ``seed`` (held-out templates as the
    dev set, new instances), written once into ``out/tasks/test-seed<S>``, the first ``n``. Tasks whose
    prompt is also one of the run's training prompts are dropped (``resolve_task_files``: the run's own,
    or generated into ``out/tasks`` from the same settings, so the same tasks)."""
    if not recipe.synth:
        raise ValueError("a synthesized test set needs the recipe's synth section")
    train_prompts = {t.prompt for t in read_tasks(resolve_task_files(recipe, out)[0], "train")}
    folder = out / "tasks" / f"test-seed{seed}"
    if not (folder / "eval.jsonl").exists():
        _log(f"synthesising test set seed {seed} ({n} tasks) into {folder}")
        synthesize_tasks({**recipe.synth, "seed": seed, "n_eval": n}, folder)
    tasks = [t for t in read_tasks(folder / "eval.jsonl", "eval") if t.prompt not in train_prompts]
    return tasks[:n]


# ---- evaluation ----------------------------------------------------------------------------------------


def evaluate_policy(policy: Any, tasks: list[Task], out_dir: Path, label: str, loop: Any) -> dict:
    """Held-out evaluation of a policy (greedy with the eval loop) through ``toolkit.eval.run_eval``."""
    from toolkit.agent.loop import rollout
    from toolkit.eval.suites import run_eval

    suite = "bfcl-base" if tasks and "bfcl" in tasks[0].metadata else "kit-eval"  # its scorers
    return run_eval(
        label,
        suite,
        out_dir,
        tasks=tasks,
        rollout=lambda ts: rollout(ts, policy, loop),
        label=label,
        loop_config={
            k: v for k, v in loop.__dict__.items() if isinstance(v, (int, float, str, bool, type(None)))
        },
    )


def eval_loop_config(recipe: Recipe) -> Any:
    """The held-out evaluation's agent loop: the recipe's rollout settings, greedy, with ``eval.rollout``."""
    return recipe.loop_config(temperature=0.0, **recipe.eval.get("rollout", {}))


def evaluate_adapter(
    backend: Any, adapter: Path | None, label: str, tasks: list[Task], folder: Path, loop: Any
) -> None:
    """Evaluate the base model plus ``adapter`` on ``tasks`` into ``folder``, once: a folder that holds
    results already is kept."""
    if (folder / "results.json").exists():
        return
    res = evaluate_policy(backend.eval_policy(adapter, label), tasks, folder, label, loop)
    backend.release()
    _log(f"{folder}, {label}: {_headline(res)}")


def evaluate_pair(
    recipe: Recipe,
    before: Path | None,
    after: Path,
    tasks: list[Task],
    out: Path,
    backend: str | Any | None = None,
) -> dict[str, Any]:
    """Two adapters of ``recipe``'s model (``before`` None: the base model) on the same ``tasks``, greedy
    with the recipe's evaluation loop and backend, into ``out/before`` and ``out/after``; returns the
    paired comparison of every metric (``compare``). What ``--test`` does for each test set."""
    if backend is None or isinstance(backend, str):
        backend = make_backend(choose_backend(recipe, backend), recipe)
    loop = eval_loop_config(recipe)
    evaluate_adapter(backend, before, "before", tasks, out / "before", loop)
    evaluate_adapter(backend, after, "after", tasks, out / "after", loop)
    return compare(out / "before", out / "after")


def evaluate_model(
    model: Any, tokenizer: Any, tasks: list[Task], out_dir: Path, label: str, loop: Any
) -> dict:
    """``evaluate_policy`` for an in-memory transformers model."""
    from toolkit.agent.policies import TransformersPolicy

    model.eval()
    return evaluate_policy(TransformersPolicy(model, tokenizer, name=label), tasks, out_dir, label, loop)


def checkpoint_steps(folder: Path) -> list[tuple[int, Path]]:
    """``(step, folder)`` of the TRL checkpoints in ``folder`` that hold an adapter, by step."""
    found = []
    for ckpt in folder.glob("checkpoint-*"):
        step = ckpt.name.removeprefix("checkpoint-")
        if step.isdigit() and (ckpt / "adapter_config.json").is_file():
            found.append((int(step), ckpt))
    return sorted(found)


def learning_curve(
    backend: Any,
    out: Path,
    eval_tasks: list[Task],
    eval_loop: Any,
    before_dir: Path,
    after_dir: Path,
    last_step: int,
) -> list[dict[str, Any]]:
    """The dev-set metrics along GRPO: the warm start (step 0, ``before_dir``), every kept checkpoint in
    ``out/grpo`` before ``last_step`` (evaluated into ``out/eval/curve/step-N``, read back when done
    before) and the final adapter (``after_dir``). Each row: the step, then every metric's paired
    comparison against step 0 on the same tasks."""
    points = [(0, before_dir)]
    for step, ckpt in checkpoint_steps(out / "grpo"):
        if not 0 < step < last_step:
            continue
        folder = out / "eval" / "curve" / f"step-{step}"
        evaluate_adapter(backend, ckpt, f"grpo-step{step}", eval_tasks, folder, eval_loop)  # once
        points.append((step, folder))
    points.append((last_step, after_dir))
    return [
        {"step": step, "folder": str(folder.relative_to(out)), "metrics": compare(before_dir, folder)}
        for step, folder in points
    ]


def compare(before_dir: Path, after_dir: Path) -> dict[str, Any]:
    """Paired bootstrap (same tasks) of every metric: after - before with its 95% interval."""
    from toolkit.eval.metrics import compare_folders

    return {name: d.to_dict() for name, d in compare_folders(before_dir, after_dir).items()}


# ---- the run -------------------------------------------------------------------------------------------


def last_checkpoint(folder: Path) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(folder)) if folder.is_dir() else None


def read_run_recipe(out: Path) -> Recipe:
    """The recipe a run was made with (``out/recipe.json``); a missing or broken file names itself."""
    from toolkit.train.config import RecipeError, load_recipe

    path = Path(out) / "recipe.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no such file, so {out} holds no run to resume; name a recipe with --recipe to start one"
        )
    try:
        return load_recipe(path)
    except Exception as exc:  # cut, emptied or edited by hand
        raise RecipeError(f"{path}: not a readable recipe: {type(exc).__name__}: {exc}") from exc


def resumed_recipe(recipe: Recipe, out: Path, allow_change: bool) -> tuple[Recipe, dict[str, Any]]:
    """The recipe a resumed run continues with, and what changed (``config.recipe_changes``).

    The outputs a run keeps (tasks, adapters, evaluations) were made with its ``recipe.json``, and a
    resumed run reuses them; continuing with another recipe would mix the two and write a record that
    claims the new one. So a differing recipe is refused unless ``allow_change``; the same settings
    continue the run's own recipe (its name and description)."""
    from toolkit.train.config import RecipeChangeError, describe_changes, recipe_changes

    stored = read_run_recipe(out)
    changes = recipe_changes(stored, recipe)
    if not changes:
        return stored, {}
    if not allow_change:
        raise RecipeChangeError(
            f"{out / 'recipe.json'}: the run was made with another recipe: {describe_changes(changes)}."
            " Its tasks, adapters and evaluations were made with recipe.json's settings. Resume without"
            " --recipe/--set to continue it as it was, use another --out for the new recipe, or pass"
            " --allow-recipe-change (allow_recipe_change=True) to continue with the change recorded"
        )
    _log(
        f"resuming with a changed recipe (allowed; recorded in summary.json): {describe_changes(changes)};"
        f" kept from the earlier recipe: {', '.join(run_outputs(out)) or 'nothing'}"
    )
    return recipe, changes


def run_outputs(out: Path) -> list[str]:
    """The outputs a resumed run reuses, as found: tasks, warm start, evaluations, last checkpoint, adapter."""
    made = [p for p in ("tasks/train.jsonl", "sft/adapter", "eval/base", "eval/sft") if (out / p).exists()]
    made += [f"grpo/checkpoint-{step}" for step, _ in checkpoint_steps(out / "grpo")[-1:]]
    return made + [p for p in ("adapter", "eval/grpo") if (out / p).exists()]


def record_recipe_change(out: Path, changes: dict[str, Any]) -> None:
    """Append an allowed change to ``summary.json``'s ``recipe_changes`` now (a run killed later keeps it):
    when, the changed keys (old and new values), and the outputs the earlier recipe had made."""
    from datetime import UTC, datetime

    path = out / "summary.json"
    summary = json.loads(path.read_text()) if path.exists() else {}
    summary.setdefault("recipe_changes", []).append(
        {
            "time": datetime.now(UTC).isoformat(timespec="seconds"),
            "changes": changes,
            "outputs_before": run_outputs(out),
        }
    )
    path.write_text(dumps(summary, indent=1, sort_keys=True) + "\n")


# name -> (module, class): a backend supplies model loading, generation and weight sync (backends.py)
BACKENDS = {
    "cpu": ("toolkit.train.backends", "TransformersBackend"),
    "gpu": ("toolkit.train.unsloth_backend", "UnslothBackend"),
    "vllm": ("toolkit.train.vllm_backend", "VLLMBackend"),
    "vllm-server": ("toolkit.train.vllm_server_backend", "VLLMServerBackend"),
}


def make_backend(name: str, recipe: Recipe, **options: Any) -> Any:
    import importlib

    module, cls = BACKENDS[name]
    return getattr(importlib.import_module(module), cls)(recipe, **options)


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
        _log("the recipe asks for the vllm backend, and vLLM is not installed: using cpu")
        requested = "cpu"
    chosen = detect_backend(requested)
    if chosen == "gpu":  # Unsloth patches TRL's trainers only when imported before TRL
        from toolkit.train.unsloth_backend import import_unsloth

        import_unsloth()
    return chosen


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
) -> dict[str, Any]:
    """Run a recipe end to end; returns the run summary (also written to ``out/summary.json``).

    ``backend``: ``auto`` | ``cpu`` | ``gpu`` | ``vllm`` | ``vllm-server`` (default: the recipe's; a
    recipe's ``vllm`` falls back to ``cpu`` where vLLM is not installed), or a backend object.
    ``vllm_url``: the OpenAI root of the vLLM server the ``vllm-server`` backend generates on.
    ``resume`` of a run whose ``recipe.json`` differs from ``recipe`` raises ``RecipeChangeError``
    naming the keys, unless ``allow_recipe_change`` (then the change is recorded in ``summary.json``'s
    ``recipe_changes``)."""
    from toolkit.models import check_model_name
    from toolkit.train.config import check_recipe_types, schedule_warnings
    from toolkit.train.device import backend_words, machine_line, probe

    out = Path(out_dir)
    if is_main_process():
        if not resume and (out / "recipe.json").exists():
            raise FileExistsError(
                f"{out} holds a run already: pass --resume to continue it, or another --out"
            )
    changes: dict[str, Any] = {}
    if resume and (out / "recipe.json").exists():
        recipe, changes = resumed_recipe(recipe, out, allow_recipe_change)
    check_model_name(recipe.model)  # an unknown name fails in one line, before any stage
    chosen = choose_backend(recipe, backend) if backend is None or isinstance(backend, str) else None
    check_recipe_types(recipe)  # a bad key or value fails now, not after the warm start (imports TRL)
    check_task_file(recipe.tasks, f"recipe {recipe.name!r}: tasks")
    check_task_file(recipe.eval_tasks, f"recipe {recipe.name!r}: eval_tasks")
    for warning in schedule_warnings(recipe):
        _log(f"warning: {warning}")
    if chosen is not None:
        from toolkit.models import resolve_dtype_name

        dtype = resolve_dtype_name(recipe.dtype) or "fp32"
        info = probe()
        _log(f"recipe {recipe.name}: model {recipe.model}, dtype {dtype}, backend {chosen}")
        _log(f"machine: {machine_line(info)}")
        _log(backend_words(chosen, info, vllm_url))
        options = {"url": vllm_url} if chosen == "vllm-server" else {}
        backend = make_backend(chosen, recipe, **options)
    if is_main_process():
        out.mkdir(parents=True, exist_ok=True)
        if changes:
            record_recipe_change(out, changes)
        # written whole or not at all: the other processes of a resumed run read it to compare
        tmp = out / f".recipe.json.{os.getpid()}"
        tmp.write_text(json.dumps(recipe.to_dict(), indent=1, sort_keys=True) + "\n")
        os.replace(tmp, out / "recipe.json")
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
    )


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
) -> dict[str, Any]:
    """The stages, once for every backend (``toolkit.train.backends``); each is skipped on ``resume``
    when its output exists. ``test``: after training, evaluate the warm start and the GRPO adapter on
    each of the recipe's ``eval.test_sets`` (``summary["test"]``, keyed by seed). ``curve`` (with
    ``evaluate``): every kept GRPO checkpoint on the dev set too (``summary["curve"]``)."""
    from toolkit.train.callbacks import MetricsJsonlCallback
    from toolkit.train.config import ref_sync_settings
    from toolkit.train.grpo import build_grpo_trainer
    from toolkit.train.sft import run_sft, warm_start_rows

    timings: dict[str, float] = {}
    summary: dict[str, Any] = {}
    if resume and (out / "summary.json").exists():  # a resumed run keeps what it reported before
        summary = json.loads((out / "summary.json").read_text())
        timings = dict(summary.get("timings_s") or {})
    summary.update(recipe=recipe.name, model=recipe.model, out=str(out), backend=backend.name)
    train_file, eval_file = resolve_task_files(recipe, out)
    tasks = load_train_tasks(recipe, train_file)
    eval_tasks: list[Task] = []
    evaluate = evaluate and is_main_process()  # one process evaluates; the others only train
    if evaluate:
        if eval_file is None:
            raise FileNotFoundError("--evaluate needs eval tasks (the recipe's eval_tasks file)")
        eval_tasks = read_tasks(eval_file, "eval")
        eval_tasks = eval_tasks[: recipe.eval.get("n_tasks") or len(eval_tasks)]
    _log(f"{len(tasks)} train tasks from {train_file}; {len(eval_tasks)} held-out tasks")
    loop = recipe.loop_config()
    eval_loop = eval_loop_config(recipe)
    metrics_path = out / "metrics.jsonl"

    # 1. SFT warm start
    sft_adapter = out / "sft" / "adapter"
    sft_steps = 0
    if recipe.sft is not None and not (resume and (sft_adapter / "adapter_config.json").exists()):
        t0 = time.time()
        n_examples = recipe.sft.get("max_examples") or len(tasks)
        model, tokenizer, lora_config = backend.sft_model()
        rows, fit = warm_start_rows(
            tasks[:n_examples],
            loop,
            tokenizer,
            max_length=recipe.sft.get("max_length"),
            one_call_per_turn=bool(recipe.sft.get("one_call_per_turn")),
            drop_unfit=bool(recipe.sft.get("drop_unfit_gold")),
        )
        summary["sft_gold_fit"] = fit.to_dict()
        _log(f"SFT warm start on {len(rows)} gold trajectories (of {n_examples} tasks); {fit.summary()}")
        sft_config = backend.sft_config(out / "sft", report_to)
        checkpoint = last_checkpoint(out / "sft") if resume else None  # SFT saves with sft.save_steps
        trainer = run_sft(
            model,
            tokenizer,
            rows,
            sft_config,
            lora_config,
            [MetricsJsonlCallback(metrics_path, "sft")],
            resume_from_checkpoint=checkpoint,
        )
        trainer.save_model(str(sft_adapter))
        sft_steps = trainer.state.global_step
        timings["sft_s"] = time.time() - t0
        del trainer, model
        backend.release()
    elif recipe.sft is not None:
        sft_steps = int(recipe.sft.get("max_steps", 0) or 0)
        _log(f"resume: warm-start adapter found in {sft_adapter}")
    warm = sft_adapter if recipe.sft is not None else None

    # 2. held-out evaluation of the warm-started (or base) model
    before_dir = out / "eval" / ("sft" if warm else "base")
    if evaluate and not (resume and (before_dir / "results.json").exists()):
        t0 = time.time()
        label = "sft-only" if warm else "base"
        res = evaluate_policy(backend.eval_policy(warm, label), eval_tasks, before_dir, label, eval_loop)
        timings["eval_before_s"] = time.time() - t0
        _log(f"held-out before GRPO: {_headline(res)}")
        backend.release()

    # 3. GRPO
    final_adapter = out / "adapter"
    if not (resume and (final_adapter / "adapter_config.json").exists()):
        t0 = time.time()
        pool, sampling, screened = screened_grpo_pool(
            recipe, backend, warm, tasks, loop, out / "grpo", resume
        )
        if screened is not None:
            summary["grpo_pool"] = screened
            timings.setdefault("grpo_prescreen_s", time.time() - t0)
            _log(
                f"GRPO pool screened by the warm start: {screened['kept']} of {screened['screened']} tasks kept"
            )
        model, tokenizer = backend.grpo_model(warm)
        grpo_config = backend.grpo_config(out / "grpo", report_to)
        trainer = build_grpo_trainer(
            model,
            tokenizer,
            pool,
            grpo_config,
            loop,
            reward=recipe.reward,
            reward_config=recipe.reward_config,
            policy_factory=backend.rollout_policy,
            sampler_correction=getattr(backend, "samples_off_policy", False),
            callbacks=[MetricsJsonlCallback(metrics_path, "grpo", step_offset=sft_steps)],
            ref_sync=ref_sync_settings(recipe),
            sampling=sampling,
        )
        checkpoint = last_checkpoint(out / "grpo") if resume else None
        if checkpoint:
            _log(f"resuming GRPO from {checkpoint}")
        trainer.train(resume_from_checkpoint=checkpoint)
        trainer.save_model(str(final_adapter))
        tokenizer.save_pretrained(str(final_adapter))
        timings["grpo_s"] = time.time() - t0
        summary["grpo_steps"] = trainer.state.global_step
        del trainer, model
        backend.release()
    if merge:
        backend.merge(final_adapter, out / "merged")

    # 4. held-out evaluation after GRPO, and the paired comparison
    if evaluate:
        after_dir = out / "eval" / "grpo"
        if not (resume and (after_dir / "results.json").exists()):
            t0 = time.time()
            res = evaluate_policy(
                backend.eval_policy(final_adapter, "grpo"), eval_tasks, after_dir, "grpo", eval_loop
            )
            backend.release()
            timings["eval_after_s"] = time.time() - t0
            _log(f"held-out after GRPO: {_headline(res)}")
        summary["comparison"] = compare(before_dir, after_dir)
        _log_primary("held-out (dev)", summary["comparison"])
        if curve:
            last_step = int(summary.get("grpo_steps") or recipe.grpo.get("max_steps") or 0)
            summary["curve"] = learning_curve(
                backend, out, eval_tasks, eval_loop, before_dir, after_dir, last_step
            )
            for row in summary["curve"]:
                _log_primary(f"learning curve, GRPO step {row['step']}", row["metrics"])
    # 5. the test sets: tasks from seeds no choice was tuned on, evaluated once with the frozen recipe
    if test and is_main_process():
        summary["test"] = {}
        for seed, test_tasks in test_sets(recipe, out):
            t0 = time.time()
            folder = out / "eval" / f"test-seed{seed}"
            for label, adapter in (("sft-only" if warm else "base", warm), ("grpo", final_adapter)):
                sub = folder / ("grpo" if label == "grpo" else before_dir.name)
                evaluate_adapter(backend, adapter, label, test_tasks, sub, eval_loop)  # once: kept after
            comparison = compare(folder / before_dir.name, folder / "grpo")
            summary["test"][str(seed)] = {"n_tasks": len(test_tasks), "comparison": comparison}
            timings[f"test_seed{seed}_s"] = time.time() - t0
            _log_primary(f"test set seed {seed}", comparison)
    summary["timings_s"] = {k: round(v, 1) for k, v in timings.items()}
    if is_main_process():
        (out / "summary.json").write_text(dumps(summary, indent=1, sort_keys=True) + "\n")
        for line in closing_lines(recipe, out, eval_file, evaluate):
            _log(line)
    return summary


def closing_lines(recipe: Recipe, out: Path, eval_file: str | Path | None, evaluated: bool) -> list[str]:
    """Where the run's adapter and records are, and the command that evaluates the adapter on its own
    (``mcp-rl eval`` with the run's recipe, so it prompts and decodes as the run's evaluation does)."""
    where = f"adapter: {out / 'adapter'}"
    if recipe.sft is not None:
        where += f" (warm start: {out / 'sft' / 'adapter'})"
    records = f"metrics: {out / 'metrics.jsonl'}; summary: {out / 'summary.json'}"
    if evaluated:
        records += f"; held-out results: {out / 'eval'}"
    q = shlex.quote
    if eval_file and str(eval_file).startswith(BFCL_PREFIX):  # multi_turn_long_context: bfcl-long-context
        category = str(eval_file)[len(BFCL_PREFIX) :].removeprefix("multi_turn_")
        suite = f"--suite bfcl-{category.replace('_', '-')}"
    else:
        suite = "--suite kit-eval" + (f" --tasks {q(str(eval_file))}" if eval_file else "")
    command = (
        f"mcp-rl eval --policy {q(recipe.model)} --adapter {q(str(out / 'adapter'))} "
        f"--recipe {q(str(out / 'recipe.json'))} {suite} --out {q(str(out / 'eval' / 'adapter'))}"
    )
    return [where, records, f"next: {command}"]


def _log_primary(what: str, comparison: dict[str, Any]) -> None:
    primary = comparison.get(PRIMARY_METRIC)
    if primary:
        _log(
            f"{what}: {PRIMARY_METRIC} {primary['before']:.3f} -> {primary['after']:.3f} "
            f"(diff {primary['diff']:+.3f}, paired 95% CI [{primary['ci_low']:+.3f}, {primary['ci_high']:+.3f}]: "
            f"{'zero is outside the interval' if primary['outside_ci'] else 'zero is INSIDE the interval'})"
        )


def _headline(result: dict[str, Any]) -> str:
    metrics = result.get("aggregate", {}).get("metrics", {})
    parts = []
    for name in ("coverage", PRIMARY_METRIC, "pass@0.50", "finish_rate"):
        m = metrics.get(name)
        if m:
            parts.append(f"{name} {m['value']:.3f} [{m['ci_low']:.3f}, {m['ci_high']:.3f}]")
    return "; ".join(parts) or json.dumps(metrics)[:200]
