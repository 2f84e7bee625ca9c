"""The offline re-scoring of a rollout log (``mcp-rl rescore``, ``toolkit.study.rescore``) on a small log
written here in the trainer's own format (``toolkit.records.RolloutRecord``): scripted episodes of one real
held-out lookup and one write task (data/tasks/eval.jsonl), every call executed in a fresh environment
(``toolkit.study.drift``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from toolkit.records import RecordError, RolloutRecord, Task, read_jsonl, write_jsonl
from toolkit.rewards import get_reward
from toolkit.study.drift import drift_episodes, old_reward

EVAL = Path(__file__).resolve().parents[1] / "data" / "tasks" / "eval.jsonl"
TASK_IDS = {"lookup": "eval-s0-00002", "write": "eval-s0-00020"}  # as in tests/test_rewards_outcome.py


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    by_id = {t.id: t for t in read_jsonl(EVAL, Task)}
    picked = {kind: by_id[i] for kind, i in TASK_IDS.items()}
    assert {k: t.metadata["kind"] for k, t in picked.items()} == {k: k for k in picked}
    return picked


@pytest.fixture(scope="module")
def episodes(tasks):
    """kind -> scenario name -> executed trajectory."""
    return {kind: drift_episodes(task, max_turns=3) for kind, task in tasks.items()}


def _write_log(path, tasks, episodes):
    records = []
    for step, kind in enumerate(["lookup", "write"], start=1):
        for name in ("right+short", "right+redundant", "to the cap", "retry right"):
            traj = episodes[kind][name]
            traj_logged = type(traj).from_dict(traj.to_dict())
            records.append(RolloutRecord.from_trajectory(step, traj_logged))
    write_jsonl(path, records)
    write_jsonl(path.with_name("tasks.jsonl"), [tasks["lookup"], tasks["write"]])
    return path.with_name("tasks.jsonl")


def test_rescore_reads_the_trainers_log_and_orders_the_drift(tmp_path, tasks, episodes):
    from toolkit.study.rescore import rescore_rollouts

    log = tmp_path / "rollouts.jsonl"
    task_file = _write_log(log, tasks, episodes)
    out = rescore_rollouts(task_file, log, {"outcome": get_reward("outcome"), "cpu-demo": old_reward()})
    eps = out["episodes"]
    assert len(eps) == 8 and out["summary"]["groups"] == 2
    assert [e["pattern"] for e in eps[:4]] == [
        "finished short",
        "finished, extra calls",
        "turn cap",
        "retry after a failed call",
    ]
    # the write's state diff is not in the log: recovered by replaying the calls, so the write passes
    direct = get_reward("outcome")(tasks["write"], episodes["write"]["right+short"]).score
    assert eps[4]["outcome"] == pytest.approx(direct) == pytest.approx(1.0)
    patterns = out["summary"]["patterns"]
    assert patterns["finished short"]["outcome"] > patterns["finished, extra calls"]["outcome"]
    assert patterns["finished, extra calls"]["outcome"] > patterns["turn cap"]["outcome"]
    # without the replay the write task's state item fails
    no_replay = rescore_rollouts(task_file, log, {"outcome": get_reward("outcome")}, replay=False)
    assert no_replay["episodes"][4]["outcome"] < 1.0
    # the two rewards order some within-group pairs differently (the write's cap episode)
    assert out["summary"]["discordant"]["outcome vs cpu-demo"]["ordered differently"] >= 1


def test_rescore_command(tmp_path, tasks, episodes, capsys):
    from toolkit.cli import main

    log = tmp_path / "rollouts.jsonl"
    task_file = _write_log(log, tasks, episodes)
    scores = tmp_path / "scores.jsonl"
    code = main(["rescore", "--tasks", str(task_file), "--rollouts", str(log), "--out", str(scores)])
    assert code in (0, None)
    text = capsys.readouterr().out
    assert "8 episodes in 2 groups" in text and "| turn cap | 2 |" in text
    rows = [json.loads(line) for line in scores.read_text().splitlines()]
    assert len(rows) == 8 and all(math.isfinite(r["outcome"]) for r in rows)


def test_rescore_bad_log_names_the_line(tmp_path, tasks, episodes):
    from toolkit.study.rescore import read_rollouts, rescore_rollouts

    log = tmp_path / "rollouts.jsonl"
    _write_log(log, tasks, episodes)
    lines = log.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], '{"step": 1, "task_id": "x"}', *lines[1:]]) + "\n")
    with pytest.raises(RecordError, match=r"bad.jsonl:2: .*missing field"):
        read_rollouts(bad)
    torn = tmp_path / "torn.jsonl"  # a run killed mid-write: its last line cut short
    torn.write_text("\n".join([*lines, lines[0][:40]]) + "\n")
    assert [tr.task_id for _, tr in read_rollouts(torn)] == [tr.task_id for _, tr in read_rollouts(log)]
    torn.write_text("\n".join([lines[0][:40], *lines]) + "\n")
    with pytest.raises(RecordError, match=r"torn.jsonl:1: "):  # a cut line with records after it is no tear
        read_rollouts(torn)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(RecordError, match="empty.jsonl: no rollout records"):
        read_rollouts(empty)
    other = tmp_path / "other_tasks.jsonl"
    write_jsonl(other, [tasks["lookup"]])
    with pytest.raises(RecordError, match="unknown task id"):
        rescore_rollouts(other, log, {"outcome": get_reward("outcome")})


def test_rescore_keeps_refill_rounds_apart_and_says_what_was_kept(tmp_path, tasks, episodes):
    """The trainer logs every group dynamic sampling drew, kept for the update or not: the same task drawn
    again in a later refill round of a step is another group, and each scored episode says ``kept``."""
    from toolkit.study.rescore import rescore_rollouts

    log, task_file = tmp_path / "rollouts.jsonl", tmp_path / "tasks.jsonl"
    write_jsonl(task_file, [tasks["lookup"]])
    eps = [episodes["lookup"][name] for name in ("right+short", "to the cap")]
    write_jsonl(
        log,
        [RolloutRecord.from_trajectory(1, t, 0, False) for t in eps]
        + [RolloutRecord.from_trajectory(1, eps[0], 2, True)],
    )
    out = rescore_rollouts(task_file, log, {"outcome": get_reward("outcome")}, replay=False)
    assert [(e["round"], e["kept"]) for e in out["episodes"]] == [(0, False), (0, False), (2, True)]
    assert out["summary"]["groups"] == 2
