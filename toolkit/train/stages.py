"""The stages of a run, each explicit and resumable: (1) the SFT warm start, (2) the held-out evaluation
before GRPO, (2b) the rejection-sampling round when the recipe asks (``rft``), (3) GRPO, (4) the
evaluation after GRPO with the paired comparison (and the learning curve), (5) the test sets.
``toolkit.train.pipeline.run_stages`` runs them in that order.

Each stage writes its outputs to the run folder (``toolkit.runs.RunFolder``) and is skipped by the one
resume rule (``toolkit.train.resume.done``): on ``resume``, a stage whose output marker exists is done.
Markers: the warm-start adapter, each evaluation's results, the RFT adapter (and its sampled episodes),
the GRPO adapter, the screened pool. A backend
(``toolkit.train.backends``) supplies model loading, generation and weight sync; every stage frees what it
loaded (``backend.release``) before the next."""

from __future__ import annotations

import json
import shlex
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.records import Task, dumps
from toolkit.runs import ADAPTER_MARKER, RunFolder, has_adapter
from toolkit.train.config import Recipe
from toolkit.train.resume import done, last_checkpoint
from toolkit.train.run_eval import (
    compare,
    eval_loop_config,
    evaluate_adapter,
    learning_curve,
    log_primary,
)
from toolkit.train.runlog import is_main_process, log
from toolkit.train.task_sources import (
    BFCL_PREFIX,
    grpo_tasks,
    load_train_tasks,
    read_tasks,
    resolve_task_files,
    test_sets,
)


@dataclass
class Run:
    """A run going through its stages: what every stage reads, and the summary and timings they report."""

    recipe: Recipe
    folder: RunFolder
    backend: Any
    resume: bool
    evaluate: bool  # the held-out dev evaluations (main process only)
    report_to: Any
    tasks: list[Task]
    eval_tasks: list[Task]
    eval_file: str | Path | None
    summary: dict[str, Any]
    timings: dict[str, float]
    loop: Any = None
    eval_loop: Any = None
    sft_steps: int = 0  # the GRPO step count in metrics.jsonl goes on from the warm start's (and RFT's)
    rft_adapter: Path | None = None  # set by the RFT round when it trained (or found) its adapter

    def done(self, marker: Path) -> bool:
        return done(marker, self.resume)

    @property
    def warm(self) -> Path | None:
        """The warm-start adapter GRPO starts from (None: the base model)."""
        return self.folder.sft_adapter if self.recipe.sft is not None else None

    @property
    def grpo_start(self) -> Path | None:
        """The adapter GRPO starts from: the RFT round's when it ran, else the warm start. The evaluations
        before GRPO stay the warm start's: the comparison measures what RFT and GRPO added together."""
        return self.rft_adapter or self.warm

    @property
    def before_label(self) -> str:
        return "sft-only" if self.warm else "base"

    def eval_before(self, test_seed: int | None = None) -> Path:
        return self.folder.eval_before(self.warm is not None, test_seed)


def open_run(
    recipe: Recipe, folder: RunFolder, backend: Any, *, resume: bool, evaluate: bool, report_to: Any
) -> Run:
    """The run's tasks and loops, and what it reported before when resumed (kept, then added to)."""
    summary: dict[str, Any] = {}
    timings: dict[str, float] = {}
    if done(folder.summary_file, resume):
        summary = json.loads(folder.summary_file.read_text())
        timings = dict(summary.get("timings_s") or {})
    summary.update(recipe=recipe.name, model=recipe.model, out=str(folder.root), backend=backend.name)
    train_file, eval_file = resolve_task_files(recipe, folder.root)
    tasks = load_train_tasks(recipe, train_file)
    eval_tasks: list[Task] = []
    if evaluate:
        if eval_file is None:
            raise FileNotFoundError("--evaluate needs eval tasks (the recipe's eval_tasks file)")
        eval_tasks = read_tasks(eval_file, "eval")
        eval_tasks = eval_tasks[: recipe.eval.get("n_tasks") or len(eval_tasks)]
    log(f"{len(tasks)} train tasks from {train_file}; {len(eval_tasks)} held-out tasks")
    return Run(
        recipe,
        folder,
        backend,
        resume,
        evaluate,
        report_to,
        tasks,
        eval_tasks,
        eval_file,
        summary,
        timings,
        loop=recipe.loop_config(),
        eval_loop=eval_loop_config(recipe),
    )


