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


class NearDuplicateFilter:
    """``remove_near_duplicates`` fed a batch at a time: it remembers what it kept, so each new task
    is compared once instead of every batch re-checking the whole kept list."""

    def __init__(self, threshold: float = 0.9):
        self.threshold = threshold
        self.seen: set[str] = set()
        self.kept_grams: dict[str, list[frozenset]] = defaultdict(list)

    def admit(self, task: Task) -> bool:
        """Whether ``task`` is new (then it is remembered); the first of each duplicate group wins."""
        sig = task_signature(task)
        if sig in self.seen:
            return False
        grams = trigrams(task.prompt)
        bucket = self.kept_grams[str(task.metadata.get("template"))]
        if self.threshold <= 1.0 and any(jaccard(grams, other) >= self.threshold for other in bucket):
            return False
        self.seen.add(sig)
        bucket.append(grams)
        return True


def remove_near_duplicates(tasks: Sequence[Task], threshold: float = 0.9) -> tuple[list[Task], int]:
    """Keep the first of each duplicate group; returns (kept, number dropped)."""
    dedup = NearDuplicateFilter(threshold)
    kept = [task for task in tasks if dedup.admit(task)]
    return kept, len(tasks) - len(kept)
