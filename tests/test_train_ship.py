"""Shipping a run's adapters (``mcp-rl ship RUN DEST``, ``toolkit.train.ship``): bfloat16
copies with only the config and the weights, that load with PEFT and give the source adapter's logits up
to bf16 rounding, a record with the run's numbers and the files' digests; a missing adapter names itself."""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
from pathlib import Path

import pytest
import torch
from adapter_fakes import lora_adapter

from toolkit.cli import build_parser
from toolkit.eval import plots
from toolkit.models import TINY_MODEL, load_policy
from toolkit.train import ship


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("run")
    lora_adapter(folder / "sft" / "adapter", 0)
    lora_adapter(folder / "adapter", 1)
    from toolkit.train.config import load_recipe, with_overrides

    recipe = with_overrides(load_recipe("cpu-learn"), {"model": TINY_MODEL}).to_dict()
    (folder / "recipe.json").write_text(json.dumps(recipe))
    primary = {"before": 0.1, "after": 0.2, "diff": 0.1, "ci_low": 0.05, "ci_high": 0.15, "outside_ci": True}
    summary = {
        "comparison": {"pass@0.75": primary, "coverage": primary},
        "test": {"2026": {"n_tasks": 200, "comparison": {"pass@0.75": primary}}},
    }
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def _logits(adapter: Path) -> torch.Tensor:
    model, _ = load_policy(TINY_MODEL, adapter=str(adapter))
    with torch.no_grad():
        return model(input_ids=torch.tensor([[1, 42, 7, 300, 12, 99, 5]])).logits


def test_shipped_adapters_are_bf16_copies_that_give_the_source_logits(run, tmp_path):
    dest = tmp_path / "data" / "adapters" / "tiny"
    record_path = ship.ship_adapters(run, dest)
    assert record_path == dest / "record.json"
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "grpo/adapter_config.json",
        "grpo/adapter_model.safetensors",
        "recipe.json",
        "record.json",
        "warm_start/adapter_config.json",
        "warm_start/adapter_model.safetensors",
    ]
    from safetensors.torch import load_file

    base = load_policy(TINY_MODEL)[0]
    with torch.no_grad():
        base_logits = base(input_ids=torch.tensor([[1, 42, 7, 300, 12, 99, 5]])).logits
    for side, source in (("warm_start", run / "sft" / "adapter"), ("grpo", run / "adapter")):
        tensors = load_file(str(dest / side / "adapter_model.safetensors"))
        assert {t.dtype for t in tensors.values()} == {torch.bfloat16}
        assert set(tensors) == set(load_file(str(source / "adapter_model.safetensors")))
        size = (dest / side / "adapter_model.safetensors").stat().st_size
        assert size < 0.6 * (source / "adapter_model.safetensors").stat().st_size
        config = json.loads((dest / side / "adapter_config.json").read_text())
        assert config["base_model_name_or_path"] == TINY_MODEL
        want, got = _logits(source), _logits(dest / side)
        effect = (want - base_logits).abs().max()
        assert effect > 1e-2  # the adapter matters, so the comparison can fail
        assert (got - want).abs().max() <= 0.05 * effect

    record = json.loads(record_path.read_text())
    assert record["recipe"] == "cpu-learn" and record["model"] == TINY_MODEL and record["dtype"] == "bfloat16"
    for name, digest in record["sha256"].items():
        assert hashlib.sha256((dest / name).read_bytes()).hexdigest() == digest
    assert record["comparison"]["dev"]["diff"] == 0.1
    assert record["comparison"]["test-seed2026"]["n_tasks"] == 200
    # the record's ship command is one today's parser reads as `mcp-rl ship RUN DEST`
    shipped_by = build_parser().parse_args(shlex.split(record["commands"]["ship"])[1:])
    assert shipped_by.command == "ship" and Path(shipped_by.run) == run and Path(shipped_by.dest) == dest
    assert f"--recipe {dest}/recipe.json" in record["commands"]["reproduce"]
    assert f"--recipe {dest}/recipe.json" in record["commands"]["evaluate"]
    assert set(record["logit_check"]) == {"warm_start", "grpo"}

    shipped = ship.load_shipped(dest)
    assert shipped.model == TINY_MODEL and shipped.grpo == dest / "grpo"
    assert shipped.recipe().synth["seed"] == 1


