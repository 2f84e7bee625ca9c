"""Replay validation: run each gold trajectory through MCP on a fresh world and check it.

Gold calls go through the agent loop's executor (``toolkit.envs.execute``): the same tool list,
argument checks, timeout and error kinds a model's calls meet, so a task is kept only when the gold
policy's calls will succeed in the loop as well. A draft survives when every gold call succeeds, no earlier hop already states an expected answer
(``toolkit.checks.leaks``), the answers recomputed from the replayed tool outputs equal the answers
computed from the world state, the state diff shows every expected change,
and read-only tasks leave the state untouched. Failures are dropped and counted by reason (PROVE
replays its synthesised trajectories on a fresh environment the same way, reference 002).
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

from toolkit.aio import run_sync
from toolkit.checks.leaks import chain_leak
from toolkit.checks.state import state_verdict
from toolkit.envs.execute import execute_call, task_tools
from toolkit.records import CallRecord, Task
from toolkit.toolbox import Toolbox, ToolResult, ToolSpec

OpenEpisode = Callable[[Task], AbstractAsyncContextManager[Toolbox]]


@dataclass
class ReplayOutcome:
    ok: bool
    reason: str = ""  # empty when ok; "call_failed", "answer_mismatch", "state_mismatch", ...
    detail: str = ""
    results: list[ToolResult] = field(default_factory=list)
    state_diff: dict[str, Any] = field(default_factory=dict)
    calls: list[CallRecord] = field(default_factory=list)  # the gold calls as executed, a failed one last


def values_match(expected: Any, got: Any, tolerance: float = 1e-6) -> bool:
    """Equality that forgives float rounding and int/float mixes (answers go through JSON)."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return expected == got
    if isinstance(expected, int | float) and isinstance(got, int | float):
        return math.isclose(float(expected), float(got), rel_tol=0, abs_tol=max(tolerance, 1e-9))
    if isinstance(expected, list) and isinstance(got, list):
        return len(expected) == len(got) and all(
            values_match(a, b, tolerance) for a, b in zip(expected, got, strict=True)
        )
    if isinstance(expected, dict) and isinstance(got, dict):
        return expected.keys() == got.keys() and all(
            values_match(expected[k], got[k], tolerance) for k in expected
        )
    return expected == got


def state_check_passes(check: dict[str, Any], diff: dict[str, Any]) -> bool:
    """The ``state`` / ``no_state_change`` check specs of toolkit.records, applied to a state diff by the
    interpreter the rubric reward grades with (``toolkit.checks.state``)."""
    return state_verdict(check, diff)[0] == "pass"


async def replay_task(
    task: Task,
    toolbox: Toolbox,
    recompute: Callable[[list[ToolResult]], dict[str, Any]] | None = None,
    *,
    tools: Mapping[str, ToolSpec] | None = None,
) -> ReplayOutcome:
    """Replay ``task.gold`` on ``toolbox`` (a fresh episode) and check calls, answers and state.

    ``tools``: what the gold may call, with the schemas its arguments are checked against
    (``toolkit.envs.execute.task_tools``, as ``validate_tasks`` passes it); None leaves that to the
    toolbox. A failed call (any error kind, a crash included) drops the task as ``call_failed``."""
    results: list[ToolResult] = []
    calls: list[CallRecord] = []
    for i, call in enumerate(task.gold):
        done = await execute_call(toolbox, call.name, call.arguments, tools=tools, turn=call.turn, step=i)
        calls.append(done.record)
        if done.result is None or not done.ok:
            detail = f"step {i} {call.name}: {done.message[:200]}"
            return ReplayOutcome(False, "call_failed", detail, results, calls=calls)
        results.append(done.result)
    outcome = _verdict(task, results, toolbox.state_diff(), recompute)
    outcome.calls = calls
    return outcome


def _verdict(
    task: Task,
    results: list[ToolResult],
    diff: dict[str, Any],
    recompute: Callable[[list[ToolResult]], dict[str, Any]] | None,
) -> ReplayOutcome:
    """Whether a replay whose calls all succeeded proves the task: no leak, the answers, the state."""
    leak = chain_leak(task, [r.text for r in results])
    if leak:  # an earlier hop states the answer: the task is not the one it claims to be
        return ReplayOutcome(False, "answer_leaked", leak, results, diff)
    if recompute is not None:
        try:
            got = recompute(results)
        except Exception as exc:
            return ReplayOutcome(False, "recompute_error", f"{type(exc).__name__}: {exc}", results, diff)
        for key, expected in task.answers.items():
            if key not in got or not values_match(expected, got[key]):
                detail = f"{key}: state says {expected!r}, replay says {got.get(key)!r}"
                return ReplayOutcome(False, "answer_mismatch", detail, results, diff)
    for item in task.rubric:
        if item.check.get("type") in ("state", "no_state_change") and item.essential:
            if not state_check_passes(item.check, diff):
                return ReplayOutcome(False, "state_mismatch", f"{item.id}: {item.text}", results, diff)
    read_only = all(i.check.get("type") != "state" for i in task.rubric)
    if read_only and diff:
        return ReplayOutcome(
            False, "unexpected_write", f"read-only task changed {sorted(diff)[:3]}", results, diff
        )
    return ReplayOutcome(True, results=results, state_diff=diff)


