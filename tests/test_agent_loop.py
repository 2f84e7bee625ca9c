"""The rollout loop on a fake Toolbox with scripted model turns (real tokenizer, real bookkeeping)."""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolkit.agent.loop import NEW_TOOLS_MESSAGE, RolloutConfig, RolloutStats, rollout, run_episodes
from toolkit.agent.policies import GoldPolicy, OpenAIPolicy
from toolkit.agent.testing import ScriptedPolicy, check_token_exact, fake_opener, turns
from toolkit.records import GoldCall, Task, Trajectory
from toolkit.toolbox import ToolResult

TOOLS = ["add", "save_note", "dump", "fail", "slow"]


@pytest.fixture(scope="module")
def tok():
    from toolkit.models import load_tokenizer

    return load_tokenizer("tiny-random")


def make_task(task_id="t", followups=(), **kw) -> Task:
    return Task(
        id=task_id,
        split="eval",
        prompt="Add 2 and 3, then save the sum.",
        servers=["calc", "notes"],
        tools=kw.pop("tools", TOOLS),
        seed=0,
        followups=list(followups),
        **kw,
    )


def call(name, **args) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>"


def run(tasks, policy, config=None, **kw) -> list[Trajectory]:
    return rollout(
        tasks, policy, config or RolloutConfig(), open_episode=kw.pop("opener", fake_opener()), **kw
    )


def assert_token_exact(traj: Trajectory, tok) -> None:
    check_token_exact(traj, tok)
    # the scripted policy reports logprob -1.0 for every sampled token: they land exactly on mask 1
    assert all((lp != 0.0) == bool(m) for lp, m in zip(traj.logprobs, traj.completion_mask, strict=True))


def test_token_exact_multi_turn_episode(tok):
    script = turns(
        call("add", a="2", b=3),
        "Saving. " + call("save_note", key="sum", text="5") + call("nope"),
        "The sum is 5.",
        "<tool_call>{'name': 'dump', 'arguments': {'n': 400}}",
        call("finish", answer="dumped"),
    )
    (traj,) = run([make_task(followups=["Now dump 400 words."])], ScriptedPolicy(script, tok))
    assert traj.stop_reason == "finish"
    assert traj.turn_answers == ["The sum is 5.", "dumped"] and traj.final_answer == "dumped"
    assert [c.name for c in traj.calls] == ["add", "save_note", "nope", "dump"]
    assert traj.calls[0].args == {"a": 2, "b": 3} and traj.calls[0].result == "5"
    assert traj.state_diff == {"notes/sum": {"before": None, "after": {"text": "5"}}}
    assert_token_exact(traj, tok)
    assert traj.metadata["model_tokens"] == sum(traj.completion_mask)


def test_errors_go_back_to_the_model_and_are_counted(tok):
    script = turns(
        call("nope"),
        "<tool_call>{this is not json</tool_call>",
        call("add", a="two", b=1),
        call("fail"),
        call("slow", s=5),
        call("add", a=1, b=1),
        "Done: 2",
    )
    config = RolloutConfig(max_turns=10, tool_timeout_s=0.05)
    (traj,) = run([make_task()], ScriptedPolicy(script, tok), config)
    kinds = [c.error.split(":")[0] if c.error else None for c in traj.calls]
    assert kinds == ["unknown_tool", "bad_json", "schema", "tool_error", "timeout", None]
    assert traj.n_parse_errors == 1
    assert traj.metadata["errors"] == {
        "unknown_tool": 1,
        "bad_json": 1,
        "schema": 1,
        "tool_error": 1,
        "timeout": 1,
    }
    assert traj.stop_reason == "no_tool_call" and traj.final_answer == "Done: 2"
    tool_texts = [m["content"] for m in traj.messages if m["role"] == "tool"]
    assert tool_texts[0].startswith("Error (unknown_tool)") and "add, save_note" in tool_texts[0]
    assert tool_texts[2].startswith("Error (schema)") and "two" in tool_texts[2]
    assert all(t.startswith("Error (") for t in tool_texts[:5]) and tool_texts[5] == "2"
    assert_token_exact(traj, tok)


