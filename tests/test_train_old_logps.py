"""The PPO ratio the update sees (issue 49, defect 1). With the sampler correction on, TRL scores
``old_per_token_logps`` on the padded generation batch; the kit's update runs regrouped, trimmed
micro-batches (and a shared prompt once), which in bf16 gives slightly other numbers. A micro-batch used
before any optimizer step must see ratio exactly 1; one used after a step (``num_iterations`` 2) must see
old logprobs scored in the very layout the update uses."""

from __future__ import annotations

import pytest


@pytest.mark.integration
def test_the_ratio_is_one_before_the_first_optimizer_step_and_layout_free_after_it(tmp_path, monkeypatch):
    """Two steps on the tiny random model in bf16, 2 tasks of different prompt lengths a step (so the
    regrouped micro-batches are cut to other widths than TRL's padded batch), ``num_iterations`` 2 and a
    learning rate of 0: the second pass runs after an optimizer step that changed nothing, so its ratio
    is exactly 1 too when the old logprobs come from the update's layout."""
    import torch
    from datasets import Dataset
    from trl import GRPOConfig

    from toolkit.agent.loop import RolloutConfig
    from toolkit.models import load_policy
    from toolkit.train.grpo import GRPOStep
    from toolkit.train.trl_adapter import (
        enable_sampler_correction,
        install_logprob_fallback,
        kit_grpo_trainer_class,
    )

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    install_logprob_fallback()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    model, tokenizer = load_policy("tiny-random", dtype="bf16")
    gen = torch.Generator().manual_seed(0)
    prompts = {str(i): torch.randint(5, 2000, (9 + 7 * i,), generator=gen).tolist() for i in range(4)}

    def rollout(batch_prompts, trainer):  # fixed tokens: no generation needed to exercise the update
        completions = [torch.randint(5, 2000, (3 + 4 * (i % 3),), generator=gen).tolist() for i in range(4)]
        return {
            "prompt_ids": [prompts[p] for p in batch_prompts],
            "completion_ids": completions[: len(batch_prompts)],
            "logprobs": [[-10.0] * len(c) for c in completions[: len(batch_prompts)]],
        }

    args = GRPOConfig(
        output_dir=str(tmp_path / "grpo"),
        use_cpu=True,
        num_generations=2,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=2,  # one generation batch of 2 tasks x 2 episodes per optimizer step
        num_iterations=2,
        max_steps=2,
        learning_rate=0.0,
        beta=0.0,
        report_to="none",
        save_strategy="no",
        seed=0,
    )
    trainer = kit_grpo_trainer_class()(
        model=model,
        reward_funcs=[lambda completion_ids, **kw: [float(len(c)) for c in completion_ids]],
        args=args,
        train_dataset=Dataset.from_list([{"prompt": p} for p in prompts]),
        processing_class=tokenizer,
        rollout_func=rollout,
        kit_step=GRPOStep(RolloutConfig(), shared_prefix=True),  # the update's settings; rows without tasks
    )
    assert enable_sampler_correction(trainer)
    seen = []  # (global step, old logprobs or None, the update's logprobs, loss mask)
    get_logps, compute_loss = trainer._get_per_token_logps_and_entropies, trainer._compute_loss

    def recording_logps(*args, **kwargs):
        out = get_logps(*args, **kwargs)
        recording_logps.last = out[0].detach()
        return out

    def recording_loss(model_, inputs):
        loss = compute_loss(model_, inputs)
        old = inputs.get("old_per_token_logps")
        seen.append((trainer.state.global_step, old, recording_logps.last, inputs["completion_mask"].bool()))
        return loss

    trainer._get_per_token_logps_and_entropies = recording_logps
    trainer._compute_loss = recording_loss
    try:
        trainer.train()
    finally:
        torch.set_num_threads(threads)
    assert [step for step, *_ in seen] == [0, 0, 1, 1]
    assert model.dtype == torch.bfloat16
    for step, old, new, mask in seen:
        # what TRL's _compute_loss takes as the old logprobs: per_token_logps.detach() when absent
        old = new if old is None else old
        assert old.shape == new.shape
        assert torch.equal(old[mask], new[mask]), (
            f"step {step}: ratio != 1, max |dlogp| {(old - new)[mask].abs().max()}"
        )
    # after the optimizer step, the old logprobs are kept (they are what the ratio is measured against)
    assert all(old is not None for step, old, _, _ in seen if step == 1)
