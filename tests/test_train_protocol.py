"""The test-set protocol (``eval.test_sets`` + ``mcp-rl train --test``) and the per-step diagnostics.

The protocol runs on a finished run (``--resume --test``) with a backend whose evaluation policies are
the gold policy (for "grpo") and one that answers without calling a tool (for the warm start), so the
comparison has a known sign and no model is loaded."""

from __future__ import annotations

import json
import math

import pytest

from toolkit.agent.policies import GoldPolicy
from toolkit.agent.testing import ScriptedPolicy, turns
from toolkit.train.config import RecipeError, recipe_from_dict

RECIPE = {
    "model": "tiny-random",
    "reward": "rubric",
    "synth": {"preset": "cpu", "n": 12, "n_eval": 6, "seed": 1},
    "rollout": {"max_turns": 3, "max_new_tokens": 64, "max_context_tokens": 1536},
    "grpo": {"num_generations": 2, "per_device_train_batch_size": 2, "max_steps": 1},
    "eval": {"n_tasks": 6, "test_sets": [{"seed": 11, "n": 5}, {"seed": 12, "n": 4}]},
}


class GoldVsSilent:
    """A backend with nothing to train (the run is finished): it only hands out evaluation policies."""

    name = "fake"

    def __init__(self):
        self.evaluated: list[str] = []

    def eval_policy(self, adapter, label):
        self.evaluated.append(label)
        return GoldPolicy() if label == "grpo" else ScriptedPolicy(turns("I cannot tell."), name=label)

    def release(self):
        pass


def _finished_run(tmp_path):
    out = tmp_path / "run"
    for adapter in (out / "sft" / "adapter", out / "adapter"):
        adapter.mkdir(parents=True)
        (adapter / "adapter_config.json").write_text("{}")
    (out / "summary.json").write_text(json.dumps({"comparison": {"kept": True}, "grpo_steps": 3}))
    return out


def test_test_sets_are_synthesised_from_their_seeds_and_evaluated_once(tmp_path):
    from toolkit.train.pipeline import run_recipe

    recipe = recipe_from_dict({**RECIPE, "sft": {"max_steps": 1}})
    out = _finished_run(tmp_path)
    backend = GoldVsSilent()
    summary = run_recipe(recipe, out, resume=True, test=True, backend=backend)

    assert sorted(summary["test"]) == ["11", "12"]
    assert [summary["test"][s]["n_tasks"] for s in ("11", "12")] == [5, 4]
    for seed in ("11", "12"):
        primary = summary["test"][seed]["comparison"]["pass@0.75"]
        assert primary["before"] == 0.0 and primary["after"] == 1.0  # silent vs gold on the same tasks
        assert (out / "eval" / f"test-seed{seed}" / "sft" / "results.json").exists()
    assert backend.evaluated == ["sft-only", "grpo", "sft-only", "grpo"]

    # the two sets are different tasks, and no evaluated task repeats a training prompt
    def prompts(path, ids=None):
        rows = [json.loads(line) for line in path.open()]
        return {r["prompt"] for r in rows if ids is None or r["id"] in ids}

    train = prompts(out / "tasks" / "train.jsonl")
    evaluated = []
    for seed in (11, 12):
        results = out / "eval" / f"test-seed{seed}" / "grpo" / "results.jsonl"
        ids = {json.loads(line)["task_id"] for line in results.open()}
        evaluated.append(prompts(out / "tasks" / f"test-seed{seed}" / "eval.jsonl", ids))
    assert evaluated[0] != evaluated[1] and not (evaluated[0] | evaluated[1]) & train
    # what the run reported before is kept
    written = json.loads((out / "summary.json").read_text())
    assert written["comparison"] == {"kept": True} and written["grpo_steps"] == 3 and "test" in written

    # evaluated once: a second --test reads the results back and evaluates nothing
    again = run_recipe(recipe, out, resume=True, test=True, backend=backend)
    assert backend.evaluated == ["sft-only", "grpo", "sft-only", "grpo"]
    assert json.dumps(again["test"], sort_keys=True) == json.dumps(
        summary["test"], sort_keys=True
    )  # NaN != NaN


@pytest.mark.parametrize(
    ("test_sets", "message"),
    [
        ([{"seed": 1, "n": 5}], "synth seed"),
        ([{"seed": 3}, {"seed": 3}], "repeats a seed"),
        ([{"seed": 3, "n": 0}], "positive integers"),
        ({"seed": 3}, "list of"),
    ],
)
def test_a_test_set_must_come_from_an_unseen_seed(test_sets, message):
    with pytest.raises(RecipeError, match=message):
        recipe_from_dict({**RECIPE, "eval": {"test_sets": test_sets}})


def test_kind_diagnostics_per_kind_share_reward_and_zero_variance_groups():
    from toolkit.train.diagnostics import kind_diagnostics

    kinds = ["lookup"] * 4 + ["chain"] * 2
    rewards = [1.0, 0.0, 0.5, 0.5, 0.25, float("nan")]  # groups of 2: varied, tied, one unscorable
    out = kind_diagnostics(kinds, rewards, group_size=2)
    assert out["kinds/lookup/share"] == pytest.approx(4 / 6)
    assert out["kinds/lookup/reward_mean"] == pytest.approx(0.5)
    assert out["kinds/lookup/zero_std_share"] == 0.5
    assert out["kinds/chain/reward_mean"] == 0.25  # the NaN is left out, as TRL leaves it out
    assert out["kinds/chain/zero_std_share"] == 1.0  # one scored episode: no spread, no gradient
    with pytest.raises(ValueError, match="groups of 4"):
        kind_diagnostics(kinds, rewards, group_size=4)


