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
from toolkit.records import GoldCall, RolloutRecord, Task, Trajectory
from toolkit.train.batching import DynamicSampling, SamplingConfig, guide_count, silenced_rows

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


# ---- the recipe's knobs --------------------------------------------------------------------------------

DYNAMIC = {"min_spread": 0.1, "max_refill_rounds": 1}


@pytest.mark.parametrize(
    ("section", "error"),
    [
        ({"guide_share": 1.5}, "guide_share must be a number in"),
        ({"guide_share": -0.1}, "guide_share must be a number in"),
        ({"guide_share": True}, "guide_share must be a number in"),
        ({"guide_share": "half"}, "guide_share must be a number in"),
        ({"guide_share": 0.5, "guide_decay_steps": -1}, "guide_decay_steps must be an integer"),
        ({"guide_share": 0.5, "guide_decay_steps": 2.5}, "guide_decay_steps must be an integer"),
        ({"guide_share": 0.5, "guide_below": "low"}, "guide_below must be a number"),
    ],
)
def test_guidance_knobs_are_checked(section, error):
    with pytest.raises(ValueError, match=error):
        SamplingConfig.from_recipe({**DYNAMIC, **section})


@pytest.mark.parametrize("off", [{"min_spread": 0}, {"max_refill_rounds": 0}])
def test_guidance_needs_dynamic_sampling(off):
    with pytest.raises(ValueError, match="guide_share needs dynamic sampling"):
        SamplingConfig.from_recipe({**DYNAMIC, **off, "guide_share": 0.5})
    assert SamplingConfig.from_recipe({**DYNAMIC, **off}).guide_share == 0.0  # off by default


def test_the_guided_share_falls_linearly_and_k_rounds_up():
    config = SamplingConfig.from_recipe({**DYNAMIC, "guide_share": 0.5, "guide_decay_steps": 10})
    assert [config.guide_share_at(s) for s in (0, 5, 10, 30)] == [0.5, 0.25, 0.0, 0.0]
    constant = SamplingConfig.from_recipe({**DYNAMIC, "guide_share": 0.5})
    assert constant.guide_share_at(0) == constant.guide_share_at(1000) == 0.5
    three = make_task(gold=[GoldCall("add", {"a": i, "b": i}) for i in range(3)] + GOLD[2:])
    assert [guide_count(three, s) for s in (0.0, 0.1, 1 / 3, 0.5, 1.0)] == [0, 1, 1, 2, 3]
    assert guide_count(make_task(gold=[GoldCall("add", {"a": 1, "b": 1}, turn=1)]), 1.0) == 0
    ten = make_task(gold=[GoldCall("add", {"a": i, "b": i}) for i in range(10)])
    assert guide_count(ten, 0.7) == 7  # 0.7 * 10 is 7.000000000000001 in floats


# ---- dynamic sampling's guided round -------------------------------------------------------------------


def _task(i: int, n_gold: int = 2) -> Task:
    gold = [GoldCall("add", {"a": j, "b": j}) for j in range(n_gold)]
    return Task(f"t{i}", "train", f"prompt {i}", [], [], 0, gold=gold, metadata={"kind": "lookup"})


class Sampler:
    """``run`` for ``DynamicSampling.resample``: episodes whose answer says what the test wants, guided or
    not (``answer(task_id, index in its group, guide)``); keeps every call's guide counts."""

    def __init__(self, answer):
        self.answer, self.guides = answer, []

    def __call__(self, tasks, guide=None):
        self.guides.append(guide)
        guide = guide or [0] * len(tasks)
        out = []
        for i, (task, k) in enumerate(zip(tasks, guide, strict=True)):
            meta = {"guided_calls": k} if k else {}
            out.append(
                Trajectory(task.id, [], final_answer=str(self.answer(task.id, i % 2, k)), metadata=meta)
            )
        return out


def score(tasks, trajs):
    return [float(tr.final_answer) for tr in trajs]


