"""bench.arm_versus: one arm against another of the same seed, paired by task, from plain or gzipped
results (the committed records keep them gzipped)."""

from __future__ import annotations

import gzip

import pytest
from result_fakes import result as fake_result

from bench.arm_versus import per_kind, versus
from toolkit.records import dumps


def result(tid: str, passed: bool, calls: int):
    return fake_result(tid, passed, answer_failed=not passed, calls=calls)


def write(root, arm, rows, packed=False):
    folder = root / arm / "dev"
    folder.mkdir(parents=True)
    text = "".join(dumps(r.to_dict()) + "\n" for r in rows)
    if packed:
        (folder / "results.jsonl.gz").write_bytes(gzip.compress(text.encode()))
    else:
        (folder / "results.jsonl").write_text(text)


def test_pairs_by_seed_and_task_from_plain_and_gzipped_results(tmp_path):
    ids = [f"t{i}" for i in range(4)]
    # seed 0: A passes t0, t1; B passes t0 only. seed 1: A passes t2; B passes t2, t3.
    write(tmp_path, "a0", [result(t, t in ("t0", "t1"), 1) for t in ids], packed=True)
    write(tmp_path, "b0", [result(t, t == "t0", 0) for t in ids])
    write(tmp_path, "a1", [result(t, t == "t2", 1) for t in ids])
    write(tmp_path, "b1", [result(t, t in ("t2", "t3"), 0) for t in ids], packed=True)
    out = versus(tmp_path, [("a0", "b0"), ("a1", "b1")])
    assert out["pass"]["diff"] == pytest.approx(0.0)  # (+1/4 - 1/4) / 2
    assert out["pass"]["n_seeds"] == 2 and out["pass"]["n_tasks"] == 4
    assert out["no_call_when_needed"]["diff"] == pytest.approx(-1.0)  # B never called, A always did
    assert out["calls_per_task"]["diff"] == pytest.approx(1.0)
    assert out["calls_under_gold"]["diff"] == pytest.approx(-1.0)  # B's 0 calls were under the gold's 1
    assert out["calls_over_gold"]["diff"] == pytest.approx(0.0)


def test_arms_on_different_tasks_are_refused(tmp_path):
    write(tmp_path, "a", [result("t0", True, 1)])
    write(tmp_path, "b", [result("t1", True, 1)])
    with pytest.raises(SystemExit, match="different dev tasks"):
        versus(tmp_path, [("a", "b")])


def test_per_kind_counts_passes_and_calls_beside_the_gold(tmp_path):
    write(tmp_path, "a", [result("t0", True, 2), result("t1", False, 0)])
    write(tmp_path, "b", [result("t0", False, 1), result("t1", False, 1)], packed=True)
    table = per_kind(tmp_path, ["a", "b"])
    assert table["lookup"]["a"] == {
        "tasks": 2,
        "passed": 1,
        "calls_per_task": 1.0,
        "gold_calls_per_task": 1.0,
    }
    assert table["lookup"]["b"]["passed"] == 0 and table["lookup"]["b"]["calls_per_task"] == 1.0
