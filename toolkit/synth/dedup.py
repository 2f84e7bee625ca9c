"""Near-duplicate removal.

Two tasks are duplicates when they ask for the same thing: the same template with the same gold
calls and the same expected answers and state changes (different wording does not make a new task).
Within a template, prompts whose word-trigram Jaccard similarity reaches a threshold are also dropped
(PROVE removes near-duplicates after replay the same way, reference 002). The first occurrence wins,
so the result is deterministic.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence

from toolkit.records import Task


def task_signature(task: Task) -> str:
    """What the task asks, independent of wording: template, gold calls, answers, state checks."""
    state = [
        r.check for r in task.rubric if r.check.get("type") in ("state", "clarification", "no_tool_calls")
    ]
    gold = [[g.name, g.arguments] for g in task.gold]
    # No gold calls (clarification, abstention): the request itself is the task.
    asked = " ".join(re.findall(r"[a-z0-9@.\-]+", task.prompt.lower())) if not task.gold else ""
    return json.dumps(
        [task.metadata.get("template"), gold, task.answers, state, asked], sort_keys=True, default=str
    )


def trigrams(text: str) -> frozenset[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9@.\-]+", text.lower())
    if len(words) < 3:
        return frozenset([tuple(words)])
    return frozenset(zip(words, words[1:], words[2:], strict=False))


def jaccard(a: frozenset, b: frozenset) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def remove_near_duplicates(tasks: Sequence[Task], threshold: float = 0.9) -> tuple[list[Task], int]:
    """Keep the first of each duplicate group; returns (kept, number dropped)."""
    seen: set[str] = set()
    kept_grams: dict[str, list[frozenset]] = defaultdict(list)
    kept: list[Task] = []
    for task in tasks:
        sig = task_signature(task)
        if sig in seen:
            continue
        grams = trigrams(task.prompt)
        bucket = kept_grams[str(task.metadata.get("template"))]
        if threshold <= 1.0 and any(jaccard(grams, other) >= threshold for other in bucket):
            continue
        seen.add(sig)
        bucket.append(grams)
        kept.append(task)
    return kept, len(tasks) - len(kept)
