"""Off-policy samples (vLLM generation, transformers update): every model token keeps the logprob it was
sampled with, an episode without them is masked out and counted, and TRL's truncated importance-sampling
correction is applied to the kit's ``rollout_func`` samples with the mismatch logged per step
(``toolkit.train.importance``). The GRPO test runs TRL for real on the tiny random model, with a policy
whose reported sampling logprobs are the model's own minus a known offset, so the logged mismatch and
the ratios the loss was multiplied by are known in advance."""

from __future__ import annotations

import json
import math

import pytest

from toolkit.agent.loop import MISSING_LOGPROBS, RolloutConfig, rollout
from toolkit.agent.policies import Generation
from toolkit.agent.testing import ScriptedPolicy, fake_opener, turns
from toolkit.records import Task, Trajectory
from toolkit.train.grpo import GRPOStep
from toolkit.train.rollout import has_sampling_logprobs, token_sample
from toolkit.train.trl_adapter import rollout_func

EOS = 2
CALL = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 3}}\n</tool_call>'


def calc_tasks(n: int = 2) -> list[Task]:
    return [
        Task(id=f"t{i}", split="train", prompt=f"Add {i} and 3.", servers=["calc"], tools=["add"], seed=i)
        for i in range(n)
    ]


class NoLogprobs(ScriptedPolicy):
    """A token-level policy that loses the sampling logprobs of some turns (None, or one too few)."""

    def __init__(self, tokenizer, lose):
        super().__init__(turns(CALL, "4"), tokenizer)
        self.lose = lose  # (episode key, step) -> how the logprobs are lost

    async def generate(self, requests):
        out = await super().generate(requests)
        for req, gen in zip(requests, out, strict=True):
            how = self.lose(req.key, req.step)
            if how == "none":
                gen.logprobs = None
            elif how == "short":
                gen.logprobs = gen.logprobs[:-1]
        return out


@pytest.fixture(scope="module")
def tokenizer():
    from toolkit.models import load_tokenizer

    return load_tokenizer("tiny-random")


def test_a_turn_without_sampling_logprobs_is_counted_and_its_episode_masked_out(tokenizer):
    lose = {(0, 1): "none", (1, 0): "short"}
    policy = NoLogprobs(tokenizer, lambda key, step: lose.get((key, step)))
    trajs = rollout(calc_tasks(3), policy, RolloutConfig(max_turns=3), open_episode=fake_opener())
    assert [t.metadata.get(MISSING_LOGPROBS, 0) > 0 for t in trajs] == [True, True, False]
    assert [has_sampling_logprobs(t) for t in trajs] == [False, False, True]
    for traj in trajs:
        _, ids, logprobs, mask = token_sample(traj, tokenizer.eos_token_id)
        assert len(logprobs) == len(ids)
        if has_sampling_logprobs(traj):
            assert any(mask) and all(lp == -1.0 for lp, m in zip(logprobs, mask, strict=True) if m)
        else:  # never trained on 0.0 placeholders
            assert not any(mask)


def test_trl_sample_masks_a_trajectory_whose_logprobs_do_not_match_its_tokens():
    traj = Trajectory(
        task_id="t",
        messages=[],
        stop_reason="finish",
        prompt_ids=[5],
        completion_ids=[10, 11, EOS],
        completion_mask=[1, 1, 1],
        logprobs=[-0.5, -0.5],
    )
    assert not has_sampling_logprobs(traj)
    assert token_sample(traj, EOS)[3] == [0, 0, 0]


def _fake_trainer(tokenizer, tasks, step):
    class FakeTrainer:
        processing_class = tokenizer
        num_generations = 1
        kit_step = step

        def __init__(self):
            step.tasks = list(tasks)  # what the seam sets: the batch's rows as Tasks
            self.model = type(
                "M", (), {"training": True, "eval": lambda s: None, "train": lambda s, m: None}
            )()
            self.logged = {}
            self.state = type(
                "State", (), {"global_step": 0, "max_steps": 1, "is_world_process_zero": True}
            )()

        def _log_metric(self, name, value):
            self.logged[name] = value

    return FakeTrainer()


def test_rollout_func_logs_the_masked_share_and_refuses_a_policy_without_any_logprobs(tokenizer):
    tasks = calc_tasks(4)
    loop = RolloutConfig(max_turns=3)
    some = NoLogprobs(tokenizer, lambda key, step: "none" if key == 0 else None)
    trainer = _fake_trainer(tokenizer, tasks, GRPOStep(loop, lambda _: some, open_episode=fake_opener()))
    out = rollout_func(["p"] * 4, trainer)
    assert trainer.logged["episodes/logprobs_missing"] == 0.25
    assert not any(out["env_mask"][0]) and all(any(m) for m in out["env_mask"][1:])
    none = NoLogprobs(tokenizer, lambda key, step: "none")
    step = GRPOStep(loop, lambda _: none, open_episode=fake_opener())
    with pytest.raises(RuntimeError, match="no sampling logprobs"):
        rollout_func(["p"] * 4, _fake_trainer(tokenizer, tasks, step))


def test_the_kit_policies_give_every_model_token_its_sampling_logprob(tokenizer):
    """transformers generation (the model's own logprobs) and vLLM's output conversion (a fake output)."""
    from types import SimpleNamespace

    from toolkit.agent.policies import TransformersPolicy, _from_vllm_output
    from toolkit.models import load_policy

    model, _ = load_policy("tiny-random")
    policy = TransformersPolicy(model.eval(), tokenizer)
    config = RolloutConfig(max_turns=2, max_new_tokens=8, temperature=1.0)
    trajs = rollout(calc_tasks(2), policy, config, open_episode=fake_opener())
    for traj in trajs:
        assert has_sampling_logprobs(traj)
        model_lps = [lp for lp, m in zip(traj.logprobs, traj.completion_mask, strict=True) if m]
        assert model_lps and all(lp < 0 for lp in model_lps)  # real log-probabilities, no 0.0 filler

    entry = SimpleNamespace
    completion = SimpleNamespace(
        token_ids=[7, EOS],
        logprobs=[{7: entry(logprob=-1.5)}, {EOS: entry(logprob=-0.25)}],
        finish_reason="stop",
    )
    assert _from_vllm_output(completion).logprobs == [-1.5, -0.25]


