"""The rejection-sampling round between the warm start and GRPO (recipe section ``rft``,
``toolkit.train.rft``): the section's checks, the keep rule (right beats wrong, shorter beats longer, at
most ``max_per_task``, never a wrong episode), rows with the loss on the model's own tokens only, the
stage's files, summary and resume, and a recipe without the section running as before."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from toolkit.records import Task, Trajectory, read_jsonl
from toolkit.train import config as cfg
from toolkit.train.rft import RftConfig, keep_episodes, right_check

EVAL_FILE = Path(__file__).resolve().parents[1] / "data" / "tasks" / "eval.jsonl"
TASKS = Path(__file__).parent / "data" / "train_tasks.jsonl"
BASE = {"model": "tiny-random", "reward": "rubric", "sft": {"max_steps": 3, "learning_rate": 1e-4}}


def recipe(**rft):
    return cfg.recipe_from_dict({**BASE, "rft": rft})


# ---- the recipe section ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"num_generations": -1}, "rft.num_generations must be 0"),
        ({"num_generations": True}, "rft.num_generations must be 0"),
        ({"num_generations": "4"}, "rft.num_generations must be 0"),
        ({"num_generations": 4, "temperature": -0.5}, "rft.temperature must be a number"),
        ({"num_generations": 4, "temperature": 0}, "temperature 0 samples the same episode"),
        ({"num_generations": 4, "max_tasks": 0}, "rft.max_tasks must be a positive integer"),
        ({"num_generations": 4, "max_per_task": 0}, "rft.max_per_task must be a positive integer"),
        ({"num_generations": 4, "correct_by": "reward"}, "rft.correct_by must be one of pass, answer"),
        ({"num_generations": 4, "shortest_by": "chars"}, "rft.shortest_by must be one of calls, tokens"),
        ({"num_generations": 4, "if_none_kept": "warn"}, "rft.if_none_kept must be one of error, skip"),
        ({"num_generations": 4, "keep_failed_calls": "yes"}, "rft.keep_failed_calls must be true or false"),
        ({"num_generations": 4, "keep_no_call": "no"}, "rft.keep_no_call must be true or false"),
        ({"num_generations": 4, "rounds": 0}, "rft.rounds must be a positive integer"),
        ({"num_generations": 4, "rounds": True}, "rft.rounds must be a positive integer"),
        ({"num_generations": 4, "rounds": "2"}, "rft.rounds must be a positive integer"),
    ],
)
def test_a_bad_rft_value_is_one_line_naming_the_key(section, message):
    with pytest.raises(cfg.RecipeError, match=message) as caught:
        cfg.recipe_from_dict({**BASE, "rft": section}, name="r")
    assert str(caught.value).startswith("recipe 'r': ") and "\n" not in str(caught.value)
    with pytest.raises(cfg.RecipeError, match="rft must be a mapping"):
        cfg.recipe_from_dict({**BASE, "rft": 4})


def test_the_rft_sections_trl_keys_are_checked_before_any_stage():
    with pytest.raises(cfg.RecipeError, match=r"unknown rft key\(s\) \['lerning_rate'\]"):
        cfg.check_recipe_types(recipe(num_generations=2, lerning_rate=1e-4))
    with pytest.raises(cfg.RecipeError, match="rft.learning_rate must be a number"):
        cfg.check_recipe_types(recipe(num_generations=2, learning_rate="2e-4 "))
    with pytest.raises(cfg.RecipeError, match="rft.max_steps must be a positive integer"):
        cfg.check_recipe_types(recipe(num_generations=2, max_steps=0))
    cfg.check_recipe_types(
        recipe(num_generations=2, learning_rate=5e-5, max_steps=4, per_device_train_batch_size=2)
    )
    # --set rft.num_generations=4 turns the round on for a shipped recipe; rft=null turns it off again
    demo = cfg.with_overrides(cfg.load_recipe("cpu-demo"), {"rft.num_generations": 4})
    assert RftConfig.from_section(demo.rft).on and demo.rft == {"num_generations": 4}
    assert cfg.with_overrides(demo, {}, unset=["rft"]).rft is None


def test_the_rounds_training_settings_are_the_warm_starts_but_its_length_and_its_own_keys():
    r = cfg.recipe_from_dict(
        {
            **BASE,
            "sft": {"max_steps": 60, "learning_rate": 1e-4, "max_length": 900, "max_examples": 240},
            "rft": {"num_generations": 4, "learning_rate": 2e-5, "per_device_train_batch_size": 4},
        }
    )
    assert cfg.rft_training_section(r) == {
        "learning_rate": 2e-5,
        "max_length": 900,
        "num_train_epochs": 1,  # one pass over the kept episodes, not the warm start's 60 steps
        "per_device_train_batch_size": 4,
    }
    built = cfg.build_sft_config(cfg.rft_training_recipe(r), "/tmp/rft-out", use_cpu=True)
    assert (built.learning_rate, built.max_steps, built.num_train_epochs) == (2e-5, -1, 1)
    assert r.sft["max_steps"] == 60  # the recipe itself is unchanged


def test_only_the_claim_recipes_have_rft_rounds_and_the_others_write_recipe_json_as_before():
    # cpu-learn-rft is the one recipe made for the round: cpu-learn's keys, its rft section and checkpoints
    with_round = cfg.load_recipe("cpu-learn-rft")
    assert RftConfig.from_section(with_round.rft) == RftConfig(num_generations=2, keep_no_call=False)
    # every 2 steps: the claim's runs span sessions
    plain = cfg.with_overrides(cfg.load_recipe("cpu-learn"), {"grpo.save_steps": 2}).to_dict()
    mine = with_round.to_dict()
    assert {k: v for k, v in mine.items() if k not in ("name", "description", "rft")} == {
        k: v for k, v in plain.items() if k not in ("name", "description")
    }
    # cpu-learn-rft2 (the second protocol's): cpu-learn-rft with two rounds that keep right abstains
    two = cfg.load_recipe("cpu-learn-rft2")
    assert RftConfig.from_section(two.rft) == RftConfig(
        num_generations=2, keep_no_call=False, keep_no_call_if_gold_has_none=True, rounds=2
    )
    assert {k: v for k, v in two.to_dict().items() if k not in ("name", "description", "rft")} == {
        k: v for k, v in mine.items() if k not in ("name", "description", "rft")
    }
    # cpu-learn-rft3 (the third protocol's): cpu-learn-rft2 with GRPO on lookups and writes only, so that
    # it may reuse the second protocol's warm start and rounds (bench.reproduce_claim --reuse-rounds)
    three = cfg.load_recipe("cpu-learn-rft3").to_dict()
    grpo_only = ("name", "description", "grpo_task_kinds", "grpo_sampling")
    assert {k: v for k, v in three.items() if k not in grpo_only} == {
        k: v for k, v in two.to_dict().items() if k not in grpo_only
    }
    assert three["grpo_task_kinds"] == ["lookup", "write"]
    assert {k: w for k, w in three["grpo_sampling"]["kind_weights"].items() if w} == {
        "lookup": 1.0,
        "write": 1.0,
    }
    for name in set(cfg.list_recipes()) - {"cpu-learn-rft", "cpu-learn-rft2", "cpu-learn-rft3"}:
        shipped = cfg.load_recipe(name)
        assert shipped.rft is None and not RftConfig.from_section(shipped.rft).on
        assert "rft" not in shipped.to_dict()  # recipe.json has the keys it had before the section
    off = recipe(num_generations=0)
    assert not RftConfig.from_section(off.rft).on
    assert cfg.schedule_warnings(off) == cfg.schedule_warnings(cfg.recipe_from_dict(BASE))


def test_a_warmup_that_starts_the_round_at_learning_rate_zero_is_named():
    warm = cfg.recipe_from_dict(
        {**BASE, "sft": {"max_steps": 3, "warmup_steps": 2}, "rft": {"num_generations": 2}}
    )
    assert [w.split(":")[1].split(" step")[0] for w in cfg.schedule_warnings(warm)] == [
        " the first sft",
        " the first rft",
    ]


# ---- the keep rule ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lookup_episodes():
    """A dev lookup and its scripted episodes, executed on the task's servers (``toolkit.study.drift``)."""
    from toolkit.study.drift import drift_episodes

    task = next(t for t in read_jsonl(EVAL_FILE, Task) if t.id == "eval-s0-00002")
    return task, drift_episodes(task, max_turns=3)


