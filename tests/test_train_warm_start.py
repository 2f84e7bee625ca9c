"""The SFT warm start fits the sampler (issue 31): its gold episodes are replayed token-level with the
model's tokenizer, so tool outputs are cut by the same token budget as when the model samples; no gold
turn is longer than the sampler's ``max_new_tokens``; with ``one_call_per_turn`` no turn holds two
calls; episodes that do not fit are counted per kind and, with ``sft.drop_unfit_gold``, dropped; and
a schedule whose first step runs at learning rate 0 is named before the run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from toolkit.agent.loop import RolloutConfig, rollout
from toolkit.agent.policies import GoldPolicy
from toolkit.agent.testing import ScriptedPolicy, check_token_exact, fake_opener, turns
from toolkit.records import GoldCall, Task
from toolkit.train import config as cfg
from toolkit.train.sft import fit_to_sampler, gold_trajectories, model_turns, warm_start_rows

TRUNCATED = re.compile(r"\[\.\.\. truncated: showing (\d+) of (\d+) (tokens|characters)\]")


@pytest.fixture(scope="module")
def tok():
    from toolkit.models import load_tokenizer

    return load_tokenizer("smollm2-135m")


def _task(task_id: str, gold: list[GoldCall], kind: str = "lookup") -> Task:
    return Task(
        id=task_id,
        split="train",
        prompt="Dump 300 words, add 2 and 3, and add 4 and 5.",
        servers=["calc", "notes"],
        tools=["add", "dump", "save_note"],
        seed=0,
        gold=gold,
        answers={"sum": 5},
        metadata={"kind": kind},
    )


def _assistant_turns(row: dict, tokenizer) -> list[str]:
    """The trained (assistant-mask) spans of an SFT row, as text without the template's newlines."""
    spans, current = [], []
    for token, mask in zip(row["input_ids"], row["assistant_masks"], strict=True):
        if mask:
            current.append(token)
        elif current:
            spans.append(current)
            current = []
    if current:
        spans.append(current)
    return [tokenizer.decode(s).strip("\n") for s in spans]


def test_sft_tool_outputs_are_cut_like_sampled_ones(tok):
    """The same call's output reads the same in an SFT row and in a sampled episode: cut to
    ``max_tool_output_tokens`` tokens of the model's tokenizer (the gold replay without a tokenizer
    cut at 4 characters a token: 512 characters for 128 tokens)."""
    loop = RolloutConfig(max_turns=3, max_new_tokens=64, max_tool_output_tokens=16, max_context_tokens=2048)
    task = _task("dump", [GoldCall("dump", {"n": 300})])
    rows, _ = warm_start_rows([task], loop, tok, open_episode=fake_opener())
    (gold,) = gold_trajectories([task], loop, tokenizer=tok, open_episode=fake_opener())
    (sampled,) = rollout(
        [task],
        ScriptedPolicy(turns('<tool_call>\n{"name": "dump", "arguments": {"n": 300}}\n</tool_call>'), tok),
        loop,
        open_episode=fake_opener(),
    )
    gold_out = next(m["content"] for m in gold.messages if m["role"] == "tool")
    sampled_out = next(m["content"] for m in sampled.messages if m["role"] == "tool")
    assert gold_out == sampled_out
    shown, total, unit = TRUNCATED.search(gold_out).groups()
    assert (int(shown), unit) == (16, "tokens") and int(total) > 300
    assert gold_out in tok.decode(rows[0]["input_ids"])  # the SFT row trains on that very text
    check_token_exact(gold, tok)  # the token-level replay keeps the loop's bookkeeping exact


