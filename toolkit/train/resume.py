"""Resuming a run: the one resume rule, and the recipe a resumed run continues with.

The rule (``done``): a stage is done, and a resumed run skips it, when the stage's output marker exists
in the run folder. A resumed run continues with the recipe in its ``recipe.json``: a differing recipe is
refused before any stage (``resumed_recipe``), so the outputs it finds were made with the recipe it runs;
an allowed change (``allow_recipe_change``) is recorded with the outputs kept from the earlier recipe.
Inside a stage, TRL's own checkpoints (``last_checkpoint``) let training continue mid-way."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from toolkit.records import dumps
from toolkit.runs import RunFolder
from toolkit.train.config import Recipe
from toolkit.train.runlog import log


def done(marker: Path, resume: bool) -> bool:
    """The resume rule: a stage whose output ``marker`` exists is done when the run is resumed."""
    return resume and marker.exists()


def last_checkpoint(folder: Path) -> str | None:
    """The last TRL checkpoint in a trainer's output ``folder`` (None: train from the start)."""
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(folder)) if folder.is_dir() else None


def read_run_recipe(out: Path) -> Recipe:
    """The recipe a run was made with (``out/recipe.json``); a missing or broken file names itself."""
    from toolkit.train.config import RecipeError, load_recipe

    path = RunFolder(out).recipe_file
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no such file, so {out} holds no run to resume; name a recipe with --recipe to start one"
        )
    try:
        return load_recipe(path)
    except Exception as exc:  # cut, emptied or edited by hand
        raise RecipeError(f"{path}: not a readable recipe: {type(exc).__name__}: {exc}") from exc


def write_run_recipe(run: RunFolder, recipe: Recipe) -> None:
    """``recipe.json``, written whole or not at all: the other processes of a resumed run read it to compare."""
    tmp = run.recipe_file.with_name(f".{run.recipe_file.name}.{os.getpid()}")
    tmp.write_text(json.dumps(recipe.to_dict(), indent=1, sort_keys=True) + "\n")
    os.replace(tmp, run.recipe_file)


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
            f"{RunFolder(out).recipe_file}: the run was made with another recipe: {describe_changes(changes)}."
            " Its tasks, adapters and evaluations were made with recipe.json's settings. Resume without"
            " --recipe/--set to continue it as it was, use another --out for the new recipe, or pass"
            " --allow-recipe-change (allow_recipe_change=True) to continue with the change recorded"
        )
    log(
        f"resuming with a changed recipe (allowed; recorded in summary.json): {describe_changes(changes)};"
        f" kept from the earlier recipe: {', '.join(RunFolder(out).outputs()) or 'nothing'}"
    )
    return recipe, changes


def record_recipe_change(out: Path, changes: dict[str, Any]) -> None:
    """Append an allowed change to ``summary.json``'s ``recipe_changes`` now (a run killed later keeps it):
    when, the changed keys (old and new values), and the outputs the earlier recipe had made."""
    from datetime import UTC, datetime

    run = RunFolder(out)
    summary = json.loads(run.summary_file.read_text()) if run.summary_file.exists() else {}
    summary.setdefault("recipe_changes", []).append(
        {
            "time": datetime.now(UTC).isoformat(timespec="seconds"),
            "changes": changes,
            "outputs_before": run.outputs(),
        }
    )
    run.summary_file.write_text(dumps(summary, indent=1, sort_keys=True) + "\n")
