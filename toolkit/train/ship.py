"""Ship a finished run's adapters in the repository (``mcp-rl ship RUN data/adapters/NAME``).

A shipped pair is what the tutorial evaluates without training (notebook 05): the run's warm start
(``RUN/sft/adapter``) as ``warm_start/`` and its GRPO adapter (``RUN/adapter``) as ``grpo/``. Each keeps
only ``adapter_config.json`` and ``adapter_model.safetensors``, the tensors cast to bfloat16 (half the
bytes; a LoRA delta loses nothing that greedy decoding notices, and the check below measures it). No
tokenizer files (the base model's name says which) and no ``training_args.bin`` (a pickle). Beside them:

- ``recipe.json``: the recipe as run (the shipped pair's rollout and synth settings come from it);
- ``record.json``: the run, its recipe name, the base model, the commands, the sha256 of every shipped
  file, and the run's own pass@0.75 comparisons (dev set, test sets) from ``RUN/summary.json``.

A claim's root (``python -m bench.reproduce_claim``, issue 49) ships the same way (``mcp-rl ship ROOT
DEST --claim claim.json``): its frozen warm start as ``warm_start/`` and each GRPO seed's adapter as
``grpo-seed<S>/``, the first seed's ``recipe.json`` (the seeds' recipes differ only in their seeds), and a
record that names the sides, the seeds and holds the claim computed over the root.

After writing, each shipped adapter is loaded with PEFT into the base model and its logits compared with
the source adapter's; a shipped adapter that differs by more than bfloat16 rounding is refused.

The shipped folders live in the top-level ``data/adapters/`` of a checkout, and in ``toolkit/data/adapters``
of an installed wheel (``toolkit.paths.DATA_DIR``).
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.paths import DATA_DIR
from toolkit.runs import ClaimFolder, RunFolder, ShippedFolder, grpo_seed_name, seed_set_name
from toolkit.train.runlog import log

ADAPTERS_DIR = DATA_DIR / "adapters"
DEFAULT_SHIPPED = "cpu-learn"  # the frozen issue-31 recipe's adapters
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
PRIMARY_METRIC = "pass@0.75"
# A shipped adapter's logits may differ from its source's by at most this share of the adapter's own
# effect (source logits - base logits), plus ABS_TOL: bfloat16 keeps 8 bits of mantissa (relative error
# 2**-9 per weight), so the LoRA delta moves by well under 1%; a wrong or mismatched tensor moves it by ~100%.
REL_TOL = 0.05
ABS_TOL = 1e-4


class ShipError(ValueError):
    """A shipped adapter that does not reproduce its source."""


def shipped_folder(name: str = DEFAULT_SHIPPED) -> Path:
    """Where the shipped adapters called ``name`` live: ``data/adapters/<name>`` in a checkout,
    ``toolkit/data/adapters/<name>`` in an installed wheel."""
    return ADAPTERS_DIR / name


@dataclass(frozen=True)
class Shipped:
    """A shipped pair, read back: its folder and its ``record.json``."""

    folder: Path
    record: dict[str, Any]

    @property
    def layout(self) -> ShippedFolder:
        return ShippedFolder(self.folder)

    @property
    def warm_start(self) -> Path:
        return self.layout.warm_start

    @property
    def grpo(self) -> Path:
        return self.layout.grpo

    @property
    def sides(self) -> list[str]:
        """The adapters shipped: ``warm_start`` and ``grpo``, or a claim's ``grpo-seed<S>`` sides."""
        return list(self.record.get("sides") or ShippedFolder.SIDES)

    @property
    def grpo_seeds(self) -> list[int]:
        """A claim's GRPO seeds (empty for a pair)."""
        return list(self.record.get("grpo_seeds") or [])

    @property
    def curves(self) -> dict[str, Path]:
        """A claim's training metrics by side (``warm_start``, ``grpo-seed<S>``), as shipped; empty for a
        pair, or a claim shipped before they were."""
        shipped = self.record.get("sha256") or {}
        return {
            s: self.layout.curve(s)
            for s in self.sides
            if self.layout.relative(self.layout.curve(s)) in shipped
        }

    @property
    def model(self) -> str:
        return self.record["model"]

    def recipe(self) -> Any:
        from toolkit.train.config import load_recipe

        return load_recipe(self.layout.recipe_file)


