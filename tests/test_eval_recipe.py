"""`mcp-rl eval --recipe` (issue 51): an evaluation from the command line prompts and decodes as the
recipe's own `train --evaluate` does, and the shipped record's "evaluate" command uses it."""

from __future__ import annotations

import json
from dataclasses import asdict

from toolkit.cli import main
from toolkit.paths import REPO_ROOT
from toolkit.train.config import load_recipe
from toolkit.train.pipeline import eval_loop_config

SHIPPED = REPO_ROOT / "data" / "adapters" / "cpu-learn"


def eval_loop(tmp_path, *flags: str) -> dict:
    out = tmp_path / "ev"
    argv = ["eval", "--policy", "gold", "--suite", "kit-eval", "--limit", "2", "--seed", "3", *flags]
    assert main([*argv, "--out", str(out)]) == 0
    return json.loads((out / "results.json").read_text())["config"]["loop_config"]


def test_eval_recipe_uses_the_pipelines_evaluation_loop(tmp_path):
    """Before: `--recipe` was no flag (argparse exit 2), and eval ran the loop's defaults (8 turns of 256
    tokens, full schemas) where the recipe trains and evaluates with 3 of 64 and compact schemas."""
    for recipe in ("cpu-learn", str(SHIPPED / "recipe.json")):
        want = {**asdict(eval_loop_config(load_recipe(recipe))), "seed": 3}
        assert want["max_turns"] == 3 and want["compact_schemas"] and want["temperature"] == 0.0
        assert eval_loop(tmp_path, "--recipe", recipe) == want


def test_eval_flags_override_the_recipe(tmp_path):
    loop = eval_loop(tmp_path, "--recipe", "cpu-learn", "--max-turns", "5")
    assert loop["max_turns"] == 5 and loop["max_new_tokens"] == 64


def test_the_shipped_records_evaluate_command_names_its_recipe():
    """Before: the record's command had no recipe, so it evaluated with the loop's defaults."""
    record = json.loads((SHIPPED / "record.json").read_text())
    assert "--recipe data/adapters/cpu-learn/recipe.json" in record["commands"]["evaluate"]