def test_call_in_an_unrecognised_format_is_an_error_and_the_episode_goes_on(tok):
    script = turns(
        '<TOOL_CALL>{"name": "add", "arguments": {"a": 1, "b": 2}}</TOOL_CALL>', call("add", a=1, b=2), "3"
    )
    (traj,) = run([make_task()], ScriptedPolicy(script, tok))
    first, second = traj.calls
    assert first.error.startswith("bad_json: tool call not recognised") and not first.ok
    assert second.ok and traj.final_answer == "3" and traj.n_parse_errors == 1
    (shown,) = [m["content"] for m in traj.messages if m["role"] == "tool"][:1]
    assert shown.startswith("Error (bad_json)") and "<tool_call>" in shown
    assert_token_exact(traj, tok)


@pytest.mark.parametrize("relaxed", [True, False])
def test_relaxed_validation_switch(tok, relaxed):
    script = turns(call("add", a="2", b="3"), "ok")
    (traj,) = run([make_task()], ScriptedPolicy(script, tok), RolloutConfig(relaxed_validation=relaxed))
    (record,) = traj.calls
    if relaxed:
        assert record.ok and record.args == {"a": 2, "b": 3} and record.result == "5"
    else:
        assert not record.ok and record.error.startswith("schema")


def test_tool_output_truncated_with_visible_marker(tok):
    script = turns(call("dump", n=500), "ok")
    (traj,) = run([make_task()], ScriptedPolicy(script, tok), RolloutConfig(max_tool_output_tokens=40))
    result = traj.calls[0].result
    assert "[... truncated: showing 40 of" in result
    assert len(tok(result.split("\n[...")[0], add_special_tokens=False)["input_ids"]) <= 40
    assert_token_exact(traj, tok)


def test_surrogates_in_tool_output_and_prompt_are_made_encodable(tok):
    from toolkit.agent.testing import FakeToolbox

    class Garbled(FakeToolbox):
        async def call_tool(self, name, arguments):
            return ToolResult(True, "lone \ud800 end \udfff, pair \ud83d\ude00, caf\u00e9")

    @asynccontextmanager
    async def opener(task):
        yield Garbled()

    task = make_task(followups=["and \udc80 again"])
    task.prompt += " \ud800"
    (traj,) = run([task], ScriptedPolicy(turns(call("fail"), "ok"), tok), opener=opener)
    assert traj.stop_reason == "no_tool_call" and "error" not in traj.metadata
    (record,) = traj.calls
    assert record.ok and record.result == "lone \ufffd end \ufffd, pair \U0001f600, caf\u00e9"
    assert traj.messages[1]["content"].endswith(" \ufffd") and traj.turn_answers == ["ok", "ok"]
    assert_token_exact(traj, tok)


def test_iteration_cap(tok):
    (traj,) = run(
        [make_task()], ScriptedPolicy(turns(call("add", a=1, b=1)), tok), RolloutConfig(max_turns=3)
    )
    assert traj.stop_reason == "max_turns" and len(traj.calls) == 3
    assert_token_exact(traj, tok)


def test_context_budget_ends_the_episode(tok):
    policy = ScriptedPolicy(turns(call("dump", n=100)), tok)
    prompt_len = len(run([make_task()], ScriptedPolicy(turns("x"), tok))[0].prompt_ids)
    config = RolloutConfig(max_turns=50, max_context_tokens=prompt_len + 400)
    (traj,) = run([make_task()], policy, config)
    assert traj.stop_reason == "length"
    assert len(traj.prompt_ids) + len(traj.completion_ids) <= config.max_context_tokens
    assert_token_exact(traj, tok)


def test_generation_cut_by_max_new_tokens(tok):
    (traj,) = run([make_task()], ScriptedPolicy(turns("word " * 50), tok), RolloutConfig(max_new_tokens=8))
    assert traj.stop_reason == "length" and sum(traj.completion_mask) == 8
    assert_token_exact(traj, tok)


