"""``toolkit.eval.claim``: issue 49's claim from evaluations, the GRPO seeds' mean against the warm start,
paired by task, apart for in-template and held-out-template tasks, with the sampled metric and guards."""

from __future__ import annotations

import json

import numpy as np
import pytest
from result_fakes import result

from toolkit.eval.claim import compute_claim, main, seed_mean_difference, template_group
from toolkit.records import SampleRow, Task


def task(tid: str, held_out_template: bool) -> Task:
    held = ["template"] if held_out_template else ["phrasing"]
    kind = "lookup" if held_out_template else "write"
    return Task(
        id=tid,
        split="eval",
        prompt="p",
        servers=[],
        tools=[],
        seed=0,
        metadata={"held_out": held, "kind": kind},
    )


def test_template_group_reads_the_held_out_dimensions():
    assert template_group(task("a", True)) == "held_out_templates"
    assert template_group(task("a", False)) == "in_template"


def test_the_seed_mean_is_paired_by_task_and_its_interval_covers_it():
    before = np.array([0, 0, 1, 1, 0, 0, 0, 0], float)
    after = np.array([[1, 0, 1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 0, 0, 0, 0]], float)
    block = seed_mean_difference(before, after, n_boot=500)
    assert block["diff"] == pytest.approx((2 / 8 + 2 / 8) / 2)
    assert block["ci_low"] <= block["diff"] <= block["ci_high"]
    with pytest.raises(ValueError):
        seed_mean_difference(before, after[:, :3])


def build(n: int = 40):
    """Two test seeds; in-template tasks that GRPO seed 1 and 2 both gain, held-out ones nobody gains."""
    tasks, greedy, sampled = {}, {}, {}
    for t in ("test-seed9001", "test-seed9002"):
        ts = [task(f"e{i}", held_out_template=i % 2 == 1) for i in range(n)]
        tasks[t] = ts
        gain = {x.id for x in ts if template_group(x) == "in_template" and int(x.id[1:]) % 4 == 0}
        greedy[t] = {
            "warm_start": [result(x.id, False) for x in ts],
            "grpo-seed1": [result(x.id, x.id in gain) for x in ts],
            # seed 2 states the value too but also a competing one: graded, it gains nothing
            "grpo-seed2": [result(x.id, x.id in gain, answer_failed=x.id in gain) for x in ts],
        }
        sampled[t] = {
            adapter: [
                SampleRow(x.id, float(r.score), answer_failed=r.rubric[0]["verdict"] != "pass")
                for x, r in zip(ts, greedy[t][adapter], strict=True)
                for _ in range(4)
            ]
            for adapter in greedy[t]
        }
    return tasks, greedy, sampled


def test_the_claim_averages_the_seeds_splits_templates_and_grades_answers():
    tasks, greedy, sampled = build()
    claim = compute_claim(tasks, greedy, sampled, n_boot=500)
    assert claim["grpo_seeds"] == ["1", "2"] and claim["test_seeds"] == ["9001", "9002"]
    inside = claim["in_template"]["greedy"]
    # in-template: half the tasks (every 4th of 0..39 is even) gained by seed 1, none by seed 2 (its
    # answers failed the answer check): the seed mean is 0.25, not seed 1's lucky 0.5
    assert inside["diff"] == pytest.approx(0.25)
    assert claim["per_grpo_seed"] == {
        "1": {"in_template_greedy_diff": 0.5, "held_out_templates_greedy_diff": 0.0, "all_greedy_diff": 0.25},
        "2": {"in_template_greedy_diff": 0.0, "held_out_templates_greedy_diff": 0.0, "all_greedy_diff": 0.0},
    }
    assert set(inside["per_test_seed"]) == {"9001", "9002"}
    assert claim["held_out_templates"]["greedy"]["diff"] == 0.0
    assert claim["all"]["greedy"]["diff"] == pytest.approx(0.125)
    assert claim["in_template"]["sampled"]["k"] == 4
    assert claim["in_template"]["sampled"]["diff"] == pytest.approx(0.25)
    assert claim["guards"]["calls_per_task"]["diff"] == 0.0
    assert claim["per_kind"]["write"]["greedy"]["diff"] == pytest.approx(0.25)
    assert claim["per_kind"]["lookup"]["greedy"]["diff"] == 0.0
    assert claim["criteria"]["in_template_greedy_diff_at_least_0.10"] is True
    assert claim["criteria"]["in_template_greedy_ci_low_above_0"] is True


def test_calls_a_task_needs_and_calls_beyond_its_gold_are_told_apart():
    """Calls per task rises alike when a policy stops under-calling and when it calls again out of
    habit; the split says which: the gold count is 2 here, the warm start calls once."""
    tasks, greedy, _ = build(8)
    for t, ts in tasks.items():
        greedy[t]["warm_start"] = [result(x.id, False, calls=1, gold_calls=2) for x in ts]
        greedy[t]["grpo-seed1"] = [result(x.id, False, calls=2, gold_calls=2) for x in ts]  # the gold's 2
        greedy[t]["grpo-seed2"] = [result(x.id, False, calls=3, gold_calls=2) for x in ts]  # one too many
    claim = compute_claim(tasks, greedy, n_boot=200)
    assert claim["guards"]["calls_per_task"]["diff"] == pytest.approx(1.5)  # (+1 + +2) / 2
    split = claim["calls_split"]
    assert split["calls_under_gold"]["diff"] == pytest.approx(-1.0)  # both seeds now make the 2 needed
    assert split["calls_over_gold"]["diff"] == pytest.approx(0.5)  # seed 2's third call, halved
    assert "calls_over_gold" not in " ".join(claim["criteria"])  # reported, not one of the criteria


