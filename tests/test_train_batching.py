"""Several tasks per GRPO step (issue 31): the kind-stratified, seeded task order, dynamic sampling with
fakes, and one tiny-random GRPO run that mixes kinds, drops flat groups and scores the refilled tasks."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from pathlib import Path

import pytest

from toolkit.records import RewardResult, Task, Trajectory
from toolkit.train.batching import (
    DynamicSampling,
    SamplingConfig,
    group_spread,
    regroup_micro_batches,
    stratified_order,
    trim_padding,
)


def synth_tasks(n: int = 120) -> list[Task]:
    """The cpu preset's training tasks (every kind: lookup, write, aggregate, abstain, chain, clarify)."""
    from toolkit.synth.config import make_config
    from toolkit.synth.generate import generate

    return generate(make_config("cpu", n_train=n, n_eval=4, seed=1, max_distractors=1)).train


def kind(task: Task) -> str:
    return task.metadata["kind"]


def test_stratified_order_mixes_kinds_in_every_step_and_follows_the_seed():
    tasks = synth_tasks()
    kinds = Counter(kind(t) for t in tasks)
    assert len(kinds) >= 5 and kinds.most_common(1)[0][1] > 3 * min(kinds.values())  # lopsided pool
    order = stratified_order(tasks, 4, seed=0)
    assert len(order) == 4 * math.ceil(len(tasks) / 4)
    blocks = [order[i : i + 4] for i in range(0, len(order), 4)]
    for block in blocks:  # every step: 4 different tasks of 4 different kinds
        assert len({t.id for t in block}) == 4 and len({kind(t) for t in block}) == 4
    # every kind weighs the same whatever its count: each appears in about 4/6 of the steps
    per_kind = Counter(kind(t) for t in order)
    assert set(per_kind) == set(kinds) and max(per_kind.values()) - min(per_kind.values()) <= len(blocks) // 4
    # another seed, other tasks in the first 26 steps (cpu-demo's step count); the same seed, the same order
    first = {t.id for t in order[: 26 * 4]}
    other = {t.id for t in stratified_order(tasks, 4, seed=1)[: 26 * 4]}
    assert len(first ^ other) > 20
    assert [t.id for t in stratified_order(tasks, 4, seed=0)] == [t.id for t in order]
    # weights: a kind at 0 is never drawn, a heavier kind is drawn more
    weights = {"lookup": 3, "write": 1, "chain": 1, "abstain": 0}
    weighted = Counter(kind(t) for t in stratified_order(tasks, 2, seed=0, kind_weights=weights, n_steps=200))
    assert set(weighted) == {"lookup", "write", "chain"} and weighted["lookup"] > weighted["write"] + 60
    with pytest.raises(ValueError, match="no GRPO task has"):
        stratified_order(tasks, 2, seed=0, kind_weights={"poetry": 1})


def _task(i: int, k: str) -> Task:
    return Task(f"t{i}", "train", f"prompt {i}", [], [], 0, metadata={"kind": k})


def _traj(task: Task, answer: str) -> Trajectory:
    return Trajectory(task_id=task.id, messages=[], final_answer=answer)


