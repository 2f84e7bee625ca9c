"""Guidance for GRPO groups where every episode fails (issue 49): the first k gold calls of the first user
turn made for the model, as context, then the model finishes; dynamic sampling's guided round for slots
still flat and all failed; the share's schedule; the metrics and the rollout log that tell guided
episodes apart."""

from __future__ import annotations

import dataclasses
import json

import pytest

from toolkit.agent.loop import MISSING_LOGPROBS, RolloutConfig, guided_calls, rollout
from toolkit.agent.parsing import format_call
from toolkit.agent.testing import ScriptedPolicy, fake_opener, turns
from toolkit.records import GoldCall, Task, Trajectory

GOLD = [
    GoldCall("add", {"a": 2, "b": 3}),
    GoldCall("save_note", {"key": "sum", "text": "5"}, [0]),
    GoldCall("add", {"a": 9, "b": 9}, turn=1),  # a later user turn's: never guided
]


@pytest.fixture(scope="module")
def tok():
    from toolkit.models import load_tokenizer

    return load_tokenizer("tiny-random")


def make_task(task_id="t", gold=GOLD, **kw) -> Task:
    return Task(
        id=task_id,
        split="train",
        prompt="Add 2 and 3, then save the sum.",
        servers=["calc", "notes"],
        tools=["add", "save_note", "dump"],
        seed=0,
        gold=list(gold),
        followups=kw.pop("followups", ["And 9 + 9?"]),
        **kw,
    )


def call(name, **args) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': args})}\n</tool_call>"


class Recording(ScriptedPolicy):
    """A scripted policy that keeps every request it was sent."""

    def __init__(self, script, tokenizer=None):
        super().__init__(script, tokenizer)
        self.requests = []

    async def generate(self, requests):
        # the messages as they were when asked (the loop goes on appending to the episode's list)
        self.requests.extend(dataclasses.replace(r, messages=list(r.messages)) for r in requests)
        return await super().generate(requests)


def run(tasks, policy, config=None, **kw):
    return rollout(tasks, policy, config or RolloutConfig(max_turns=4), open_episode=fake_opener(), **kw)


def spans(traj: Trajectory, tok) -> list[tuple[int, str]]:
    """The completion as (mask, decoded text) runs."""
    out: list[tuple[int, list[int]]] = []
    for token, mask in zip(traj.completion_ids, traj.completion_mask, strict=True):
        if not out or out[-1][0] != mask:
            out.append((mask, []))
        out[-1][1].append(token)
    return [(mask, tok.decode(ids)) for mask, ids in out]