def warm_start(run: Run) -> None:
    """1. The SFT warm start on gold trajectories, into ``sft/adapter`` (none when the recipe has no sft; the
    recipe's ``warm_start`` adapter copied there instead of training one when it names one)."""
    from toolkit.train.callbacks import MetricsJsonlCallback
    from toolkit.train.sft import run_sft, warm_start_rows

    recipe, folder, backend = run.recipe, run.folder, run.backend
    if recipe.sft is None:
        return
    if run.done(folder.sft_adapter / ADAPTER_MARKER):
        run.sft_steps = int(recipe.sft.get("max_steps", 0) or 0)
        log(f"resume: warm-start adapter found in {folder.sft_adapter}")
        return
    if recipe.warm_start is not None:  # made before the run (issue 49: one frozen warm start, many seeds)
        shutil.copytree(recipe.warm_start, folder.sft_adapter, dirs_exist_ok=True)
        run.sft_steps = int(recipe.sft.get("max_steps", 0) or 0)
        run.summary["warm_start"] = str(recipe.warm_start)
        log(f"warm start: the adapter of {recipe.warm_start} ({run.sft_steps} SFT steps), not trained here")
        return
    t0 = time.time()
    n_examples = recipe.sft.get("max_examples") or len(run.tasks)
    model, tokenizer, lora_config = backend.sft_model()
    rows, fit = warm_start_rows(
        run.tasks[:n_examples],
        run.loop,
        tokenizer,
        max_length=recipe.sft.get("max_length"),
        one_call_per_turn=bool(recipe.sft.get("one_call_per_turn")),
        drop_unfit=bool(recipe.sft.get("drop_unfit_gold")),
    )
    run.summary["sft_gold_fit"] = fit.to_dict()
    log(f"SFT warm start on {len(rows)} gold trajectories (of {n_examples} tasks); {fit.summary()}")
    sft_config = backend.sft_config(folder.sft, run.report_to)
    checkpoint = last_checkpoint(folder.sft) if run.resume else None  # SFT saves with sft.save_steps
    trainer = run_sft(
        model,
        tokenizer,
        rows,
        sft_config,
        lora_config,
        [MetricsJsonlCallback(folder.metrics_file, "sft")],
        resume_from_checkpoint=checkpoint,
    )
    trainer.save_model(str(folder.sft_adapter))
    run.sft_steps = trainer.state.global_step
    run.timings["sft_s"] = time.time() - t0
    del trainer, model
    backend.release()


def evaluate_before(run: Run) -> None:
    """2. The held-out evaluation of the warm-started (or base) model, into ``eval/sft`` (``eval/base``)."""
    t0 = time.time()
    evaluated = evaluate_adapter(
        run.backend,
        run.warm,
        run.before_label,
        run.eval_tasks,
        run.eval_before(),
        run.eval_loop,
        run.resume,
        say="held-out before GRPO",
    )
    if evaluated is not None:
        run.timings["eval_before_s"] = time.time() - t0