def test_dynamic_sampling_drops_flat_groups_and_refills_them_with_other_tasks():
    pool = [_task(i, "lookup" if i < 6 else "chain") for i in range(10)]
    flat_ids = {"t0", "t1", "t2", "t6"}  # these tasks' groups always tie
    runs: list[list[str]] = []
    counter = iter(range(10_000))

    def run(tasks):
        runs.append([t.id for t in tasks])
        return [_traj(t, str(next(counter))) for t in tasks]

    scored: list[list[str]] = []

    def score(tasks, trajs):
        scored.append([t.id for t in tasks])
        assert [t.id for t in tasks] == [t.task_id for t in trajs]
        return [
            0.5 if t.id in flat_ids else float(tr.final_answer) % 3
            for t, tr in zip(tasks, trajs, strict=True)
        ]

    batch = [pool[0], pool[3], pool[6], pool[7]]  # 2 flat groups (t0, t6) of 4
    tasks = [t for t in batch for _ in range(2)]
    sampler = DynamicSampling(pool, SamplingConfig(min_spread=0.5, max_refill_rounds=3), seed=0)
    new_tasks, new_trajs, report = sampler.resample(tasks, run(tasks), 2, run=run, score=score)
    assert report.groups == 4 and report.dropped == 2 and 1 <= report.rounds <= 3
    assert report.metrics()["dynamic/dropped_share"] == 0.5
    kept = [new_tasks[g * 2].id for g in range(4)]
    assert kept[1] == "t3" and kept[3] == "t7"  # groups with a spread stay
    assert kept[0] not in flat_ids | {"t3"} and kept[2] not in flat_ids | {"t7"}  # refilled, not flat
    assert kind(new_tasks[0]) == "lookup" and kind(new_tasks[4]) == "chain"  # the kind mix is kept
    assert len(set(kept)) == 4 and report.refilled == 2 and report.still_flat == 0
    assert [t.task_id for t in new_trajs] == [t.id for t in new_tasks]
    assert report.extra_episodes == sum(len(r) for r in runs[1:])
    # every group that lost its slot is kept in the report: as many episodes as the refills added
    assert sum(len(trajs) for _, _, trajs in report.discarded) == report.extra_episodes
    assert {tasks[0].id for _, tasks, _ in report.discarded} >= {"t0", "t6"}  # the flat originals
    assert report.slot_rounds[1] == report.slot_rounds[3] == 0 and report.slot_rounds[0] >= 1
    # the refill rounds are bounded: a pool with nothing but ties stops after max_refill_rounds
    ties = DynamicSampling(pool, SamplingConfig(min_spread=0.5, max_refill_rounds=2), seed=0)
    runs.clear()
    _, _, stuck = ties.resample(tasks, run(tasks), 2, run=run, score=lambda ts, _: [0.0] * len(ts))
    assert stuck.rounds == 2 and stuck.dropped == stuck.still_flat == 4 and stuck.refilled == 0
    assert len(runs) == 3  # the batch, then two refill rounds
    assert report.flat_slots == [] and stuck.flat_slots == [0, 1, 2, 3]


def test_flat_groups_drop_silences_every_episode_of_the_still_flat_slots():
    from toolkit.train.batching import RefillReport, silenced_rows

    report = RefillReport(groups=3, dropped=2, still_flat=1, flat_slots=[1])
    assert silenced_rows(report, 2, "keep") == []
    assert silenced_rows(report, 2, "drop") == [2, 3]
    with pytest.raises(ValueError, match="flat_groups"):
        SamplingConfig.from_recipe({"flat_groups": "zero"})


@pytest.mark.parametrize("off", [{"min_spread": 0}, {"max_refill_rounds": 0}, {}])
def test_flat_groups_drop_without_dynamic_sampling_is_a_config_error(off):
    """``drop`` silences what dynamic sampling left flat: with it off (min_spread 0, the default, or no
    refill round) nothing would be dropped, so the recipe is refused instead of running as ``keep``."""
    section = {"flat_groups": "drop", "min_spread": 0.05, "max_refill_rounds": 2, **off}
    if off:
        with pytest.raises(ValueError, match="flat_groups: drop needs dynamic sampling"):
            SamplingConfig.from_recipe(section)
    else:
        assert SamplingConfig.from_recipe(section).dynamic


@pytest.mark.integration
def test_silenced_flat_groups_leave_the_loss_normaliser_and_the_batch_std(tmp_path, monkeypatch, caplog):
    """``flat_groups: drop`` in what TRL computes: a slot still flat after the refill rounds counts in
    neither the loss normaliser (``num_items_in_batch``, the dapo loss's token count) nor the batch std
    of the rewards, and its advantages are 0. The other group's advantages are TRL's over its own
    rewards alone (issue 49: with the silenced rows in, a half-silenced step was half as large and the
    std was another one)."""
    import statistics

    from grpo_fakes import generation_batch, scoring_trainer

    spread = ["0.2", "0.9", "0.4", "0.7"]  # calc-0's episodes differ; every other task's tie at 0.5
    trainer = scoring_trainer(
        tmp_path,
        monkeypatch,
        lambda task, key: spread[key % 4] if task.id == "calc-0" else "0.5",
        sampling={"min_spread": 0.1, "max_refill_rounds": 1, "flat_groups": "drop"},
        scale_rewards="batch",
    )
    out = generation_batch(trainer, ["calc-0", "calc-1"])
    loss_mask = out["completion_mask"] * out["tool_mask"]
    assert out["completion_mask"][4:].sum() > 0  # the silenced rows are there, with their tokens
    assert loss_mask[4:].sum() == 0
    assert int(out["num_items_in_batch"]) == int(loss_mask[:4].sum()) > 0
    rewards = [float(x) for x in spread]
    mean, std = statistics.fmean(rewards), statistics.stdev(rewards)  # TRL's nanstd is the unbiased one
    expected = [(r - mean) / (std + 1e-4) for r in rewards] + [0.0] * 4
    assert out["advantages"].tolist() == pytest.approx(expected, abs=1e-5)
    # TRL's warning for rows every reward function left unscored (it prints the whole row) is dropped for
    # silenced rows, which are unscored on purpose in every such step
    assert not [r for r in caplog.records if "All reward functions returned None" in r.getMessage()]


