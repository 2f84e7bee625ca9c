"""Tasks, answers and rubrics for any MCP server, from its live state: explore, make, replay, keep.

    from toolkit.envs.recipe import ServerRecipe
    result = synthesize([ServerRecipe("memory", command=["node", ".../server-memory/dist/index.js"],
                                      env={"MEMORY_FILE_PATH": "{scratch}/memory.jsonl"}, seed="my-seed")],
                        n=100, n_eval=20)

Per server: explore the read tools on two fresh servers (``toolkit.synth.explore``), make every task the
outputs allow (``own_tasks``: lookup, chain, aggregate, abstain; ``own_writes``: writes with a probe),
pick a mix, and replay each task twice on fresh servers. A task is dropped when a call fails on replay,
when an answer (or a value a chain picks) differs from what exploration saw, or when a write does not
leave the recorded change. The summary counts explored, made, kept and dropped (with reasons) per
server. Every task records the server's start recipe (``Task.server_recipes``) and its probes
(``metadata["own_server"]``), so ``open_episode(task)`` starts the server itself (``toolkit.envs.recipe``).
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from toolkit.checks.leaks import chain_leak
from toolkit.envs.execute import execute_call
from toolkit.envs.recipe import OWN_KEY, ServerRecipe, scratch_servers
from toolkit.records import GoldCall, Task
from toolkit.synth.base import Draft
from toolkit.synth.explore import Exploration, classify, explore, get_path
from toolkit.synth.own_tasks import compute, outputs_of, read_drafts
from toolkit.synth.own_teacher import phrase, propose_calls
from toolkit.synth.own_writes import write_drafts
from toolkit.synth.replay import state_check_passes, values_match
from toolkit.synth.rubric import build_rubric
from toolkit.toolbox import ToolResult

SHARES = {"lookup": 0.35, "aggregate": 0.25, "chain": 0.25, "write": 0.10, "abstain": 0.05}
OVERSAMPLE = 1.4  # candidates per wanted task: replay drops some


@dataclass
class OwnResult:
    train: list[Task]
    eval: list[Task]
    summary: dict[str, Any] = field(default_factory=dict)


@asynccontextmanager
async def fresh_box(recipe: ServerRecipe, timeout: float) -> AsyncIterator[Any]:
    """One fresh server (its own seeded scratch folder) as a Toolbox."""
    from toolkit.envs import open_episode

    async with scratch_servers([recipe]) as servers:
        async with open_episode(servers=[], external=servers, timeout=timeout) as box:
            yield box


def _pick(drafts: dict[str, list[Draft]], target: int, rng: random.Random) -> list[Draft]:
    """A mix of kinds near ``SHARES``; a kind with too few drafts leaves its share to the others."""
    want = math.ceil(target * OVERSAMPLE)
    pools = {k: rng.sample(v, len(v)) for k, v in drafts.items()}
    chosen: list[Draft] = []
    for kind, share in SHARES.items():
        take = min(len(pools.get(kind, [])), math.ceil(want * share))
        chosen += pools.get(kind, [])[:take]
        pools[kind] = pools.get(kind, [])[take:]
    rest = [d for k in ("lookup", "aggregate", "chain") for d in pools.get(k, [])]
    rng.shuffle(rest)
    chosen += rest[: max(0, want - len(chosen))]
    return chosen


def to_task(draft: Draft, recipe: ServerRecipe, exp: Exploration, index: int) -> Task:
    read_tools = sorted(t for t, (k, _) in exp.kinds.items() if k == "read")
    tools = sorted(t for t, (k, _) in exp.kinds.items() if k != "skip")
    meta = {
        "kind": draft.kind,
        "template": draft.template,
        "chain_length": draft.chain_length,
        "reference_answer": draft.reference_answer,
        "needed_tools": sorted({s.name for s in draft.steps}),
        "answer_from": draft.metadata.get("answer_from", []),
        OWN_KEY: {
            "probes": draft.metadata.get("probes", []),
            "read_tools": read_tools,
        },
    }
    if "fed" in draft.metadata:
        meta["fed"] = draft.metadata["fed"]
    return Task(
        id=f"{recipe.name}-{index:05d}",
        split="train",
        prompt=draft.prompt,
        servers=[recipe.name],
        tools=tools,
        seed=0,
        gold=[GoldCall(s.name, s.arguments, list(s.depends_on)) for s in draft.steps],
        answers={a.key: a.value for a in draft.answers},
        rubric=build_rubric(draft),
        metadata=meta,
        server_recipes=[recipe.to_dict()],
    )


async def _replay_gold(task: Task, box: Any, timeout: float) -> list[ToolResult] | None:
    """The task's gold calls through the agent loop's executor (its timeout and error kinds, as every
    gold replay runs); None when a call fails, crashes or times out."""
    results = []
    for i, call in enumerate(task.gold):
        done = await execute_call(box, call.name, call.arguments, tools=None, timeout_s=timeout, step=i)
        if done.result is None or not done.ok:
            return None
        results.append(done.result)
    return results


async def _replay_reads(tasks: Sequence[Task], recipe: ServerRecipe, timeout: float) -> dict[str, str]:
    """Task id -> why it failed, over two replays on two fresh servers."""
    failed: dict[str, str] = {}
    for _ in range(2):
        async with fresh_box(recipe, timeout) as box:
            for task in tasks:
                if task.id in failed:
                    continue
                results = await _replay_gold(task, box, timeout)
                if results is None:
                    failed[task.id] = "a call failed on replay"
                    continue
                leak = chain_leak(task, [r.text for r in results])
                leak_note = f"the answer leaks: an earlier call states it ({task.metadata.get('template')})"
                why = leak_note if leak else _check_outputs(task, outputs_of(results))
                if why:
                    failed[task.id] = why
    return failed


def _check_outputs(task: Task, outputs: list[Any]) -> str:
    fed = task.metadata.get("fed")
    if fed is not None:
        try:
            got = get_path(outputs[fed["call"]], tuple(fed["path"]))
        except (LookupError, TypeError):
            return "the value a chain picks moved on replay"
        arg = task.gold[fed["to"]].arguments.get(fed["arg"])
        if not values_match(fed["value"], got) or arg is None:
            return "the value a chain picks changed on replay"
    for expected, spec in zip(task.answers.values(), task.metadata.get("answer_from", []), strict=False):
        try:
            got = compute(spec, outputs)
        except (LookupError, TypeError, ValueError):
            return "the answer could not be recomputed on replay"
        if not values_match(expected, got):
            return "the answer changed on replay"
    return ""


async def _replay_writes(tasks: Sequence[Task], timeout: float) -> dict[str, str]:
    """Writes go through ``open_episode(task)``, the path rollouts take (fresh server, probes), twice."""
    from toolkit.envs import open_episode

    failed: dict[str, str] = {}
    for task in tasks:
        for _ in range(2):
            try:
                async with open_episode(task, timeout=timeout) as box:
                    results = await _replay_gold(task, box, timeout)
                    diff = box.state_diff()
            except Exception as exc:  # noqa: BLE001 (a failing server drops the task, not the run)
                failed[task.id] = f"the server failed on replay ({type(exc).__name__})"
                break
            if results is None:
                failed[task.id] = "a call failed on replay"
                break
            checks = [i.check for i in task.rubric if i.check.get("type") == "state"]
            if not all(state_check_passes(c, diff) for c in checks):
                failed[task.id] = "the write's change differs on replay"
                break
    return failed


async def server_tasks(
    recipe: ServerRecipe,
    target: int,
    rng: random.Random,
    *,
    overrides: dict[str, str] | None = None,
    examples: dict[str, list[dict[str, Any]]] | None = None,
    max_calls: int = 300,
    max_seconds: float = 120.0,
    writes: bool = True,
    timeout: float = 30.0,
    teacher: tuple[Any, str] | None = None,
    log: Callable[[str], None] = lambda s: None,
) -> tuple[list[Task], dict[str, Any]]:
    """Explore one server, make and replay-validate up to ``target`` tasks; (tasks, report).
    ``teacher``: (an OpenAI-compatible client, model) proposing calls and phrasing prompts."""
    t0 = time.perf_counter()
    examples = {k: list(v) for k, v in (examples or {}).items()}
    teacher_note: dict[str, Any] = {}
    async with AsyncExitStack() as stack:
        boxes = [await stack.enter_async_context(fresh_box(recipe, timeout)) for _ in range(2)]
        if teacher is not None:
            specs = await boxes[0].list_tools()
            reads = [s for s in specs if classify(s, (overrides or {}).get(s.name))[0] == "read"]
            proposed, teacher_note["proposals"] = propose_calls(teacher[0], teacher[1], reads)
            for tool, arg_sets in proposed.items():
                examples.setdefault(tool, []).extend(arg_sets)
        exp = await explore(recipe.name, boxes, overrides=overrides, examples=examples,
                            max_calls=max_calls, max_seconds=max_seconds)  # fmt: skip
    log(f"{recipe.name}: explored {len(exp.observations)} calls in {exp.seconds:.1f}s ({exp.stopped})")
    drafts = read_drafts(exp, rng)
    drops: Counter[str] = Counter()
    t_write = time.perf_counter()
    if writes and recipe.fresh:
        end = time.perf_counter() + max_seconds
        drafts["write"], write_drops = await write_drafts(
            exp, lambda: fresh_box(recipe, timeout), examples, rng, deadline=lambda: time.perf_counter() > end
        )
        drops.update({f"write: {k}": v for k, v in write_drops.items()})
    else:
        drafts["write"] = []
    write_s = time.perf_counter() - t_write
    made = {k: len(v) for k, v in drafts.items()}
    log(f"{recipe.name}: made " + ", ".join(f"{k} {v}" for k, v in made.items()))
    chosen = _pick(drafts, target, rng)
    tasks = [to_task(d, recipe, exp, i) for i, d in enumerate(chosen)]
    t_val = time.perf_counter()
    reads = [t for t in tasks if t.metadata["kind"] not in ("write", "abstain")]
    failed = await _replay_reads(reads, recipe, timeout)
    failed |= await _replay_writes([t for t in tasks if t.metadata["kind"] == "write"], timeout)
    drops.update(failed.values())
    kept = [t for t in tasks if t.id not in failed]
    if len(kept) > target:
        kept = _trim(kept, target)
        drops["over the target"] += len(tasks) - len(failed) - len(kept)
    report = {
        "recipe": recipe.to_dict(),
        "explored": exp.summary(),
        "made": made,
        "candidates": len(tasks),
        "kept": len(kept),
        "kept_by_kind": dict(Counter(t.metadata["kind"] for t in kept)),
        "dropped": dict(drops),
        "seconds": {
            "explore": round(exp.seconds, 1),
            "writes": round(write_s, 1),
            "validate": round(time.perf_counter() - t_val, 1),
            "total": round(time.perf_counter() - t0, 1),
        },
    }
    if teacher is not None:
        rejected: Counter[str] = Counter()
        teacher_note["phrased"] = phrase(kept, teacher[0], teacher[1], rejected=rejected)
        teacher_note["phrase_rejected"] = dict(rejected)
        report["teacher"] = teacher_note
    if not recipe.fresh:
        report["writes_skipped"] = "a URL server is shared, not fresh per episode: no write tasks"
    log(f"{recipe.name}: kept {len(kept)} of {len(tasks)} candidates in {report['seconds']['total']}s")
    return kept, report


def _trim(tasks: list[Task], target: int) -> list[Task]:
    """``target`` tasks keeping the mix: drop from the most common kind first."""
    by_kind: dict[str, list[Task]] = {}
    for t in tasks:
        by_kind.setdefault(t.metadata["kind"], []).append(t)
    while sum(len(v) for v in by_kind.values()) > target:
        kind = max(by_kind, key=lambda k: len(by_kind[k]) / max(SHARES.get(k, 0.1), 1e-9))
        by_kind[kind].pop()
    keep = {t.id for v in by_kind.values() for t in v}
    return [t for t in tasks if t.id in keep]


def synthesize(
    recipes: Sequence[ServerRecipe],
    *,
    n: int,
    n_eval: int,
    seed: int = 0,
    log: Callable[[str], None] = lambda s: None,
    **options: Any,
) -> OwnResult:
    """Train and eval tasks over ``recipes`` (an equal share per server); ``options`` go to
    ``server_tasks`` (overrides, examples, max_calls, max_seconds, writes, timeout, teacher)."""
    from toolkit.aio import run_sync

    if len({r.name for r in recipes}) != len(recipes):
        raise ValueError("two --server options have the same name")
    rng = random.Random(seed)
    per_server = math.ceil((n + n_eval) / max(1, len(recipes)))
    tasks: list[Task] = []
    reports: dict[str, Any] = {}
    for recipe in recipes:
        t0 = time.perf_counter()
        try:
            got, report = run_sync(server_tasks(recipe, per_server, rng, log=log, **options))
        except Exception as exc:  # noqa: BLE001 (a server that cannot start is reported; the others go on)
            reason = f"{type(exc).__name__}: {exc}"[:400]
            log(f"{recipe.name}: failed: {reason}")
            got, report = [], {"recipe": recipe.to_dict(), "failed": reason,
                               "seconds": {"total": round(time.perf_counter() - t0, 1)}}  # fmt: skip
        tasks += got
        reports[recipe.name] = report
    rng.shuffle(tasks)
    n_ev = min(n_eval, round(len(tasks) * n_eval / max(1, n + n_eval)))
    eval_tasks, train = tasks[:n_ev], tasks[n_ev : n_ev + n]
    for t in eval_tasks:
        t.split = "eval"
    summary = {
        "source": "own-server",
        "seed": seed,
        "servers": reports,
        "splits": {
            split: {"tasks": len(ts), "by_kind": dict(Counter(t.metadata["kind"] for t in ts))}
            for split, ts in (("train", train), ("eval", eval_tasks))
        },
    }
    return OwnResult(train, eval_tasks, summary)