def test_answering_without_the_calls_a_task_needs_is_a_guard_the_calls_per_task_cannot_see():
    """The loophole an RFT round walked into (docs/cpu-proof): fewer calls read as better on calls per
    task; the model that stopped calling on tasks that need a call fails the no-call guard instead."""
    tasks, greedy, _ = build(8)
    for t, ts in tasks.items():
        # the warm start calls once everywhere; both seeds answer the tasks that need calls with none
        # (e0-e3 need one; e4-e7 need none, like abstains: not calling there is right)
        gold = {x.id: 1 if int(x.id[1:]) < 4 else 0 for x in ts}
        greedy[t]["warm_start"] = [result(x.id, False, gold_calls=gold[x.id]) for x in ts]
        for seed in ("grpo-seed1", "grpo-seed2"):
            greedy[t][seed] = [result(x.id, False, calls=0, gold_calls=gold[x.id]) for x in ts]
    claim = compute_claim(tasks, greedy, n_boot=200)
    assert claim["guards"]["calls_per_task"]["diff"] == -1.0  # "better" by the old guards
    assert claim["criteria"]["calls_per_task_diff_at_most_0.10"] is True
    assert claim["guards"]["no_call_when_needed"]["diff"] == pytest.approx(0.5)
    assert claim["criteria"]["no_call_when_needed_diff_at_most_0.03"] is False
    # a result without its gold call count cannot say whether a call was needed: an error, not a 0
    greedy["test-seed9001"]["grpo-seed1"][0] = result("e0", False, gold_calls=None)
    with pytest.raises(ValueError, match="task e0 has no n_gold_calls"):
        compute_claim(tasks, greedy, n_boot=200)


def test_missing_results_or_samples_without_verdicts_are_errors():
    tasks, greedy, sampled = build(8)
    greedy["test-seed9001"]["grpo-seed1"].pop()
    with pytest.raises(ValueError, match="no result for 1 tasks"):
        compute_claim(tasks, greedy, sampled)
    tasks, greedy, sampled = build(8)
    for row in sampled["test-seed9002"]["warm_start"]:
        row.answer_failed = None  # a row written before issue 48's answer check
    with pytest.raises(ValueError, match="no answer_failed verdict"):
        compute_claim(tasks, greedy, sampled)


def test_the_command_reads_the_layout_and_writes_strict_json(tmp_path, capsys):
    tasks, greedy, sampled = build(8)
    for t in tasks:
        (tmp_path / "tasks").mkdir(exist_ok=True)
        (tmp_path / "tasks" / f"{t}.jsonl").write_text(
            "".join(json.dumps(x.to_dict()) + "\n" for x in tasks[t])
        )
        for adapter, results in greedy[t].items():
            folder = tmp_path / "eval" / t / adapter
            folder.mkdir(parents=True)
            (folder / "results.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in results))
            (folder / "samples.jsonl").write_text(
                "".join(json.dumps(r.to_dict()) + "\n" for r in sampled[t][adapter])
            )
    out = tmp_path / "claim.json"
    main([str(tmp_path), "--out", str(out)])
    claim = json.loads(out.read_text())
    assert claim["in_template"]["greedy"]["n_seeds"] == 2
    assert "criteria met:" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no test-seed"):
        main([str(tmp_path / "nowhere"), "--out", str(out)])


def _rows(markdown: str) -> set[str]:
    """A Markdown page's table rows, spacing normalised (``| a |  |`` and ``| a | |`` are one row)."""
    return {" ".join(line.split()) for line in markdown.splitlines() if line.startswith("| ")}


@pytest.mark.parametrize("claim_file", ["claim.json", "claim-v3.json"])
def test_the_published_claim_tables_are_what_the_command_renders(claim_file):
    """docs/cpu-proof quotes each claim's tables (the first protocol's, the third's); ``toolkit.eval.claim_tables``
    renders them from the file, so a number copied wrong or a claim recomputed without its page fails here."""
    from pathlib import Path

    from toolkit.eval.claim_tables import group_table, guard_table, kind_table

    docs = Path(__file__).resolve().parents[1] / "docs" / "cpu-proof"
    page = _rows((docs / "README.md").read_text())
    claim = json.loads((docs / claim_file).read_text())
    rendered = [row for table in (group_table, guard_table, kind_table) for row in table(claim)[2:]]
    assert len(rendered) == 3 + 6 + 6
    missing = [row for row in rendered if " ".join(row.split()) not in page]
    assert not missing, f"docs/cpu-proof/README.md lacks these rows of {claim_file}'s tables: {missing}"


def test_the_tables_command_names_a_file_that_is_not_a_claim(tmp_path, capsys):
    from toolkit.eval.claim_tables import main as tables_main

    bad = tmp_path / "claim.json"
    bad.write_text('{"grpo_seeds": [0]}\n')
    with pytest.raises(SystemExit, match=r"claim\.json: not a claim\.json \(KeyError"):
        tables_main([str(bad)])
