"""Templates of the social_media, iot_devices, vehicle, issue_tracker and video_meeting servers: over
several world seeds every one builds drafts that replay-validate through MCP, and the gold policy gets
full marks from every programmatic reward."""

from __future__ import annotations

import random

import pytest

from toolkit.rewards import get_reward
from toolkit.rewards.replay import replay_gold
from toolkit.synth.config import make_config
from toolkit.synth.generate import default_env, draft_to_task
from toolkit.synth.replay import validate_tasks_sync
from toolkit.synth.templates import Ctx, Skip, all_templates

NEW = {"social_media", "iot_devices", "vehicle", "issue_tracker", "video_meeting"}
SEEDS = [0, 3, 7, 11]
REWARDS = ["rubric", "atlas", "prove", "graduated", "toolrl"]
KINDS = {"lookup", "aggregate", "write", "chain"}


def ours() -> dict:
    return {tid: t for tid, t in all_templates().items() if NEW & set(t.servers)}


@pytest.fixture(scope="module")
def built():
    world_fn, specs, _ = env = default_env()
    config = make_config("default")
    tasks, recomputes = [], []
    for tid, tpl in sorted(ours().items()):
        for seed in SEEDS:
            for k in range(8):  # a few attempts per seed: a template may skip a sample (ties, nothing fits)
                rng = random.Random(f"test20c/{tid}/{seed}/{k}")
                ctx = Ctx(world=world_fn(seed), rng=rng, world_seed=seed, tools=frozenset(specs))
                try:
                    draft = tpl.build(ctx)
                except Skip:
                    continue
                draft.template, draft.kind, draft.world_seed = tid, tpl.kind, seed
                draft.phrasing = draft.phrasing or ctx.phrasing
                assert tpl.calls[0] <= draft.chain_length <= tpl.calls[1], tid
                tasks.append(draft_to_task(draft, "train", rng, specs, config, short=False))
                recomputes.append(draft.recompute)
                break
    return env, tasks, recomputes


def test_every_new_server_has_a_lookup_aggregate_write_and_chain():
    for server in NEW:
        kinds = {t.kind for t in ours().values() if server in t.servers}
        assert KINDS <= kinds, (server, kinds)


def test_new_templates_build_on_every_seed_and_replay_validate(built):
    (_, _, open_episode), tasks, recomputes = built
    per_template: dict[str, set[int]] = {}
    for t in tasks:
        per_template.setdefault(t.metadata["template"], set()).add(t.seed)
    assert set(per_template) == set(ours())
    thin = {tid: seeds for tid, seeds in per_template.items() if len(seeds) < len(SEEDS) - 1}
    assert not thin, f"templates that build on too few seeds: {thin}"
    ok, drops, details = validate_tasks_sync(tasks, open_episode, recomputes=recomputes)
    failed = [
        f"{tasks[i].metadata['template']}@{tasks[i].seed}: {details[i]}"
        for i, good in enumerate(ok)
        if not good
    ]
    assert not failed, failed
    writes = [t for t in tasks if t.metadata["kind"] == "write"]
    assert writes and all(any(r.check["type"] == "state" for r in t.rubric) for t in writes)


@pytest.mark.integration
def test_gold_gets_full_marks_from_every_reward(built):
    _, tasks, _ = built
    rewards = [get_reward(n) for n in REWARDS]
    for task in tasks:
        traj = replay_gold(task)
        assert all(c.ok for c in traj.calls), (task.metadata["template"], [c.error for c in traj.calls])
        for r in rewards:
            res = r(task, traj)
            assert res.score == pytest.approx(r.range[1]), (task.metadata["template"], r.name, res.breakdown)