def test_every_sampled_episode_is_measured_and_logged_kept_or_not(tmp_path, capsys):
    """Dynamic sampling replaces and silences groups, but the episode metrics, the answer rate, the
    reward stats and the rollout log (``mcp-rl rescore`` reads it) cover every episode the policy
    sampled: here calc-0's group is kept, calc-1's is still flat after a refill round whose group (a
    right answer, every time) was not wider, so of the 12 episodes sampled 4 feed the update."""
    import torch
    from grpo_fakes import TASKS, AnswerValue, FinishPolicy, RolloutTrainer

    from toolkit.agent.loop import RolloutConfig
    from toolkit.models import load_tokenizer
    from toolkit.records import read_jsonl
    from toolkit.rewards.trl import as_trl_reward_func
    from toolkit.train.grpo import GRPOStep
    from toolkit.train.trl_adapter import rollout_func

    tok = load_tokenizer("tiny-random")
    pool = read_jsonl(TASKS, Task)
    by_id = {t.id: t for t in pool}

    def answer_of(task, key):
        if task.id == "calc-0":
            return ["0.2", "0.9"][key % 2]
        return "0.5" if task.id == "calc-1" else str(task.answers["result"])  # refills: right, all alike

    config = SamplingConfig(min_spread=0.1, max_refill_rounds=1, flat_groups="drop")
    log = tmp_path / "rollouts.jsonl"
    step = GRPOStep(
        RolloutConfig(max_turns=2),
        lambda _: FinishPolicy(tok, answer_of),
        rollout_log=log,
        dynamic=DynamicSampling(pool, config, seed=0),
    )
    trainer = RolloutTrainer(
        tok,
        [by_id["calc-0"], by_id["calc-1"]],
        4,
        step,
        step=3,
        reward_funcs=[as_trl_reward_func(AnswerValue())],
        reward_weights=torch.tensor([1.0]),
    )
    out = rollout_func(["p"] * 8, trainer)
    assert [t.task_id for t in out["trajectory"]] == ["calc-0"] * 4 + ["calc-1"] * 4
    # the rows TRL scores follow the slots: a task dynamic sampling put in would be the one rewarded
    assert [t.id for t in out["task"]] == out["id"] == ["calc-0"] * 4 + ["calc-1"] * 4
    assert out["silenced"] == [False] * 4 + [True] * 4
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(logged) == 12 and {r["step"] for r in logged} == {3}
    kept = [r["task_id"] for r in logged if r["kept"]]
    assert kept == ["calc-0"] * 4  # the silenced slot and the refill it did not take are logged, not kept
    refill = [r for r in logged if r["round"] == 1]
    assert len(refill) == 4 and not any(r["kept"] for r in refill) and refill[0]["task_id"] != "calc-1"
    # the refill's right answers count in what was sampled, though no kept group holds them
    assert trainer.logged["episodes/answer_correct"] == pytest.approx(4 / 12)
    assert trainer.logged["episodes/sampled"] == 12 and trainer.logged["episodes/finish_rate"] == 1.0
    refill_reward = float(by_id[refill[0]["task_id"]].answers["result"])
    rewards = [0.2, 0.9] * 2 + [0.5] * 4 + [refill_reward] * 4
    assert trainer.logged["episodes/reward_mean"] == pytest.approx(sum(rewards) / 12)
    # a step is minutes on a CPU: each sampling round and the update say so as they happen
    lines = [re.sub(r"in \d+ s", "in N s", line) for line in capsys.readouterr().out.splitlines()]
    assert lines == [
        "grpo step 4/8: sampled 8 episodes in N s",
        "grpo step 4/8: refill round 1: 4 episodes (1 group) in N s",
        "grpo step 4/8: updating on 4 of 8 episodes",
    ]