def load_shipped(folder: str | Path) -> Shipped:
    """The shipped adapters in ``folder`` (a pair or a claim's); a missing file raises FileNotFoundError
    naming it."""
    layout = ShippedFolder(folder)
    hint = f"ship a finished run with `mcp-rl ship RUN {layout.root}`"
    if not layout.record_file.is_file():
        raise FileNotFoundError(f"{layout.record_file}: missing; {hint}")
    try:
        shipped = Shipped(layout.root, json.loads(layout.record_file.read_text()))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{layout.record_file}: not JSON ({exc.msg}, line {exc.lineno}); {hint}") from exc
    for path in [layout.recipe_file, *shipped_adapter_files(layout, shipped.sides), *shipped.curves.values()]:
        if not path.is_file():
            raise FileNotFoundError(f"{path}: missing; {hint}")
    return shipped


def shipped_adapter_files(layout: ShippedFolder, sides: Sequence[str] = ShippedFolder.SIDES) -> list[Path]:
    return [layout.side(side) / name for side in sides for name in ADAPTER_FILES]


def shipped_files(layout: ShippedFolder, sides: Sequence[str] = ShippedFolder.SIDES) -> list[Path]:
    """What a shipped folder holds besides its record (each with its sha256 in the record)."""
    return [*shipped_adapter_files(layout, sides), layout.recipe_file]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check_sources(sources: dict[str, Path], recipe_file: Path, what: str) -> None:
    for folder in sources.values():
        for name in ADAPTER_FILES:
            if not (folder / name).is_file():
                raise FileNotFoundError(f"{folder / name}: missing; ship needs {what}'s adapters")
    if not recipe_file.is_file():
        raise FileNotFoundError(f"{recipe_file}: missing; ship needs {what}'s recipe")