def resample(answer, share=1.0, **config):
    """Slot 0 (t0) always fails unguided, slot 1 (t1) spreads; the pool's other tasks fail too."""
    pool = [_task(i) for i in range(4)]
    sampling = SamplingConfig(
        **{**DYNAMIC, "flat_groups": "drop", "guide_share": 0.5, "guide_below": 0.5, **config}
    )
    run = Sampler(answer)
    tasks = [pool[0]] * 2 + [pool[1]] * 2
    out = DynamicSampling(pool, sampling, seed=0).resample(
        tasks, run(tasks), 2, run=run, score=score, guide_share=share
    )
    return (*out, run)


def test_a_flat_all_failed_slot_gets_a_guided_group_that_takes_it_when_it_spreads():
    def answer(task_id, i, k):
        if task_id == "t1":
            return [0.2, 0.9][i]
        return [1.0, 0.0][i] if k else 0.0  # guided: one of two right

    tasks, trajs, report, run = resample(answer, share=0.5)
    assert [t.id for t in tasks] == ["t0", "t0", "t1", "t1"]
    assert [guided_calls(t) for t in trajs] == [1, 1, 0, 0]  # k = ceil(0.5 * 2 gold calls)
    assert run.guides == [None, None, [1, 1]]  # the batch, one refill round, the guided round
    assert report.guided == report.guided_kept == 1 and report.guided_calls == [1]
    assert report.slot_rounds == [2, 0] and report.flat_slots == [] and report.still_flat == 0
    assert silenced_rows(report, 2, "drop") == []  # no longer flat: it teaches
    # the original flat group and the refill's are kept in the report, unguided
    assert [(r, ts[0].id, guided_calls(trs[0])) for r, ts, trs in report.discarded] == [
        (1, report.discarded[0][1][0].id, 0),
        (0, "t0", 0),
    ]
    assert report.extra_episodes == 4
    metrics = report.metrics()
    assert metrics["dynamic/guided_share"] == metrics["dynamic/guided_kept_share"] == 0.5
    assert metrics["dynamic/guided_calls_mean"] == 1.0 and metrics["dynamic/guide_share"] == 0.5


def test_a_guided_group_that_does_not_spread_leaves_the_slot_flat():
    tasks, trajs, report, run = resample(lambda task_id, i, k: [0.2, 0.9][i] if task_id == "t1" else 0.0)
    assert run.guides[-1] == [2, 2]  # share 1.0: both gold calls
    assert report.guided == 1 and report.guided_kept == 0 and report.flat_slots == [0]
    assert [guided_calls(t) for t in trajs] == [0, 0, 0, 0] and report.slot_rounds == [0, 0]
    assert (2, "t0", 2) in [(r, ts[0].id, guided_calls(trs[0])) for r, ts, trs in report.discarded]
    assert silenced_rows(report, 2, "drop") == [0, 1]
    assert report.metrics()["dynamic/guided_kept_share"] == 0.0


def test_only_slots_where_every_episode_failed_are_guided():
    # t0 flat at 0.8: every episode right, nothing to guide
    _, _, right, run = resample(lambda task_id, i, k: [0.2, 0.9][i] if task_id == "t1" else 0.8)
    assert right.guided == 0 and run.guides == [None, None] and right.flat_slots == [0]
    # a task without first-turn gold calls has nothing to replay
    pool = [_task(0, n_gold=0), _task(1), _task(2, n_gold=0)]
    run = Sampler(lambda task_id, i, k: [0.2, 0.9][i] if task_id == "t1" else 0.0)
    tasks = [pool[0]] * 2 + [pool[1]] * 2
    sampling = SamplingConfig(**DYNAMIC, guide_share=1.0)
    _, _, report = DynamicSampling(pool, sampling, 0).resample(
        tasks, run(tasks), 2, run, score, guide_share=1.0
    )
    assert report.guided == 0 and run.guides == [None, None]
    # guidance off (or decayed to 0 this step): no guided round, no guided metrics when off
    _, _, off, run = resample(lambda task_id, i, k: 0.0, share=0.0, guide_share=0.0)
    assert off.guided == 0 and all(g is None for g in run.guides)
    assert not [k for k in off.metrics() if "guide" in k]
    _, _, decayed, _ = resample(lambda task_id, i, k: 0.0, share=0.0)
    assert decayed.metrics()["dynamic/guide_share"] == 0.0 and decayed.guided == 0