def kept_names(task, episodes, names, **settings):
    trajs = [episodes[name].__class__.from_dict(episodes[name].to_dict()) for name in names]  # copies
    config = RftConfig(num_generations=len(names), **settings)
    keep = keep_episodes([task], trajs, len(names), right_check(config.correct_by), config)
    by_id = {id(t): name for t, name in zip(trajs, names, strict=True)}
    return [by_id[id(t)] for t in keep.kept], keep, trajs


def test_right_beats_wrong_and_shorter_beats_longer(lookup_episodes):
    task, eps = lookup_episodes
    names = ["wrong+short", "cap calls, replied", "right+redundant", "right+short", "truncated", "to the cap"]
    kept, keep, trajs = kept_names(task, eps, names)
    assert kept == ["right+short"]  # the one right episode with the fewest calls
    kept, keep, trajs = kept_names(task, eps, names, max_per_task=10)
    assert kept == ["right+short", "right+redundant", "cap calls, replied"]  # 1, 2, 3 calls
    assert keep.summary() == {
        "tasks": 1,
        "sampled": 6,
        "replied": 4,  # the turn cap and the token cap end without a reply
        "right": 3,
        "kept": 3,
        "tasks_kept": 1,
        "by_kind": {
            "lookup": {"tasks": 1, "sampled": 6, "replied": 4, "right": 3, "kept": 3, "tasks_kept": 1}
        },
    }
    assert [t.metadata["rft"] for t in trajs][:2] == [
        {"sample": 0, "right": False, "kept": False},
        {"sample": 1, "right": True, "kept": True},
    ]
    assert "kept 3 episodes of 3 right of 6 sampled (1 of 1 tasks)" in keep.line()