def write_bf16_adapter(src: Path, dest: Path, model: str) -> None:
    """``src``'s config (the base model named by its kit name, not a machine's cache path) and its
    tensors in bfloat16."""
    import torch
    from safetensors.torch import load_file, save_file

    dest.mkdir(parents=True, exist_ok=True)
    config = json.loads((src / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = model
    (dest / "adapter_config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    tensors = {
        k: (v.to(torch.bfloat16) if v.is_floating_point() else v).contiguous()
        for k, v in load_file(str(src / "adapter_model.safetensors")).items()
    }
    save_file(tensors, str(dest / "adapter_model.safetensors"), metadata={"format": "pt"})
    (dest / "adapter_model.safetensors").chmod(0o644)  # save_file writes 0600: readable like the rest


def logit_gap(model: str, source: Path, shipped: Path) -> tuple[float, float]:
    """(max |shipped - source| logits, max |source - base| logits) on a fixed chat prompt, the base model
    in float32 with each adapter loaded by PEFT."""
    import torch
    from peft import PeftModel

    from toolkit.models import load_policy

    base, tokenizer = load_policy(model)
    messages = [{"role": "user", "content": "Which open tickets are assigned to Dana? Use the tools."}]
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
    ids = ids["input_ids"] if not torch.is_tensor(ids) else ids
    peft = PeftModel.from_pretrained(base, str(source), adapter_name="source")
    peft.load_adapter(str(shipped), adapter_name="shipped")
    peft.eval()
    with torch.no_grad():
        with peft.disable_adapter():
            plain = peft(input_ids=ids).logits
        peft.set_adapter("source")
        src = peft(input_ids=ids).logits
        peft.set_adapter("shipped")
        shp = peft(input_ids=ids).logits
    return float((shp - src).abs().max()), float((src - plain).abs().max())


def check_shipped(model: str, source: Path, shipped: Path) -> dict[str, float]:
    """Raise ShipError unless ``shipped`` gives ``source``'s logits up to bfloat16 rounding."""
    gap, effect = logit_gap(model, source, shipped)
    if gap > REL_TOL * effect + ABS_TOL:
        raise ShipError(
            f"{shipped}: logits differ from {source}'s by up to {gap:.4g}, more than bfloat16 rounding "
            f"allows ({REL_TOL:.0%} of the adapter's own effect {effect:.4g} + {ABS_TOL})"
        )
    return {"max_logit_diff": gap, "max_adapter_effect": effect}


def run_comparison(run: Path) -> dict[str, Any]:
    """The run's pass@0.75 comparisons from ``summary.json``: ``dev`` and ``test-seed<S>`` (empty when
    the run has no summary or no evaluation)."""
    path = RunFolder(run).summary_file
    if not path.is_file():
        return {}
    summary = json.loads(path.read_text())
    out = {}
    if PRIMARY_METRIC in (summary.get("comparison") or {}):
        out["dev"] = summary["comparison"][PRIMARY_METRIC]
    for seed, test in sorted((summary.get("test") or {}).items()):
        if PRIMARY_METRIC in test.get("comparison", {}):
            out[seed_set_name(seed)] = {"n_tasks": test.get("n_tasks"), **test["comparison"][PRIMARY_METRIC]}
    return out


def ship_adapters(run: str | Path, dest: str | Path) -> Path:
    """Copy ``run``'s warm start and GRPO adapter to ``dest`` (bfloat16, checked) with ``recipe.json`` and
    ``record.json``; returns the record's path. ``dest`` is replaced only when everything checked out.

    Raises FileNotFoundError naming a missing adapter file, ShipError when a shipped adapter does not
    reproduce its source."""
    run, dest = RunFolder(run), Path(dest)
    sources = ShippedFolder.sources(run)
    _check_sources(sources, run.recipe_file, "a finished run")
    final = ShippedFolder(dest)
    recipe = json.loads(run.recipe_file.read_text())
    model = recipe["model"]
    about = {"run": str(run.root), "comparison": run_comparison(run.root)}
    commands = {
        # the recipe as run, in a new folder (the run's own command line is not recorded)
        "reproduce": f"mcp-rl train --recipe {final.recipe_file} --out RUN --evaluate --test --curve",
        "ship": f"mcp-rl ship {run.root} {dest}",
        # with the recipe's loop, so it prompts and decodes as the run's own evaluation did
        "evaluate": (
            f"mcp-rl eval --policy {model} --adapter {final.grpo} --recipe {final.recipe_file} "
            "--suite kit-eval --tasks TASKS.jsonl --out OUT"
        ),
    }
    return _ship(sources, run.recipe_file, recipe, dest, about, commands)


def ship_claim(root: str | Path, dest: str | Path, claim_file: str | Path | None = None) -> Path:
    """Copy a claim root's frozen warm start and every GRPO seed's adapter to ``dest`` (bfloat16, checked,
    as ``ship_adapters``) with the first seed's ``recipe.json`` and a ``record.json`` that names the seeds
    and holds ``claim_file`` (the claim computed over the root), when given; returns the record's path."""
    claim, dest = ClaimFolder(root), Path(dest)
    if not claim.protocol_file.is_file():
        raise FileNotFoundError(f"{claim.protocol_file}: missing; not a claim's root (bench.reproduce_claim)")
    seeds = [int(s) for s in json.loads(claim.protocol_file.read_text())["grpo_seeds"]]
    sources = {
        "warm_start": claim.warm_start,
        **{grpo_seed_name(s): claim.grpo_run(s).adapter for s in seeds},
    }
    recipe_file = claim.grpo_run(seeds[0]).recipe_file
    _check_sources(sources, recipe_file, "a finished claim")
    protocol = json.loads(claim.protocol_file.read_text())
    sft_steps = json.loads(claim.warm_start_record.read_text())["sft_steps"]
    curves = {grpo_seed_name(s): claim.grpo_run(s).metrics_file for s in seeds}
    missing = [str(path) for path in curves.values() if not path.is_file()]
    if missing:
        raise FileNotFoundError(f"a finished claim's training metrics missing: {', '.join(missing)}")
    about: dict[str, Any] = {"claim_root": str(claim.root), "grpo_seeds": seeds, "sides": list(sources)}
    warm_run = claim.warm_run(sft_steps)
    if warm_run.metrics_file.is_file():
        curves = {"warm_start": warm_run.metrics_file, **curves}
    elif not warm_run.sft_adapter.exists():
        # a warm start trained on another machine (a kept root keeps the frozen copy and its dev
        # evaluation, not its run) or reused from another claim: its SFT curve is not here to ship
        about["curves_absent"] = {
            "warm_start": f"{warm_run.metrics_file}: not in the root (the warm start's own run was not kept)"
        }
        log(f"ship: no warm-start curve: {about['curves_absent']['warm_start']}")
    else:  # its run is here, its metrics are not: a damaged root
        raise FileNotFoundError(f"a finished claim's training metrics missing: {warm_run.metrics_file}")
    claim_command = ""
    if claim_file is not None:
        claim_file = Path(claim_file)
        if not claim_file.is_file():
            raise FileNotFoundError(f"{claim_file}: missing; write it with bench.reproduce_claim first")
        about["claim"] = json.loads(claim_file.read_text())
        claim_command = f" --claim {claim_file}"
    recipe = json.loads(recipe_file.read_text())
    model = recipe["model"]
    final = ShippedFolder(dest)
    commands = {
        "reproduce": reproduce_claim_command(protocol),
        "ship": f"mcp-rl ship {claim.root} {dest}{claim_command}",
        "evaluate": (
            f"mcp-rl eval --policy {model} --adapter {final.grpo_seed(seeds[0])} --recipe "
            f"{final.recipe_file} --suite kit-eval --tasks TASKS.jsonl --out OUT"
        ),
    }
    return _ship(sources, recipe_file, recipe, dest, about, commands, curves)


def reproduce_claim_command(protocol: dict[str, Any]) -> str:
    """The ``bench.reproduce_claim`` command line that runs a claim's protocol (its ``protocol.json``)
    again, every setting the protocol records spelled out."""
    parts = ["python -m bench.reproduce_claim ROOT", f"--recipe {protocol['recipe']}"]
    lists = (("--sft-lengths", "sft_lengths"), ("--grpo-seeds", "grpo_seeds"), ("--test-seeds", "test_seeds"))
    parts += [f"{flag} {','.join(map(str, protocol[key]))}" for flag, key in lists if protocol.get(key)]
    numbers = (("--test-tasks", "test_tasks"), ("--samples", "samples"), ("--dev-tasks", "dev_tasks"))
    parts += [f"{flag} {protocol[key]}" for flag, key in numbers if protocol.get(key)]
    parts += [f"--set {shlex.quote(item)}" for item in protocol.get("set") or []]
    if protocol.get("reuse_rounds"):
        parts.append(f"--reuse-rounds {shlex.quote(str(protocol['reuse_rounds']))}")
    return " ".join(parts) + " --out claim.json"


def _ship(
    sources: dict[str, Path],
    recipe_file: Path,
    recipe: dict[str, Any],
    dest: Path,
    about: dict[str, Any],
    commands: dict[str, str],
    curves: dict[str, Path] | None = None,
) -> Path:
    """Write every source adapter in bfloat16 into a staging folder, check each against its source's
    logits, add the recipe (``recipe_file``, read as ``recipe``), the training metrics (``curves``: side ->
    metrics.jsonl) and the record, then replace ``dest``."""
    model = recipe["model"]
    tmp = dest.parent / f".{dest.name}.shipping"
    staged, final = ShippedFolder(tmp), ShippedFolder(dest)  # written into tmp, renamed to dest when checked
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        checks = {}
        for side, src in sources.items():
            write_bf16_adapter(src, staged.side(side), model)
            checks[side] = check_shipped(model, src, staged.side(side))
        shutil.copyfile(recipe_file, staged.recipe_file)
        for side, src in (curves or {}).items():
            staged.curve(side).parent.mkdir(exist_ok=True)
            shutil.copyfile(src, staged.curve(side))
        record = {
            **about,
            "recipe": recipe.get("name"),
            "model": model,
            "dtype": "bfloat16",
            "sources": {side: str(src) for side, src in sources.items()},
            "source_sha256": {
                staged.relative(staged.side(side) / name): sha256(src / name)
                for side, src in sources.items()
                for name in ADAPTER_FILES
            },
            "sha256": {
                staged.relative(path): sha256(path)
                for path in [*shipped_files(staged, list(sources)), *map(staged.curve, curves or {})]
            },
            "logit_check": checks,
            "commands": commands,
        }
        staged.record_file.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final.record_file