def test_finish_ends_a_user_turn_and_the_next_one_starts(tok):
    script = turns(call("finish", answer="five"), call("add", a=1, b=2), "three")
    (traj,) = run([make_task(followups=["And 1 + 2?"])], ScriptedPolicy(script, tok))
    assert traj.turn_answers == ["five", "three"] and traj.stop_reason == "no_tool_call"
    assert [c.name for c in traj.calls] == ["add"]  # finish is the loop's own tool, not a call record
    roles = [m["role"] for m in traj.messages]
    assert roles == ["system", "user", "assistant", "tool", "user", "assistant", "tool", "assistant"]
    assert_token_exact(traj, tok)


def test_finish_tool_can_be_switched_off(tok):
    script = turns(call("finish", answer="x"), "plain answer")
    (traj,) = run([make_task()], ScriptedPolicy(script, tok), RolloutConfig(finish_tool=False))
    assert traj.calls[0].error.startswith("unknown_tool") and traj.final_answer == "plain answer"
    assert all(t["function"]["name"] != "finish" for t in traj.metadata["tools"])


def test_tools_missed_until_a_later_turn_are_revealed_then(tok):
    seen_tools = []

    def script(req):
        seen_tools.append([t["function"]["name"] for t in req.tools])
        return [call("dump", n=2), "cannot", call("dump", n=2), "done"][req.step]

    task = make_task(followups=["Try again."], metadata={"bfcl": {"missed_function": {"1": ["dump"]}}})
    (traj,) = run([task], ScriptedPolicy(script, tok), RolloutConfig(finish_tool=False))
    assert "dump" not in seen_tools[0] and "dump" in seen_tools[2]
    assert traj.calls[0].error.startswith("unknown_tool") and traj.calls[1].ok
    followup = [m for m in traj.messages if m["role"] == "user"][1]["content"]
    assert followup.startswith("Try again.") and NEW_TOOLS_MESSAGE in followup and '"dump"' in followup
    assert_token_exact(traj, tok)


def test_generation_is_batched_across_episodes(tok):
    def script(req):  # episodes take different numbers of steps
        return call("add", a=1, b=1) if req.step < int(req.task.id) else "done"

    tasks = [make_task(str(k)) for k in range(4)]
    policy = ScriptedPolicy(script, tok)
    stats = RolloutStats()
    trajs = run(tasks, policy, n=2, stats=stats)
    assert [t.task_id for t in trajs] == ["0", "0", "1", "1", "2", "2", "3", "3"]
    assert [len(t.calls) for t in trajs] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert policy.batch_sizes == [8, 6, 4, 2]  # one call per step with every live episode
    assert stats.generations == 20 and stats.episodes == 8 and stats.model_tokens > 0
    small = ScriptedPolicy(script, tok)
    run(tasks, small, RolloutConfig(max_batch_size=3, max_concurrent_episodes=5), n=2)
    assert max(small.batch_sizes) <= 3 and sum(small.batch_sizes) == 20


def test_environment_failure_is_recorded_and_others_go_on(tok):
    good = fake_opener()

    @asynccontextmanager
    async def opener(task):
        if task.id == "bad":
            raise ConnectionError("server did not start")
        async with good(task) as box:
            yield box

    trajs = run([make_task("bad"), make_task("ok")], ScriptedPolicy(turns("fine"), tok), opener=opener)
    assert trajs[0].stop_reason == "error" and "server did not start" in trajs[0].metadata["error"]
    assert trajs[1].stop_reason == "no_tool_call" and trajs[1].final_answer == "fine"