def test_no_wrong_episode_is_ever_kept_and_failed_calls_only_when_asked(lookup_episodes):
    task, eps = lookup_episodes
    names = list(eps)
    for correct_by in ("pass", "answer"):
        for keep_failed in (False, True):
            kept, _, trajs = kept_names(
                task,
                eps,
                names,
                max_per_task=len(names),
                correct_by=correct_by,
                keep_failed_calls=keep_failed,
            )
            judge = right_check(correct_by)
            assert all(judge(task, eps[name]) for name in kept)
            assert {
                "wrong+short",
                "retry wrong",
                "give up",
                "no answer",
                "to the cap",
                "truncated",
            }.isdisjoint(kept)
            assert ("retry right" in kept) == keep_failed  # right, after a call that failed
    # the two rules differ where an answer is right without the calls behind it: the rubric's tool items
    # fail it under pass@0.75, the answer items alone pass it
    assert "answer without calls" not in kept_names(task, eps, names, max_per_task=20)[0]
    assert kept_names(task, eps, names, correct_by="answer")[0] == ["answer without calls"]  # 0 calls


def test_identical_episodes_count_once_and_the_cap_is_per_task(lookup_episodes):
    task, eps = lookup_episodes
    kept, keep, _ = kept_names(task, eps, ["right+short", "right+short", "right+redundant"], max_per_task=2)
    assert kept == ["right+short", "right+redundant"]
    other = Task.from_dict({**task.to_dict(), "id": "other"})
    trajs = [Trajectory.from_dict(eps[n].to_dict()) for _ in "ab" for n in ("right+short", "right+redundant")]
    for traj in trajs[2:]:
        traj.task_id = "other"
    config = RftConfig(num_generations=2, max_per_task=1)
    keep = keep_episodes([task, other], trajs, 2, right_check("pass"), config)
    assert [t.task_id for t in keep.kept] == [task.id, "other"] and keep.total("kept") == 2
    with pytest.raises(ValueError, match="is of task"):
        keep_episodes([other, task], trajs, 2, right_check("pass"), config)
    with pytest.raises(ValueError, match="3 episodes for 2 tasks x 2"):
        keep_episodes([task, other], trajs[:3], 2, right_check("pass"), config)


# ---- the rows: loss on the model's own tokens -----------------------------------------------------


@pytest.fixture(scope="module")
def tok():
    from toolkit.models import load_tokenizer

    return load_tokenizer("tiny-random")


def scripted_episode(tok, *texts):
    from toolkit.agent.loop import RolloutConfig, rollout
    from toolkit.agent.testing import ScriptedPolicy, fake_opener, turns

    task = Task(id="t0", split="train", prompt="What is 2 + 3?", servers=["calc"], tools=["add"], seed=0)
    policy = ScriptedPolicy(turns(*texts), tok)
    [traj] = rollout([task], policy, RolloutConfig(max_turns=3), open_episode=fake_opener())
    return traj


def test_rows_are_the_sampled_tokens_with_the_loss_on_the_models_turns_only(tok):
    from toolkit.agent.parsing import format_call
    from toolkit.train.sft import episode_rows, template_reproduces

    call, answer = format_call("add", {"a": 2, "b": 3}), format_call("finish", {"answer": "5"})
    traj = scripted_episode(tok, call, answer)
    assert traj.stop_reason == "finish" and [c.result for c in traj.calls][:1] == ["5"]
    [row] = episode_rows([traj])
    assert row["input_ids"] == traj.prompt_ids + traj.completion_ids
    assert len(row["assistant_masks"]) == len(row["input_ids"])
    assert not any(row["assistant_masks"][: len(traj.prompt_ids)])  # system, tools, request: no loss
    runs, current = [], []
    for token, mask in zip(row["input_ids"], row["assistant_masks"], strict=True):
        if mask:
            current.append(token)
        elif current:
            runs.append(current)
            current = []
    runs += [current] if current else []
    assert [tok.decode(r) for r in runs] == [call + tok.eos_token, answer + tok.eos_token]
    unmasked = tok.decode([t for t, m in zip(row["input_ids"], row["assistant_masks"], strict=True) if not m])
    assert "<|im_start|>tool" in unmasked or "<tool_response>" in unmasked  # the tool's output: no loss
    assert template_reproduces(traj, tok)  # written as the template writes a call
    own_way = scripted_episode(
        tok, '<tool_call>\n{"arguments": {"b": 3, "a": 2}, "name": "add"}\n</tool_call>', answer
    )
    assert own_way.stop_reason == "finish" and not template_reproduces(own_way, tok)
    assert episode_rows([traj], max_length=len(row["input_ids"])) == [row]
    assert episode_rows([traj], max_length=len(row["input_ids"]) - 1) == []  # longer: dropped
    text_only = Trajectory(task_id="t0", messages=traj.messages)
    with pytest.raises(ValueError, match="not token-level"):
        episode_rows([text_only])