def train_rft(run: Run) -> None:
    """2b. The rejection-sampling rounds (recipe section ``rft``, ``toolkit.train.rft``; nothing when off):
    the first train tasks sampled with the warm start through GRPO's agent loop (``rft/samples.jsonl``),
    the right-and-short episodes kept, the warm-start adapter fine-tuned on them with the warm start's
    masked SFT (loss on the model's own tokens) into ``rft/adapter``; with ``rft.rounds`` > 1 each later
    round samples with the previous round's adapter and fine-tunes it further (``rft-<k>/``). GRPO starts
    from the last round's adapter. ``summary.json``'s ``rft`` (``rft-<k>`` for round k): per kind, the
    tasks and episodes sampled, right and kept, and the steps. None kept: an error, or with
    ``if_none_kept: skip`` a line saying GRPO starts from the previous adapter."""
    from toolkit.train.rft import RftConfig

    config = RftConfig.from_section(run.recipe.rft)
    if not config.on:
        return
    start = run.warm
    for k in range(1, config.rounds + 1):
        adapter = train_rft_round(run, config, k, start)
        if adapter is None:
            return
        run.rft_adapter = start = adapter


def rft_round_names(k: int, before_label: str) -> tuple[str, str, str]:
    """Round k's key in ``summary.json`` (and ``timings_s``), and the words for the adapter it starts
    from: as the sampling line names it, and as the fine-tuning and skip lines do."""
    if k == 1:
        return "rft", f"the {before_label} adapter", "the warm start"
    return f"rft-{k}", f"round {k - 1}'s adapter", f"round {k - 1}'s adapter"


def train_rft_round(run: Run, config: Any, k: int, start: Path | None) -> Path | None:
    """Round ``k`` of the RFT rounds, from the ``start`` adapter (the warm start for the first); returns
    its adapter, or None when it kept nothing and ``if_none_kept`` is ``skip``."""
    from toolkit.train.callbacks import MetricsJsonlCallback
    from toolkit.train.config import rft_training_recipe, rft_training_section
    from toolkit.train.prescreen import sample_tasks
    from toolkit.train.rft import (
        keep_episodes,
        read_samples,
        rft_loop,
        rft_tasks,
        right_check,
        sample_in_parts,
        wait_for,
        write_samples,
    )
    from toolkit.train.sft import episode_rows, run_sft, template_reproduces, training_template

    recipe, backend = run.recipe, run.backend
    folder = run.folder.rft_round(k)
    key, start_words, start_name = rft_round_names(k, run.before_label)
    training = rft_training_section(recipe)
    if run.done(folder.adapter / ADAPTER_MARKER):
        run.sft_steps += int((run.summary.get(key) or {}).get("steps") or training.get("max_steps") or 0)
        log(f"resume: RFT adapter found in {folder.adapter}")
        return folder.adapter
    t0 = time.time()
    tasks, loop, n = rft_tasks(run.tasks, config), rft_loop(run.loop, config, k), config.num_generations
    samples = folder.samples_file
    if not is_main_process():  # the main process samples for every process: they train on the same rows
        wait_for(samples)
    if run.done(samples) or not is_main_process():
        trajs = read_samples(samples, tasks, n)
        log(f"resume: RFT samples read back from {samples}")
    else:
        round_words = f" (round {k} of {config.rounds})" if config.rounds > 1 else ""
        log(
            f"RFT{round_words}: sampling {len(tasks)} train tasks x {n} with {start_words} at"
            f" temperature {loop.temperature}"
        )
        trajs = sample_in_parts(
            lambda part, part_loop: sample_tasks(backend, start, "rft", part, part_loop, n),
            tasks,
            n,
            loop,
            folder.sample_parts,
            say=log,
        )
    keep = keep_episodes(tasks, trajs, n, right_check(config.correct_by), config)
    if is_main_process() and not samples.exists():
        write_samples(samples, trajs)
        shutil.rmtree(folder.sample_parts, ignore_errors=True)  # samples.jsonl holds them all now
    rows = episode_rows(keep.kept, max_length=training.get("max_length"))
    run.summary[key] = {**keep.summary(), "examples": len(rows)}
    log(f"RFT {keep.line()}")
    if not rows:
        what = f"no episode of {keep.total('sampled')} sampled ({keep.total('right')} right) was kept"
        if keep.kept:
            what = f"none of the {len(keep.kept)} episodes kept fits max_length {training.get('max_length')}"
        if config.if_none_kept == "error":
            raise ValueError(
                f"RFT: {what}: nothing to fine-tune on (more rft.num_generations or rft.max_tasks, another"
                f" rft.correct_by, or rft.if_none_kept: skip to go on to GRPO from {start_name})"
            )
        run.summary[key]["skipped"] = True
        log(f"RFT: {what}; rft.if_none_kept is skip: GRPO starts from {start_name}")
        return None
    model, tokenizer = backend.grpo_model(start)  # the round's starting adapter, trainable
    template = training_template(tokenizer)
    run.summary[key]["template_differs"] = sum(
        not template_reproduces(t, tokenizer, template) for t in keep.kept
    )
    log(
        f"RFT: fine-tuning {start_name} on {len(rows)} of its own episodes ({len(keep.kept) - len(rows)} over max_length left out)"
    )
    with backend_recipe(backend, rft_training_recipe(recipe)):  # the round's SFTConfig settings
        sft_config = backend.sft_config(folder.path, run.report_to)
    checkpoint = last_checkpoint(folder.path) if run.resume else None
    trainer = run_sft(
        model,
        tokenizer,
        rows,
        sft_config,
        None,  # the model carries the starting adapter, trained on
        [MetricsJsonlCallback(run.folder.metrics_file, "rft", step_offset=run.sft_steps)],
        resume_from_checkpoint=checkpoint,
        phase="rft",
    )
    trainer.save_model(str(folder.adapter))
    run.summary[key]["steps"] = trainer.state.global_step
    run.sft_steps += trainer.state.global_step
    run.timings[f"{key}_s"] = time.time() - t0
    write_summary(run)  # a run stopped later (in GRPO, on a machine that does not last) keeps the round's
    del trainer, model
    backend.release()
    return folder.adapter


