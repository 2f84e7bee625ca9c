"""Evaluating shipped adapters as a claim (``mcp-rl eval-claim``, ``toolkit.train.claim_eval``): the test
sets synthesized once, every adapter greedy and sampled in the layout ``toolkit.eval.claim`` reads, a
stopped call going on where it was, and another call's files refused rather than joined."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from adapter_fakes import lora_adapter

from toolkit.models import TINY_MODEL
from toolkit.runs import ClaimFolder
from toolkit.train import claim_eval
from toolkit.train.ship import Shipped, load_shipped

SMALL_LOOP = {"max_turns": 2, "max_new_tokens": 6}


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> Path:
    """A pair shipped from a tiny run (the tiny model's LoRA adapters), its recipe's loop made short."""
    from toolkit.train.config import load_recipe, with_overrides
    from toolkit.train.ship import ship_adapters

    run = tmp_path_factory.mktemp("run")
    lora_adapter(run / "sft" / "adapter", 0)
    lora_adapter(run / "adapter", 1)
    overrides = {"model": TINY_MODEL, "backend": "cpu", **{f"rollout.{k}": v for k, v in SMALL_LOOP.items()}}
    (run / "recipe.json").write_text(
        json.dumps(with_overrides(load_recipe("cpu-learn"), overrides).to_dict())
    )
    return ship_adapters(run, tmp_path_factory.mktemp("adapters") / "tiny").parent


def test_a_pair_is_a_claim_of_one_grpo_seed_and_a_claim_lists_every_seed(shipped, tmp_path):
    pair = load_shipped(shipped)
    assert claim_eval.shipped_claim_adapters(pair) == {
        "warm_start": pair.warm_start,
        f"grpo-seed{pair.recipe().seed}": pair.grpo,
    }
    claim = Shipped(tmp_path, {"sides": ["warm_start", "grpo-seed3", "grpo-seed5"], "grpo_seeds": [3, 5]})
    assert claim_eval.shipped_claim_adapters(claim) == {
        "warm_start": tmp_path / "warm_start",
        "grpo-seed3": tmp_path / "grpo-seed3",
        "grpo-seed5": tmp_path / "grpo-seed5",
    }


def test_samples_is_greedy_only_or_a_rate():
    with pytest.raises(ValueError, match="at least 2"):
        claim_eval.ClaimEvaluator(recipe=None, samples=1)


@pytest.mark.integration
def test_eval_claim_evaluates_every_adapter_on_fresh_test_sets_and_resumes(shipped, tmp_path, capsys):
    from toolkit.cli import main

    out = tmp_path / "review"
    cmd = ["eval-claim", str(shipped), str(out), "--test-seeds", "4101", "--tasks", "2", "--samples", "2"]
    assert main(cmd) == 0
    printed = capsys.readouterr().out
    assert "all greedy pass@0.75" in printed and "criteria met:" in printed
    folder = ClaimFolder(out)
    assert len(folder.test_tasks(4101).read_text().splitlines()) == 2
    seed = load_shipped(shipped).recipe().seed
    for label in ("warm_start", f"grpo-seed{seed}"):
        evaluated = folder.evaluation(4101, label)
        assert len((evaluated / "results.jsonl").read_text().splitlines()) == 2
        assert len((evaluated / "samples.jsonl").read_text().splitlines()) == 4  # 2 tasks x 2 samples
    claim = json.loads((out / "claim.json").read_text())
    assert claim["test_seeds"] == ["4101"] and claim["grpo_seeds"] == [str(seed)]
    assert claim["all"]["sampled"]["k"] == 2 and claim["shipped"]["folder"] == str(shipped.resolve())
    assert set(claim["criteria"]) and all(isinstance(v, bool) for v in claim["criteria"].values())

    # a second call finds every evaluation done: nothing is run again, the claim is the same
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*.jsonl")}
    assert main(cmd) == 0
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.jsonl")} == stamps
    assert json.loads((out / "claim.json").read_text())["all"] == claim["all"]

    # another call's files are refused, not joined into this claim
    assert main([*cmd[:4], "4102", *cmd[5:]]) == 1
    assert "holds other test sets (test-seed4101.jsonl): use a new folder" in capsys.readouterr().err
    assert main([*cmd[:6], "3", *cmd[7:]]) == 1
    assert "2 tasks, not 3: another call's test set" in capsys.readouterr().err
    shutil.copytree(folder.evaluation(4101, "warm_start"), folder.evaluation(4101, "grpo-seed99"))
    assert main(cmd) == 1
    assert "holds evaluations of other adapters (grpo-seed99)" in capsys.readouterr().err
    other = tmp_path / "other"  # another shipped folder's adapters under the same labels
    shutil.copytree(shipped, other)
    assert main(["eval-claim", str(other), *cmd[2:]]) == 1
    assert "holds another shipped folder's evaluations: use a new folder" in capsys.readouterr().err


def test_eval_claim_refuses_a_bad_command_line_before_any_work(shipped, tmp_path, capsys):
    from toolkit.cli import main

    out = tmp_path / "review"
    with pytest.raises(SystemExit) as stop:
        main(["eval-claim", str(shipped), str(out), "--test-seeds", "1,1"])
    assert stop.value.code == 2 and "distinct integers" in capsys.readouterr().err
    assert main(["eval-claim", str(shipped), str(out), "--test-seeds", "1", "--samples", "1"]) == 2
    assert "--samples is 0 (greedy only) or at least 2" in capsys.readouterr().err
    assert main(["eval-claim", str(tmp_path / "nothing"), str(out), "--test-seeds", "1"]) == 1
    assert "record.json: missing" in capsys.readouterr().err
    assert not out.exists()