# ---- the rollout log ------------------------------------------------------------------------------------


def test_rollout_records_carry_guided_calls_and_old_logs_still_read():
    traj = Trajectory("t1", [], final_answer="5", metadata={"guided_calls": 2})
    record = RolloutRecord.from_trajectory(3, traj, 2, True)
    assert record.guided_calls == 2 and record.to_dict()["guided_calls"] == 2
    assert RolloutRecord.from_dict(record.to_dict()) == record
    assert record.to_trajectory().metadata == {"round": 2, "kept": True, "guided_calls": 2}
    old = {k: v for k, v in record.to_dict().items() if k != "guided_calls"}  # written before guidance
    assert RolloutRecord.from_dict(old).guided_calls == 0
    assert RolloutRecord.from_dict(old).to_trajectory().metadata == {"round": 2, "kept": True}
    assert RolloutRecord.from_trajectory(3, Trajectory("t1", [])).guided_calls == 0


# ---- the GRPO step ---------------------------------------------------------------------------------------


class GuidedAware:
    """The fakes' finish-at-once policy, except that an episode whose first calls were made for it
    (``request.step`` > 0) answers right in even episodes: only guidance makes calc-0's group spread."""

    name = "scripted"

    def __init__(self, tokenizer, answer_of):
        self.tokenizer, self.answer_of = tokenizer, answer_of

    async def generate(self, requests):
        from toolkit.agent.policies import Generation

        out = []
        for r in requests:
            answer = self.answer_of(r.task, r.key)
            if r.step > 0:
                answer = str(r.task.answers["result"]) if r.key % 2 == 0 else "0.1"
            ids = self.tokenizer(call("finish", answer=answer), add_special_tokens=False)["input_ids"]
            ids.append(self.tokenizer.eos_token_id)
            out.append(Generation(token_ids=ids, logprobs=[-1.0] * len(ids)))
        return out


def guided_step(tmp_path, global_step: int, **sampling):
    """``rollout_func`` on calc-0 (every unguided episode wrong, 0.1) and calc-1 (answers spread), 4
    episodes each, with dynamic sampling, ``flat_groups: drop`` and guidance at ``global_step``."""
    import torch
    from grpo_fakes import TASKS, AnswerValue, RolloutTrainer

    from toolkit.models import load_tokenizer
    from toolkit.records import read_jsonl
    from toolkit.rewards.trl import as_trl_reward_func
    from toolkit.train.grpo import GRPOStep
    from toolkit.train.trl_adapter import rollout_func

    tok = load_tokenizer("tiny-random")
    pool = read_jsonl(TASKS, Task)
    by_id = {t.id: t for t in pool}

    def answer_of(task, key):
        return ["0.2", "0.9"][key % 2] if task.id == "calc-1" else "0.1"

    config = SamplingConfig.from_recipe({**DYNAMIC, "flat_groups": "drop", "guide_share": 1.0, **sampling})
    log = tmp_path / "rollouts.jsonl"
    step = GRPOStep(
        RolloutConfig(max_turns=3),
        lambda _: GuidedAware(tok, answer_of),
        rollout_log=log,
        dynamic=DynamicSampling(pool, config, seed=0),
    )
    trainer = RolloutTrainer(
        tok,
        [by_id["calc-0"], by_id["calc-1"]],
        4,
        step,
        step=global_step,
        reward_funcs=[as_trl_reward_func(AnswerValue())],
        reward_weights=torch.tensor([1.0]),
    )
    out = rollout_func(["p"] * 8, trainer)
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    return tok, out, trainer.logged, logged


