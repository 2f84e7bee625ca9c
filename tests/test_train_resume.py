"""``--resume`` continues a run with the recipe it was made with (its ``recipe.json``).

A resumed run reuses the tasks, adapters and evaluations it finds, so a recipe that differs from the
run's is refused, naming the keys, unless the change is asked for (and then recorded). The runs here are
"finished" (their adapters exist), so every stage is skipped and no model is loaded."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from toolkit.train.config import load_recipe, recipe_from_dict, with_overrides

TASKS = Path(__file__).parent / "data" / "train_tasks.jsonl"
RECIPE = {
    "model": "tiny-random",
    "reward": "rubric",
    "tasks": str(TASKS),
    "synth": {"preset": "cpu", "n": 12, "n_eval": 6, "seed": 1},
    "lora": {"r": 4, "lora_alpha": 8},
    "sft": {"max_steps": 1},
    "grpo": {"num_generations": 2, "per_device_train_batch_size": 2, "max_steps": 2, "learning_rate": 1e-3},
}
CHANGES = {
    "model": "smollm2-135m",
    "lora.r": 8,
    "grpo.learning_rate": 2e-4,
    "synth.seed": 2,
    "grpo.warmup_steps": 1,
}


@pytest.fixture(autouse=True)
def no_training(monkeypatch):
    """No backend is ever made here: a resume that is not refused must not start training in a test."""
    from toolkit.train import pipeline

    def no_backend(*args, **kwargs):
        raise AssertionError("a backend was made: the run would have started")

    monkeypatch.setattr(pipeline, "make_backend", no_backend)


class NothingToTrain:
    """A backend for a finished run: every stage is skipped, so nothing is asked of it."""

    name = "fake"

    def release(self):
        pass


def finished_run(tmp_path: Path) -> Path:
    out = tmp_path / "run"
    for adapter in (out / "sft" / "adapter", out / "adapter"):
        adapter.mkdir(parents=True)
        (adapter / "adapter_config.json").write_text("{}")
    (out / "grpo" / "checkpoint-2").mkdir(parents=True)
    (out / "grpo" / "checkpoint-2" / "adapter_config.json").write_text("{}")
    (out / "summary.json").write_text(json.dumps({"comparison": {"kept": True}, "grpo_steps": 2}))
    return out


def test_resume_refuses_a_recipe_that_differs_from_the_runs(tmp_path):
    from toolkit.train.config import RecipeChangeError
    from toolkit.train.pipeline import run_recipe

    recipe = recipe_from_dict(RECIPE, "small")
    out = finished_run(tmp_path)
    run_recipe(recipe, out, resume=True, backend=NothingToTrain())  # writes recipe.json
    record = {name: (out / name).read_text() for name in ("recipe.json", "summary.json")}

    changed = with_overrides(recipe, CHANGES)
    with pytest.raises(RecipeChangeError) as err:
        run_recipe(changed, out, resume=True, backend=NothingToTrain())
    message = str(err.value)
    for part in (
        f"{out / 'recipe.json'}: the run was made with another recipe",
        'model: "tiny-random" -> "smollm2-135m"',
        "lora.r: 4 -> 8",
        "grpo.learning_rate: 0.001 -> 0.0002",
        "synth.seed: 1 -> 2",
        "grpo.warmup_steps: (unset) -> 1",
        "--allow-recipe-change",
    ):
        assert part in message, (part, message)
    assert "grpo.max_steps" not in message  # only what differs
    # nothing was rewritten to claim the new recipe
    assert {name: (out / name).read_text() for name in record} == record

    # the same settings under another name and description continue the run's own recipe
    renamed = dataclasses.replace(recipe, name="renamed", description="said otherwise")
    summary = run_recipe(renamed, out, resume=True, backend=NothingToTrain())
    assert summary["recipe"] == "small" and "recipe_changes" not in summary
    assert json.loads((out / "recipe.json").read_text())["name"] == "small"


def test_an_allowed_recipe_change_is_recorded(tmp_path):
    from toolkit.train.pipeline import run_recipe

    recipe = recipe_from_dict(RECIPE, "small")
    out = finished_run(tmp_path)
    run_recipe(recipe, out, resume=True, backend=NothingToTrain())
    changed = with_overrides(recipe, {"lora.r": 8, "grpo.warmup_steps": 1})
    summary = run_recipe(changed, out, resume=True, backend=NothingToTrain(), allow_recipe_change=True)
    (entry,) = summary["recipe_changes"]
    assert entry["changes"] == {"lora.r": {"old": 4, "new": 8}, "grpo.warmup_steps": {"new": 1}}
    assert entry["outputs_before"] == ["sft/adapter", "grpo/checkpoint-2", "adapter"]
    assert entry["time"].endswith("+00:00")
    assert json.loads((out / "recipe.json").read_text())["lora"]["r"] == 8
    written = json.loads((out / "summary.json").read_text())
    assert written["recipe_changes"] == summary["recipe_changes"] and written["comparison"] == {"kept": True}
    # resumed again with the recipe it now has: nothing changed, nothing more recorded
    again = run_recipe(changed, out, resume=True, backend=NothingToTrain())
    assert again["recipe_changes"] == summary["recipe_changes"]


@pytest.fixture
def captured_runs(monkeypatch):
    """``run_recipe`` as the CLI calls it, recorded instead of run."""
    from toolkit.train import pipeline

    calls = []

    def record(recipe, out, **kwargs):
        calls.append((recipe, kwargs))
        return {}

    monkeypatch.setattr(pipeline, "run_recipe", record)
    return calls


def prove_run(tmp_path: Path) -> Path:
    """A run folder made from the prove recipe (only its recipe.json: nothing is run)."""
    out = tmp_path / "prove-run"
    out.mkdir()
    (out / "recipe.json").write_text(json.dumps(load_recipe("prove").to_dict(), indent=1))
    return out


def test_cli_resume_without_recipe_continues_the_runs_own_recipe(tmp_path, captured_runs):
    from toolkit.cli import main

    out = prove_run(tmp_path)
    assert main(["train", "--out", str(out), "--resume"]) == 0
    ((recipe, kwargs),) = captured_runs
    assert recipe.name == "prove" and recipe.to_dict() == load_recipe("prove").to_dict()
    assert kwargs["resume"] is True and kwargs["allow_recipe_change"] is False
    # --set overrides apply to the run's recipe; --allow-recipe-change reaches run_recipe
    assert main(["train", "--out", str(out), "--resume", "--set", "lora.r=64", "--allow-recipe-change"]) == 0
    recipe, kwargs = captured_runs[1]
    assert recipe.name == "prove" and recipe.lora["r"] == 64 and kwargs["allow_recipe_change"] is True


def test_cli_resume_refuses_another_recipe_before_anything_runs(tmp_path, capsys):
    from toolkit.cli import main

    out = prove_run(tmp_path)
    record = (out / "recipe.json").read_text()
    prove, demo = load_recipe("prove"), load_recipe("cpu-demo")
    assert main(["train", "--out", str(out), "--resume", "--recipe", "cpu-demo"]) == 1
    err = capsys.readouterr().err
    assert (
        "the run was made with another recipe" in err
        and f"model: {json.dumps(prove.model)} -> {json.dumps(demo.model)}" in err
    )
    assert main(["train", "--out", str(out), "--resume", "--set", "grpo.learning_rate=3e-4"]) == 1
    err = capsys.readouterr().err
    assert f"grpo.learning_rate: {json.dumps(prove.grpo['learning_rate'])} -> 0.0003" in err
    assert (out / "recipe.json").read_text() == record and not (out / "summary.json").exists()


def test_cli_resume_names_a_missing_or_broken_recipe_json(tmp_path, capsys):
    from toolkit.cli import main

    out = tmp_path / "run"
    out.mkdir()
    assert main(["train", "--out", str(out), "--resume"]) == 1
    assert f"{out / 'recipe.json'}: no such file" in capsys.readouterr().err
    for text in ("", '{"model": "tiny-random", "reward": "rub', "[1, 2]"):
        (out / "recipe.json").write_text(text)
        assert main(["train", "--out", str(out), "--resume"]) == 1
        assert f"error: {out / 'recipe.json'}: not a readable recipe" in capsys.readouterr().err
    assert main(["train", "--out", str(out), "--allow-recipe-change"]) == 1
    assert "--allow-recipe-change goes with --resume" in capsys.readouterr().err


def test_recipe_changes_compare_settings_as_json():
    from toolkit.train.config import RecipeChangeError, RecipeError, describe_changes, recipe_changes

    recipe = recipe_from_dict(RECIPE, "small")
    assert recipe_changes(recipe, recipe_from_dict(json.loads(json.dumps(RECIPE)), "other")) == {}
    flags = with_overrides(recipe, {"grpo.use_liger_kernel": True})
    assert recipe_changes(with_overrides(recipe, {"grpo.use_liger_kernel": 1}), flags) == {
        "grpo.use_liger_kernel": {"old": 1, "new": True}
    }  # True == 1 in Python; not the same setting
    no_warm_start = with_overrides(recipe, {}, unset=["sft"])
    changes = recipe_changes(recipe, no_warm_start)
    assert changes == {"sft": {"old": {"max_steps": 1}, "new": None}}
    assert describe_changes(changes) == 'sft: {"max_steps": 1} -> null'
    many = recipe_changes(recipe, with_overrides(recipe, {f"grpo.knob{i:02d}": i for i in range(14)}))
    assert describe_changes(many).endswith("grpo.knob11: (unset) -> 11; and 2 more key(s)")
    assert issubclass(RecipeChangeError, RecipeError)  # callers that catch recipe errors catch it too
