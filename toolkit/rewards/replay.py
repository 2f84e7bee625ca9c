"""Execute a scripted list of tool calls in a fresh episode (``toolkit.envs.open_episode``) and record
the trajectory: the minimal gold replay the rewards need to check themselves end to end (the agent
area's ``mcp-rl rollout --policy gold`` is the full loop), and the executor behind the perturbation
sampler when it should see real tool results and real state diffs instead of approximations. Every
call goes through the loop's executor (``toolkit.envs.execute``): the same tools, argument checks and
error kinds as a model's call in the loop."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from toolkit.aio import run_sync
from toolkit.envs.execute import execute_call, task_tools
from toolkit.records import CallRecord, Task, Trajectory
from toolkit.rewards.gold import gold_answer
from toolkit.toolbox import Toolbox

RESULT_CHARS = 2000  # tool outputs kept on the record (the loop truncates similarly)
UNPARSED = "arguments are not valid JSON"  # why a scripted call without arguments is refused

OpenEpisode = Callable[[Task], AbstractAsyncContextManager[Toolbox]]


async def execute_calls(
    task: Task,
    calls: Sequence[tuple[str, dict[str, Any] | None, int]],
    answer: str,
    policy: str = "script",
    *,
    open_episode: OpenEpisode | None = None,
) -> Trajectory:
    """Run ``calls`` (name, args, user turn; args None = unparseable) in order in a fresh episode of
    ``task`` (``open_episode``, default ``toolkit.envs.open_episode``). Multi-turn tasks
    (``task.followups``) get one user message and one answer per turn; the final turn's answer is
    ``answer``, earlier turns answer "Done."."""
    if open_episode is None:
        from toolkit.envs import open_episode as kit_episode

        open_episode = kit_episode
    n_turns = 1 + len(task.followups)
    user_turns = [task.prompt, *task.followups]
    turn_answers = ["Done."] * (n_turns - 1) + [answer]
    records: list[CallRecord] = []
    messages: list[dict[str, Any]] = []
    async with open_episode(task) as box:
        tools = task_tools(task, await box.list_tools())
        for turn in range(n_turns):
            messages.append({"role": "user", "content": user_turns[turn]})
            for step, (name, args, call_turn) in enumerate(calls):
                if min(call_turn, n_turns - 1) != turn:
                    continue
                done = await execute_call(
                    box,
                    name,
                    None if args is None else dict(args),
                    tools=tools,
                    parse_error=UNPARSED if args is None else None,
                    turn=turn,
                    step=step,
                )
                done.record.result = (done.record.result or "")[:RESULT_CHARS]
                records.append(done.record)
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
