"""Where a run's tasks come from: the recipe's files, a ``bfcl:<category>`` source, or tasks synthesised
once into the run folder; the recipe's filters on them; and the test sets (tasks from seeds no run was
tuned on)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolkit.records import RecordError, Task, dumps, read_jsonl, write_jsonl
from toolkit.runs import RunFolder, TaskFolder
from toolkit.train.config import Recipe, synth_config
from toolkit.train.runlog import log

BFCL_PREFIX = "bfcl:"  # e.g. tasks: "bfcl:multi_turn_base" (BFCL's held-out split is the eval split)


def synthesize_tasks(settings: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """Generate train/eval tasks with ``toolkit.synth`` (deterministic for a seed) into ``out_dir``."""
    from toolkit.synth.generate import generate

    result = generate(synth_config(settings))
    folder = TaskFolder(Path(out_dir))
    folder.path.mkdir(parents=True, exist_ok=True)
    write_jsonl(folder.train, result.train)
    write_jsonl(folder.eval, result.eval)
    folder.summary.write_text(dumps(result.summary, indent=1, sort_keys=True) + "\n")
    return folder.train, folder.eval


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
        cached = RunFolder(out).tasks  # synthesised once: the same settings give the same tasks
        if cached.complete():
            return cached.train, cached.eval
        log(f"synthesising tasks into {cached.path} ({recipe.synth})")
        return synthesize_tasks(recipe.synth, cached.path)
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
    folder = RunFolder(out).test_tasks(seed)
    if not folder.eval.exists():
        log(f"synthesising test set seed {seed} ({n} tasks) into {folder.path}")
        synthesize_tasks({**recipe.synth, "seed": seed, "n_eval": n}, folder.path)
    tasks = [t for t in read_tasks(folder.eval, "eval") if t.prompt not in train_prompts]
    return tasks[:n]