def test_a_guided_episode_makes_the_gold_calls_as_context_then_the_model_goes_on(tok):
    policy = Recording(turns(call("finish", answer="5")), tok)
    (traj,) = run([make_task(followups=[])], policy, guide_calls=[2])
    # the two first-turn gold calls were made, with the tools' real outputs, then the model finished
    assert [(c.name, c.args, c.ok, c.result) for c in traj.calls] == [
        ("add", {"a": 2, "b": 3}, True, "5"),
        ("save_note", {"key": "sum", "text": "5"}, True, '{"saved": "sum"}'),
    ]
    assert traj.state_diff == {"notes/sum": {"before": None, "after": {"text": "5"}}}
    assert traj.stop_reason == "finish" and traj.final_answer == "5"
    assert traj.metadata["guided_calls"] == guided_calls(traj) == 2
    # rendered as the gold policy renders a gold call: one call a turn
    assistant = [m for m in traj.messages if m["role"] == "assistant"]
    assert [m["raw"] for m in assistant[:2]] == [format_call(g.name, g.arguments) for g in GOLD[:2]]
    # mask 0 over the guided turns (no logprob), mask 1 over the model's only
    model = [text for mask, text in spans(traj, tok) if mask]
    assert model == [call("finish", answer="5") + tok.eos_token]
    context = "".join(text for mask, text in spans(traj, tok) if not mask)
    assert all(format_call(g.name, g.arguments) in context for g in GOLD[:2])
    assert all((lp != 0.0) == bool(m) for lp, m in zip(traj.logprobs, traj.completion_mask, strict=True))
    assert MISSING_LOGPROBS not in traj.metadata
    # the model's one request saw the guided turns and their outputs, and had the budget left after them
    (request,) = policy.requests
    seen = tok.decode(request.prompt_ids)
    assert format_call("add", {"a": 2, "b": 3}) in seen and '{"saved": "sum"}' in seen
    assert [m["role"] for m in request.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert request.step == 2 and request.steps_left == 2
    assert traj.metadata["model_tokens"] == sum(traj.completion_mask) > 0


def test_a_guided_episode_stays_trainable(tok):
    from toolkit.train.rollout import has_sampling_logprobs, token_sample

    (traj,) = run(
        [make_task(followups=[])], ScriptedPolicy(turns(call("finish", answer="5")), tok), guide_calls=[1]
    )
    assert has_sampling_logprobs(traj)
    prompt, ids, logprobs, mask = token_sample(traj, tok.eos_token_id)
    assert prompt == traj.prompt_ids and len(ids) == len(mask) == len(logprobs)
    assert sum(mask) == sum(traj.completion_mask) > 0  # the model's turn is in the loss
    first_model = mask.index(1)
    assert first_model > 0 and format_call("add", {"a": 2, "b": 3}) in tok.decode(ids[:first_model])


def test_guided_calls_count_against_the_turn_cap_and_leave_the_model_one_generation(tok):
    always_add = ScriptedPolicy(turns(call("add", a=1, b=1)), tok)
    (traj,) = run([make_task(followups=[])], always_add, RolloutConfig(max_turns=3), guide_calls=[2])
    assert traj.stop_reason == "max_turns" and guided_calls(traj) == 2
    assert [c.args for c in traj.calls] == [{"a": 2, "b": 3}, {"key": "sum", "text": "5"}, {"a": 1, "b": 1}]
    assert always_add.batch_sizes == [1]  # the model had the one generation left
    # more asked than the cap holds: the model keeps one generation
    (capped,) = run([make_task(followups=[])], always_add, RolloutConfig(max_turns=2), guide_calls=[5])
    assert guided_calls(capped) == 1 and len(capped.calls) == 2
    # more asked than the first turn has: all of them, none of the later turn's
    policy = Recording(turns(call("finish", answer="5")), tok)
    (traj,) = run([make_task()], policy, RolloutConfig(max_turns=8), guide_calls=[9])
    assert guided_calls(traj) == 2 and [r.turn for r in policy.requests] == [0, 1]
    assert [c.turn for c in traj.calls] == [0, 0]  # the second turn's gold call is the model's to make
    # guided tool outputs are cut like the model's
    dump = make_task(gold=[GoldCall("dump", {"n": 500})], followups=[])
    (cut,) = run(
        [dump], ScriptedPolicy(turns("ok"), tok), RolloutConfig(max_tool_output_tokens=40), guide_calls=[1]
    )
    assert "[... truncated: showing 40 of" in cut.calls[0].result


def test_no_guidance_changes_nothing(tok):
    """k = 0, or no ``guide_calls``, gives the trajectory an unguided run gives; a task cannot ask for
    guidance itself (an evaluation must not be steerable by a crafted task file)."""
    script = turns(call("add", a=2, b=3), call("finish", answer="5"), "18")

    def view(traj: Trajectory) -> dict:
        d = traj.to_dict()
        d["metadata"] = {k: v for k, v in d["metadata"].items() if k != "env_s"}
        for c in d["calls"]:
            c.pop("latency")
        return d

    tasks = [make_task("a"), make_task("b", metadata={"guide_calls": 2, "guided_calls": 2})]
    plain = run(tasks, ScriptedPolicy(script, tok))
    zero = run(tasks, ScriptedPolicy(script, tok), guide_calls=[0, 0])
    assert [view(t) for t in zero] == [view(t) for t in plain]
    assert all("guided_calls" not in t.metadata and guided_calls(t) == 0 for t in plain)
    assert plain[1].calls[0].args == {"a": 2, "b": 3} and plain[1].metadata["steps"] == 3
    # only the task asked for is guided
    mixed = run(tasks, ScriptedPolicy(script, tok), guide_calls=[0, 1])
    assert view(mixed[0]) == view(plain[0]) and guided_calls(mixed[1]) == 1
    with pytest.raises(ValueError, match="2 counts for 1 tasks"):
        run(tasks[:1], ScriptedPolicy(script, tok), guide_calls=[1, 1])
    with pytest.raises(ValueError, match="integers >= 0"):
        run(tasks[:1], ScriptedPolicy(script, tok), guide_calls=[-1])


def test_a_message_level_policy_is_guided_too():
    policy = Recording(turns("It is 5."))  # no tokenizer: a chat server's view
    (traj,) = run([make_task(followups=[])], policy, guide_calls=[1])
    assert guided_calls(traj) == 1 and traj.calls[0].result == "5" and traj.final_answer == "It is 5."
    (request,) = policy.requests
    assert request.prompt_ids is None
    assert request.messages[2]["tool_calls"][0]["function"] == {"name": "add", "arguments": {"a": 2, "b": 3}}
    assert request.messages[3] == {"role": "tool", "tool_call_id": "call_0_0", "name": "add", "content": "5"}
