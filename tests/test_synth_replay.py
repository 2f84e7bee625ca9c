"""Replay in one shared episode (state reset per task) gives exactly the verdicts of one episode per
task: the same kept tasks, the same drop reasons and details, and no state carried from task to task."""

from __future__ import annotations

import copy

import pytest

from toolkit.synth.config import make_config
from toolkit.synth.generate import default_env, generate
from toolkit.synth.replay import validate_tasks_in_one_episode_sync, validate_tasks_sync


@pytest.fixture(scope="module")
def env():
    return default_env()


def test_shared_and_per_task_replay_generate_the_same_files(env):
    for preset in ("default", "long"):
        config = make_config(preset, n_train=30, n_eval=6, seed=8)
        a = generate(config, env=env, shared_episode=True)
        b = generate(config, env=env, shared_episode=False)
        assert [t.to_dict() for t in a.train + a.eval] == [t.to_dict() for t in b.train + b.eval]
        assert a.summary == b.summary


def _task(env, template_id: str, k: int = 0):
    """A task and its recompute, built straight from a template (as generate does)."""
    import random

    from toolkit.synth.generate import draft_to_task
    from toolkit.synth.templates import Ctx, all_templates

    world_fn, specs, _ = env
    tpl = all_templates()[template_id]
    rng = random.Random(f"replay-test/{template_id}/{k}")
    ctx = Ctx(world=world_fn(3), rng=rng, world_seed=3, tools=frozenset(specs))
    draft = tpl.build(ctx)
    draft.world_seed, draft.phrasing = 3, ctx.phrasing
    return draft_to_task(draft, "train", rng, specs, make_config("default"), short=False), draft.recompute


def test_same_verdicts_on_broken_and_repeated_tasks(env):
    world_fn, _, open_episode = env
    create, create_fn = _task(env, "crm_create_contact")
    read, read_fn = _task(env, "hd_ticket_field")
    bad_args = copy.deepcopy(read)
    bad_args.gold[0].arguments = {"ticket_id": "t-0000"}
    bad_answer = copy.deepcopy(read)
    bad_answer.answers = {k: "not the answer" for k in bad_answer.answers}
    # The same create task three times: state left over from one replay would change the next one's
    # new id (the state check names the id a fresh world gives).
    batch = [create, create, bad_args, read, bad_answer, create]
    recomputes = [create_fn, create_fn, read_fn, read_fn, read_fn, create_fn]
    per_task = validate_tasks_sync(batch, open_episode, recomputes=recomputes)
    shared = validate_tasks_in_one_episode_sync(batch, world_fn, recomputes=recomputes)
    assert shared == per_task
    ok, drops, details = shared
    assert ok == [True, True, False, True, False, True]
    assert drops == {"call_failed": 1, "answer_mismatch": 1}, details