def test_group_spread_leaves_unscorable_episodes_out():
    assert group_spread([0.2, math.nan, 0.7]) == pytest.approx(0.5)
    assert group_spread([0.2, 0.2, 0.8, 0.8], "std") == pytest.approx(0.3)
    assert group_spread([math.nan, 1.0]) == 0.0


def test_spread_on_a_component_keeps_only_groups_that_differ_in_it():
    """``grpo_sampling.spread_on: outcome``: two episodes of a lookup that differ only in their call count
    differ in the total reward but not in the answer term, so the group counts as flat; a right and a
    wrong answer differ in both. A component no reward reports is an error that names it."""
    import torch

    from toolkit.records import read_jsonl
    from toolkit.rewards import get_reward
    from toolkit.rewards.trl import as_trl_reward_func
    from toolkit.study.drift import drift_episodes
    from toolkit.train.batching import trainer_scorer

    eval_file = Path(__file__).resolve().parents[1] / "data" / "tasks" / "eval.jsonl"
    task = next(t for t in read_jsonl(eval_file, Task) if t.id == "eval-s0-00002")  # a one-call lookup
    eps = drift_episodes(task, max_turns=3)

    class Trainer:  # what trainer_scorer reads of a GRPOTrainer
        reward_funcs = [as_trl_reward_func(get_reward("outcome"))]
        reward_weights = torch.tensor([1.0])

    pairs = {
        "calls differ": [eps["wrong+short"], eps["wrong+redundant"]],
        "answers differ": [eps["right+short"], eps["wrong+short"]],
    }
    total, outcome = trainer_scorer(Trainer()), trainer_scorer(Trainer(), "outcome")
    spread = {
        name: (group_spread(total([task] * 2, trajs)), group_spread(outcome([task] * 2, trajs)))
        for name, trajs in pairs.items()
    }
    assert spread["calls differ"][0] > 0.1 and spread["calls differ"][1] == 0.0
    assert spread["answers differ"][0] > 0.1 and spread["answers differ"][1] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="'answer'.*they report: .*economy"):
        trainer_scorer(Trainer(), "answer")([task], [eps["right+short"]])
    with pytest.raises(ValueError, match="spread_on"):
        SamplingConfig.from_recipe({"spread_on": 3})
    assert SamplingConfig.from_recipe({"spread_on": "outcome"}).spread_on == "outcome"


SEEN: list[tuple[str, str, str]] = []


class HalfFlat:
    """Test-only reward: ties for tasks whose id hashes even, the answer's length otherwise; records the
    (task id, trajectory task id, kind) of every call so the test can check TRL scored the right rows."""

    name, range = "half-flat", (0.0, float("inf"))

    def __call__(self, task, traj):
        SEEN.append((task.id, traj.task_id, task.metadata.get("kind", "")))
        if int(hashlib.sha256(task.id.encode()).hexdigest(), 16) % 2 == 0:
            return RewardResult(0.0, {}, {})
        text = json.dumps(traj.messages, sort_keys=True) + traj.final_answer  # two random samples differ
        return RewardResult(int(hashlib.sha256(text.encode()).hexdigest(), 16) % 1000 / 1000 + 0.001, {}, {})