def test_weighted_rewards_match_trl_sum_and_mark_unscorable_rows():
    import torch

    from toolkit.train.diagnostics import weighted_rewards

    per_func = torch.tensor([[1.0, 0.5], [float("nan"), 1.0], [float("nan"), float("nan")]])
    totals = weighted_rewards(per_func, torch.tensor([1.0, 0.5]))
    assert totals[:2] == [1.25, 0.5] and math.isnan(totals[2])


def test_answer_correct_share_grades_the_final_answer(tmp_path):
    from toolkit.agent.loop import RolloutConfig, rollout
    from toolkit.train.diagnostics import answer_correct_share
    from toolkit.train.task_sources import read_tasks, synthesize_tasks

    train, _ = synthesize_tasks({"preset": "cpu", "n": 10, "n_eval": 2, "seed": 5}, tmp_path)
    tasks = read_tasks(train, "train")[:6]
    assert any(i.category == "answer_correctness" and i.essential for t in tasks for i in t.rubric)
    config = RolloutConfig(max_turns=3, max_new_tokens=64)
    assert answer_correct_share(tasks, rollout(tasks, GoldPolicy(), config)) == 1.0
    assert answer_correct_share(tasks, rollout(tasks, ScriptedPolicy(turns("I cannot tell.")), config)) == 0.0
    assert answer_correct_share([], []) is None


def test_publish_keeps_the_record_and_draws_the_figures(tmp_path):
    from toolkit.train.pipeline import run_recipe
    from toolkit.train.publish import publish_run

    recipe = recipe_from_dict({**RECIPE, "sft": {"max_steps": 1}})
    out = _finished_run(tmp_path)
    (out / "summary.json").unlink()
    run_recipe(recipe, out, resume=True, evaluate=True, test=True, curve=True, backend=GoldVsSilent())
    steps = [
        {"step": s, "phase": "grpo", "reward": 0.1 * s, "episodes/answer_correct": 0.05 * s,
         f"kinds/{'lookup' if s % 2 else 'chain'}/reward_mean": 0.1 * s,
         f"kinds/{'lookup' if s % 2 else 'chain'}/zero_std_share": 0.5}
        for s in range(1, 7)
    ]  # fmt: skip
    (out / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in steps))

    dest = tmp_path / "docs" / "cpu-proof"
    written = {p.name for p in publish_run(out, dest)}
    assert {"summary.json", "recipe.json", "metrics.jsonl"} <= written
    figures = (
        "before_after",
        "training_curves",
        "kind_diagnostics",
        "before_after_test_seed11",
        "learning_curve",
    )
    for figure in figures:
        assert {f"{figure}.png", f"{figure}.svg"} <= written, figure
    assert json.loads((dest / "summary.json").read_text())["test"]["12"]["n_tasks"] == 4

    (out / "metrics.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="metrics.jsonl"):
        publish_run(out, dest)


def test_learning_curve_figure_needs_two_points(tmp_path):
    from toolkit.eval.plots import plot_learning_curve

    def point(step, after):
        diff = after - 0.1
        return {
            "step": step,
            "metrics": {
                "pass@0.75": {
                    "before": 0.1,
                    "after": after,
                    "diff": diff,
                    "ci_low": diff - 0.05,
                    "ci_high": diff + 0.05,
                }
            },
        }

    written = plot_learning_curve([point(10, 0.15), point(0, 0.1), point(20, 0.2)], tmp_path)
    assert {p.name for p in written} == {"learning_curve.png", "learning_curve.svg"}
    with pytest.raises(ValueError, match="step 0 and at least one GRPO step"):
        plot_learning_curve([point(0, 0.1)], tmp_path)


def test_a_pair_of_adapters_on_a_fresh_seed_is_evaluated_as_the_test_sets_are(tmp_path):
    """What notebook 05 does with the shipped adapters: the recipe's test-set synthesis from another seed
    and its evaluation loop, through ``evaluate_pair``."""
    from toolkit.train.pipeline import evaluate_pair
    from toolkit.train.task_sources import held_out_set, test_sets

    recipe = recipe_from_dict({**RECIPE, "sft": {"max_steps": 1}})

    class SilentThenGold(GoldVsSilent):
        def eval_policy(self, adapter, label):
            self.evaluated.append(label)
            return GoldPolicy() if label == "after" else ScriptedPolicy(turns("I cannot tell."), name=label)

    out = tmp_path / "shipped"
    tasks = held_out_set(recipe, 2028, 5, out)
    assert len(tasks) == 5 and (out / "tasks" / "test-seed2028" / "eval.jsonl").exists()
    train = {row["prompt"] for row in map(json.loads, (out / "tasks" / "train.jsonl").open())}
    assert not {t.prompt for t in tasks} & train
    assert {t.prompt for t in tasks} != {t.prompt for t in test_sets(recipe, tmp_path / "run")[0][1]}

    backend = SilentThenGold()
    comparison = evaluate_pair(recipe, out / "a", out / "b", tasks, out / "eval", backend=backend)
    assert comparison["pass@0.75"]["before"] == 0.0 and comparison["pass@0.75"]["after"] == 1.0
    assert backend.evaluated == ["before", "after"]
    loop = json.loads((out / "eval" / "after" / "results.json").read_text())["config"]["loop_config"]
    assert loop["temperature"] == 0.0 and loop["max_turns"] == 3  # greedy, the recipe's rollout
    evaluate_pair(recipe, out / "a", out / "b", tasks, out / "eval", backend=backend)
    assert backend.evaluated == ["before", "after"]  # evaluated once