@contextmanager
def backend_recipe(backend: Any, recipe: Recipe) -> Iterator[None]:
    """The backend reading ``recipe`` for as long as the block runs: the backends build a trainer's
    config from their recipe's section (``sft_config`` from ``sft``), the RFT round's from its own."""
    own = backend.recipe
    backend.recipe = recipe
    try:
        yield
    finally:
        backend.recipe = own


def train_grpo(run: Run) -> None:
    """3. GRPO from the warm start (or the RFT round's adapter, ``Run.grpo_start``), into ``adapter``; TRL's checkpoints in ``grpo`` (a resumed run continues
    from the last), the pool screened by the warm start in ``grpo/pool.jsonl`` when the recipe asks."""
    from toolkit.train.callbacks import MetricsJsonlCallback
    from toolkit.train.config import ref_sync_settings
    from toolkit.train.grpo import build_grpo_trainer

    recipe, folder, backend = run.recipe, run.folder, run.backend
    if run.done(folder.adapter / ADAPTER_MARKER):
        return
    t0 = time.time()
    pool, sampling, screened = screened_grpo_pool(
        recipe, backend, run.grpo_start, run.tasks, run.loop, folder.pool_file, run.resume
    )
    if screened is not None:
        run.summary["grpo_pool"] = screened
        run.timings.setdefault("grpo_prescreen_s", time.time() - t0)
        log(f"GRPO pool screened by the warm start: {screened['kept']} of {screened['screened']} tasks kept")
    model, tokenizer = backend.grpo_model(run.grpo_start)
    grpo_config = backend.grpo_config(folder.grpo, run.report_to)
    trainer = build_grpo_trainer(
        model,
        tokenizer,
        pool,
        grpo_config,
        run.loop,
        reward=recipe.reward,
        reward_config=recipe.reward_config,
        policy_factory=backend.rollout_policy,
        sampler_correction=getattr(backend, "samples_off_policy", False),
        callbacks=[MetricsJsonlCallback(folder.metrics_file, "grpo", step_offset=run.sft_steps)],
        ref_sync=ref_sync_settings(recipe),
        sampling=sampling,
        rollout_log=folder.rollouts_file,
    )
    checkpoint = last_checkpoint(folder.grpo) if run.resume else None
    if checkpoint:
        log(f"resuming GRPO from {checkpoint}")
    trainer.train(resume_from_checkpoint=checkpoint)
    trainer.save_model(str(folder.adapter))
    tokenizer.save_pretrained(str(folder.adapter))
    run.timings["grpo_s"] = time.time() - t0
    run.summary["grpo_steps"] = trainer.state.global_step
    del trainer, model
    backend.release()