@pytest.mark.integration
def test_grpo_steps_mix_kinds_and_refill_flat_groups_tiny_model(tmp_path, monkeypatch):
    """Two GRPO steps of 4 tasks x 2 episodes on the tiny random model: every step holds 4 distinct tasks
    of mixed kinds, flat groups are dropped and refilled, and TRL scores the refilled tasks' rows."""
    from toolkit.records import write_jsonl
    from toolkit.rewards.base import REGISTRY
    from toolkit.train.config import recipe_from_dict
    from toolkit.train.pipeline import run_recipe

    monkeypatch.setitem(REGISTRY, "half-flat", f"{__name__}:HalfFlat")
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    tasks_file = tmp_path / "tasks.jsonl"
    write_jsonl(tasks_file, synth_tasks(48))
    recipe = {
        "model": "tiny-random",
        "reward": "half-flat",
        "tasks": str(tasks_file),
        "sft": None,
        "lora": {"r": 4, "lora_alpha": 8, "target_modules": "all-linear"},
        "rollout": {"max_turns": 1, "max_new_tokens": 6, "max_context_tokens": 2048, "temperature": 1.0},
        "grpo": {
            "num_generations": 2,
            "per_device_train_batch_size": 2,
            "gradient_accumulation_steps": 4,  # 8 episodes = 4 tasks x 2 per optimizer step
            "max_steps": 2,
            "learning_rate": 1e-3,
            "beta": 0.0,
            "scale_rewards": "batch",
        },
        "grpo_sampling": {
            "order": "stratified",
            "min_spread": 1e-6,
            "max_refill_rounds": 1,
            "shared_prefix_update": True,
        },
    }
    SEEN.clear()
    from toolkit.train import batching

    shared_calls, original = [], batching.shared_prefix_logps

    def counted(*args, **kwargs):
        out = original(*args, **kwargs)
        shared_calls.append(out is not None)
        return out

    monkeypatch.setattr("toolkit.train.batching.shared_prefix_logps", counted)
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run_recipe(recipe_from_dict(recipe, "batching"), tmp_path / "run", backend="cpu")
    finally:
        torch.set_num_threads(threads)
    assert SEEN and all(task_id == traj_task_id for task_id, traj_task_id, _ in SEEN)
    rollouts = [
        json.loads(x) for x in (tmp_path / "run" / "grpo" / "rollouts.jsonl").read_text().splitlines()
    ]
    metrics = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    metrics = [m for m in metrics if "reward" in m]
    assert len(metrics) == 2
    flat = {t for t, _, _ in SEEN if int(hashlib.sha256(t.encode()).hexdigest(), 16) % 2 == 0}
    dropped = 0.0
    for step, record in enumerate(metrics):
        sampled = [r for r in rollouts if r["step"] == step]  # the refill rounds' groups are logged too
        assert len(sampled) == 8 + record["dynamic/extra_episodes"] == record["episodes/sampled"]
        episodes = [r for r in sampled if r["kept"]]  # flat_groups: keep, so kept means in the batch
        assert len(episodes) == 8 and len({r["task_id"] for r in episodes}) == 4  # 4 tasks x 2
        assert record["batch/tasks_distinct"] == 4 and record["batch/kinds_distinct"] >= 3
        shares = {k: v for k, v in record.items() if k.startswith("kinds/") and k.endswith("/share")}
        assert len(shares) >= 3 and sum(shares.values()) == pytest.approx(1.0)
        assert 0.0 <= record["dynamic/dropped_share"] <= 1.0
        dropped += record["dynamic/dropped_share"]
        # what TRL scored last (its reward call comes after the refill): the episodes that were logged
        kept_flat = [r["task_id"] for r in episodes if r["task_id"] in flat]
        assert len(kept_flat) / 8 == pytest.approx(record["dynamic/still_flat_share"])
    assert dropped > 0  # some group tied and was refilled
    # the update ran each micro-batch (2 episodes of one task) with its prompt once: 4 a step
    assert shared_calls.count(True) == 8


def _generation_batch(prompts: list[list[int]], completions: list[list[int]], pad: int = 0) -> dict:
    """What TRL's ``_generate_and_score_completions`` returns: prompts left-padded and completions
    right-padded to the longest of the whole batch, a per-token logprob column, the advantages."""
    import torch

    width_p, width_c = max(map(len, prompts)), max(map(len, completions))
    rows = len(prompts)
    batch = {
        "prompt_ids": torch.full((rows, width_p), pad),
        "prompt_mask": torch.zeros(rows, width_p, dtype=torch.long),
        "completion_ids": torch.full((rows, width_c), pad),
        "completion_mask": torch.zeros(rows, width_c, dtype=torch.long),
        "tool_mask": torch.ones(rows, width_c, dtype=torch.long),
        "sampling_per_token_logps": torch.zeros(rows, width_c),
        "advantages": torch.arange(rows, dtype=torch.float),
        "num_items_in_batch": torch.tensor(float(sum(map(len, completions)))),
    }
    for i, (p, c) in enumerate(zip(prompts, completions, strict=True)):
        batch["prompt_ids"][i, width_p - len(p) :] = torch.tensor(p)
        batch["prompt_mask"][i, width_p - len(p) :] = 1
        batch["completion_ids"][i, : len(c)] = torch.tensor(c)
        batch["completion_mask"][i, : len(c)] = 1
        batch["sampling_per_token_logps"][i, : len(c)] = -torch.arange(1, len(c) + 1, dtype=torch.float)
    return batch