def test_the_check_refuses_an_adapter_that_is_not_its_source(run):
    """The other adapter's weights differ by ~100% of the effect: far outside bf16 rounding."""
    with pytest.raises(ship.ShipError, match="more than bfloat16 rounding"):
        ship.check_shipped(TINY_MODEL, run / "sft" / "adapter", run / "adapter")


def test_a_missing_adapter_names_its_path_and_the_cli_exits_non_zero(run, tmp_path, capsys):
    from toolkit.cli import main

    broken = tmp_path / "run"
    (broken / "sft" / "adapter").mkdir(parents=True)
    for name in ("recipe.json", "sft/adapter/adapter_config.json", "sft/adapter/adapter_model.safetensors"):
        (broken / name).write_bytes((run / name).read_bytes())
    dest = tmp_path / "shipped"
    assert main(["ship", str(broken), str(dest)]) == 1
    err = capsys.readouterr().err
    assert f"{broken / 'adapter' / 'adapter_config.json'}: missing" in err
    assert not dest.exists()
    with pytest.raises(FileNotFoundError, match="record.json: missing"):
        ship.load_shipped(dest)


def test_shipped_folders_are_found_in_the_data_folder():
    from toolkit.paths import DATA_DIR

    assert ship.shipped_folder() == DATA_DIR / "adapters" / "cpu-learn"
    assert ship.shipped_folder("x").parent == DATA_DIR / "adapters"


@pytest.fixture(scope="module")
def claim_root(tmp_path_factory, run) -> Path:
    """A finished claim's root as bench.reproduce_claim leaves it: protocol.json, the frozen warm start,
    a run per GRPO seed (its adapter and recipe)."""
    root = tmp_path_factory.mktemp("claim")
    (root / "protocol.json").write_text(json.dumps({"grpo_seeds": [0, 1], "recipe": "cpu-learn-rft"}))
    lora_adapter(root / "warm_start", 0)
    (root / "warm_start.json").write_text(json.dumps({"sft_steps": 30}))
    (root / "warm" / "sft-30").mkdir(parents=True)
    (root / "warm" / "sft-30" / "metrics.jsonl").write_text('{"step": 1, "phase": "sft", "loss": 1.5}\n')
    for seed in (0, 1):
        lora_adapter(root / "grpo" / f"seed-{seed}" / "adapter", 10 + seed)
        recipe = {**json.loads((run / "recipe.json").read_text()), "name": "cpu-learn-rft", "seed": seed}
        (root / "grpo" / f"seed-{seed}" / "recipe.json").write_text(json.dumps(recipe))
        (root / "grpo" / f"seed-{seed}" / "metrics.jsonl").write_text(
            f'{{"step": 31, "phase": "grpo", "phase_step": 1, "reward": 0.{seed}}}\n'
        )
    return root


