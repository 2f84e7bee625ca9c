"""GRPO and SFT end to end on the tiny random model (CPU), resume, and the 2-process gloo path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TASKS = Path(__file__).parent / "data" / "train_tasks.jsonl"
SMALL = {
    "model": "tiny-random",
    "reward": "rubric",
    "tasks": str(TASKS),
    "lora": {"r": 4, "lora_alpha": 8, "target_modules": "all-linear"},
    "rollout": {"max_turns": 1, "max_new_tokens": 6, "max_context_tokens": 1024, "temperature": 1.0},
    "grpo": {
        "num_generations": 2,
        "per_device_train_batch_size": 2,
        "max_steps": 2,
        "learning_rate": 1e-3,
        "save_steps": 1,
        "beta": 0.01,
        "sync_ref_model": True,
        "ref_model_sync_steps": 1,
    },
    "sft": {"max_examples": 2, "max_steps": 1, "per_device_train_batch_size": 2, "learning_rate": 1e-3},
}


class AnswerLength:
    """Test-only reward: longer final text, more reward. Two random completions of the tiny model almost
    never tie on it (they always tie at 0 on the rubric), so every GRPO group has a gradient and the test
    can check that GRPO moved the adapter."""

    name, range = "answer-length", (0.0, float("inf"))

    def __call__(self, task, traj):
        from toolkit.records import RewardResult

        return RewardResult(len(traj.final_answer) / 100, {}, {})


# SMALL with a reward GRPO can learn from on random completions (registered by the fixture below)
LEARNING = dict(SMALL, reward=["rubric", "answer-length"])


@pytest.fixture
def answer_length_reward(monkeypatch):
    from toolkit.rewards.base import REGISTRY

    monkeypatch.setitem(REGISTRY, "answer-length", f"{__name__}:AnswerLength")


def adapter_tensors(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(folder / "adapter_model.safetensors")


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    import torch

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the CI machine is shared; oversubscribed threads are far slower
    yield
    torch.set_num_threads(threads)


@pytest.mark.integration
def test_recipe_runs_sft_then_grpo_masks_tools_and_resumes(tmp_path, answer_length_reward):
    import torch

    from toolkit.train.config import recipe_from_dict
    from toolkit.train.pipeline import run_recipe

    out = tmp_path / "run"
    summary = run_recipe(recipe_from_dict(LEARNING, "small"), out)
    assert summary["grpo_steps"] == 2
    assert (out / "sft" / "adapter" / "adapter_config.json").exists()
    assert (out / "adapter" / "adapter_config.json").exists()
    # GRPO trained: the final adapter differs from the warm start it began from
    warm, trained = adapter_tensors(out / "sft" / "adapter"), adapter_tensors(out / "adapter")
    assert warm.keys() == trained.keys() and warm
    changed = [k for k in warm if not torch.equal(warm[k], trained[k])]
    assert changed, "GRPO left every LoRA weight as the warm start had it"
    assert (out / "grpo" / "checkpoint-2").is_dir()
    rollouts = [json.loads(line) for line in (out / "grpo" / "rollouts.jsonl").read_text().splitlines()]
    assert {r["step"] for r in rollouts} == {0, 1} and all(r["messages"] for r in rollouts)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    grpo = [r for r in records if r["phase"] == "grpo" and "reward" in r]
    assert [r["step"] for r in grpo] == [2, 3]  # after the one SFT step
    for key in (
        "reward_std",
        "frac_reward_zero_std",
        "completions/clipped_ratio",
        "kl",
        "episodes/tool_calls_mean",
    ):
        assert key in grpo[0], key
    # per-kind diagnostics (toolkit.train.diagnostics): where one kind fed the step, its reward mean is
    # the step's reward
    for record in grpo:
        kinds = {k.split("/")[1] for k in record if k.startswith("kinds/") and k.endswith("/reward_mean")}
        assert kinds, record
        if len(kinds) == 1:
            (kind,) = kinds
            assert record[f"kinds/{kind}/reward_mean"] == pytest.approx(record["reward"], abs=1e-5)
            assert record[f"kinds/{kind}/share"] == 1.0
            assert 0.0 <= record[f"kinds/{kind}/zero_std_share"] <= 1.0
    # a run folder is never overwritten by accident; --resume with everything done is a no-op
    with pytest.raises(FileExistsError):
        run_recipe(recipe_from_dict(LEARNING, "small"), out)
    # resume after a "kill": drop the final adapter and continue from the last checkpoint
    import shutil

    shutil.rmtree(out / "adapter")
    log = out / "grpo" / "rollouts.jsonl"
    with log.open("a") as f:  # the killed run had sampled step 2 and was cut while writing
        f.write(json.dumps({"step": 2, "messages": ["never saved"]}) + "\n" + '{"step": 2, "mess')
    more = dict(LEARNING, grpo=dict(SMALL["grpo"], max_steps=3))  # trained on: a change asked for
    summary = run_recipe(recipe_from_dict(more, "small"), out, resume=True, allow_recipe_change=True)
    assert summary["grpo_steps"] == 3
    assert summary["recipe_changes"][0]["changes"] == {"grpo.max_steps": {"old": 2, "new": 3}}
    steps = [json.loads(line)["step"] for line in log.read_text().splitlines()]
    assert sorted(steps) == [0, 0, 1, 1, 2, 2]  # one set of episodes per step


@pytest.fixture
def adapters_at_train_begin(monkeypatch):
    """The LoRA tensors of every adapter of the policy when GRPO's training loop begins (after the
    checkpoint is loaded), by adapter name, for runs started after the fixture is armed (``arm()``)."""
    from transformers import TrainerCallback

    from toolkit.train import grpo

    seen: dict[str, dict] = {}

    class Snapshot(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kwargs):
            from peft import get_peft_model_state_dict

            for name in model.peft_config:
                tensors = get_peft_model_state_dict(model, adapter_name=name)
                seen[name] = {k: v.detach().clone() for k, v in tensors.items()}

    def arm():
        build = grpo.build_grpo_trainer

        def with_snapshot(*args, **kwargs):
            trainer = build(*args, **kwargs)
            trainer.add_callback(Snapshot())
            return trainer

        monkeypatch.setattr(grpo, "build_grpo_trainer", with_snapshot)
        return seen

    return arm


@pytest.mark.integration
@pytest.mark.parametrize("beta", [0.0, 0.01])
def test_resumed_grpo_starts_from_the_checkpoint_adapter(
    tmp_path, answer_length_reward, adapters_at_train_begin, beta
):
    """With beta > 0 TRL keeps a frozen "ref" adapter, so each checkpoint holds a ``ref/`` subfolder, and
    transformers then loads only the subfolders: the trained adapter restarted from the warm start."""
    import shutil

    import torch

    from toolkit.train.config import recipe_from_dict
    from toolkit.train.pipeline import run_recipe

    # no ref refresh: the reference stays the warm start, so "ref" and "default" differ in the checkpoint
    grpo = dict(SMALL["grpo"], beta=beta, sync_ref_model=False)
    recipe = recipe_from_dict(dict(LEARNING, grpo=grpo), "small")
    out = tmp_path / "run"
    run_recipe(recipe, out)
    checkpoint = out / "grpo" / "checkpoint-1"
    saved, warm = adapter_tensors(checkpoint), adapter_tensors(out / "sft" / "adapter")
    assert any(not torch.equal(saved[k], warm[k]) for k in saved), "GRPO did not move the adapter"
    assert (checkpoint / "ref").is_dir() == (beta > 0)
    # killed after checkpoint 1: the resumed run must continue from checkpoint 1's adapter
    shutil.rmtree(out / "adapter")
    shutil.rmtree(out / "grpo" / "checkpoint-2")
    seen = adapters_at_train_begin()
    summary = run_recipe(recipe, out, resume=True)
    assert summary["grpo_steps"] == 2
    assert set(seen) == ({"default", "ref"} if beta > 0 else {"default"})
    resumed = seen["default"]
    assert resumed.keys() == saved.keys()
    differ = [k for k in saved if not torch.equal(saved[k], resumed[k])]
    assert not differ, f"{len(differ)} of {len(saved)} LoRA tensors are not the checkpoint's: {differ[:2]}"
    if beta > 0:  # and the reference is the checkpoint's (the warm start), not the policy
        ref = adapter_tensors(checkpoint / "ref")
        assert seen["ref"].keys() == ref.keys()
        assert all(torch.equal(seen["ref"][k], ref[k]) and torch.equal(ref[k], warm[k]) for k in ref)


@pytest.mark.integration
def test_checkpoint_adapter_loads_strictly(tmp_path):
    """A checkpoint whose adapter does not cover the policy's LoRA layers is refused, naming the folder."""
    from peft import LoraConfig, get_peft_model

    from toolkit.models import load_policy
    from toolkit.train.adapters import load_checkpoint_adapter

    def policy(targets, r=4):
        model, _ = load_policy("tiny-random")
        return get_peft_model(model, LoraConfig(r=r, target_modules=targets, task_type="CAUSAL_LM"))

    narrow = policy(["q_proj"])
    narrow.save_pretrained(str(tmp_path / "narrow"))
    assert load_checkpoint_adapter(policy(["q_proj"]), tmp_path / "narrow") == 4  # 2 layers x (A, B)
    with pytest.raises(
        ValueError, match=r"narrow: its 'default' adapter does not fit.*missing from the file"
    ):
        load_checkpoint_adapter(policy(["q_proj", "v_proj"]), tmp_path / "narrow")
    with pytest.raises(ValueError, match=r"(?s)narrow: its 'default' adapter does not fit.*size mismatch"):
        load_checkpoint_adapter(policy(["q_proj"], r=8), tmp_path / "narrow")
    assert load_checkpoint_adapter(policy(["q_proj"]), tmp_path) == 0  # no adapter weights there


