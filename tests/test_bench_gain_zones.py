"""``python -m bench.gain_zones``: the warm start's tasks split by greedy / sampled-only / never passing,
and GRPO's gains and losses counted in each zone."""

from __future__ import annotations

import json

import pytest

from bench.gain_zones import main, reach_table, read_rows, zone_table
from toolkit.eval.sampling import sample_scores


def rows(pairs):
    return [
        {"task_id": tid, "category": kind, "score": score, "answer_failed": False}
        for tid, kind, score in pairs
    ]


BEFORE = rows([("a", "lookup", 1.0), ("b", "lookup", 0.5), ("c", "write", 0.0), ("d", "write", 0.0)])
AFTER = rows([("a", "lookup", 0.5), ("b", "lookup", 1.0), ("c", "write", 0.0), ("d", "write", 0.75)])
SAMPLES = rows(
    [("a", "", 1.0), ("a", "", 0.0), ("b", "", 0.0), ("b", "", 0.8), ("c", "", 0.7), ("c", "", 0.0)]
    + [("d", "", 0.0), ("d", "", 0.5)]
)


def test_tasks_fall_in_one_zone_each_and_gains_and_losses_are_counted_per_zone():
    table = zone_table(BEFORE, AFTER, SAMPLES)
    assert table["all"] == {
        "tasks": 4,
        "greedy-pass": 1,  # a
        "sampled-only": 1,  # b: one sample reached 0.75
        "never": 2,  # c (0.7 is below 0.75), d
        "after: pass": 2,
        "greedy-pass: lost": 1,  # a
        "sampled-only: gained": 1,  # b
        "never: gained": 1,  # d
    }
    assert table["write"]["never"] == 2 and table["lookup"]["tasks"] == 2


def test_missing_samples_and_bad_files_name_themselves(tmp_path):
    with pytest.raises(SystemExit, match="task d: no sampled episodes"):
        zone_table(BEFORE, AFTER, SAMPLES[:-2])
    bad = tmp_path / "r.jsonl"
    bad.write_text('{"task_id": "a", "score": 1, "answer_failed": false}\n{"task_id": "b"}\n')
    with pytest.raises(SystemExit, match=r"r.jsonl, line 2: not a result row"):
        read_rows(bad)
    bad.write_text("")
    with pytest.raises(SystemExit, match="no rows"):
        read_rows(bad)


def test_the_table_command_prints_every_kind_and_the_total_last(tmp_path, capsys):
    paths = []
    for name, data in (("before", BEFORE), ("after", AFTER), ("samples", SAMPLES)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in data))
        paths.append(str(path))
    main(["table", *paths])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| kind | tasks | greedy-pass | sampled-only | never |")
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| lookup", "| write", "| all"]
    assert lines[-1] == "| all | 4 | 1 | 1 | 2 | 1 | 1 | 1 | 2 |"
    after_samples = tmp_path / "after_samples.jsonl"
    after_samples.write_text(json.dumps({"task_id": "d", "score": 0.9, "answer_failed": False}) + "\n")
    main(["table", *paths, "--after-samples", str(after_samples)])
    out = capsys.readouterr().out
    assert "Some sampled episode passes (reach):" in out
    assert out.splitlines()[-1] == "| all | 4 | 2 | 1 | 1 | 2 |"


def test_reach_counts_the_tasks_some_sample_passes_before_and_after():
    after_samples = rows([("a", "", 0.0), ("b", "", 1.0), ("c", "", 0.0), ("d", "", 0.9)])
    table = reach_table(BEFORE, SAMPLES, after_samples)
    assert table["all"] == {
        "tasks": 4,
        "reached before": 2,  # a, b
        "reached after": 2,  # b, d
        "newly reached": 1,  # d
        "no longer reached": 1,  # a
    }


def test_a_failed_answer_item_is_no_pass_and_rows_without_verdicts_need_legacy_grading(tmp_path):
    """pass@0.75 as the evaluation counts it since issue 48: a full score with a failed answer item (a
    hedge, a pasted output) is no pass; files written before the answer check are refused unless asked."""
    item = {"id": "r1", "essential": True, "check": "answer", "passed": False, "verdict": "fail"}
    result = {"task_id": "a", "category": "lookup", "score": 0.75, "rubric": [item]}
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(result) + "\n")
    (row,) = read_rows(path)
    assert row["answer_failed"] is True
    sampled = [{**row, "answer_failed": False}]
    assert zone_table([row], [row], sampled)["all"]["sampled-only"] == 1  # the greedy one failed its answer
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({"task_id": "a", "score": 1.0}) + "\n")
    with pytest.raises(SystemExit, match=r"old.jsonl, line 1: no answer verdicts.*--legacy-grading"):
        read_rows(old)
    assert "answer_failed" not in read_rows(old, legacy_grading=True)[0]


def test_sampled_episodes_are_sample_rows_the_claim_reads(tmp_path):
    """``sample``'s rows (here the gold policy's, twice per task) are ``SampleRow`` records: written with
    write_jsonl, they read back as the claim's sampled pass metric reads them."""
    from toolkit.agent.loop import RolloutConfig
    from toolkit.agent.policies import GoldPolicy
    from toolkit.paths import DATA_DIR
    from toolkit.records import SampleRow, Task, read_jsonl, write_jsonl

    tasks = read_jsonl(DATA_DIR / "tasks" / "eval.jsonl", Task)[:2]
    rows = sample_scores(tasks, GoldPolicy(), RolloutConfig(), 2)
    assert [r.task_id for r in rows] == [t.id for t in tasks for _ in range(2)]
    assert all(isinstance(r, SampleRow) and r.score == 1.0 and r.answer_failed is False for r in rows)
    path = tmp_path / "samples.jsonl"
    write_jsonl(path, rows)
    assert read_jsonl(path, SampleRow) == rows
    assert all(row["answer_failed"] is False for row in read_rows(path))  # and the table reads them


class DeadPolicy:
    """A served policy whose endpoint went away: every request comes back with an error."""

    name, tokenizer = "dead", None

    async def generate(self, requests):
        from toolkit.agent.policies import Generation

        return [Generation(error="Connection error: refused") for _ in requests]


def test_sampling_shows_progress_and_a_dead_policy_is_an_error_not_a_table_of_zeros(capsys):
    """800 sampled episodes run for minutes: a progress line on stderr; when most episodes fail on the
    policy's backend, ``sample_scores`` raises instead of scoring them 0 (nothing silent)."""
    from toolkit.agent.loop import RolloutConfig
    from toolkit.agent.policies import GoldPolicy
    from toolkit.eval.watch import EndpointDown
    from toolkit.paths import DATA_DIR
    from toolkit.records import Task, read_jsonl

    tasks = read_jsonl(DATA_DIR / "tasks" / "eval.jsonl", Task)[:2]
    sample_scores(tasks, GoldPolicy(), RolloutConfig(), 2)
    assert "[sampled] 4/4 episodes" in capsys.readouterr().err
    with pytest.raises(
        EndpointDown, match=r"4 of 4 episodes failed on the policy endpoint: Connection error"
    ):
        sample_scores(tasks, DeadPolicy(), RolloutConfig(), 2)