# ---- the stage --------------------------------------------------------------------------------------


class SamplesOnly:
    """A backend for a round that keeps nothing: it only samples (through a patched rollout)."""

    name = "fake"

    def __init__(self):
        self.policies: list[tuple[object, str]] = []

    def eval_policy(self, adapter, label):
        self.policies.append((adapter, label))
        return "the-warm-start"

    def release(self):
        pass

    def grpo_model(self, warm):
        raise AssertionError("nothing was kept: nothing may be trained")


def open_test_run(tmp_path, rft, backend, resume=False, tasks=None, sft=None):
    from toolkit.runs import RunFolder
    from toolkit.train.stages import Run

    task = next(t for t in read_jsonl(EVAL_FILE, Task) if t.id == "eval-s0-00002")
    r = cfg.recipe_from_dict({**BASE, "sft": sft or BASE["sft"], "rft": rft})
    folder, loop = RunFolder(tmp_path), r.loop_config()
    return Run(r, folder, backend, resume, False, "none", tasks or [task, task], [], None, {}, {}, loop)


def test_a_round_that_keeps_nothing_stops_or_skips_as_the_recipe_says_and_reads_its_samples_back(
    tmp_path, monkeypatch, lookup_episodes
):
    import toolkit.agent.loop
    from toolkit.train.stages import train_rft

    task, eps = lookup_episodes
    sampled = []

    def wrong_only(ts, policy, loop, n=1):
        assert policy == "the-warm-start" and loop.temperature == 0.7
        sampled.append(len(ts) * n)
        return [Trajectory.from_dict(eps["wrong+short"].to_dict()) for _ in ts for _ in range(n)]

    monkeypatch.setattr(toolkit.agent.loop, "rollout", wrong_only)
    run = open_test_run(tmp_path, {"num_generations": 2, "max_tasks": 1, "temperature": 0.7}, SamplesOnly())
    with pytest.raises(
        ValueError, match=r"no episode of 2 sampled \(0 right\) was kept: nothing to fine-tune"
    ):
        train_rft(run)
    samples = [json.loads(line) for line in run.folder.rft_samples_file.read_text().splitlines()]
    assert [s["metadata"]["rft"] for s in samples] == [
        {"sample": j, "right": False, "kept": False} for j in (0, 1)
    ]
    assert run.backend.policies == [(run.warm, "rft")] and sampled == [2]
    skip = {"num_generations": 2, "max_tasks": 1, "temperature": 0.7, "if_none_kept": "skip"}
    resumed = open_test_run(tmp_path, skip, SamplesOnly(), resume=True)
    train_rft(resumed)  # the samples are read back, not sampled again
    assert sampled == [2] and resumed.backend.policies == []
    assert resumed.summary["rft"]["skipped"] and resumed.summary["rft"]["sampled"] == 2
    assert resumed.grpo_start == resumed.warm and resumed.rft_adapter is None
    other = open_test_run(tmp_path, {**skip, "num_generations": 3}, SamplesOnly(), resume=True)
    with pytest.raises(ValueError, match="not 3 per task of the round's 1 tasks"):
        train_rft(other)


def test_a_later_round_samples_with_the_last_rounds_adapter_on_its_own_seed_and_may_skip(
    tmp_path, monkeypatch, lookup_episodes, capsys
):
    """``rft.rounds: 3``: round 1's adapter is found (resumed), round 2 samples with it, from the rollout
    seed moved on by ROUND_SEED_STRIDE, into ``rft-2/``; it keeps nothing and skips, so round 3 never runs
    and GRPO starts from round 1's adapter."""
    import toolkit.agent.loop
    from toolkit.runs import ADAPTER_MARKER
    from toolkit.train.rft import ROUND_SEED_STRIDE
    from toolkit.train.stages import train_rft

    task, eps = lookup_episodes
    seeds = []

    def wrong_only(ts, policy, loop, n=1):
        seeds.append(loop.seed)
        return [Trajectory.from_dict(eps["wrong+short"].to_dict()) for _ in ts for _ in range(n)]

    monkeypatch.setattr(toolkit.agent.loop, "rollout", wrong_only)
    section = {"num_generations": 2, "max_tasks": 1, "rounds": 3, "if_none_kept": "skip"}
    run = open_test_run(tmp_path, section, SamplesOnly(), resume=True)
    run.loop = dataclasses.replace(run.loop, seed=7)
    first = run.folder.rft_round(1)
    assert first.path == run.folder.rft and first.adapter == run.folder.rft_adapter
    first.adapter.mkdir(parents=True)
    (first.adapter / ADAPTER_MARKER).write_text("{}")  # round 1 trained in an earlier session
    run.summary["rft"] = {"steps": 4}
    train_rft(run)
    second = run.folder.rft_round(2)
    assert second.path == tmp_path / "rft-2" and second.samples_file.exists()
    assert run.backend.policies == [(first.adapter, "rft")]  # round 2 sampled with round 1's adapter
    assert seeds == [7 + ROUND_SEED_STRIDE]  # one part, its seed the round's
    assert run.summary["rft-2"]["skipped"] and run.summary["rft-2"]["sampled"] == 2
    assert run.grpo_start == first.adapter and run.sft_steps == 4
    assert not (tmp_path / "rft-3").exists()
    printed = capsys.readouterr().out
    assert "RFT (round 2 of 3): sampling 1 train tasks x 2 with round 1's adapter" in printed
    assert "rft.if_none_kept is skip: GRPO starts from round 1's adapter" in printed
    with pytest.raises(ValueError, match="count from 1"):
        run.folder.rft_round(0)