def test_micro_batches_are_regrouped_by_task_and_cut_to_their_own_length():
    import torch
    from trl.trainer.utils import shuffle_sequence_dict, split_tensor_dict

    torch.manual_seed(0)
    prompts = [[5] * 3, [6] * 9, [7] * 5, [8] * 2]  # 4 tasks, prompts of 3, 9, 5 and 2 tokens
    rows_p, rows_c = [], []
    for t, p in enumerate(prompts):
        for k in range(4):  # 4 episodes a task, completions of 1..7 tokens
            rows_p.append(p)
            rows_c.append([10 + t] * (1 + (3 * k + t) % 7))
    batch = _generation_batch(rows_p, rows_c)
    shuffled = split_tensor_dict(shuffle_sequence_dict(batch), 4)  # what TRL buffers: 4 micro-batches of 4
    regrouped = regroup_micro_batches(shuffled)
    assert len(regrouped) == 4 and all(b["prompt_ids"].size(0) == 4 for b in regrouped)
    cells = lambda bs: sum(b["prompt_ids"].numel() + b["completion_ids"].numel() for b in bs)  # noqa: E731
    assert cells(regrouped) < cells(shuffled) * 0.7
    seen = []
    for b in regrouped:
        prompts_here = {
            tuple(p[m.bool()].tolist()) for p, m in zip(b["prompt_ids"], b["prompt_mask"], strict=True)
        }
        assert len(prompts_here) == 1  # one task a micro-batch: no prompt padding
        assert b["prompt_mask"].all() and b["completion_mask"][:, -1].any()  # cut to its own length
        for key in ("completion_ids", "completion_mask", "tool_mask", "sampling_per_token_logps"):
            assert b[key].shape == b["completion_mask"].shape, key
        assert b["num_items_in_batch"] == batch["num_items_in_batch"]  # the step's normaliser is kept
        for i in range(4):  # each row keeps its own completion, logprobs and advantage
            n = int(b["completion_mask"][i].sum())
            c = b["completion_ids"][i, :n].tolist()
            assert b["sampling_per_token_logps"][i, :n].tolist() == [-float(j) for j in range(1, n + 1)]
            seen.append((tuple(b["prompt_ids"][i].tolist()), tuple(c), float(b["advantages"][i])))
    want = [
        (tuple(p), tuple(c), float(a)) for p, c, a in zip(rows_p, rows_c, batch["advantages"], strict=True)
    ]
    assert sorted(seen) == sorted(want)


def test_cutting_the_padding_leaves_the_completion_logprobs_as_they_were():
    """The update's log-probabilities of a padded micro-batch and of the same rows cut to length agree
    (tiny random model, float32): the cut columns were padding for every row."""
    import torch

    from toolkit.models import load_policy

    model, _ = load_policy("tiny-random", dtype="fp32")
    model.eval()
    torch.manual_seed(0)
    prompts = [torch.randint(5, 200, (n,)).tolist() for n in (12, 12, 12)]
    completions = [torch.randint(5, 200, (n,)).tolist() for n in (3, 6, 4)]
    wide = _generation_batch(prompts, completions)
    # the batch as TRL pads it when another task of the step has a 20-token prompt and a 9-token completion
    for key, extra in (("prompt_ids", 8), ("prompt_mask", 8)):
        wide[key] = torch.cat([torch.zeros(3, extra, dtype=wide[key].dtype), wide[key]], dim=1)
    for key in ("completion_ids", "completion_mask", "tool_mask", "sampling_per_token_logps"):
        wide[key] = torch.cat([wide[key], torch.zeros(3, 3, dtype=wide[key].dtype)], dim=1)
    cut = trim_padding(wide)
    assert cut["prompt_ids"].size(1) == 12 and cut["completion_ids"].size(1) == 6

    def completion_logps(b):
        ids = torch.cat([b["prompt_ids"], b["completion_ids"]], 1)
        mask = torch.cat([b["prompt_mask"], b["completion_mask"]], 1)
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask).logits[
                :, -b["completion_ids"].size(1) - 1 : -1
            ]
        return torch.log_softmax(logits.float(), -1).gather(-1, b["completion_ids"].unsqueeze(-1)).squeeze(-1)

    lw, lc = completion_logps(wide), completion_logps(cut)
    m = cut["completion_mask"].bool()
    assert torch.allclose(lw[:, : lc.size(1)][m], lc[m], atol=1e-4)


