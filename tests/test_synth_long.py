"""The `long` preset: Scale-like tasks of 8-15 calls over 3+ servers, with paging, date windows, whole
distractor servers and 10+ rubric items in all four categories; replay-validated, and the gold
policy gets full marks from every programmatic reward."""

from __future__ import annotations

import re

import pytest

from toolkit.records import RUBRIC_CATEGORIES
from toolkit.synth.config import make_config
from toolkit.synth.generate import default_env, generate
from toolkit.synth.templates import all_templates

REWARDS = ["rubric", "atlas", "prove", "graduated", "toolrl"]


@pytest.fixture(scope="module")
def env():
    return default_env()


@pytest.fixture(scope="module")
def long_tasks(env):
    res = generate(make_config("long", n_train=15, n_eval=4, seed=2), env=env)
    assert len(res.train) == 15 and len(res.eval) == 4, res.summary["splits"]
    long_ids = {tid for tid, t in all_templates().items() if t.kind == "long"}
    assert {t.metadata["template"] for t in res.train} == long_ids
    return res


def test_long_tasks_have_scale_shape(long_tasks, env):
    _, specs, _ = env
    for task in long_tasks.train + long_tasks.eval:
        assert 8 <= len(task.gold) <= 15, (task.id, len(task.gold))
        needed = set(task.metadata["needed_servers"])
        assert len(needed) >= 3, task.id
        # paging: a list read with the cursor its first page returned
        assert any("cursor" in g.arguments for g in task.gold), task.id
        # a date window in the request (YYYY-MM-DD .. YYYY-MM-DD)
        assert len(re.findall(r"\d{4}-\d\d-\d\d", task.prompt)) >= 2, task.prompt
        assert len(task.prompt.splitlines()) >= 4  # a multi-part request
        # at least two whole servers enabled that the task does not need
        whole = [
            s
            for s in set(task.servers) - needed
            if {t for t, spec in specs.items() if spec.server == s} <= set(task.tools)
        ]
        assert len(whole) >= 2, (task.id, task.servers, needed)
        assert len(task.rubric) >= 10
        assert {r.category for r in task.rubric} == set(RUBRIC_CATEGORIES)
        assert any(r.check["type"] == "state" for r in task.rubric)  # the closing write
    assert all(t.metadata["held_out"] for t in long_tasks.eval)


def test_other_presets_draw_no_long_tasks(env):
    res = generate(make_config("hard", n_train=30, n_eval=0, seed=2), env=env)
    assert all(t.metadata["kind"] != "long" for t in res.train)


@pytest.mark.integration
def test_gold_gets_full_marks_from_every_reward_on_long_tasks(long_tasks):
    from toolkit.rewards import get_reward
    from toolkit.rewards.replay import replay_gold

    rewards = [get_reward(n) for n in REWARDS]
    for task in long_tasks.train + long_tasks.eval:
        traj = replay_gold(task)
        assert all(c.ok for c in traj.calls), (task.id, [c.error for c in traj.calls])
        for r in rewards:
            res = r(task, traj)
            assert res.score == pytest.approx(r.range[1]), (task.id, r.name, res.breakdown, res.details)