def screened_grpo_pool(
    recipe: Recipe,
    backend: Any,
    warm: Path | None,
    tasks: list[Task],
    loop: Any,
    pool_file: Path,
    resume: bool,
) -> tuple[list[Task], dict[str, Any], dict[str, Any] | None]:
    """GRPO's tasks and ``grpo_sampling`` section, screened by the warm start when the recipe sets
    ``grpo_sampling.prescreen_samples`` (``toolkit.train.prescreen``): the kept tasks, the section with
    ``kind_weights`` cut to the kinds still present, and the screen's summary (None when off). The
    screen is written to ``pool_file`` and read back on ``resume``."""
    from toolkit.train.batching import SamplingConfig, reward_scorer, task_kind
    from toolkit.train.grpo import reward_funcs
    from toolkit.train.prescreen import PoolScreen, sample_tasks, screen_pool, screened_tasks

    pool = grpo_tasks(recipe, tasks)
    config = SamplingConfig.from_recipe(recipe.grpo_sampling)
    sampling = dict(recipe.grpo_sampling)
    if not config.prescreen_samples:
        return pool, sampling, None
    weights = config.kind_weights
    if weights is not None:  # a kind GRPO never samples is not worth screening
        pool = [t for t in pool if weights.get(task_kind(t), 0) > 0]
    if done(pool_file, resume):
        screen = PoolScreen.read(pool_file)
    else:
        funcs = reward_funcs(recipe.reward, recipe.reward_config)
        screen = screen_pool(
            pool,
            lambda ts, n: sample_tasks(backend, warm, "prescreen", ts, loop, n),
            reward_scorer(funcs, recipe.grpo.get("reward_weights") or [1.0] * len(funcs), config.spread_on),
            samples=config.prescreen_samples,
            min_spread=config.min_spread,
            spread=config.spread,
        )
        screen.write(pool_file)
    chosen = screened_tasks(pool, screen)
    if weights is not None:
        present = {task_kind(t) for t in chosen}
        sampling["kind_weights"] = {k: weights[k] for k in sorted(present)}  # pool: weight > 0 only
    return chosen, sampling, screen.summary()


def evaluate_after(run: Run, curve: bool) -> None:
    """4. The held-out evaluation of the GRPO adapter, into ``eval/grpo``, and the paired comparison with
    the evaluation before; ``curve``: every kept GRPO checkpoint too (``eval/curve/step-N``)."""
    t0 = time.time()
    after_dir = run.folder.eval_after()
    evaluated = evaluate_adapter(
        run.backend,
        run.folder.adapter,
        "grpo",
        run.eval_tasks,
        after_dir,
        run.eval_loop,
        run.resume,
        say="held-out after GRPO",
    )
    if evaluated is not None:
        run.timings["eval_after_s"] = time.time() - t0
    run.summary["comparison"] = compare(run.eval_before(), after_dir)
    log_primary("held-out (dev)", run.summary["comparison"])
    if curve:
        last_step = int(run.summary.get("grpo_steps") or run.recipe.grpo.get("max_steps") or 0)
        run.summary["curve"] = learning_curve(
            run.backend,
            run.folder,
            run.eval_tasks,
            run.eval_loop,
            run.eval_before(),
            after_dir,
            last_step,
            run.resume,
        )
        for row in run.summary["curve"]:
            log_primary(f"learning curve, GRPO step {row['step']}", row["metrics"])