def test_a_broken_environment_ends_the_episode_at_once(tok):
    from toolkit.agent.testing import FakeToolbox
    from toolkit.rewards.trl import environment_failed

    class DiesOnFail(FakeToolbox):
        environment_error = None  # what toolkit.envs.Episode sets when a server dies

        async def call_tool(self, name, arguments):
            if name == "fail":
                self.environment_error = "server 'notes' is unavailable: Connection closed"
                return ToolResult(False, "Error calling 'fail': Connection closed", error_kind="transport")
            return await super().call_tool(name, arguments)

    @asynccontextmanager
    async def opener(task):
        yield DiesOnFail(allowed=set(task.tools))

    script = turns(call("add", a=1, b=2), call("fail") + call("add", a=5, b=5), "done")
    policy = ScriptedPolicy(script, tok)
    broken, fine = run([make_task("broken"), make_task("fine", tools=["add"])], policy, opener=opener)
    assert broken.stop_reason == "error" and environment_failed(broken)
    assert broken.metadata["error"] == "server 'notes' is unavailable: Connection closed"
    assert [(c.name, c.ok) for c in broken.calls] == [("add", True), ("fail", False)]  # 2nd add not made
    assert broken.messages[-1]["role"] == "tool" and "Connection closed" in broken.messages[-1]["content"]
    assert broken.metadata["steps"] == 2
    assert_token_exact(broken, tok)
    # in the other episode "fail" is not offered (an unknown tool): it runs to its own end
    assert fine.stop_reason == "no_tool_call" and fine.final_answer == "done" and "error" not in fine.metadata


def test_policy_failure_is_raised_not_recorded():
    class Broken:
        name, tokenizer = "broken", None

        async def generate(self, requests):
            raise RuntimeError("CUDA out of memory")

    with pytest.raises(RuntimeError, match="out of memory"):
        run([make_task("a"), make_task("b")], Broken())


def test_gold_policy_replays_gold_and_answers():
    gold = [
        GoldCall("add", {"a": 2, "b": 3}),
        GoldCall("save_note", {"key": "sum", "text": "5"}, [0]),  # needs the first result: waits for it
        GoldCall("add", {"a": 1, "b": 1}),  # independent: goes out with the call before it
    ]
    task = make_task(gold=gold, answers={"sum": 5})
    (traj,) = run([task], GoldPolicy())
    assert [(c.name, c.args, c.ok) for c in traj.calls] == [(g.name, g.arguments, True) for g in gold]
    assert [len(m.get("tool_calls", [])) for m in traj.messages if m["role"] == "assistant"] == [1, 2, 1]
    assert traj.stop_reason == "finish" and traj.final_answer == "sum: 5"
    assert traj.prompt_ids == [] and traj.state_diff
    # an iteration cap too small for one call per turn: the rest go out together, the answer still fits
    (capped,) = run([task], GoldPolicy(), RolloutConfig(max_turns=2))
    assert [len(m.get("tool_calls", [])) for m in capped.messages if m["role"] == "assistant"] == [3, 1]
    assert capped.stop_reason == "finish" and len(capped.calls) == 3


def test_gold_policy_multi_turn_without_finish():
    gold = [GoldCall("add", {"a": 1, "b": 1}, turn=0), GoldCall("add", {"a": 2, "b": 2}, turn=1)]
    task = make_task(gold=gold, followups=["again"], answers={"x": 4})
    (traj,) = run([task], GoldPolicy(), RolloutConfig(finish_tool=False))
    assert [(c.turn, c.result) for c in traj.calls] == [(0, "2"), (1, "4")]
    assert traj.turn_answers == ["Done.", "x: 4"] and traj.stop_reason == "no_tool_call"


def test_openai_policy_sends_wire_format_and_reads_structured_calls():
    class Obj:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    sent = []

    class Completions:
        async def create(self, **kw):
            sent.append(kw)
            if len(sent) == 1:
                fn = Obj(name="add", arguments='{"a": "4", "b": 5}')
                message = Obj(content=None, tool_calls=[Obj(id="x", function=fn)])
            else:
                message = Obj(content="It is 9.", tool_calls=None)
            return Obj(choices=[Obj(message=message, finish_reason="stop")])

    client = Obj(chat=Obj(completions=Completions()))
    (traj,) = run([make_task()], OpenAIPolicy("m", client=client))
    assert traj.final_answer == "It is 9." and traj.calls[0].args == {"a": 4, "b": 5} and traj.calls[0].ok
    second = sent[1]["messages"]
    assert (
        second[2]["tool_calls"][0]["function"]["arguments"] == '{"a": "4", "b": 5}'
    )  # as the model wrote it
    assert second[3] == {"role": "tool", "tool_call_id": second[2]["tool_calls"][0]["id"], "content": "9"}
    assert {t["function"]["name"] for t in sent[0]["tools"]} >= {"add", "finish"}
    assert traj.completion_ids == []