async def validate_tasks(
    tasks: Sequence[Task],
    open_episode: OpenEpisode,
    recomputes: Sequence[Callable[[list[ToolResult]], dict[str, Any]] | None] | None = None,
    concurrency: int = 16,
    on_done: Callable[[int], None] | None = None,
) -> tuple[list[bool], Counter[str], dict[int, str]]:
    """Replay every task, each in its own fresh episode, ``concurrency`` at a time.

    Returns (kept flag per task, drop counts by reason, failure detail per dropped index). The order
    of results follows ``tasks``, so the outcome is deterministic whatever the scheduling.
    """
    sem = asyncio.Semaphore(max(1, concurrency))
    recomputes = list(recomputes) if recomputes is not None else [None] * len(tasks)

    async def one(i: int) -> ReplayOutcome:
        async with sem:
            try:
                async with open_episode(tasks[i]) as toolbox:
                    tools = task_tools(tasks[i], await toolbox.list_tools())
                    out = await replay_task(tasks[i], toolbox, recomputes[i], tools=tools)
            except Exception as exc:
                out = ReplayOutcome(False, "episode_error", f"{type(exc).__name__}: {exc}")
            if on_done:
                on_done(1)
            return out

    outcomes = await asyncio.gather(*(one(i) for i in range(len(tasks))))
    drops: Counter[str] = Counter(o.reason for o in outcomes if not o.ok)
    details = {i: f"{o.reason}: {o.detail}" for i, o in enumerate(outcomes) if not o.ok}
    return [o.ok for o in outcomes], drops, details


async def validate_tasks_in_one_episode(
    tasks: Sequence[Task],
    world_fn: Callable[[int], Any],
    recomputes: Sequence[Callable[[list[ToolResult]], dict[str, Any]] | None] | None = None,
    on_done: Callable[[int], None] | None = None,
) -> tuple[list[bool], Counter[str], dict[int, str]]:
    """``validate_tasks`` for the kit's own servers, cheaper: one episode (one MCP session per
    server) replays every task in turn, its world state reset to the task's fresh seeded world
    before each one.

    Every gold call still goes through the MCP client, the in-process transport and the same tool
    code; only the per-task session startup, tool listing and server binding are saved. The
    outcome equals per-task episodes': a task's calls see exactly its own fresh world (the state
    object is re-initialised, so nothing carries over), and each task may call only its own tools
    (``task_tools``), so a gold call to a tool the task does not enable fails here as it does there.
    """
    from toolkit.envs import open_episode
    from toolkit.envs.state import WorldState

    recomputes = list(recomputes) if recomputes is not None else [None] * len(tasks)
    outcomes: list[ReplayOutcome] = []
    if tasks:
        state = WorldState(world_fn(tasks[0].seed))
        servers = sorted({s for t in tasks for s in t.servers})
        async with open_episode(None, servers=servers, state=state) as toolbox:
            listed = await toolbox.list_tools()
            for task, recompute in zip(tasks, recomputes, strict=True):
                WorldState.__init__(state, world_fn(task.seed))  # a fresh episode's state, in place
                # what the task's own episode would list: its tools only (none when it names none)
                own = [spec for spec in listed if spec.name in task.tools]
                try:
                    out = await replay_task(task, toolbox, recompute, tools=task_tools(task, own))
                except Exception as exc:
                    out = ReplayOutcome(False, "episode_error", f"{type(exc).__name__}: {exc}")
                outcomes.append(out)
                if on_done:
                    on_done(1)
    drops: Counter[str] = Counter(o.reason for o in outcomes if not o.ok)
    details = {i: f"{o.reason}: {o.detail}" for i, o in enumerate(outcomes) if not o.ok}
    return [o.ok for o in outcomes], drops, details


def validate_tasks_in_one_episode_sync(
    tasks: Sequence[Task], world_fn: Callable[[int], Any], **kw: Any
) -> tuple[list[bool], Counter[str], dict[int, str]]:
    """``validate_tasks_in_one_episode`` from synchronous code (see ``validate_tasks_sync``)."""
    return run_sync(validate_tasks_in_one_episode(list(tasks), world_fn, **kw))


def validate_tasks_sync(
    tasks: Iterable[Task], open_episode: OpenEpisode, **kw: Any
) -> tuple[list[bool], Counter[str], dict[int, str]]:
    """``validate_tasks`` from synchronous code, inside a running event loop (Jupyter) or not."""
    return run_sync(validate_tasks(list(tasks), open_episode, **kw))