@pytest.mark.integration
def test_evaluate_compares_the_warm_start_and_grpo_on_held_out_tasks(tmp_path):
    from toolkit.train.config import recipe_from_dict
    from toolkit.train.pipeline import PRIMARY_METRIC, run_recipe

    recipe = dict(
        SMALL,
        eval_tasks=str(TASKS),
        rollout=dict(SMALL["rollout"], compact_schemas=True),
        grpo=dict(SMALL["grpo"], max_steps=1, mask_truncated_completions=False),
        eval={"n_tasks": 2, "merge_adapter": True, "rollout": {"max_padding": 0.3}},
    )
    out = tmp_path / "run"
    summary = run_recipe(recipe_from_dict(recipe, "small"), out, evaluate=True)
    for stage in ("sft", "grpo"):
        result = json.loads((out / "eval" / stage / "results.json").read_text())
        assert result["aggregate"]["metrics"][PRIMARY_METRIC]["n"] == 2  # the file's eval split
        assert result["config"]["loop_config"]["temperature"] == 0.0
        assert result["config"]["loop_config"]["max_padding"] == 0.3
    diff = summary["comparison"][PRIMARY_METRIC]
    assert set(diff) >= {"before", "after", "diff", "ci_low", "ci_high", "outside_ci"}
    assert {"eval_before_s", "grpo_s", "eval_after_s"} <= set(summary["timings_s"])
    prompt = json.loads((out / "eval" / "sft" / "trajectories.jsonl").read_text().splitlines()[0])
    assert '"title"' not in json.dumps(prompt["metadata"]["tools"])  # compact schemas reach the eval

    # the evaluation-speed benchmark runs on such a run folder (its numbers are in docs/cpu-proof/README.md)
    proc = subprocess.run(
        [sys.executable, "-m", "bench.bench_eval", "--run", str(out), "--limit", "2"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        check=True,
    )
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"variant')]
    assert [r["variant"] for r in rows] == ["adapter", "buckets", "merged", "merged+buckets"]
    assert all(r["episodes"] == 2 and 0 <= r["same_as_first"] <= 2 for r in rows)


@pytest.mark.integration
def test_curve_evaluates_every_kept_checkpoint_against_the_warm_start(tmp_path):
    from toolkit.train.config import recipe_from_dict
    from toolkit.train.pipeline import PRIMARY_METRIC, run_recipe

    recipe = recipe_from_dict(
        dict(
            SMALL,
            eval_tasks=str(TASKS),
            grpo=dict(SMALL["grpo"], max_steps=3, save_steps=1, save_total_limit=None),
            eval={"n_tasks": 2},
        ),
        "small",
    )
    out = tmp_path / "run"
    summary = run_recipe(recipe, out, evaluate=True, curve=True)
    assert [row["step"] for row in summary["curve"]] == [0, 1, 2, 3]
    assert [row["folder"] for row in summary["curve"]] == [
        "eval/sft",
        "eval/curve/step-1",
        "eval/curve/step-2",
        "eval/grpo",
    ]
    first, last = summary["curve"][0]["metrics"][PRIMARY_METRIC], summary["curve"][-1]["metrics"]
    assert first["diff"] == 0 and first["ci_low"] == first["ci_high"] == 0  # step 0 is the baseline itself
    assert json.dumps(last) == json.dumps(summary["comparison"])  # the final point is the run's comparison
    for step in (1, 2):
        result = json.loads((out / "eval" / "curve" / f"step-{step}" / "results.json").read_text())
        assert result["aggregate"]["metrics"][PRIMARY_METRIC]["n"] == 2
    # a resumed run reads the evaluated checkpoints back instead of evaluating them again
    stamp = (out / "eval" / "curve" / "step-1" / "results.json").stat().st_mtime_ns
    again = run_recipe(recipe, out, resume=True, evaluate=True, curve=True)
    assert json.dumps(again["curve"]) == json.dumps(summary["curve"])  # (NaN != NaN: compare the JSON)
    assert (out / "eval" / "curve" / "step-1" / "results.json").stat().st_mtime_ns == stamp


@pytest.mark.integration
def test_rollout_func_returns_env_mask_and_trajectories(tmp_path):
    """The rollout output TRL receives: tool-output tokens are masked, one sample per prompt."""
    from toolkit.agent.loop import RolloutConfig
    from toolkit.models import load_policy
    from toolkit.records import Task, read_jsonl
    from toolkit.train.grpo import GRPOStep
    from toolkit.train.trl_adapter import rollout_func

    model, tok = load_policy("tiny-random")
    tasks = read_jsonl(TASKS, Task)[:2]

    class FakeTrainer:  # what the rollout function reads from the trainer
        processing_class = tok
        num_generations = 2

        def __init__(self):
            self.model = model
            self.logged = {}
            self.state = type(
                "State", (), {"global_step": 7, "max_steps": 8, "is_world_process_zero": True}
            )()

        class accelerator:  # noqa: N801
            @staticmethod
            def unwrap_model(m):
                return m

        def _log_metric(self, name, value):
            self.logged[name] = value

    from toolkit.agent.policies import Generation

    class ScriptedPolicy:  # a tool call, then the finish call: exercises the env-token mask
        name, tokenizer = "scripted", tok

        async def generate(self, requests):
            out = []
            for r in requests:
                text = (
                    '<tool_call>\n{"name": "percent_of", "arguments": {"percent": 10, "value": 50}}\n</tool_call>'
                    if r.step == 0
                    else '<tool_call>\n{"name": "finish", "arguments": {"answer": "5"}}\n</tool_call>'
                )
                ids = tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
                out.append(Generation(token_ids=ids, logprobs=[-1.0] * len(ids)))
            return out

    trainer = FakeTrainer()
    log = tmp_path / "rollouts.jsonl"
    trainer.kit_step = GRPOStep(RolloutConfig(max_turns=3), lambda _: ScriptedPolicy(), rollout_log=log)
    trainer.kit_step.tasks = [t for t in tasks for _ in range(2)]  # what the seam sets: the rows as Tasks
    out = rollout_func(["p"] * 4, trainer)
    # the Tasks and the episodes travel on to the reward functions as records, not JSON
    assert out["task"] == trainer.kit_step.tasks and out["id"] == [t.id for t in trainer.kit_step.tasks]
    assert {"prompt_ids", "completion_ids", "logprobs", "env_mask", "trajectory"} <= set(out)
    assert len(out["completion_ids"]) == 4
    ids, mask = out["completion_ids"][0], out["env_mask"][0]
    assert len(ids) == len(mask) == len(out["logprobs"][0]) and ids[-1] == tok.eos_token_id
    text_env = tok.decode([i for i, m in zip(ids, mask, strict=True) if not m])
    assert "<tool_response>" in text_env and '"result": 5.0' in text_env
    assert "<tool_response>" not in tok.decode([i for i, m in zip(ids, mask, strict=True) if m])
    assert out["trajectory"][0].stop_reason == "finish"
    assert trainer.logged["episodes/tool_calls_mean"] == 1.0 and trainer.logged["episodes/finish_rate"] == 1.0
    # every episode lands in the rollout log, with the step it was sampled at
    rollout_func(["p"] * 4, trainer)
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(logged) == 8 and {r["step"] for r in logged} == {7}
    assert logged[0]["calls"][0]["name"] == "percent_of" and logged[0]["stop_reason"] == "finish"


@pytest.mark.integration
def test_a_failed_sampler_request_is_left_out_of_its_group_baseline(tmp_path, monkeypatch):
    """An episode whose sampler request failed (stop reason error, source policy) teaches nothing: out of
    the loss, and out of its group's mean and std as TRL leaves an unscorable row out. Issue 49: 3
    healthy episodes at 0.55 and a failed one at 0.45 gave the healthy ones +0.5 for nothing."""
    from grpo_fakes import generation_batch, scoring_trainer

    spread = ["0.2", "0.9", "0.4", "0.7"]

    def answer_of(task, key):
        if task.id == "calc-0":
            return None if key == 3 else "0.55"  # the 4th request of calc-0 fails
        return spread[key % 4]

    trainer = scoring_trainer(tmp_path, monkeypatch, answer_of, scale_rewards="group")
    out = generation_batch(trainer, ["calc-0", "calc-1"])
    assert (out["completion_mask"][3] * out["tool_mask"][3]).sum() == 0  # masked out of the loss
    assert out["advantages"][:4].tolist() == [0.0] * 4  # the healthy three tie: nothing to learn
    assert out["advantages"][4:].abs().min() > 0.1  # calc-1's group is scored as before


def test_a_dead_sampler_raises_instead_of_stepping_on_nothing():
    """More than half of a rollout's episodes failing on the policy endpoint is a dead sampler (a vLLM
    server down), not a batch to train on: the rollout raises, naming the error. Half or fewer: the
    failed episodes are masked and the step goes on."""
    from grpo_fakes import SAMPLER_DOWN, FinishPolicy, RolloutTrainer

    from toolkit.agent.loop import RolloutConfig
    from toolkit.models import load_tokenizer
    from toolkit.records import Task, read_jsonl
    from toolkit.train.grpo import GRPOStep
    from toolkit.train.trl_adapter import rollout_func

    tok = load_tokenizer("tiny-random")
    tasks = read_jsonl(TASKS, Task)[:2]

    def rollout_with(failing: int):
        policy = FinishPolicy(tok, lambda task, key: None if key < failing else "5")
        step = GRPOStep(RolloutConfig(max_turns=2), lambda _: policy)
        return rollout_func(["p"] * 4, RolloutTrainer(tok, tasks, 2, step))

    out = rollout_with(2)
    assert [t.stop_reason for t in out["trajectory"]] == ["error", "error", "finish", "finish"]
    assert out["env_mask"][0] == [0] * len(out["env_mask"][0])
    for failing in (3, 4):
        with pytest.raises(
            RuntimeError, match=f"{failing} of the 4 episodes .*policy endpoint.*{SAMPLER_DOWN}"
        ):
            rollout_with(failing)


DIST_SCRIPT = """
import json, sys
from toolkit.train.config import recipe_from_dict
from toolkit.train.pipeline import run_recipe
from accelerate import PartialState
recipe = recipe_from_dict(json.loads(sys.argv[1]), "dist")
summary = run_recipe(recipe, sys.argv[2])
state = PartialState()  # the process group the trainer ran in
print("WORLD", state.num_processes, state.backend, state.distributed_type, flush=True)
"""


@pytest.mark.integration
def test_two_cpu_processes_with_gloo(tmp_path):
    """torchrun with 2 CPU processes: accelerate sees WORLD_SIZE=2 without a GPU and runs DDP over gloo
    (``accelerate launch --cpu`` starts a single process unless MPI is set up); one GRPO step."""
    script = tmp_path / "dist_grpo.py"
    script.write_text(DIST_SCRIPT)
    recipe = dict(SMALL, sft=None, grpo=dict(SMALL["grpo"], max_steps=1, beta=0.0, sync_ref_model=False))
    env = dict(os.environ, OMP_NUM_THREADS="1", TRL_EXPERIMENTAL_SILENCE="1", TOKENIZERS_PARALLELISM="false")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29517"]
    cmd += [str(script), json.dumps(recipe), str(tmp_path / "run")]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env=env, timeout=600, cwd=Path(__file__).parent.parent
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count("WORLD 2 gloo DistributedType.MULTI_CPU") == 2, proc.stdout[-2000:]
    assert (tmp_path / "run" / "adapter" / "adapter_config.json").exists()
    # each process logs the episodes it sampled to its own file: no interleaved lines
    for name in ("rollouts.jsonl", "rollouts.1.jsonl"):
        lines = (tmp_path / "run" / "grpo" / name).read_text().splitlines()
        assert lines and all(json.loads(line)["step"] == 0 for line in lines)
