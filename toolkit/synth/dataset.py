"""Tasks as a Hugging Face ``datasets.Dataset`` for TRL.

Columns: ``prompt`` (conversational: a list with the user message; the trainer's chat template adds
the system prompt and the enabled tools), ``task`` (the whole Task as a JSON string, so a reward
function or rollout function receives it per row), and ``id``, ``kind``, ``split`` for filtering.
Nested task fields stay in one JSON string because Arrow would otherwise force one schema on every
task's free-form arguments and answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from toolkit.records import Task, read_jsonl


def task_row(task: Task) -> dict[str, Any]:
    return {
        "prompt": [{"role": "user", "content": task.prompt}],
        "task": json.dumps(task.to_dict(), sort_keys=True, ensure_ascii=False),
        "id": task.id,
        "kind": str(task.metadata.get("kind", "")),
        "split": task.split,
    }


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


def task_from_row(row: dict[str, Any]) -> Task:
    """The Task back from a dataset row (or from the ``task`` JSON string itself)."""
    raw = row["task"] if isinstance(row, dict) else row
    return Task.from_dict(json.loads(raw))
