"""Screening GRPO's task pool with the warm start (``grpo_sampling.prescreen_samples``): which tasks are
kept, the pool file, and the pipeline's use of it (kinds of weight 0 unscreened, kind weights cut to the
kinds kept, the screen read back on resume)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolkit.records import Task, Trajectory, read_jsonl
from toolkit.train.batching import SamplingConfig
from toolkit.train.prescreen import PoolScreen, screen_pool, screened_tasks

EVAL_FILE = Path(__file__).resolve().parents[1] / "data" / "tasks" / "eval.jsonl"


def tasks_of(kinds: list[str]) -> list[Task]:
    return [
        Task(
            id=f"t{i}",
            split="train",
            servers=[],
            tools=[],
            seed=i,
            prompt=f"question {i}",
            metadata={"kind": k},
        )
        for i, k in enumerate(kinds)
    ]


def fake_sample(tasks: list[Task], n: int) -> list[Trajectory]:
    """n episodes per task, in task order; the sample index goes into the answer."""
    return [Trajectory(task_id=t.id, messages=[], final_answer=str(j)) for t in tasks for j in range(n)]


def scores_by_task(table: dict[str, list[float]]):
    def score(tasks: list[Task], trajs: list[Trajectory]) -> list[float]:
        assert [t.id for t in tasks] == [tr.task_id for tr in trajs]  # episodes lined up with their tasks
        return [table[t.id][int(tr.final_answer)] for t, tr in zip(tasks, trajs, strict=True)]

    return score


def test_the_screen_keeps_the_tasks_whose_samples_differ_and_says_so_per_kind(tmp_path):
    tasks = tasks_of(["lookup", "lookup", "write", "aggregate"])
    table = {
        "t0": [0.45, 0.0, 0.0, 0.0],  # one right in four: kept
        "t1": [0.45] * 4,  # always right: flat
        "t2": [0.0, 0.02, 0.0, 0.0],  # differs, but below min_spread
        "t3": [float("nan"), 0.0, 0.45, 0.0],  # an unscorable episode is left out of the spread
    }
    screen = screen_pool(tasks, fake_sample, scores_by_task(table), samples=4, min_spread=0.05)
    assert screen.kept_ids() == {"t0", "t3"}
    rows = {r.task_id: r for r in screen.rows}
    assert rows["t1"].spread == 0.0 and rows["t1"].mean == 0.45
    assert rows["t3"].mean == pytest.approx(0.15)
    assert screen.summary() == {
        "screened": 4,
        "kept": 2,
        "by_kind": {
            "aggregate": {"screened": 1, "kept": 1},
            "lookup": {"screened": 2, "kept": 1},
            "write": {"screened": 1, "kept": 0},
        },
    }
    assert [t.id for t in screened_tasks(tasks, screen)] == ["t0", "t3"]
    path = tmp_path / "pool.jsonl"
    screen.write(path)
    assert PoolScreen.read(path).rows == screen.rows


def test_a_screen_that_keeps_nothing_or_a_bad_pool_file_is_a_clear_error(tmp_path):
    tasks = tasks_of(["lookup", "write"])
    flat = screen_pool(
        tasks, fake_sample, scores_by_task({"t0": [1.0] * 3, "t1": [0.0] * 3}), samples=3, min_spread=0.05
    )
    with pytest.raises(ValueError, match="kept none of 2 tasks"):
        screened_tasks(tasks, flat)
    with pytest.raises(ValueError, match="at least 2 samples"):
        screen_pool(tasks, fake_sample, scores_by_task({}), samples=1, min_spread=0.05)
    bad = tmp_path / "pool.jsonl"
    bad.write_text('{"task_id": "t0", "kept": true}\n{"task_id": "t1"}\n')
    with pytest.raises(ValueError, match=r"pool.jsonl:2: not a valid PoolRow record: .*missing.*\['kept'\]"):
        PoolScreen.read(bad)
    bad.write_text('{"task_id": "t0", "kept": true}\n{"task_id": "t1", "kep\n')  # cut short by a kill
    with pytest.raises(ValueError, match=r"pool.jsonl:2: not a valid PoolRow record"):
        PoolScreen.read(bad)
    bad.write_text("\n")
    with pytest.raises(ValueError, match="no pool rows"):
        PoolScreen.read(bad)


def test_the_outcome_reward_screen_keeps_answers_that_differ_not_call_counts():
    """With the recipe's reward and ``spread_on: outcome``: a group with a right and a wrong answer is kept;
    one whose episodes differ only in a redundant call is not (the same filter as dynamic sampling)."""
    from toolkit.study.drift import drift_episodes
    from toolkit.train.batching import reward_scorer
    from toolkit.train.grpo import reward_funcs

    lookup = next(t for t in read_jsonl(EVAL_FILE, Task) if t.id == "eval-s0-00002")
    answers = Task.from_dict({**lookup.to_dict(), "id": "answers-differ"})
    calls = Task.from_dict({**lookup.to_dict(), "id": "calls-differ"})
    eps = drift_episodes(lookup, max_turns=3)
    episodes = {
        "answers-differ": [eps["right+short"], eps["wrong+short"]],
        "calls-differ": [eps["wrong+short"], eps["wrong+redundant"]],
    }

    def sample(tasks: list[Task], n: int) -> list[Trajectory]:
        return [ep for t in tasks for ep in episodes[t.id][:n]]

    score = reward_scorer(reward_funcs("outcome"), [1.0], "outcome")
    screen = screen_pool([answers, calls], sample, score, samples=2, min_spread=0.05)
    assert screen.kept_ids() == {"answers-differ"}


def test_prescreen_samples_is_checked_with_the_recipe():
    assert SamplingConfig.from_recipe({"prescreen_samples": 8, "min_spread": 0.05}).prescreen_samples == 8
    assert SamplingConfig.from_recipe({}).prescreen_samples == 0
    for bad in (1, -2, True, "8", 2.5):
        with pytest.raises(ValueError, match="prescreen_samples must be 0"):
            SamplingConfig.from_recipe({"prescreen_samples": bad, "min_spread": 0.05})
    with pytest.raises(ValueError, match="needs min_spread > 0"):
        SamplingConfig.from_recipe({"prescreen_samples": 4})


class FakeBackend:
    def __init__(self):
        self.policies: list[tuple[object, str]] = []
        self.released = 0

    def eval_policy(self, adapter, label):
        self.policies.append((adapter, label))
        return "the-warm-start"

    def release(self):
        self.released += 1


def test_the_pipeline_screens_only_sampled_kinds_cuts_the_weights_and_reads_the_screen_back(
    tmp_path, monkeypatch
):
    import toolkit.agent.loop
    from toolkit.train.config import recipe_from_dict
    from toolkit.train.stages import screened_grpo_pool

    tasks = tasks_of(["lookup", "lookup", "write", "abstain", "chain"])
    table = {"t0": [0.0, 0.45], "t1": [0.45, 0.45], "t2": [0.45, 0.0], "t4": [0.0, 0.0]}
    sampled: list[list[str]] = []

    def fake_rollout(ts, policy, loop, n=1):
        assert policy == "the-warm-start" and loop == "the-loop"
        sampled.append([t.id for t in ts])
        return fake_sample(list(ts), n)

    monkeypatch.setattr(toolkit.agent.loop, "rollout", fake_rollout)
    monkeypatch.setattr(
        "toolkit.train.batching.reward_scorer", lambda funcs, weights, component: scores_by_task(table)
    )
    weights = {"lookup": 1.0, "write": 1.0, "chain": 1.0, "abstain": 0.0}
    recipe = recipe_from_dict(
        {
            "model": "tiny-random",
            "reward": ["outcome"],
            "grpo_sampling": {"prescreen_samples": 2, "min_spread": 0.05, "kind_weights": weights},
        }
    )
    backend, warm, pool_file = FakeBackend(), tmp_path / "sft" / "adapter", tmp_path / "grpo" / "pool.jsonl"
    pool, sampling, summary = screened_grpo_pool(recipe, backend, warm, tasks, "the-loop", pool_file, False)
    assert sampled == [["t0", "t1", "t2", "t4"]]  # the abstain task (weight 0) is not screened
    assert [t.id for t in pool] == ["t0", "t2"]
    assert sampling["kind_weights"] == {"lookup": 1.0, "write": 1.0}  # chain kept no task: no weight
    assert recipe.grpo_sampling["kind_weights"] == weights  # the recipe itself is unchanged
    assert summary["kept"] == 2 and summary["screened"] == 4
    assert backend.policies == [(warm, "prescreen")] and backend.released == 1
    assert len(pool_file.read_text().splitlines()) == 4
    # resumed: the screen is read back, nothing is sampled again
    again = screened_grpo_pool(recipe, FakeBackend(), warm, tasks, "the-loop", pool_file, True)
    assert [t.id for t in again[0]] == ["t0", "t2"] and len(sampled) == 1
    # off: the pool and the section as they were
    plain = recipe_from_dict({"model": "tiny-random", "reward": ["outcome"]})
    assert screened_grpo_pool(plain, FakeBackend(), warm, tasks, "the-loop", pool_file, False) == (
        tasks,
        {},
        None,
    )
    assert json.loads(pool_file.read_text().splitlines()[0])["task_id"] == "t0"
