"""Scripted pieces for tests of what TRL's GRPOTrainer scores from the kit's rollout: a policy whose every
episode is one finish call with an answer the test chooses (or a failed sampler request), a reward that is
that answer's number, a stand-in for the trainer the rollout function reads, and the kit's GRPO trainer on
the tiny random model built around them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from toolkit.agent.policies import Generation, GenerationRequest
from toolkit.records import RewardResult, Task, read_jsonl

TASKS = Path(__file__).parent / "data" / "train_tasks.jsonl"
SAMPLER_DOWN = "APIConnectionError: Connection error."

# (task, episode index within one rollout call) -> the answer to finish with, or None: the request fails
AnswerOf = Callable[[Task, int], "str | None"]


class EvalModeModel:
    """The model's train/eval switch, which the rollout function flips around sampling."""

    training = True

    def eval(self):
        self.training = False

    def train(self, mode=True):
        self.training = mode


class RolloutTrainer:
    """What ``trl_adapter.rollout_func`` reads from the kit's GRPO trainer: the tokenizer, the group size,
    the global step, the kit's step with the batch's tasks (each task ``num_generations`` times, as the
    seam sets them) and TRL's metric logger (kept in ``logged``). ``extra`` adds attributes (reward
    functions for dynamic sampling's scorer)."""

    def __init__(
        self, tok: Any, tasks: list[Task], num_generations: int, kit_step: Any, step: int = 0, **extra: Any
    ):
        self.processing_class, self.num_generations = tok, num_generations
        self.model = EvalModeModel()
        self.state = SimpleNamespace(global_step=step, max_steps=max(step + 1, 8), is_world_process_zero=True)
        self.kit_step = kit_step
        kit_step.tasks = [t for t in tasks for _ in range(num_generations)]
        self.logged: dict[str, float] = {}
        self.__dict__.update(extra)

    def _log_metric(self, name: str, value: float) -> None:
        self.logged[name] = value


class AnswerValue:
    """Test-only reward: the final answer read as a number (0.45 when it is not one, e.g. no answer)."""

    name, range = "answer-value", (0.0, float("inf"))

    def __call__(self, task, traj):
        try:
            return RewardResult(float(traj.final_answer), {}, {})
        except ValueError:
            return RewardResult(0.45, {}, {})


class FinishPolicy:
    """Every episode: one finish call with ``answer_of(task, key)``; None is a sampler request that failed
    (what the OpenAI and vLLM-server policies return when their endpoint is down)."""

    name = "scripted"

    def __init__(self, tokenizer: Any, answer_of: AnswerOf):
        self.tokenizer, self.answer_of = tokenizer, answer_of

    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        out = []
        for r in requests:
            answer = self.answer_of(r.task, r.key)
            if answer is None:
                out.append(Generation(error=SAMPLER_DOWN))
                continue
            call = {"name": "finish", "arguments": {"answer": answer}}
            text = f"<tool_call>\n{json.dumps(call)}\n</tool_call>"
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
            out.append(Generation(token_ids=ids, logprobs=[-1.0] * len(ids)))
        return out


def scoring_trainer(tmp_path: Path, monkeypatch: Any, answer_of: AnswerOf, *, sampling=None, **grpo: Any):
    """The kit's GRPO trainer on the tiny random model whose generation batch is 2 tasks x 4 episodes of
    ``FinishPolicy``, rewarded by ``AnswerValue``; call ``generation_batch`` for TRL's scored batch."""
    import torch
    from trl import GRPOConfig

    from toolkit.agent.loop import RolloutConfig
    from toolkit.models import load_policy
    from toolkit.rewards.base import REGISTRY
    from toolkit.train.grpo import build_grpo_trainer

    monkeypatch.setitem(REGISTRY, "answer-value", f"{__name__}:AnswerValue")
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    torch.manual_seed(0)
    model, tok = load_policy("tiny-random")
    config = GRPOConfig(
        output_dir=str(tmp_path / "grpo"),
        num_generations=4,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=2,  # one generation batch: 2 tasks x 4 episodes
        use_cpu=True,
        report_to="none",
        remove_unused_columns=False,
        max_completion_length=256,
        beta=0.0,
        **grpo,
    )
    policy = FinishPolicy(tok, answer_of)
    return build_grpo_trainer(
        model,
        tok,
        read_jsonl(TASKS, Task),
        config,
        RolloutConfig(max_turns=2),
        reward="answer-value",
        policy_factory=lambda _: policy,
        sampling=sampling,
    )


def generation_batch(trainer: Any, task_ids: list[str]) -> dict[str, Any]:
    """TRL's scored generation batch (advantages, masks, ``num_items_in_batch``) for these tasks, 4
    episodes each, as the trainer's sampler would hand them over in training."""
    rows = {row["id"]: dict(row) for row in trainer.train_dataset}
    trainer.model.train()
    return trainer._generate_and_score_completions([dict(rows[i]) for i in task_ids for _ in range(4)])
