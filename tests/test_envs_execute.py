"""One executor for every tool call (``toolkit.envs.execute``): a failure has the same error kind, and the
same record, whether the agent loop ran the call for a model or a scripted replay ran it (synthesis'
gold check, the rewards' replay, BFCL's gold replay)."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from toolkit.agent.loop import RolloutConfig, rollout
from toolkit.agent.policies import GoldPolicy
from toolkit.agent.testing import FAILING_TOOLS, NOTES_TOOLS, FakeToolbox, ScriptedPolicy, fake_opener, turns
from toolkit.envs.execute import ERROR_KINDS, error_kind, execute_call, task_tools
from toolkit.records import CallRecord, GoldCall, Task
from toolkit.rewards.replay import execute_calls
from toolkit.synth.bfcl_tasks import replay_gold as bfcl_replay_gold
from toolkit.synth.replay import replay_task
from toolkit.toolbox import ToolSpec

TOOLS = NOTES_TOOLS + FAILING_TOOLS
# One gold call per outcome, and the error kind every executor must give it (None: it succeeds).
CASES = {
    "coerced": (GoldCall("add", {"a": "2", "b": 3}), None),  # "2" -> 2 by relaxed validation
    "unknown": (GoldCall("lookup_everything", {"q": "x"}), "unknown_tool"),
    "schema": (GoldCall("add", {"a": "two", "b": 3}), "schema"),
    "answered_error": (GoldCall("fail", {}), "tool_error"),
    "raised": (GoldCall("crash", {}), "tool_error"),
    "episode_timeout": (GoldCall("stall", {}), "timeout"),
}
# BFCL's replay leaves names and arguments to the episode (bfcl-eval runs any method): only the
# outcomes the toolbox itself decides are the loop's there.
DECIDED_BY_THE_TOOLBOX = ("answered_error", "raised", "episode_timeout")


def _task(label: str, gold: list[GoldCall]) -> Task:
    return Task(label, "eval", "do it", ["calc", "notes"], [t.name for t in TOOLS], 0, gold=gold)


def seen(record: CallRecord) -> tuple:
    return record.name, record.args, record.ok, record.error


@pytest.fixture(scope="module")
def by_loop() -> dict[str, CallRecord]:
    tasks = [_task(label, [call]) for label, (call, _) in CASES.items()]
    trajs = rollout(tasks, GoldPolicy(), RolloutConfig(), open_episode=fake_opener(TOOLS))
    assert all(len(t.calls) == 1 for t in trajs), [t.calls for t in trajs]
    return {t.task_id: t.calls[0] for t in trajs}


def test_the_loop_gives_each_failure_its_kind(by_loop):
    assert {label: error_kind(r) for label, r in by_loop.items()} == {
        label: kind for label, (_, kind) in CASES.items()
    }
    assert set(ERROR_KINDS) - {"bad_json"} == {kind for _, kind in CASES.values() if kind}
    assert by_loop["coerced"].args == {"a": 2, "b": 3} and by_loop["coerced"].result == "5"
    assert by_loop["raised"].error == "tool_error: RuntimeError: the connection dropped"


def test_synthesis_replay_records_what_the_loop_records(by_loop):
    async def replay(task: Task):
        box = FakeToolbox(TOOLS, set(task.tools))
        return await replay_task(task, box, tools=task_tools(task, await box.list_tools()))

    for label, (call, kind) in CASES.items():
        outcome = asyncio.run(replay(_task(label, [call])))
        assert seen(outcome.calls[-1]) == seen(by_loop[label]), label
        assert outcome.ok == (kind is None) and outcome.reason == ("" if kind is None else "call_failed")


def test_rewards_replay_records_what_the_loop_records(by_loop):
    for label, (call, _) in CASES.items():
        task = _task(label, [call])
        traj = asyncio.run(
            execute_calls(task, [(call.name, call.arguments, 0)], "", open_episode=fake_opener(TOOLS))
        )
        assert seen(traj.calls[0]) == seen(by_loop[label]), label


def test_bfcl_replay_records_what_the_loop_records_where_the_toolbox_decides(by_loop):
    for label in DECIDED_BY_THE_TOOLBOX:
        call, _ = CASES[label]
        traj = asyncio.run(bfcl_replay_gold(_task(label, [call]), FakeToolbox(TOOLS)))
        assert seen(traj.calls[0]) == seen(by_loop[label]), label
        assert traj.messages[2]["content"] == by_loop[label].result  # the tool message the model reads


def test_unparseable_arguments_are_bad_json_in_the_loop_and_the_replay():
    task = _task("bad", [])
    bad_call = '<tool_call>\n{"name": "add", "arguments": "not json"}\n</tool_call>'
    policy = ScriptedPolicy(turns(bad_call, "I could not do it."))
    (traj,) = rollout([task], policy, RolloutConfig(finish_tool=False), open_episode=fake_opener(TOOLS))
    replayed = asyncio.run(execute_calls(task, [("add", None, 0)], "", open_episode=fake_opener(TOOLS)))
    for record in (traj.calls[0], replayed.calls[0]):
        assert error_kind(record) == "bad_json" and not record.ok
    assert traj.n_parse_errors == replayed.n_parse_errors == 1


def test_refused_calls_never_reach_the_toolbox_and_a_slow_one_times_out():
    box = FakeToolbox()
    tools = task_tools(None, NOTES_TOOLS)

    def run(name, args, **kw):
        return asyncio.run(execute_call(box, name, args, tools=tools, **kw))

    assert run("add", None, parse_error="could not parse").kind == "bad_json"
    assert run("nope", {}).kind == "unknown_tool"
    assert run("add", {"a": "x", "b": 1}).kind == "schema"
    assert run("add", {"a": "1", "b": 1}, relaxed=False).kind == "schema"
    assert box.calls == []
    slow = run("slow", {"s": 5}, timeout_s=0.05)
    assert slow.kind == "timeout" and slow.record.error == "timeout: slow did not answer within 0.05 s"
    assert slow.record.result == "Error (timeout): slow did not answer within 0.05 s" and slow.result is None
    done = run("add", {"a": 1, "b": 2}, turn=1, step=4)
    assert done.ok and done.result is not None and done.result.text == "3"
    assert (done.record.turn, done.record.step, done.record.error, error_kind(done.record)) == (
        1,
        4,
        None,
        None,
    )


def test_task_tools_follow_the_task_and_strip_enums_for_prove_variants():
    colour = ToolSpec(
        "paint", "", {"type": "object", "properties": {"c": {"type": "string", "enum": ["red"]}}}, "x"
    )
    listed = [*NOTES_TOOLS, colour]
    task = Task("t", "eval", "p", ["x"], ["paint", "add", "not_served"], 0)
    assert list(task_tools(task, listed)) == ["paint", "add"]  # the task's order, served ones only
    assert list(task_tools(dataclasses.replace(task, tools=[]), listed)) == [t.name for t in listed]
    assert task_tools(task, listed)["paint"].input_schema["properties"]["c"]["enum"] == ["red"]
    variant = dataclasses.replace(task, metadata={"strip_enums": True})
    assert "enum" not in task_tools(variant, listed)["paint"].input_schema["properties"]["c"]
    box = FakeToolbox(listed)
    out = asyncio.run(execute_call(box, "paint", {"c": "blue"}, tools=task_tools(variant, listed)))
    assert out.kind == "tool_error"  # checked against the stripped schema, so the call was made