def test_a_claims_warm_start_and_every_grpo_seed_ship_together(claim_root, tmp_path):
    claim_file = tmp_path / "claim.json"
    claim_file.write_text(json.dumps({"criteria": {"in_template_greedy_diff": False}, "grpo_seeds": [0, 1]}))
    dest = tmp_path / "adapters" / "cpu-learn-rft"
    from toolkit.cli import main

    assert main(["ship", str(claim_root), str(dest), "--claim", str(claim_file)]) == 0
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "curves/grpo-seed0.jsonl",
        "curves/grpo-seed1.jsonl",
        "curves/warm_start.jsonl",
        "grpo-seed0/adapter_config.json",
        "grpo-seed0/adapter_model.safetensors",
        "grpo-seed1/adapter_config.json",
        "grpo-seed1/adapter_model.safetensors",
        "recipe.json",
        "record.json",
        "warm_start/adapter_config.json",
        "warm_start/adapter_model.safetensors",
    ]
    shipped = ship.load_shipped(dest)
    assert shipped.sides == ["warm_start", "grpo-seed0", "grpo-seed1"] and shipped.grpo_seeds == [0, 1]
    assert shipped.record["recipe"] == "cpu-learn-rft" and shipped.recipe().seed == 0
    assert shipped.record["claim"]["criteria"] == {"in_template_greedy_diff": False}
    assert set(shipped.record["logit_check"]) == set(shipped.sides)
    for name, digest in shipped.record["sha256"].items():
        assert hashlib.sha256((dest / name).read_bytes()).hexdigest() == digest
    source = claim_root / "grpo" / "seed-1" / "adapter"  # each side is its own source's bf16 copy
    assert (_logits(dest / "grpo-seed1") - _logits(source)).abs().max() <= 0.05 * (
        _logits(source) - _logits(claim_root / "warm_start")
    ).abs().max() + 1e-3
    assert shipped.layout.grpo_seed(1) == dest / "grpo-seed1"
    assert list(shipped.curves) == shipped.sides  # each side's training metrics, as its run wrote them
    assert shipped.curves["grpo-seed1"].read_text() == (claim_root / "grpo/seed-1/metrics.jsonl").read_text()
    plots.plot_seed_curves({s: path for s, path in shipped.curves.items()}, tmp_path / "figures")
    shipped_by = build_parser().parse_args(shlex.split(shipped.record["commands"]["ship"])[1:])
    assert Path(shipped_by.run) == claim_root and Path(shipped_by.claim) == claim_file

    (dest / "curves" / "grpo-seed0.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="curves/grpo-seed0.jsonl: missing"):
        ship.load_shipped(dest)
    (dest / "grpo-seed1" / "adapter_model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="grpo-seed1/adapter_model.safetensors: missing"):
        ship.load_shipped(dest)
    (dest / "record.json").write_text('{"sides": [')
    with pytest.raises(ValueError, match=r"record.json: not JSON \(.*line 1\)"):
        ship.load_shipped(dest)


def test_a_claim_with_a_seed_missing_ships_nothing_and_claim_needs_a_claim_root(
    claim_root, run, tmp_path, capsys
):
    from toolkit.cli import main

    broken = tmp_path / "claim"
    shutil.copytree(claim_root, broken)
    (broken / "grpo" / "seed-0" / "metrics.jsonl").unlink()
    dest = tmp_path / "shipped"
    assert main(["ship", str(broken), str(dest)]) == 1
    assert "training metrics missing" in capsys.readouterr().err and not dest.exists()
    (broken / "grpo" / "seed-1" / "adapter" / "adapter_config.json").unlink()
    dest = tmp_path / "shipped"
    assert main(["ship", str(broken), str(dest)]) == 1
    assert (
        f"{broken / 'grpo' / 'seed-1' / 'adapter' / 'adapter_config.json'}: missing"
        in capsys.readouterr().err
    )
    assert not dest.exists()
    assert main(["ship", str(run), str(dest), "--claim", str(tmp_path / "claim.json")]) == 2
    assert "is not a claim's root" in capsys.readouterr().err and not dest.exists()


def test_a_claim_whose_warm_start_was_made_elsewhere_ships_without_its_curve_and_says_so(
    claim_root, tmp_path, capsys
):
    """Before: a root whose frozen warm start came from another machine or claim (protocol v3 reuses v2's;
    a kept root keeps the frozen copy, not its run) could not be shipped at all: its SFT metrics are not
    there. Now the seeds ship with their curves and the record says which curve is absent and why; a root
    that holds the warm start's run but not its metrics is still refused."""
    from toolkit.cli import main

    elsewhere = tmp_path / "claim"
    shutil.copytree(claim_root, elsewhere)
    protocol = {"grpo_seeds": [0, 1], "recipe": "cpu-learn-rft", "sft_lengths": [30], "test_seeds": [7101]}
    (elsewhere / "protocol.json").write_text(json.dumps({**protocol, "reuse_rounds": "kept-v2"}))
    (elsewhere / "warm" / "sft-30" / "metrics.jsonl").unlink()
    dest = tmp_path / "shipped"
    assert main(["ship", str(elsewhere), str(dest)]) == 0
    assert "no warm-start curve" in capsys.readouterr().out
    shipped = ship.load_shipped(dest)
    assert list(shipped.curves) == ["grpo-seed0", "grpo-seed1"]
    assert "not in the root" in shipped.record["curves_absent"]["warm_start"]
    assert shipped.record["commands"]["reproduce"] == (
        "python -m bench.reproduce_claim ROOT --recipe cpu-learn-rft --sft-lengths 30 --grpo-seeds 0,1 "
        "--test-seeds 7101 --reuse-rounds kept-v2 --out claim.json"
    )

    (elsewhere / "warm" / "sft-30" / "sft" / "adapter").mkdir(parents=True)  # its run here, its metrics not
    assert main(["ship", str(elsewhere), str(tmp_path / "again")]) == 1
    assert "training metrics missing" in capsys.readouterr().err and not (tmp_path / "again").exists()