def test_one_call_per_turn_and_turns_over_the_cap_are_dropped(tok):
    independent = [GoldCall("add", {"a": 2, "b": 3}), GoldCall("add", {"a": 4, "b": 5})]
    loop = RolloutConfig(max_turns=3, max_new_tokens=40, max_context_tokens=2048)
    (both,) = gold_trajectories([_task("t", independent)], loop, tokenizer=tok, open_episode=fake_opener())
    (split,) = gold_trajectories(
        [_task("t", independent)], loop, tokenizer=tok, one_call_per_turn=True, open_episode=fake_opener()
    )
    calls_per_turn = [len(m.get("tool_calls") or []) for m in both.messages if m["role"] == "assistant"]
    assert calls_per_turn == [2, 1]  # the two calls in one turn (the default, as before), then finish
    calls_per_turn = [len(m.get("tool_calls") or []) for m in split.messages if m["role"] == "assistant"]
    assert calls_per_turn == [1, 1, 1]
    # the two-call turn is longer than 40 tokens, each one-call turn is not: the first episode is dropped
    assert len(model_turns(both)[0]) > loop.max_new_tokens >= max(len(ids) for ids in model_turns(split))
    kept, fit = fit_to_sampler([both, split], {"t": "aggregate"}, loop)
    assert kept == [split]
    counts = fit.to_dict()["kinds"]["aggregate"]
    assert counts["call_turns"] == 3 and counts["call_turns_over"] == 1 and counts["dropped"] == 1
    # without drop, the unfit episode is counted and kept (the default: recipes before issue 31)
    kept, fit = fit_to_sampler([both, split], {"t": "aggregate"}, loop, drop=False)
    assert kept == [both, split] and fit.total("unfit") == 1 and fit.total("dropped") == 0
    assert "do not fit the sampler, kept" in fit.summary()
    # more generations in a user turn than the sampler's max_turns: unfit too
    _, fit = fit_to_sampler([split], {"t": "aggregate"}, RolloutConfig(max_turns=2, max_new_tokens=64))
    assert fit.total("over_max_turns") == 1 and fit.total("dropped") == 1


def test_cpu_demo_warm_start_fits_the_sampler(tok, tmp_path: Path):
    """On the cpu-demo tasks (synth preset cpu, seed 1, the 320 train tasks) with its rollout budgets:
    no trained turn is longer than the 64-token turn cap, no tool output longer than 128 tokens, and
    with one call per turn no turn holds two calls. Before, 3 of 50 aggregate call turns and 2 of 37
    aggregate answer turns were longer than 64 tokens, and tool outputs ran to 512 characters."""
    from toolkit.train.pipeline import load_train_tasks, resolve_task_files

    recipe = cfg.load_recipe("cpu-demo")
    tasks = load_train_tasks(recipe, resolve_task_files(recipe, tmp_path)[0])
    loop = recipe.loop_config()
    rows, fit = warm_start_rows(
        tasks, loop, tok, max_length=recipe.sft["max_length"], one_call_per_turn=True, drop_unfit=True
    )
    assert len(rows) >= 0.95 * len(tasks)
    assert fit.total("episodes") == len(tasks) and fit.total("dropped") == len(tasks) - len(rows)
    assert fit.total("unfit") == fit.total("dropped") > 0  # a few answers run past 64 tokens
    for row in rows:
        for text in _assistant_turns(row, tok):
            assert len(tok(text, add_special_tokens=False)["input_ids"]) <= loop.max_new_tokens, text
            assert text.count("<tool_call>") <= 1, text
        for shown, _, unit in TRUNCATED.findall(tok.decode(row["input_ids"])):
            assert (int(shown), unit) == (loop.max_tool_output_tokens, "tokens")


def test_gold_policy_with_a_tokenizer_returns_the_turn_as_ids(tok):
    loop = RolloutConfig(max_turns=3, max_context_tokens=2048)
    task = _task("t", [GoldCall("add", {"a": 2, "b": 3})])
    (traj,) = rollout([task], GoldPolicy(tok), loop, open_episode=fake_opener())
    assert traj.prompt_ids and traj.stop_reason == "finish" and len(model_turns(traj)) == 2
    check_token_exact(traj, tok)


def test_a_schedule_whose_first_step_runs_at_learning_rate_zero_is_named():
    from trl import GRPOConfig, SFTConfig

    warm = {"lr_scheduler_type": "constant_with_warmup", "warmup_steps": 2}  # cpu-demo's in runs 1-18
    recipe = cfg.with_overrides(
        cfg.load_recipe("cpu-demo"), {f"{s}.{k}": v for s in ("sft", "grpo") for k, v in warm.items()}
    )
    assert cfg.first_step_learning_rate(recipe.sft, SFTConfig) == 0.0
    assert cfg.first_step_learning_rate(recipe.grpo, GRPOConfig) == 0.0
    warnings = cfg.schedule_warnings(recipe)
    assert len(warnings) == 2 and "first sft step" in warnings[0] and "first grpo step" in warnings[1]
    fixed = cfg.with_overrides(
        recipe,
        {
            "sft.lr_scheduler_type": "constant",
            "sft.warmup_steps": 0,
            "grpo.lr_scheduler_type": "constant",
            "grpo.warmup_steps": 0,
        },
    )
    assert cfg.first_step_learning_rate(fixed.grpo, GRPOConfig) == pytest.approx(1e-4)
    assert cfg.schedule_warnings(fixed) == []
    # a warmup given as a ratio of the steps starts at 0 as well
    assert cfg.first_step_learning_rate({"warmup_steps": 0.1, "max_steps": 20}, GRPOConfig) == 0.0