def test_kept_episodes_that_fit_no_row_stop_the_round(tmp_path, monkeypatch, tok):
    """Right episodes all longer than the training's max_length leave nothing to train on: the round says
    so, rather than handing the trainer no rows."""
    import toolkit.agent.loop
    from toolkit.agent.policies import GoldPolicy
    from toolkit.train.stages import train_rft

    sample = toolkit.agent.loop.rollout
    monkeypatch.setattr(
        toolkit.agent.loop, "rollout", lambda ts, policy, loop, n=1: sample(ts, GoldPolicy(tok), loop, n=n)
    )
    tasks = read_jsonl(TASKS, Task)[:2]
    run = open_test_run(
        tmp_path, {"num_generations": 1}, SamplesOnly(), tasks=tasks, sft={"max_steps": 1, "max_length": 10}
    )
    with pytest.raises(
        ValueError, match="none of the 2 episodes kept fits max_length 10: nothing to fine-tune"
    ):
        train_rft(run)
    assert run.summary["rft"]["kept"] == 2 and run.summary["rft"]["examples"] == 0


def test_without_the_section_the_stage_does_nothing(tmp_path):
    from toolkit.train.stages import train_rft

    for rft in (None, {"num_generations": 0}):
        run = open_test_run(tmp_path / str(rft is None), rft, backend=None)
        train_rft(run)  # the backend (None) is never touched
        assert run.summary == {} and run.timings == {} and run.grpo_start == run.warm
        assert not run.folder.rft.exists()


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    import torch

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


SMALL = {
    "model": "tiny-random",
    "reward": "rubric",
    "tasks": str(TASKS),
    "lora": {"r": 4, "lora_alpha": 8, "target_modules": "all-linear"},
    "rollout": {"max_turns": 2, "max_new_tokens": 6, "max_context_tokens": 1024, "temperature": 1.0},
    "grpo": {"num_generations": 2, "per_device_train_batch_size": 2, "max_steps": 1, "learning_rate": 1e-3},
    "sft": {"max_examples": 2, "max_steps": 1, "per_device_train_batch_size": 2, "learning_rate": 1e-3},
    "rft": {"num_generations": 2, "max_tasks": 3, "learning_rate": 5e-3},
}


def gold_but_first_task_wrong(tokenizer):
    """The stand-in for a warm start that solves tasks: the gold episode, token-level, except on the first
    task (calc-0), where it answers wrong."""
    from toolkit.agent.parsing import format_call
    from toolkit.agent.policies import Generation, GoldPolicy

    class Policy(GoldPolicy):
        def next_turn(self, req):
            turn = super().next_turn(req)
            if req.task.id == "calc-0" and '"finish"' in turn.text:
                return Generation(text=format_call("finish", {"answer": "I could not work it out."}))
            return turn

    return Policy(tokenizer)


@pytest.fixture
def gold_sampling_backend():
    """The cpu backend, sampling the RFT round with ``gold_but_first_task_wrong``; it records the adapters
    the round samples with and GRPO starts from."""
    from toolkit.models import load_tokenizer
    from toolkit.train.transformers_backend import TransformersBackend

    class GoldSampling(TransformersBackend):
        def __init__(self, recipe):
            super().__init__(recipe)
            self.seen: list[tuple[str, object]] = []

        def eval_policy(self, adapter, label):
            self.seen.append((label, adapter))
            if label == "rft":
                return gold_but_first_task_wrong(load_tokenizer(self.recipe.model))
            return super().eval_policy(adapter, label)

        def grpo_model(self, warm):
            self.seen.append(("train", warm))
            return super().grpo_model(warm)

    return GoldSampling


