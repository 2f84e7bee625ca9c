"""bench.kept_group_advantage: advantages within kept groups only, split at the gold call count."""

from __future__ import annotations

import pytest

from bench.kept_group_advantage import main, over_gold_advantage


def row(score, calls, kept=True, task="t", step=0):
    return {
        "kept": kept,
        "step": step,
        "round": 0,
        "task_id": task,
        "n_calls": calls,
        "n_gold": 1,
        "outcome": score,
    }


def test_extra_calls_are_read_against_their_own_group_and_dropped_groups_are_left_out():
    rows = [row(0.85, 2), row(0.40, 1), row(0.40, 1), row(0.55, 1)]  # the rescued retry beats the group
    rows += [row(0.10, 3, task="u"), row(1.0, 1, task="u")]  # a call to the cap loses to a right first call
    rows += [row(1.0, 3, kept=False, task="v"), row(0.0, 1, kept=False, task="v")]  # dropped: not counted
    r = over_gold_advantage(rows)
    assert r["kept_groups"] == 2 and r["over_gold"] == 2 and r["over_gold_positive"] == 1
    assert r["over_gold_mean_advantage"] == pytest.approx(((0.85 - 0.55) + (0.10 - 0.55)) / 2)
    assert r["others"] == 4


def test_reads_gzipped_records(tmp_path, capsys):
    import gzip
    import json

    path = tmp_path / "s.jsonl.gz"
    path.write_bytes(
        gzip.compress("".join(json.dumps(r) + "\n" for r in [row(0.85, 2), row(0.4, 1)]).encode())
    )
    main([str(path)])
    assert "over the gold count 1 (advantage > 0 in 1)" in capsys.readouterr().out


def test_an_empty_file_names_itself(tmp_path):
    empty = tmp_path / "s.jsonl"
    empty.write_text("")
    with pytest.raises(SystemExit, match="s.jsonl: empty"):
        main([str(empty)])
