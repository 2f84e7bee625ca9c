"""The marketplace, retail, food delivery, travel and maps templates: each builds over several world
seeds, its gold replays through MCP (calls succeed, answers recomputed from the replay match, writes
show in the state diff), and the gold trajectory gets full marks from every programmatic reward."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from toolkit.synth.config import make_config
from toolkit.synth.generate import default_env, draft_to_task
from toolkit.synth.replay import validate_tasks_sync
from toolkit.synth.templates import Ctx, Skip, all_templates

SERVERS = {"marketplace", "retail_chain", "food_delivery", "travel_booking", "maps"}
SEEDS = (0, 1, 2, 3, 7)
REWARDS = ["rubric", "atlas", "prove", "graduated", "toolrl"]


def ours():
    return {tid: t for tid, t in sorted(all_templates().items()) if set(t.servers) & SERVERS}


@pytest.fixture(scope="module")
def built():
    """One task per (template, seed) where the world supports it, with its recompute function."""
    world_fn, specs, _ = default_env()
    config = make_config("default")
    out = []
    for tid, tpl in ours().items():
        for seed in SEEDS:
            for k in range(12):
                rng = random.Random(f"test20b/{tid}/{seed}/{k}")
                split = "eval" if k % 2 else "train"  # both phrasing sets
                ctx = Ctx(world=world_fn(seed), rng=rng, split=split, world_seed=seed, tools=frozenset(specs))
                try:
                    draft = tpl.build(ctx)
                except Skip:
                    continue
                draft.template, draft.kind, draft.world_seed = tid, tpl.kind, seed
                draft.phrasing = draft.phrasing or ctx.phrasing
                out.append((draft_to_task(draft, split, rng, specs, config, short=False), draft))
                break
    return out


def test_each_server_has_lookup_aggregate_write_and_chain_templates():
    kinds: dict[str, set[str]] = {s: set() for s in SERVERS}
    for tpl in ours().values():
        for s in set(tpl.servers) & SERVERS:
            kinds[s].add(tpl.kind)
    for server, have in kinds.items():
        assert {"lookup", "aggregate", "write", "chain"} <= have, (server, have)


def test_templates_build_on_most_seeds(built):
    per = Counter(task.metadata["template"] for task, _ in built)
    assert set(per) == set(ours()), set(ours()) - set(per)
    thin = {tid: n for tid, n in per.items() if n < len(SEEDS) - 1}
    assert not thin, thin
    assert {task.metadata["template"] for task, _ in built if task.seed == 7} == set(ours())


def test_gold_replays_and_chains_are_multi_call(built):
    _, _, open_episode = default_env()
    tasks = [t for t, _ in built]
    ok, drops, details = validate_tasks_sync(tasks, open_episode, recomputes=[d.recompute for _, d in built])
    failed = [
        f"{tasks[i].metadata['template']}@{tasks[i].seed}: {details[i]}"
        for i, good in enumerate(ok)
        if not good
    ]
    assert not failed, failed
    for task, draft in built:
        tpl = ours()[draft.template]
        assert tpl.calls[0] <= len(task.gold) <= tpl.calls[1], draft.template
        if draft.kind == "chain":
            assert len(task.gold) >= 2 and any(g.depends_on for g in task.gold)
        if draft.kind == "write":
            assert any(r.check.get("type") == "state" for r in task.rubric)


@pytest.mark.integration
def test_gold_gets_full_marks_from_every_reward(built):
    from toolkit.rewards import get_reward
    from toolkit.rewards.replay import replay_gold

    rewards = [get_reward(n) for n in REWARDS]
    for task, draft in built:
        traj = replay_gold(task)
        assert all(c.ok for c in traj.calls), (draft.template, [c.error for c in traj.calls])
        for r in rewards:
            res = r(task, traj)
            assert res.score == pytest.approx(r.range[1]), (draft.template, task.seed, r.name, res.breakdown)


def test_a_wrong_write_fails_replay(built):
    """The replay is not a rubber stamp: a write task whose gold is swapped for a read fails it."""
    _, _, open_episode = default_env()
    task, draft = next((t, d) for t, d in built if d.kind == "write")
    broken = task.__class__(**{**task.__dict__, "gold": []})
    ok, drops, _ = validate_tasks_sync([broken], open_episode, recomputes=[draft.recompute])
    assert ok == [False] and drops == Counter({"state_mismatch": 1})