@pytest.mark.integration
def test_a_recipe_with_rft_runs_sft_then_rft_stops_there_when_asked_and_resumes_into_grpo(
    tmp_path, gold_sampling_backend, capsys, monkeypatch
):
    """One warm start and one round for both paths (they were two tests, each training both): first
    ``run_recipe(stop_after="rft")`` (``bench.lever_rft`` measures the round alone): the warm start and
    the round, no GRPO, the closing line naming the round's adapter as the run's. Then the same run
    resumed without ``stop_after``: the round is done (its adapter), so it neither samples nor trains
    again, and GRPO starts from its adapter; once more after GRPO's outputs are gone."""
    import shutil

    import torch
    from safetensors.torch import load_file

    import toolkit.train.pipeline
    from toolkit.runs import RunFolder, has_adapter
    from toolkit.train.pipeline import run_recipe

    out = RunFolder(tmp_path / "run")
    r = cfg.recipe_from_dict(SMALL, "small-rft")
    backend = gold_sampling_backend(r)
    # what GRPO would start from when the stopped run closes (the round trained in this run), and the step
    # its metrics would go on from: the warm start's step and the round's, counted in this run
    closed = []
    close_run = toolkit.train.pipeline.close_run
    monkeypatch.setattr(
        toolkit.train.pipeline,
        "close_run",
        lambda run: closed.append((run.grpo_start, run.sft_steps)) or close_run(run),
    )
    summary = run_recipe(r, out.root, backend=backend, stop_after="rft")
    assert closed == [(out.rft_adapter, 2)]
    assert summary["rft"] == {
        "tasks": 3,
        "sampled": 6,
        "replied": 6,
        "right": 4,  # calc-0 is answered wrong twice
        "kept": 2,  # calc-1 and calc-2: their two samples are one episode
        "tasks_kept": 2,
        "by_kind": {
            "lookup": {"tasks": 3, "sampled": 6, "replied": 6, "right": 4, "kept": 2, "tasks_kept": 2}
        },
        "examples": 2,
        "template_differs": 0,  # the gold policy writes calls as the training template does
        "steps": 1,  # one epoch of 2 rows, 2 a batch
    }
    assert backend.seen == [
        ("rft", out.sft_adapter),  # the round samples with the warm start,
        ("train", out.sft_adapter),  # and fine-tunes the warm-start adapter into rft/adapter
    ]
    assert has_adapter(out.rft_adapter) and not has_adapter(out.adapter) and "grpo_steps" not in summary
    assert out.rft_samples_file.exists() and not out.rft_sample_parts.exists()  # the parts were folded in
    assert "rft_s" in summary["timings_s"]
    warm, rft = (
        load_file(out.sft_adapter / "adapter_model.safetensors"),
        load_file(out.rft_adapter / "adapter_model.safetensors"),
    )
    assert warm.keys() == rft.keys() and any(not torch.equal(warm[k], rft[k]) for k in warm)
    samples = read_jsonl(out.rft_samples_file, Trajectory)
    assert [(s.task_id, s.metadata["rft"]["right"], s.metadata["rft"]["kept"]) for s in samples] == [
        ("calc-0", False, False),
        ("calc-0", False, False),
        ("calc-1", True, True),
        ("calc-1", True, False),
        ("calc-2", True, True),
        ("calc-2", True, False),
    ]
    printed = capsys.readouterr()
    for line in (
        "RFT: sampling 3 train tasks x 2 with the sft-only adapter at temperature 1.0",
        "RFT kept 2 episodes of 4 right of 6 sampled (2 of 3 tasks); per kind kept/right/sampled: lookup 2/4/6",
        "RFT: fine-tuning the warm start on 2 of its own episodes",
        "rft step 1/1 | loss",
    ):
        assert line in printed.out, line
    assert f"adapter: {out.rft_adapter} (warm start: {out.sft_adapter})\n" in printed.out
    assert "[rft] 6/6 episodes" in printed.err  # the round's sampling shows its progress
    with pytest.raises(ValueError, match="stop_after must be None, 'sft' or 'rft'"):
        run_recipe(r, tmp_path / "other", backend=backend, stop_after="grpo")
    assert not (tmp_path / "other").exists()  # refused before anything is written

    # the whole recipe, resumed: GRPO starts from the round's adapter, and the steps go on from it
    backend.seen.clear()
    full = run_recipe(r, out.root, resume=True, backend=backend)
    assert backend.seen == [("train", out.rft_adapter)]
    printed = capsys.readouterr().out
    assert f"resume: RFT adapter found in {out.rft_adapter}" in printed
    assert f"(RFT round: {out.rft_adapter})" in printed
    assert full["rft"] == summary["rft"] and full["grpo_steps"] == 1 and "rft_s" in full["timings_s"]
    records = [json.loads(line) for line in out.metrics_file.read_text().splitlines()]
    steps = [(rec["phase"], rec["step"]) for rec in records if "loss" in rec or "reward" in rec]
    assert steps == [("sft", 1), ("rft", 2), ("grpo", 3)]

    # resumed after GRPO's outputs are gone: the round is done (its adapter), so it neither samples nor
    # trains again, and GRPO starts from its adapter once more
    shutil.rmtree(out.adapter)
    shutil.rmtree(out.grpo)
    backend.seen.clear()
    again = run_recipe(r, out.root, resume=True, backend=backend)
    assert backend.seen == [("train", out.rft_adapter)]
    assert f"resume: RFT adapter found in {out.rft_adapter}" in capsys.readouterr().out
    assert again["rft"] == summary["rft"] and again["grpo_steps"] == 1
    records = [json.loads(line) for line in out.metrics_file.read_text().splitlines()]
    assert [rec["step"] for rec in records if rec["phase"] == "rft" and "loss" in rec] == [2]
    # one row for GRPO's step: begun again from step 0, it drops the rows its phase logged before
    assert [rec["step"] for rec in records if rec["phase"] == "grpo" and "reward" in rec] == [3]


