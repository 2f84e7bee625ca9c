"""The banking, trading, payments and budget templates: each builds over several world seeds, every
draft replay-validates through MCP, and the gold policy gets full marks from every reward."""

from __future__ import annotations

import random

import pytest

from toolkit.rewards import get_reward
from toolkit.rewards.replay import replay_gold
from toolkit.synth.config import make_config
from toolkit.synth.generate import default_env, draft_to_task
from toolkit.synth.replay import validate_tasks_sync
from toolkit.synth.templates import Ctx, Skip, all_templates

SERVERS = {"banking", "trading", "payments", "budget"}
WORLD_SEEDS = (0, 7, 1003)
REWARDS = ["rubric", "atlas", "prove", "graduated", "toolrl"]


def ours():
    return {tid: t for tid, t in sorted(all_templates().items()) if SERVERS & set(t.servers)}


@pytest.fixture(scope="module")
def built():
    world_fn, specs, open_episode = default_env()
    config = make_config("default")
    tasks, recomputes = [], []
    for tid, tpl in ours().items():
        for seed in WORLD_SEEDS:
            made = 0
            for k in range(30):
                rng = random.Random(f"test20a/{tid}/{seed}/{k}")
                ctx = Ctx(world=world_fn(seed), rng=rng, split="eval" if tpl.eval_only else "train",
                          world_seed=seed, tools=frozenset(specs))  # fmt: skip
                try:
                    draft = tpl.build(ctx)
                except Skip:
                    continue
                draft.template, draft.kind, draft.world_seed = tid, tpl.kind, seed
                draft.phrasing = draft.phrasing or ctx.phrasing
                assert tpl.calls[0] <= draft.chain_length <= tpl.calls[1], tid
                tasks.append(draft_to_task(draft, "train", rng, specs, config, short=False))
                recomputes.append(draft.recompute)
                made += 1
                if made == 2:
                    break
    return tasks, recomputes, open_episode


def test_every_server_has_a_lookup_an_aggregate_a_write_and_a_chain():
    kinds: dict[str, set[str]] = {s: set() for s in SERVERS}
    for t in ours().values():
        for s in SERVERS & set(t.servers):
            kinds[s].add(t.kind)
            if t.calls[0] >= 2:
                kinds[s].add("2+ calls")
    for server, got in kinds.items():
        assert {"lookup", "aggregate", "write", "2+ calls"} <= got, (server, got)


def test_every_template_builds_on_every_seed_and_replays(built):
    tasks, recomputes, open_episode = built
    per = {(t.metadata["template"], t.seed) for t in tasks}
    assert per == {(tid, s) for tid in ours() for s in WORLD_SEEDS}, "a template failed to build on a seed"
    ok, drops, details = validate_tasks_sync(tasks, open_episode, recomputes=recomputes)
    failed = [
        f"{tasks[i].metadata['template']}@{tasks[i].seed}: {details[i]}" for i, g in enumerate(ok) if not g
    ]
    assert not failed, failed
    paged = [t for t in tasks if any(c.arguments.get("cursor") for c in t.gold)]
    assert paged, "no draft reads a second page"
    writes = [t for t in tasks if t.metadata["kind"] == "write"]
    assert writes and all(any(i.check.get("type") == "state" for i in t.rubric) for t in writes)


def test_gold_policy_gets_full_marks_from_every_reward(built):
    tasks, _, _ = built
    rewards = [get_reward(n) for n in REWARDS]
    for task in tasks:
        traj = replay_gold(task)
        assert all(c.ok for c in traj.calls), (task.metadata["template"], [c.error for c in traj.calls])
        for r in rewards:
            res = r(task, traj)
            assert res.score == pytest.approx(r.range[1]), (task.metadata["template"], r.name, res.breakdown)
