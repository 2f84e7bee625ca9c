"""PROVE's synthesis mix (PROVE, arXiv 2606.03892, section 3.1) applied to the kit's validated tasks.

``generate`` draws a larger pool of replay-validated tasks when ``config.mix == "prove"``, then
``apply_prove_mix`` shapes it:

- near-duplicates dropped: Jaccard similarity of the gold tool-call sets (a call = name + arguments)
  of at least 0.70;
- information level of the request, 60 / 20 / 20: *complete* (every call's arguments are stated in
  the request: no gold step depends on another's output), *missing-required* (a required value is
  left out: the kit's clarify tasks, where the model must ask), *minimal* (the request names things
  only indirectly; the model discovers the rest through tools: at least one gold step consumes an
  earlier step's output). Irrelevant requests (abstain) are 5% of all tasks, outside the three levels;
- distractors on 40% of tasks: 3-8 tools from servers the task does not need; the other 60% enable only
  the needed tools;
- enum lists stripped from the tool schemas the model reads on 30% of tasks (``metadata["strip_enums"]``,
  applied by the agent loop; the servers still reject values outside the enum).

Replays with failed calls: PROVE drops conversations with more than 30% schema or execution errors; the
kit's replay (``toolkit.synth.replay``) already drops any replay with a failed call, which is stricter.
Selection is deterministic (seeded from the config seed and the split).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from toolkit.records import Task
from toolkit.toolbox import ToolSpec

# PROVE, arXiv 2606.03892, section 3.1.
PROVE_MIX: dict[str, Any] = {
    "levels": {"complete": 0.6, "missing_required": 0.2, "minimal": 0.2},
    "abstain": 0.05,
    "distractor_share": 0.4,
    "distractors": (3, 8),
    "enum_strip_share": 0.3,
    "max_failed_call_share": 0.3,
    "near_duplicate_jaccard": 0.7,
}
# Pool drawn before selection, as a multiple of the target: enough of each level to fill its quota.
POOL_FACTOR = 2.5


def pool_size(target: int) -> int:
    return int(target * POOL_FACTOR) + 8


def info_level(task: Task) -> str:
    """``abstain``, ``missing_required``, ``minimal`` or ``complete`` (see the module docstring)."""
    kind = task.metadata.get("kind")
    if kind == "abstain":
        return "abstain"
    if kind == "clarify":
        return "missing_required"
    return "minimal" if any(g.depends_on for g in task.gold) else "complete"


def call_set(task: Task) -> frozenset[str]:
    return frozenset(json.dumps([g.name, g.arguments], sort_keys=True, default=str) for g in task.gold)


def drop_call_set_duplicates(tasks: Sequence[Task], threshold: float) -> tuple[list[Task], int]:
    """Keep the first of tasks whose gold call sets have Jaccard similarity >= ``threshold``. Tasks
    without gold calls (clarify, abstain) have no call sequence; the pipeline's own dedup covers them."""
    kept: list[Task] = []
    seen: list[frozenset[str]] = []
    for task in tasks:
        calls = call_set(task)
        if calls and any(len(calls & s) / len(calls | s) >= threshold for s in seen):
            continue
        if calls:
            seen.append(calls)
        kept.append(task)
    return kept, len(tasks) - len(kept)


def quotas(target: int, mix: Mapping[str, Any] = PROVE_MIX) -> dict[str, int]:
    """Task counts per level for ``target`` tasks (largest remainders, so they add up to ``target``)."""
    shares = {"abstain": mix["abstain"]}
    shares |= {k: v * (1 - mix["abstain"]) for k, v in mix["levels"].items()}
    raw = {k: target * v for k, v in shares.items()}
    out = {k: int(v) for k, v in raw.items()}
    for k in sorted(raw, key=lambda k: (out[k] - raw[k], k))[: target - sum(out.values())]:
        out[k] += 1
    return out


def set_distractors(task: Task, rng: random.Random, specs: Mapping[str, ToolSpec], lo: int, hi: int) -> None:
    """Enable the needed tools plus ``lo``-``hi`` tools from servers the task does not need."""
    needed = list(task.metadata.get("needed_tools") or sorted({g.name for g in task.gold}))
    needed_servers = set(task.metadata.get("needed_servers") or [])
    needed_servers |= {specs[t].server for t in needed if t in specs}
    others = sorted(n for n, s in specs.items() if s.server not in needed_servers)
    chosen = rng.sample(others, min(len(others), rng.randint(lo, hi))) if hi > 0 else []
    task.tools = sorted(set(needed) | set(chosen))
    task.servers = sorted(needed_servers | {specs[t].server for t in chosen})
    task.metadata["n_distractors"] = len(task.tools) - len(needed)


