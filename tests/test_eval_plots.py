"""Figures from results folders, a training metrics file and the reference data; the reference numbers
are checked against the write-ups they cite."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from toolkit.eval import plots
from toolkit.eval.metrics import aggregate
from toolkit.paths import DATA_DIR, REPO_ROOT
from toolkit.records import TaskResult


def write_run(
    folder: Path, label: str, scores: list[float], finish_share: float, suite: str = "kit-eval"
) -> Path:
    rng = np.random.default_rng(len(label))
    results = []
    for i, s in enumerate(scores):
        n = int(rng.integers(0, 6))
        results.append(
            TaskResult(
                f"t{i}",
                suite,
                "lookup",
                float(s),
                atlas_score=float(s),
                n_calls=n,
                n_failed_calls=int(n > 3),
                stop_reason="finish" if i < finish_share * len(scores) else "max_turns",
                tool_counts={f"tool_{j % 3}": 1 for j in range(n)},
                rubric=[
                    {"id": "a", "category": "tool_selection", "essential": True, "passed": bool(s > 0.5)}
                ],
            )
        )
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in results))
    summary = {"suite": suite, "label": label, "config": {}, "aggregate": aggregate(results, n_boot=200)}
    (folder / "results.json").write_text(json.dumps(summary))
    return folder


def write_metrics(path: Path, steps: int = 12) -> Path:
    """The trainer's format: SFT rows (loss only), then GRPO rows with TRL's and the loop's names."""
    rows = [{"step": s, "phase": "sft", "loss": 2.0 / (s + 1)} for s in range(3)]
    rows += [
        {
            "step": s,
            "phase": "grpo",
            "loss": 0.01,
            "reward": 0.2 + 0.03 * s,
            "reward_std": 0.1,
            "frac_reward_zero_std": 0.5 - 0.02 * s,
            "completions/mean_length": 80 + s,
            "episodes/tool_calls_mean": 2.0,
            "episodes/tool_failure_rate": 0.3,
            "episodes/finish_rate": 0.1 * s / 2,
            "kl": 0.001 * s,
        }
        for s in range(3, steps)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\nnot json\n")
    return path


def test_plot_all_writes_png_and_svg(tmp_path):
    rng = np.random.default_rng(0)
    base = rng.random(30)
    before = write_run(tmp_path / "before", "base", list(base * 0.6), 0.2)
    after = write_run(tmp_path / "after", "trained", list(np.minimum(1, base * 0.6 + 0.3)), 0.8)
    metrics = write_metrics(tmp_path / "metrics.jsonl")
    paths = plots.plot_all([before, after], tmp_path / "fig", metrics_file=metrics)
    names = sorted(p.name for p in paths)
    for stem in ("before_after", "tool_usage", "finish_rate", "training_curves", "reference"):
        assert f"{stem}.png" in names and f"{stem}.svg" in names
    for p in paths:
        assert p.stat().st_size > 1000
        head = p.read_bytes()[:8]
        assert head.startswith(b"\x89PNG") if p.suffix == ".png" else b"<?xml" in head or b"<svg" in head
    # the before/after panel names the paired difference, and it is outside the CI for +0.3 on 30 tasks
    curves = (tmp_path / "fig" / "training_curves.svg").read_text()
    for title in ("zero-variance groups", "finish rate", "KL", "loss"):
        assert title in curves
    svg = (tmp_path / "fig" / "before_after.svg").read_text()
    assert "coverage" in svg and "+0.30*" in svg


def test_plot_cli(tmp_path):
    from toolkit.cli import main

    before = write_run(tmp_path / "b", "base", [0.0, 0.5, 1.0, 0.25], 0.0, suite="bfcl-base")
    assert (
        main(["plot", "--results", str(before), "--out", str(tmp_path / "o"), "--no-reference", "--viewer"])
        == 0
    )
    assert (tmp_path / "o" / "before_after.png").exists()
    assert not (tmp_path / "o" / "reference.png").exists()
    assert (tmp_path / "o" / "viewer.html").exists()


def test_training_curves_need_known_metrics(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text('{"step": 0, "something_else": 1}\n')
    with pytest.raises(ValueError, match="no known training metric"):
        plots.plot_training_curves(p, tmp_path)


def test_reference_numbers_cite_their_sources():
    entries = plots.load_reference()
    by_id = {e["id"]: e for e in entries}
    assert (by_id["scale-mcp-atlas-coverage"]["before"], by_id["scale-mcp-atlas-coverage"]["after"]) == (
        23.5,
        30.4,
    )
    assert (by_id["scale-mcp-atlas-pass050"]["before"], by_id["scale-mcp-atlas-pass050"]["after"]) == (
        15.8,
        31.9,
    )
    assert (by_id["scale-mcp-atlas-pass075"]["before"], by_id["scale-mcp-atlas-pass075"]["after"]) == (
        7.7,
        17.3,
    )
    assert (by_id["bespoke-bfcl-mt-base"]["before"], by_id["bespoke-bfcl-mt-base"]["after"]) == (55.0, 78.0)
    assert by_id["prove-bfcl-mt-delta"]["delta"] == 10.2
    # PROVE, arXiv 2606.03892, Table 3: BFCL multi-turn overall, before -> after, per model
    table3 = {"qwen3-4b": (18.8, 29.0), "qwen3-8b": (26.0, 26.9), "qwen2.5-7b": (13.1, 16.8)}
    table3["granite-4.1-8b"] = (33.4, 33.5)
    for model, pair in table3.items():
        e = by_id[f"prove-bfcl-mt-{model}"]
        assert (e["before"], e["after"]) == pair and e["verified"] and "Table 3" in e["cite"]
    assert all(e["verified"] for e in entries if e["id"].startswith("prove"))
    assert all(e["source"] for e in entries)
    assert plots.REFERENCE_FILE == DATA_DIR / "reference_results.json"


def test_verified_reference_numbers_are_the_ones_their_quotes_state():
    """Runs in any clone: a verified entry's numbers are read off its quoted line, so a typo in a value
    (or a quote pasted for the wrong entry) fails here."""
    import re

    def spellings(value: float) -> set[str]:
        return {f"{value:g}", f"{value:.1f}"}  # 55.0 -> "55" or "55.0", as the write-ups print them

    verified = [e for e in plots.load_reference() if e["verified"]]
    assert verified
    for e in verified:
        numbers = set(re.findall(r"\d+(?:\.\d+)?", e["quote"]))
        for key in ("before", "after", "delta"):
            if e.get(key) is not None:
                assert spellings(e[key]) & numbers, (e["id"], key, e[key], e["quote"])


def test_verified_reference_quotes_appear_in_the_write_ups():
    ref_dir = REPO_ROOT.parent / "shared" / "reference"
    if not ref_dir.is_dir():
        pytest.skip(f"{ref_dir} not present (the write-ups live beside the repository)")
    texts = {p.name: p.read_text(encoding="utf-8") for p in [*ref_dir.glob("*.txt"), *ref_dir.glob("*.md")]}
    for e in plots.load_reference():
        if not e["verified"]:
            continue
        files = [name for name in texts if name in e["source"]]
        assert files, e["id"]
        for quote in e["quote"].split(" / "):
            assert any(quote in texts[f] for f in files), (e["id"], quote)


def test_report_tables(tmp_path):
    from toolkit.eval import report

    before = write_run(tmp_path / "b", "base", [0.0, 0.5, 0.5, 1.0], 0.25)
    after = write_run(tmp_path / "a", "trained", [0.5, 1.0, 0.5, 1.0], 0.75)
    paired = report.paired_table(before, after).set_index("metric")
    assert paired.loc["coverage", "diff"] == pytest.approx(0.25)
    assert paired.loc["finish_rate", "after"] == pytest.approx(0.75)
    table = report.metrics_table([before, after], report.HEADLINE)
    assert set(table["run"]) == {"base", "trained"} and "rubric/tool_selection" not in set(table["metric"])
    ref = report.reference_table().set_index("metric")
    assert ref.loc["coverage", "relative_%"] == pytest.approx(29.4)  # Scale reports "+29%"
    assert ref.loc["pass@0.75", "delta_points"] == pytest.approx(9.6)


def test_bfcl_overall_over_several_suites(tmp_path):
    from toolkit.eval import report
    from toolkit.records import TaskResult

    dirs = []
    for suite, cat, verdicts in (
        ("bfcl-base", "multi_turn_base", [1, 1, 0, 1]),
        ("bfcl-miss-func", "multi_turn_miss_func", [0, 0]),
    ):
        res = [
            TaskResult(f"{cat}_{i}", suite, cat, float(v), correct=bool(v)) for i, v in enumerate(verdicts)
        ]
        d = tmp_path / suite
        d.mkdir()
        (d / "results.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in res))
        (d / "results.json").write_text(json.dumps({"suite": suite, "aggregate": aggregate(res, n_boot=50)}))
        dirs.append(d)
    table = report.combined_table(dirs).set_index("metric")
    assert table.loc["accuracy", "value"] == pytest.approx(3 / 6)
    assert table.loc["accuracy/multi_turn_base", "value"] == pytest.approx(3 / 4)
    assert table.loc["accuracy/multi_turn_miss_func", "value"] == 0.0
    zeros = report.accuracy_table(dirs).set_index("suite").loc["bfcl-miss-func"]
    assert (zeros["right"], zeros["n"]) == (0, 2)
    assert zeros["bootstrap_high"] == 0.0  # every task failed: the bootstrap says [0, 0]
    assert zeros["exact_high"] == pytest.approx(1 - 0.025**0.5)  # the exact interval does not


def test_a_bound_written_as_null_reads_back_as_nan(tmp_path):
    """Strict JSON writes an undefined bound (NaN) as null; the figures read it back as NaN, not None."""
    folder = write_run(tmp_path / "before", "base", [0.0, 1.0, 0.5], 1.0)
    summary = json.loads((folder / "results.json").read_text())
    summary["aggregate"]["metrics"]["coverage"].update(ci_low=None, ci_high=None)
    (folder / "results.json").write_text(json.dumps(summary))
    run = plots.load_run(folder)
    assert np.isnan(run.metric("coverage")["ci_low"]) and run.metric("nosuch") is None
    assert plots.plot_before_after([run, run], tmp_path / "fig")


def test_seed_curves_draw_each_seed_and_their_mean(tmp_path, monkeypatch):
    """A claim's curves: the warm start only on the loss panel, each GRPO seed on every panel, and on GRPO's
    panels the seeds' mean over the steps both logged."""
    warm = tmp_path / "warm.jsonl"
    warm.write_text("".join(json.dumps({"step": s, "phase": "sft", "loss": 1.0 / s}) + "\n" for s in (1, 2)))
    seeds = {}
    for seed, answers in ((0, (0.2, 0.4, 0.6)), (1, (0.4, 0.8))):
        rows = [{"step": 3, "phase": "rft", "phase_step": 1, "loss": 0.3}]
        rows += [
            {"step": 3 + i, "phase": "grpo", "phase_step": i, "episodes/answer_correct": a, "reward": a}
            for i, a in enumerate(answers, start=1)
        ]
        seeds[f"grpo-seed{seed}"] = tmp_path / f"seed{seed}.jsonl"
        seeds[f"grpo-seed{seed}"].write_text("".join(json.dumps(r) + "\n" for r in rows))
    drawn = []
    monkeypatch.setattr(plots, "save", lambda fig, out, name: drawn.append(fig) or [])
    plots.plot_seed_curves({"warm_start": warm, **seeds}, tmp_path)
    loss, answer = drawn[0].axes[:2]
    assert [line.get_label() for line in loss.get_lines()] == ["warm_start", "grpo-seed0", "grpo-seed1"]
    lines = {line.get_label(): line for line in answer.get_lines()}
    assert list(lines) == ["grpo-seed0", "grpo-seed1", "mean"]
    assert list(lines["mean"].get_xdata()) == [1, 2] and np.allclose(lines["mean"].get_ydata(), [0.3, 0.6])