def test_mismatch_stats_truncated_share_and_kl():
    import torch

    from toolkit.train.importance import mismatch_stats

    trainer = torch.tensor([[-1.0, -1.0, -1.0, 0.0], [-2.0, -2.0, 0.0, 0.0]])
    sampler = torch.tensor([[-3.0, -1.5, float("nan"), 0.0], [-2.0, -1.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    stats = mismatch_stats(trainer, sampler, mask, mode="token_truncate", clip_min=None, clip_max=3.0)
    # valid tokens: d = +2, +0.5 (row 0; the NaN one is left out), 0, -1 (row 1)
    assert stats["tokens"] == 4 and stats["abs_diff"] == pytest.approx(3.5)
    k3 = sum(math.expm1(d) - d for d in (2.0, 0.5, 0.0, -1.0))
    assert stats["kl"] == pytest.approx(k3)
    assert stats["units"] == 4 and stats["outside"] == 1  # exp(2) > 3
    seq = mismatch_stats(trainer, sampler, mask, mode="sequence_mask", clip_min=0.5, clip_max=3.0)
    assert seq["units"] == 2 and seq["outside"] == 2  # exp(2.5) > 3, exp(-1) < 0.5


OFFSET = 2.0  # the fake sampler reports logprobs this much lower than its model's: ratio e^2 > cap 3


def spread_reward(prompts, completions, completion_ids, **kwargs):
    return [sum(1 for t in ids if t % 2 == 0) / max(1, len(ids)) for ids in completion_ids]


@pytest.mark.integration
def test_grpo_applies_truncated_importance_sampling_to_off_policy_rollouts(tmp_path, monkeypatch):
    """Two GRPO steps on tiny-random: the rollouts are the model's own samples with logprobs lowered by
    OFFSET, declared off-policy. TRL must see logp_trainer - logp_sampler = OFFSET on every model token,
    truncate every ratio to the cap, multiply the loss by it, and the kit must log the KL and share."""
    import torch
    from peft import LoraConfig, get_peft_model
    from trl import GRPOConfig

    from toolkit.agent.policies import TransformersPolicy
    from toolkit.models import load_policy
    from toolkit.train.callbacks import MetricsJsonlCallback
    from toolkit.train.grpo import build_grpo_trainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    torch.set_num_threads(1)
    model, tokenizer = load_policy("tiny-random")
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))

    class Shifted(TransformersPolicy):
        def generate_sync(self, requests):
            gens = super().generate_sync(requests)
            return [Generation(token_ids=g.token_ids, logprobs=[lp - OFFSET for lp in g.logprobs],
                               finish_reason=g.finish_reason) for g in gens]  # fmt: skip

    class OffPolicyFactory:
        samples_off_policy = True

        def __call__(self, trainer):
            return Shifted(trainer.accelerator.unwrap_model(trainer.model), trainer.processing_class)

    args = GRPOConfig(
        output_dir=str(tmp_path / "grpo"),
        use_cpu=True,
        num_generations=2,
        per_device_train_batch_size=4,
        max_steps=2,
        learning_rate=1e-3,
        beta=0.0,
        temperature=1.0,
        max_completion_length=1024,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        seed=0,
        vllm_importance_sampling_mode="token_truncate",
        vllm_importance_sampling_clip_max=3.0,
    )
    loop = RolloutConfig(temperature=1.0, max_new_tokens=8, max_turns=1, max_context_tokens=1024)
    metrics = tmp_path / "metrics.jsonl"
    trainer = build_grpo_trainer(
        model, tokenizer, calc_tasks(4), args, loop, policy_factory=OffPolicyFactory(),
        open_episode=fake_opener(), callbacks=[MetricsJsonlCallback(metrics, "grpo")],
    )  # fmt: skip
    trainer.reward_funcs, trainer.reward_func_names = [spread_reward], ["spread"]
    ratios = []
    compute_loss = trainer._compute_loss

    def recording(model_, inputs):
        mask = (inputs["completion_mask"] * inputs["tool_mask"]).bool()
        ratios.append(inputs["importance_sampling_ratio"][mask])
        return compute_loss(model_, inputs)

    trainer._compute_loss = recording
    trainer.train()
    assert trainer.state.global_step == 2
    seen = torch.cat(ratios)
    assert seen.numel() > 0 and torch.allclose(seen, torch.full_like(seen, 3.0))  # e^2 truncated to 3
    lines = [json.loads(line) for line in metrics.read_text().splitlines() if '"loss"' in line]
    assert len(lines) == 2
    for line in lines:
        print(
            f"step {line['step']}: mean |logp_trainer - logp_sampler| "
            f"{line['sampling/sampling_logp_difference/mean']:.4f}, "
            f"KL {line['sampling/sampler_trainer_kl']:.4f}, "
            f"truncated {line['sampling/importance_sampling_ratio/truncated_share']:.3f}"
        )
        assert line["sampling/sampling_logp_difference/mean"] == pytest.approx(OFFSET, abs=1e-3)
        assert line["sampling/sampler_trainer_kl"] == pytest.approx(math.expm1(OFFSET) - OFFSET, rel=1e-3)
        assert line["sampling/importance_sampling_ratio/truncated_share"] == 1.0