def _pick(rng: random.Random, n: int, share: float) -> set[int]:
    order = list(range(n))
    rng.shuffle(order)
    return set(order[: round(n * share)])


def apply_prove_mix(
    pool: Sequence[Task],
    target: int,
    specs: Mapping[str, ToolSpec],
    seed: str,
    mix: Mapping[str, Any] = PROVE_MIX,
) -> tuple[list[Task], dict[str, Any]]:
    """Select ``target`` tasks from ``pool`` in PROVE's proportions and set their distractors and
    schema variants. Returns (tasks in pool order, statistics for the summary)."""
    rng = random.Random(f"prove-mix/{seed}")
    unique, n_dup = drop_call_set_duplicates(pool, mix["near_duplicate_jaccard"])
    by_level: dict[str, list[Task]] = {}
    for task in unique:
        by_level.setdefault(info_level(task), []).append(task)
    want = quotas(target, mix)
    chosen_ids: set[int] = set()
    short: dict[str, int] = {}
    for level, n in want.items():
        have = by_level.get(level, [])
        if len(have) < n:
            short[level] = n - len(have)
        chosen_ids |= {id(t) for t in have[:n]}
    # A level the pool could not fill is topped up from the complete tasks (reported as a shortfall).
    spare = [t for t in by_level.get("complete", []) if id(t) not in chosen_ids]
    chosen_ids |= {id(t) for t in spare[: sum(short.values())]}
    tasks = [t for t in unique if id(t) in chosen_ids]
    lo, hi = mix["distractors"]
    # Exact shares (a seeded shuffle picks which tasks), not independent coin flips per task.
    with_distractors = _pick(rng, len(tasks), mix["distractor_share"])
    stripped = _pick(rng, len(tasks), mix["enum_strip_share"])
    for i, task in enumerate(tasks):
        n_lo, n_hi = (lo, hi) if i in with_distractors else (0, 0)
        set_distractors(task, rng, specs, n_lo, n_hi)
        task.metadata["information_level"] = info_level(task)
        task.metadata["strip_enums"] = i in stripped
    stats = {
        "pool": len(pool),
        "near_duplicate_call_sets": n_dup,
        "quotas": want,
        "shortfall": dict(sorted(short.items())),
    }
    return tasks, stats


def realised_shares(tasks: Sequence[Task], specs: Mapping[str, ToolSpec] | None = None) -> dict[str, Any]:
    """The mix as realised: information levels, distractor and enum-strip shares (rounded to 0.001)."""
    n = len(tasks) or 1
    levels = Counter(t.metadata.get("information_level") or info_level(t) for t in tasks)
    with_distractors = [t for t in tasks if t.metadata.get("n_distractors", 0) > 0]
    n_d = [t.metadata["n_distractors"] for t in with_distractors]
    out: dict[str, Any] = {
        "information_level": {
            k: round(levels[k] / n, 3) for k in ("complete", "missing_required", "minimal")
        },
        "abstain": round(levels["abstain"] / n, 3),
        "with_distractors": round(len(with_distractors) / n, 3),
        "distractors_range": [min(n_d), max(n_d)] if n_d else [0, 0],
        "enum_stripped": round(sum(bool(t.metadata.get("strip_enums")) for t in tasks) / n, 3),
    }
    relevant = n - levels["abstain"]
    if relevant:
        out["information_level_of_relevant"] = {
            k: round(levels[k] / relevant, 3) for k in ("complete", "missing_required", "minimal")
        }
    if specs is not None:  # schemas that actually lose an enum list
        stripped = [t for t in tasks if t.metadata.get("strip_enums")]
        out["enum_stripped_with_an_enum"] = round(
            sum(any(has_enum(specs[x].input_schema) for x in t.tools if x in specs) for t in stripped) / n, 3
        )
    return out


def has_enum(schema: Any) -> bool:
    if isinstance(schema, dict):
        return "enum" in schema or any(has_enum(v) for v in schema.values())
    if isinstance(schema, list):
        return any(has_enum(v) for v in schema)
    return False