def evaluate_test_sets(run: Run) -> None:
    """5. The test sets: tasks from seeds no choice was tuned on, evaluated once with the frozen recipe, the
    warm start and the GRPO adapter each into ``eval/test-seed<S>/``."""
    run.summary["test"] = {}
    for seed, test_tasks in test_sets(run.recipe, run.folder.root):
        t0 = time.time()
        before, after = run.eval_before(seed), run.folder.eval_after(seed)
        for label, adapter, folder in (
            (run.before_label, run.warm, before),
            ("grpo", run.folder.adapter, after),
        ):
            evaluate_adapter(run.backend, adapter, label, test_tasks, folder, run.eval_loop, run.resume)
        comparison = compare(before, after)
        run.summary["test"][str(seed)] = {"n_tasks": len(test_tasks), "comparison": comparison}
        run.timings[f"test_seed{seed}_s"] = time.time() - t0
        log_primary(f"test set seed {seed}", comparison)


def write_summary(run: Run) -> None:
    """``summary.json`` as the run stands, with its timings (the main process writes it): at the end, and
    after each RFT round, so that a run resumed after a stop (``--resume``, or a claim carried to another
    machine) reads back what its rounds kept and trained instead of reporting them empty."""
    run.summary["timings_s"] = {k: round(v, 1) for k, v in run.timings.items()}
    if is_main_process():
        run.folder.summary_file.write_text(dumps(run.summary, indent=1, sort_keys=True) + "\n")


def close_run(run: Run) -> dict[str, Any]:
    """The summary with the timings, written to ``summary.json``, and the closing lines."""
    write_summary(run)
    if is_main_process():
        for line in closing_lines(run.recipe, run.folder, run.eval_file, run.evaluate):
            log(line)
    return run.summary


def closing_lines(
    recipe: Recipe, folder: RunFolder, eval_file: str | Path | None, evaluated: bool
) -> list[str]:
    """Where the run's adapter and records are, and the command that evaluates the adapter on its own
    (``mcp-rl eval`` with the run's recipe, so it prompts and decodes as the run's evaluation does)."""
    from toolkit.train.rft import last_round_adapter

    adapter, rft_adapter = folder.adapter, last_round_adapter(folder, recipe.rft)
    if not has_adapter(adapter) and has_adapter(rft_adapter):  # stopped after the RFT rounds
        adapter = rft_adapter
    elif not has_adapter(adapter) and has_adapter(folder.sft_adapter):  # stopped after the warm start
        adapter = folder.sft_adapter
    where = f"adapter: {adapter}"
    if recipe.sft is not None and adapter != folder.sft_adapter:
        where += f" (warm start: {folder.sft_adapter})"
    if has_adapter(rft_adapter) and adapter != rft_adapter:
        where += f" (RFT round: {rft_adapter})"
    records = f"metrics: {folder.metrics_file}; summary: {folder.summary_file}"
    if evaluated:
        records += f"; held-out results: {folder.eval}"
    q = shlex.quote
    if eval_file and str(eval_file).startswith(BFCL_PREFIX):  # multi_turn_long_context: bfcl-long-context
        category = str(eval_file)[len(BFCL_PREFIX) :].removeprefix("multi_turn_")
        suite = f"--suite bfcl-{category.replace('_', '-')}"
    else:
        suite = "--suite kit-eval" + (f" --tasks {q(str(eval_file))}" if eval_file else "")
    command = (
        f"mcp-rl eval --policy {q(recipe.model)} --adapter {q(str(adapter))} "
        f"--recipe {q(str(folder.recipe_file))} {suite} --out {q(str(folder.eval_adapter))}"
    )
    return [where, records, f"next: {command}"]