def test_the_grpo_step_guides_a_failed_slot_trains_on_the_model_turns_and_measures_it_apart(tmp_path):
    tok, out, metrics, logged = guided_step(tmp_path, global_step=3)
    trajs = out["trajectory"]
    assert [t.task_id for t in trajs] == ["calc-0"] * 4 + ["calc-1"] * 4
    assert [guided_calls(t) for t in trajs] == [1] * 4 + [0] * 4  # the guided group took calc-0's slot
    assert out["silenced"] == [False] * 8  # it spreads: it teaches
    for traj, mask, ids in zip(trajs[:4], out["env_mask"][:4], out["completion_ids"][:4], strict=True):
        assert traj.calls[0].name == "percent_of" and traj.calls[0].ok  # the gold call, made for real
        model = tok.decode([i for i, m in zip(ids, mask, strict=True) if m])
        assert model.startswith("<tool_call>") and "finish" in model and "percent_of" not in model
        assert "percent_of" in tok.decode([i for i, m in zip(ids, mask, strict=True) if not m])
    # the log: 8 in the batch, 4 of the refill round, the 4 unguided calc-0 episodes the guided group replaced
    assert len(logged) == 16 and {r["step"] for r in logged} == {3}
    guided = [r for r in logged if r["guided_calls"]]
    assert len(guided) == 4 and all(
        r["kept"] and r["round"] == 2 and r["task_id"] == "calc-0" for r in guided
    )
    assert [r["round"] for r in logged if r["task_id"] == "calc-0" and not r["kept"]] == [0] * 4
    # episodes/ measures the policy alone; guided/ the guided episodes (half of them right)
    assert metrics["episodes/sampled"] == 16 and metrics["guided/sampled"] == 4
    assert metrics["episodes/answer_correct"] == 0.0 and metrics["guided/answer_correct"] == 0.5
    assert metrics["guided/finish_rate"] == 1.0 and metrics["guided/tool_calls_mean"] == 1.0
    assert metrics["episodes/tool_calls_mean"] == 0.0  # the model alone made no call in this step
    assert metrics["guided/reward_mean"] == pytest.approx((40.0 + 0.1) / 2)
    unguided = [0.1] * 4 + [0.2, 0.9] * 2 + [0.1] * 4
    assert metrics["episodes/reward_mean"] == pytest.approx(sum(unguided) / 12)
    assert metrics["dynamic/guided_share"] == metrics["dynamic/guided_kept_share"] == 0.5
    assert metrics["dynamic/guided_calls_mean"] == 1.0 and metrics["dynamic/silenced_share"] == 0.0


def test_the_grpo_step_passes_the_decayed_share(tmp_path):
    """At the step where the share has fallen to 0 the slot gets no guided round: silenced as before."""
    _, out, metrics, logged = guided_step(tmp_path, global_step=4, guide_decay_steps=4)
    assert out["silenced"] == [True] * 4 + [False] * 4
    assert not any(r["guided_calls"] for r in logged) and len(logged) == 12
    assert metrics["dynamic/guide_share"] == 0.0 and metrics["dynamic/guided_share"] == 0.0
    assert "guided/sampled" not in metrics


@pytest.mark.integration
def test_guided_rows_in_trls_math(tmp_path, monkeypatch):
    """In what TRL computes from the rollout: the guided group's rows have advantages (one of two right),
    their loss covers the model's own tokens only (the gold call made for it is masked like a tool's
    output)."""
    import grpo_fakes
    from grpo_fakes import generation_batch, scoring_trainer

    monkeypatch.setattr(grpo_fakes, "FinishPolicy", GuidedAware)
    sampling = {"min_spread": 0.1, "max_refill_rounds": 1, "flat_groups": "drop", "guide_share": 1.0}
    trainer = scoring_trainer(
        tmp_path,
        monkeypatch,
        lambda task, key: ["0.2", "0.9"][key % 2] if task.id == "calc-1" else "0.1",
        sampling=sampling,
        scale_rewards="group",
    )
    out = generation_batch(trainer, ["calc-0", "calc-1"])
    loss_mask = out["completion_mask"] * out["tool_mask"]
    assert (loss_mask[:4].sum(1) > 0).all() and (out["advantages"][:4].abs() > 0.5).all()
    assert (loss_mask[:4].sum(1) < out["completion_mask"][:4].sum(1)).all()  # the guided turn is not trained
    assert int(out["num_items_in_batch"]) == int(loss_mask.sum())