@pytest.mark.integration
def test_two_rounds_each_fine_tune_the_last_and_grpo_starts_from_the_second(
    tmp_path, gold_sampling_backend, capsys
):
    """``rft.rounds: 2``: round 2 samples with round 1's adapter and fine-tunes it into ``rft-2/adapter``,
    its steps going on from round 1's; resumed, neither round runs again and GRPO starts from round 2's."""
    import torch
    from safetensors.torch import load_file

    from toolkit.runs import RunFolder, has_adapter
    from toolkit.train.pipeline import run_recipe

    out = RunFolder(tmp_path / "run")
    r = cfg.recipe_from_dict({**SMALL, "rft": {**SMALL["rft"], "rounds": 2}}, "small-rft-2")
    backend = gold_sampling_backend(r)
    summary = run_recipe(r, out.root, backend=backend, stop_after="rft")
    second = out.rft_round(2)
    assert backend.seen == [
        ("rft", out.sft_adapter),
        ("train", out.sft_adapter),
        ("rft", out.rft_adapter),  # round 2 samples with round 1's adapter,
        ("train", out.rft_adapter),  # and fine-tunes it further
    ]
    assert has_adapter(second.adapter) and second.samples_file.exists() and not second.sample_parts.exists()
    assert summary["rft-2"]["sampled"] == 6 and summary["rft-2"]["steps"] == 1
    assert "rft_s" in summary["timings_s"] and "rft-2_s" in summary["timings_s"]
    one, two = (load_file(a / "adapter_model.safetensors") for a in (out.rft_adapter, second.adapter))
    assert any(not torch.equal(one[k], two[k]) for k in one)
    printed = capsys.readouterr().out
    assert "RFT (round 2 of 2): sampling 3 train tasks x 2 with round 1's adapter" in printed
    assert "RFT: fine-tuning round 1's adapter on 2 of its own episodes" in printed
    assert f"adapter: {second.adapter} (warm start: {out.sft_adapter})\n" in printed  # the run's, stopped

    backend.seen.clear()
    full = run_recipe(r, out.root, resume=True, backend=backend)
    assert backend.seen == [("train", second.adapter)]
    assert full["rft-2"] == summary["rft-2"] and full["grpo_steps"] == 1
    records = [json.loads(line) for line in out.metrics_file.read_text().splitlines()]
    steps = [(rec["phase"], rec["step"]) for rec in records if "loss" in rec or "reward" in rec]
    assert steps == [("sft", 1), ("rft", 2), ("rft", 3), ("grpo", 4)]


@pytest.mark.integration
def test_a_run_stopped_in_grpo_keeps_its_rounds_summaries_for_the_resumed_run(
    tmp_path, gold_sampling_backend
):
    """``summary.json`` is written as each round ends: a run stopped in GRPO (a session's machine gone, the
    round adapters carried to the next one) still reports what its rounds kept and trained when resumed.
    Before, the summary was written only at the run's end, and the resumed run reported no round."""
    from toolkit.runs import RunFolder
    from toolkit.train.pipeline import run_recipe

    out = RunFolder(tmp_path / "run")
    r = cfg.recipe_from_dict({**SMALL, "rft": {**SMALL["rft"], "rounds": 2}}, "small-rft-2")
    backend = gold_sampling_backend(r)
    trains = backend.grpo_model

    def gone_in_grpo(warm):
        if warm == out.rft_round(2).adapter:  # GRPO starts from round 2's adapter: the machine goes away
            raise KeyboardInterrupt
        return trains(warm)

    backend.grpo_model = gone_in_grpo
    with pytest.raises(KeyboardInterrupt):
        run_recipe(r, out.root, backend=backend)
    kept = json.loads(out.summary_file.read_text())
    assert kept["rft"]["steps"] == 1 and kept["rft-2"]["steps"] == 1 and kept["rft-2"]["sampled"] == 6
    assert {"rft_s", "rft-2_s"} <= set(kept["timings_s"]) and "grpo_steps" not in kept

    resumed = run_recipe(r, out.root, resume=True, backend=gold_sampling_backend(r))
    assert resumed["rft"] == kept["rft"] and resumed["rft-2"] == kept["rft-2"]
    assert resumed["grpo_steps"] == 1 and resumed["timings_s"]["rft-2_s"] == kept["timings_s"]["rft-2_s"]


