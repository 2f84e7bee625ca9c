"""Drills (toolkit/synth/templates/drills.py): train-only templates drawn by ``drill_share``. They
replay through MCP, join the train split only, leave the eval split byte-identical, and change
nothing when the share is 0."""

from __future__ import annotations

import random

import pytest

from toolkit.synth.config import make_config
from toolkit.synth.generate import EVAL_SERVER_COMBOS, default_env, draft_to_task, generate
from toolkit.synth.replay import validate_tasks_sync
from toolkit.synth.templates import Ctx, Skip, all_drills, all_templates, template


@pytest.fixture(scope="module")
def env():
    return default_env()


def cpu(**kw):
    return make_config("cpu", n_train=60, n_eval=20, seed=5, **kw)


def test_drills_are_kept_apart_from_the_templates():
    drills, templates = all_drills(), all_templates()
    assert drills and not set(drills) & set(templates)
    assert all(t.drill and not t.eval_only for t in drills.values())
    for t in drills.values():  # never a held-out pair of servers
        assert tuple(sorted(set(t.servers))) not in EVAL_SERVER_COMBOS


def test_every_drill_builds_and_replays(env):
    world_fn, specs, open_episode = env
    tasks, recomputes = [], []
    for tid, tpl in sorted(all_drills().items()):
        for k in range(8):
            rng = random.Random(f"drill/{tid}/{k}")
            ctx = Ctx(world=world_fn(3), rng=rng, world_seed=3, tools=frozenset(specs))
            try:
                draft = tpl.build(ctx)
            except Skip:
                continue
            draft.template, draft.kind, draft.world_seed = tid, tpl.kind, 3
            draft.phrasing = draft.phrasing or ctx.phrasing
            tasks.append(draft_to_task(draft, "train", rng, specs, make_config("cpu"), short=True))
            recomputes.append(draft.recompute)
    assert {t.metadata["template"] for t in tasks} == set(all_drills())
    ok, _, details = validate_tasks_sync(tasks, open_episode, recomputes=recomputes)
    assert all(ok), [details[i] for i, good in enumerate(ok) if not good]


def test_drills_are_added_to_the_train_split_as_drawn(env):
    plain, drilled = generate(cpu(), env=env), generate(cpu(drill_share=0.3), env=env)
    names = set(all_drills())
    drawn = [t for t in drilled.train if t.metadata["template"] in names]
    assert len(drawn) == 18 and len(drilled.train) == 60 + 18  # 0.3 per drawn task
    assert not any(t.metadata["template"] in names for t in plain.train + drilled.eval)

    def no_id(tasks):
        return [{**t.to_dict(), "id": ""} for t in tasks]

    rest = [t for t in drilled.train if t.metadata["template"] not in names]
    assert no_id(rest) == no_id(plain.train)  # the drawn tasks, in their order
    assert [t.to_dict() for t in drilled.eval] == [t.to_dict() for t in plain.eval]
    first_half = drilled.train[: len(drilled.train) // 2]  # spread through the split, not appended
    assert 7 <= sum(t.metadata["template"] in names for t in first_half) <= 11
    assert "drill_share" not in plain.summary["config"]  # a config without drills summarises as before
    assert drilled.summary["config"]["drill_share"] == 0.3


def test_interleave_spreads_the_extra_tasks_evenly():
    from toolkit.synth.generate import interleave

    assert interleave(list("abcdef"), list("XY")) == list("abcXdefY")
    assert interleave(list("ab"), []) == list("ab")


def test_drill_share_out_of_range_is_refused():
    for bad in (-0.1, 1.0):
        with pytest.raises(ValueError, match="drill_share"):
            cpu(drill_share=bad)


def test_a_drill_cannot_be_held_out():
    with pytest.raises(ValueError, match="train-only"):
        template("drill_x", "lookup", ["crm"], eval_only=True, drill=True)


def test_the_synth_command_adds_drills(tmp_path, capsys):
    from toolkit.cli import main

    args = ["synth", "--preset", "cpu", "--n", "20", "--n-eval", "5", "--no-progress"]
    assert main([*args, "--drill-share", "0.2", "--out", str(tmp_path / "ok")]) == 0
    lines = (tmp_path / "ok" / "train.jsonl").read_text().splitlines()
    assert len(lines) == 24 and sum('"template": "drill_' in line for line in lines) == 4
    capsys.readouterr()
    with pytest.raises(SystemExit) as refused:  # the command line's check: a share is a fraction
        main([*args, "--drill-share", "1.5", "--out", str(tmp_path / "bad")])
    assert refused.value.code == 2 and "--drill-share: must be between 0 and 1" in capsys.readouterr().err
    assert main([*args, "--drill-share", "1", "--out", str(tmp_path / "bad")]) != 0  # the config's: below 1
    assert "drill_share must be in [0, 1)" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
