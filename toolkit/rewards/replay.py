"""Execute a scripted list of tool calls in a fresh episode (``toolkit.envs.open_episode``) and record
the trajectory: the minimal gold replay the rewards need to check themselves end to end (the agent
area's ``mcp-rl rollout --policy gold`` is the full loop), and the executor behind the perturbation
sampler when it should see real tool results and real state diffs instead of approximations."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from toolkit.aio import run_sync
from toolkit.records import CallRecord, Task, Trajectory
from toolkit.rewards.perturb import gold_answer

RESULT_CHARS = 2000  # tool outputs kept on the record (the loop truncates similarly)


def _error_kind(text: str) -> str:
    if text.startswith("Unknown tool"):
        return "unknown_tool"
    if text.startswith("timeout"):
        return "timeout"
    if text.startswith("Arguments for"):
        return "schema"
    return "tool_error"


async def execute_calls(
    task: Task,
    calls: Sequence[tuple[str, dict[str, Any] | None, int]],
    answer: str,
    policy: str = "script",
) -> Trajectory:
    """Run ``calls`` (name, args, user turn; args None = unparseable) in order in a fresh episode of
    ``task``. Multi-turn tasks (``task.followups``) get one user message and one answer per turn; the
    final turn's answer is ``answer``, earlier turns answer "Done."."""
    from toolkit.envs import open_episode

    n_turns = 1 + len(task.followups)
    user_turns = [task.prompt, *task.followups]
    turn_answers = ["Done."] * (n_turns - 1) + [answer]
    records: list[CallRecord] = []
    messages: list[dict[str, Any]] = []
    async with open_episode(task) as box:
        for turn in range(n_turns):
            messages.append({"role": "user", "content": user_turns[turn]})
            for step, (name, args, call_turn) in enumerate(calls):
                if min(call_turn, n_turns - 1) != turn:
                    continue
                if args is None:  # the loop's answer to unparseable arguments: a tool error, no call
                    err = "bad_json: arguments are not valid JSON"
                    records.append(CallRecord(name, None, False, err, None, turn=turn, step=step))
                    continue
                t0 = time.perf_counter()
                res = await box.call_tool(name, dict(args))
                error = None if res.ok else f"{_error_kind(res.text)}: {res.text[:200]}"
                text, took = res.text[:RESULT_CHARS], time.perf_counter() - t0
                records.append(CallRecord(name, dict(args), res.ok, error, text, took, turn=turn, step=step))
            messages.append({"role": "assistant", "content": turn_answers[turn]})
        diff = box.state_diff()
    return Trajectory(
        task_id=task.id,
        messages=messages,
        calls=records,
        final_answer=answer,
        stop_reason="finish",
        state_diff=diff,
        turn_answers=turn_answers if answer else turn_answers[:-1],
        n_parse_errors=sum(c[1] is None for c in calls),
        metadata={"policy": policy},
    )


def replay_gold(task: Task) -> Trajectory:
    """The gold trajectory of ``task``, executed for real (results, state diff)."""
    calls = [(g.name, g.arguments, g.turn) for g in task.gold]
    return run_sync(execute_calls(task, calls, gold_answer(task), policy="gold"))


def reexecute(task: Task, traj: Trajectory) -> Trajectory:
    """``traj``'s calls and answer, executed for real in a fresh episode (perturbed trajectories)."""
    calls = [(c.name, c.args, c.turn) for c in traj.calls]
    out = run_sync(
        execute_calls(task, calls, traj.final_answer, policy=traj.metadata.get("policy", "script"))
    )
    out.turn_answers, out.stop_reason = list(traj.turn_answers), traj.stop_reason
    out.metadata = {**traj.metadata, "executed": True}
    return out