def test_a_killed_round_goes_on_from_its_last_kept_part(tmp_path):
    """The round's sampling is kept part by part: a kill loses at most the part being sampled (a 640-episode
    round on two cores was killed at 307 episodes on 2026-11-28 and kept nothing)."""
    from toolkit.agent.loop import RolloutConfig
    from toolkit.train.rft import sample_in_parts

    tasks = [Task(id=f"t{i}", split="train", prompt=f"p{i}", servers=[], tools=[], seed=0) for i in range(5)]
    calls = []

    def sample(part, loop):
        calls.append(([t.id for t in part], loop.seed))
        if len(calls) == 2 and kill:
            raise KeyboardInterrupt  # killed while sampling the second part
        return [Trajectory(task_id=t.id, messages=[], metadata={"k": k}) for t in part for k in range(2)]

    kill, parts = True, tmp_path / "parts"
    with pytest.raises(KeyboardInterrupt):
        sample_in_parts(sample, tasks, 2, RolloutConfig(seed=7), parts, say=lambda _: None, chunk=2)
    assert sorted(p.name for p in parts.iterdir()) == ["part-0000.jsonl"]
    kill, calls[:] = False, []
    trajs = sample_in_parts(sample, tasks, 2, RolloutConfig(seed=7), parts, say=lambda _: None, chunk=2)
    assert calls == [(["t2", "t3"], 8), (["t4"], 9)]  # the kept part is read back; each part its own seed
    assert [t.task_id for t in trajs] == ["t0", "t0", "t1", "t1", "t2", "t2", "t3", "t3", "t4", "t4"]
    with pytest.raises(ValueError, match="not 2 per task"):  # parts of another round's tasks are refused
        sample_in_parts(sample, tasks[1:], 2, RolloutConfig(), parts, say=lambda _: None, chunk=2)


def test_episodes_without_a_call_are_kept_unless_turned_off(lookup_episodes):
    """``keep_no_call: false``: a right episode that made no call is not kept, the shortest right one
    with a call is (the lever against the no-call drift in docs/cpu-proof)."""
    from toolkit.train.rft import n_calls

    task, eps = lookup_episodes
    names = list(eps)
    assert kept_names(task, eps, names, correct_by="answer")[0] == ["answer without calls"]
    kept, keep, _ = kept_names(task, eps, names, correct_by="answer", keep_no_call=False)
    assert kept and "answer without calls" not in kept
    assert all(n_calls(eps[name]) > 0 for name in kept)
    assert keep.summary()["right"] == kept_names(task, eps, names, correct_by="answer")[1].summary()["right"]


def test_a_task_whose_gold_makes_no_call_keeps_its_no_call_episodes_when_asked():
    """``keep_no_call: false`` alone keeps nothing of an abstain (its right episodes make no call), so the
    round teaches calling everywhere; ``keep_no_call_if_gold_has_none`` keeps them for such tasks only,
    never for a task whose gold makes a call."""
    from toolkit.records import CallRecord, GoldCall

    abstain = Task(
        id="a", split="train", prompt="p", servers=[], tools=[], seed=0, metadata={"kind": "abstain"}
    )
    lookup = Task(
        id="l", split="train", prompt="q", servers=[], tools=[], seed=0, metadata={"kind": "lookup"}
    )
    lookup.gold = [GoldCall("get", {})]

    def episode(task, calls):
        msgs = [
            {"role": "user", "content": task.prompt},
            {"role": "assistant", "content": f"reply {len(calls)}"},
        ]
        return Trajectory(task_id=task.id, messages=msgs, calls=calls, stop_reason="no_tool_call")

    call = [CallRecord(name="get", args={}, ok=True)]
    trajs = [episode(abstain, []), episode(abstain, call), episode(lookup, []), episode(lookup, call)]
    right = lambda task, traj: True  # noqa: E731 - every episode right: the keep rule alone decides

    def kept(**settings):
        copies = [Trajectory.from_dict(t.to_dict()) for t in trajs]
        keep = keep_episodes([abstain, lookup], copies, 2, right, RftConfig(num_generations=2, **settings))
        return [(t.task_id, len(t.calls)) for t in keep.kept]

    assert kept() == [("a", 0), ("l", 0)]  # the default: the shortest right episode, calls or none
    assert kept(keep_no_call=False) == [("a", 1), ("l", 1)]  # the abstain kept only by calling
    assert kept(keep_no_call=False, keep_no_call_if_gold_has_none=True) == [("a", 0), ("l", 1)]
    with pytest.raises(ValueError, match="keep_no_call_if_gold_has_none must be true or false"):
        RftConfig(num_generations=2, keep_no_call_if_gold_has_none="yes").check()
