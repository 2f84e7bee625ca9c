"""Tasks as a Hugging Face ``datasets.Dataset`` for TRL.

Columns: ``prompt`` (conversational: a list with the user message; the trainer's chat template adds
the system prompt and the enabled tools), ``task`` (the whole Task as a JSON string), and ``id``,
``kind``, ``split`` for filtering. Nested task fields stay in one JSON string because Arrow would
otherwise force one schema on every task's free-form arguments and answers. A row becomes a Task again
once, at the trainer's seam (``task_from_row``, called by ``toolkit.train.trl_adapter``); from there the
Task itself travels to the rollout and the reward functions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from toolkit.records import Task, read_jsonl


def task_columns(task: Task) -> dict[str, Any]:
    """A task's row without the ``task`` column: what the trainer logs and filters by."""
    return {
        "prompt": [{"role": "user", "content": task.prompt}],
        "id": task.id,
        "kind": str(task.metadata.get("kind", "")),
        "split": task.split,
    }


def task_row(task: Task) -> dict[str, Any]:
    """A task's dataset row: ``task_columns`` and the Task as a JSON string."""
    row = task_columns(task)
    row["task"] = json.dumps(task.to_dict(), sort_keys=True, ensure_ascii=False)
    return {key: row[key] for key in ("prompt", "task", "id", "kind", "split")}


def tasks_to_dataset(tasks: Iterable[Task]) -> Any:
    """A ``datasets.Dataset`` with one row per task (columns above)."""
    from datasets import Dataset

    rows = [task_row(t) for t in tasks]
    if not rows:
        return Dataset.from_dict({"prompt": [], "task": [], "id": [], "kind": [], "split": []})
    return Dataset.from_list(rows)


def load_tasks_dataset(
    path: str | Path, *, kinds: Iterable[str] | None = None, limit: int | None = None
) -> Any:
    """Load a tasks JSONL file (or a folder: its train.jsonl) as a ``datasets.Dataset``.

    ``kinds`` keeps only those task kinds; ``limit`` keeps the first N after filtering. A malformed
    line raises ``records.RecordError`` naming the file and line.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "train.jsonl"
    tasks = read_jsonl(path, Task)
    if kinds is not None:
        wanted = set(kinds)
        tasks = [t for t in tasks if t.metadata.get("kind") in wanted]
    if limit is not None:
        tasks = tasks[:limit]
    return tasks_to_dataset(tasks)


def task_from_row(row: dict[str, Any] | str) -> Task:
    """The Task of a dataset row (its ``task`` column: a JSON string, a dict, or the Task), or of the
    ``task`` JSON string itself."""
    raw = row["task"] if isinstance(row, dict) else row
    if isinstance(raw, Task):
        return raw
    return Task.from_dict(json.loads(raw) if isinstance(raw, str) else raw)