def test_a_shared_prompt_run_once_gives_the_full_forward_logprobs_and_gradients():
    """shared_prefix_logps against TRL's fused forward of the full rows (tiny random model, LoRA, float32,
    gradient checkpointing on as in cpu-demo): the same log-probabilities, entropies and LoRA gradients."""
    import torch
    from trl.trainer.utils import add_fused_lm_head

    from toolkit.models import load_policy
    from toolkit.train.batching import shared_prefix_logps
    from toolkit.train.config import build_lora_config, recipe_from_dict
    from toolkit.train.grpo import peft_model_for_grpo
    from toolkit.train.trl_adapter import install_logprob_fallback

    install_logprob_fallback()  # TRL 1.15's fused head on a CPU torch build
    torch.manual_seed(0)
    model, _ = load_policy("tiny-random", dtype="fp32")
    add_fused_lm_head(model, temperature=0.5, outputs=("log_probs", "entropy"))  # as GRPOTrainer does
    lora = {"r": 4, "lora_alpha": 8, "lora_dropout": 0.0}
    recipe = recipe_from_dict({"model": "tiny-random", "reward": "rubric", "lora": lora}, "x")
    model = peft_model_for_grpo(model, build_lora_config(recipe))
    for name, p in model.named_parameters():
        if "lora_B" in name:  # a LoRA that is not zero, so that its gradients are not trivially equal
            torch.nn.init.normal_(p, std=0.05)
    model.train()
    model.gradient_checkpointing_enable()
    prompt_len, width, rows = 30, 7, 4
    prompt = torch.randint(5, 200, (1, prompt_len)).expand(rows, -1)
    completion_mask = torch.ones(rows, width, dtype=torch.long)
    completion_mask[1, 5:] = completion_mask[2, 3:] = 0  # right padding
    ids = torch.cat([prompt, torch.randint(5, 200, (rows, width))], 1)
    mask = torch.cat([torch.ones(rows, prompt_len, dtype=torch.long), completion_mask], 1)
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :-width] = -100

    def grads():
        out = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        model.zero_grad()
        return out

    full = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    full_logps, full_entropy = full.log_probs[:, -width:], full.entropy[:, -width:]
    (full_logps * completion_mask).sum().backward()
    full_grads = grads()
    logps, entropy = shared_prefix_logps(model, ids, mask, width, compute_entropy=True)
    (logps * completion_mask).sum().backward()
    shared_grads = grads()
    m = completion_mask.bool()
    assert torch.allclose(logps[m], full_logps[m], atol=1e-5)
    assert torch.allclose(entropy[m], full_entropy[m], atol=1e-4)
    assert shared_grads.keys() == full_grads.keys() and len(full_grads) > 4
    for name, grad in full_grads.items():
        assert torch.allclose(shared_grads[name], grad, atol=1e-4, rtol=1e-4), name
    assert model.is_gradient_checkpointing  # switched back on
    # rows with different prompts (or left padding) are not its case: TRL's own path takes them
    other = ids.clone()
    other[0, 3] += 1
    assert shared_prefix_logps(model, other, mask, width) is None
    padded = mask.clone()
    padded[2, 0] = 0
    assert shared_prefix_logps(model, ids, padded, width) is None


def test_the_rollout_engine_keeps_vllm_prefix_cache_on(monkeypatch):
    """The GRPO rollout engine asks for vLLM's prefix cache: every episode of a group shares its prompt."""
    pytest.importorskip("vllm")
    import vllm

    from toolkit.train.vllm_backend import start_engine

    seen = {}
    monkeypatch.setattr(vllm, "LLM", lambda **kwargs: seen.update(kwargs) or "engine")
    monkeypatch.setattr("toolkit.agent.policies.resolve_vllm_model", lambda name: (f"/ckpt/{name}", "tok"))
    assert start_engine("smollm2-135m", max_lora_rank=8) == ("engine", "tok")
    assert seen["enable_prefix_caching"] is True and seen["enable_lora"] is True