def test_rollout_works_inside_a_running_event_loop(tok):
    async def notebook_cell():
        return rollout([make_task()], ScriptedPolicy(turns("hi"), tok), open_episode=fake_opener())

    (traj,) = asyncio.run(notebook_cell())
    assert traj.final_answer == "hi"


def test_run_episodes_is_awaitable(tok):
    trajs = asyncio.run(
        run_episodes([make_task()], ScriptedPolicy(turns("a"), tok), open_episode=fake_opener())
    )
    assert trajs[0].final_answer == "a"


_fragments = st.sampled_from(
    [
        "<tool_call>",
        "</tool_call>",
        '{"name": "add", "arguments": {"a": 1, "b": "2"}}',
        "{'name': 'dump'",
        "```",
        "finish",
        '"answer"',
        "}",
        "\n",
    ]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=st.lists(
        st.one_of(st.text(max_size=40), st.lists(_fragments, max_size=6).map("".join)), min_size=1, max_size=4
    )
)
def test_no_model_output_crashes_the_loop(tok, texts):
    (traj,) = run(
        [make_task(followups=["more"])],
        ScriptedPolicy(turns(*texts), tok),
        RolloutConfig(max_turns=3, max_new_tokens=64),
    )
    assert traj.stop_reason in ("finish", "no_tool_call", "max_turns", "length")
    assert_token_exact(traj, tok)


def test_an_episode_timeout_is_counted_as_timeout_not_tool_error(tok):
    from toolkit.agent.testing import FakeToolbox

    class SlowServer(FakeToolbox):
        async def call_tool(self, name, arguments):
            if name == "fail":  # what toolkit.envs.Episode returns when its own per-call timeout fires
                return ToolResult(False, "timeout: 'fail' did not answer within 2 s", error_kind="timeout")
            return await super().call_tool(name, arguments)

    @asynccontextmanager
    async def opener(task):
        yield SlowServer(allowed=set(task.tools))

    policy = ScriptedPolicy(turns(call("fail") + call("add", a=1, b=1), "done"), tok)
    (traj,) = run([make_task("slow")], policy, opener=opener)
    assert [(c.name, c.ok, (c.error or "").split(":")[0]) for c in traj.calls] == [
        ("fail", False, "timeout"),
        ("add", True, ""),
    ]


def test_compact_schemas_shorten_what_the_model_reads_not_what_is_validated(tok):
    from pydantic import BaseModel

    from toolkit.toolbox import compact_schema

    class Args(BaseModel):
        title: str  # a property *named* title stays
        limit: int | None = None
        tags: list[str] | None = None

    full = Args.model_json_schema()
    small = compact_schema(full)
    assert "title" not in small and set(small["properties"]) == {"title", "limit", "tags"}
    assert small["properties"]["limit"] == {"type": "integer"}
    assert small["properties"]["tags"] == {"items": {"type": "string"}, "type": "array"}
    assert small["required"] == ["title"] and len(json.dumps(small)) < 0.6 * len(json.dumps(full))
    assert compact_schema({"anyOf": [{"type": "string"}, {"type": "integer"}]}) == {
        "anyOf": [{"type": "string"}, {"type": "integer"}]
    }  # a real union is kept

    seen = []

    def script(req):
        seen.append(req.tools)
        return [call("add", a="2", b="x"), "done"][req.step]

    (traj,) = run([make_task()], ScriptedPolicy(script, tok), RolloutConfig(compact_schemas=True))
    shown = {t["function"]["name"]: t["function"]["parameters"] for t in seen[0]}
    assert shown["add"] == compact_schema(shown["add"]) and traj.metadata["tools"] == seen[0]
    assert traj.calls[0].error.startswith("schema")  # still checked against the server's schema
    assert_token_exact(traj, tok)
