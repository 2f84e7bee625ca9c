"""A run folder's layout is known in one place, ``toolkit.runs``: the paths it names, the checkpoints and
outputs it finds, and a check that no other module of the kit, bench or notebooks spells the layout."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from toolkit.paths import PACKAGE_DIR
from toolkit.runs import RunFolder, ShippedFolder, TaskFolder, seed_set_name

ROOT = PACKAGE_DIR.parent


def test_a_run_folder_names_the_layout_the_runs_on_disk_have(tmp_path):
    run = RunFolder(str(tmp_path))
    assert run.root == tmp_path and run == RunFolder(tmp_path) == RunFolder(run)
    assert Path(run) == tmp_path  # a folder is a path-like
    expected = {
        run.recipe_file: "recipe.json",
        run.summary_file: "summary.json",
        run.metrics_file: "metrics.jsonl",
        run.tasks.train: "tasks/train.jsonl",
        run.test_tasks(2026).eval: "tasks/test-seed2026/eval.jsonl",
        run.sft_adapter: "sft/adapter",
        run.rollouts_file: "grpo/rollouts.jsonl",
        run.pool_file: "grpo/pool.jsonl",
        run.checkpoint(5): "grpo/checkpoint-5",
        run.adapter: "adapter",
        run.merged: "merged",
        run.eval_before(warm=True): "eval/sft",
        run.eval_before(warm=False): "eval/base",
        run.eval_after(): "eval/grpo",
        run.eval_before(True, test_seed=2027): "eval/test-seed2027/sft",
        run.eval_after(test_seed="2027"): "eval/test-seed2027/grpo",
        run.eval_curve(10): "eval/curve/step-10",
        run.eval_adapter: "eval/adapter",
        run.eval_named("dev"): "eval/dev",
    }
    for path, relative in expected.items():
        assert path == tmp_path / relative, relative
    assert [p.name for p in run.published_files()] == ["summary.json", "recipe.json", "metrics.jsonl"]
    assert seed_set_name(7) == "test-seed7" and TaskFolder(tmp_path).summary == tmp_path / "summary.json"

    shipped = ShippedFolder(tmp_path / "ship")
    assert [shipped.side(s).name for s in ShippedFolder.SIDES] == ["warm_start", "grpo"]
    assert shipped.record_file.name == "record.json" and shipped.recipe_file.name == "recipe.json"
    assert ShippedFolder.sources(run) == {"warm_start": run.sft_adapter, "grpo": run.adapter}
    assert shipped.relative(shipped.grpo / "adapter_config.json") == "grpo/adapter_config.json"
    assert shipped.side("grpo-seed2") == shipped.grpo_seed(2) == tmp_path / "ship" / "grpo-seed2"
    with pytest.raises(KeyError, match="no shipped side 'adapter'"):
        shipped.side("adapter")


def test_a_run_folder_finds_its_checkpoints_and_outputs(tmp_path):
    run = RunFolder(tmp_path)
    assert run.checkpoints() == [] and run.outputs() == [] and not run.evaluated_warm_start()
    for step in (10, 2, 3):
        run.checkpoint(step).mkdir(parents=True)
        if step != 3:  # checkpoint-3 was cut before its adapter was saved
            (run.checkpoint(step) / "adapter_config.json").write_text("{}")
    (run.grpo / "checkpoint-last").mkdir()
    assert run.checkpoints() == [(2, run.checkpoint(2)), (10, run.checkpoint(10))]  # by step, not by name
    assert [s for s, _ in run.checkpoints(with_adapter=False)] == [2, 3, 10]
    for folder in (run.sft_adapter, run.eval_before(warm=True), run.adapter):
        folder.mkdir(parents=True)
    assert run.outputs() == ["sft/adapter", "eval/sft", "grpo/checkpoint-10", "adapter"]
    assert run.evaluated_warm_start()


# ---- the layout is spelled in toolkit/runs.py only ----------------------------------------------------

FILES = {"recipe.json", "summary.json", "metrics.jsonl", "rollouts.jsonl", "pool.jsonl", "record.json"}
FOLDERS = {"sft", "grpo", "adapter", "warm_start", "eval", "tasks"}  # as a path part: run / "sft"
PREFIXES = ("checkpoint-", "test-seed")  # a checkpoint's or a test set's folder
# Folders of other layouts that share a name with a run's part, each with what it is.
OTHER_LAYOUTS = {
    "toolkit/eval/claim.py": {"tasks"},  # its error names the folder of a claim's test sets
    "toolkit/eval/suites.py": {"tasks"},  # the kit's data folder, DATA_DIR / "tasks"
    "toolkit/study/comparisons.py": {"tasks"},  # the same data folder
    "toolkit/cli/synth.py": {"summary.json"},  # a task set's folder (mcp-rl synth --out)
    "toolkit/cli/synth_own.py": {"summary.json"},  # the same, for an own server's tasks
    "toolkit/cli/atlas.py": {"summary.json"},  # an MCP-Atlas evaluation's folder
    "bench/fault_secrets.py": {"tasks"},  # a synth --out folder of its scratch tree
}


def layout_literals(source: str) -> list[tuple[int, str]]:
    """(line, literal) of every string in ``source`` that names a part of a run folder: a run file's name
    (anywhere but in a docstring), a run folder's part joined with ``/``, or a checkpoint's or test set's
    folder name joined with ``/`` or globbed."""
    tree = ast.parse(source)
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    joined = set()  # the operands of a / b and of .glob(...)
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            joined |= {id(node.left), id(node.right)}
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("glob", "rglob"):
            joined |= {id(a) for a in node.args}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and id(node) in joined:
            head = node.values[0] if node.values else None
            if isinstance(head, ast.Constant) and str(head.value).startswith(PREFIXES):
                found.append((node.lineno, str(head.value)))
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in docstrings:
            continue
        text = node.value
        if text in FILES or (text.split("/")[0] in FOLDERS and "/" in text.strip("/")):
            found.append((node.lineno, text))
        elif id(node) in joined and (text in FOLDERS or text.startswith(PREFIXES)):
            found.append((node.lineno, text))
    return sorted(found)


def test_the_literal_finder_finds_the_usual_shapes():
    source = (
        '"""A docstring naming recipe.json is prose."""\n'
        'KEPT = ("summary.json", "eval")\n'
        'adapter = run / "sft" / "adapter"\n'
        'ckpt = out / "grpo" / f"checkpoint-{step}"\n'
        'found = folder.glob("checkpoint-*")\n'
        'rel = "sft/adapter"\n'
        'split, phase, words = "eval", "grpo", "see the run\'s recipe.json"\n'
    )
    assert layout_literals(source) == [
        (2, "summary.json"),
        (3, "adapter"),
        (3, "sft"),
        (4, "checkpoint-"),
        (4, "grpo"),
        (5, "checkpoint-*"),
        (6, "sft/adapter"),
    ]


def test_the_run_layout_is_spelled_in_toolkit_runs_only():
    files = [*PACKAGE_DIR.rglob("*.py"), *(ROOT / "bench").glob("*.py"), *(ROOT / "notebooks").glob("*.py")]
    allowed = OTHER_LAYOUTS
    spelled = []
    for path in sorted(files):
        name = path.relative_to(ROOT).as_posix()
        if name == "toolkit/runs.py":
            continue
        for line, text in layout_literals(path.read_text(encoding="utf-8")):
            if text not in allowed.get(name, set()):
                spelled.append(f"{name}:{line}: {text!r}")
    assert not spelled, "use toolkit.runs.RunFolder (or ShippedFolder) instead of:\n" + "\n".join(spelled)


def test_every_allowed_spelling_is_still_there():
    """An entry of OTHER_LAYOUTS whose literal went away goes too."""
    for name, texts in OTHER_LAYOUTS.items():
        path = ROOT / name
        there = (
            {text for _, text in layout_literals(path.read_text(encoding="utf-8"))}
            if path.exists()
            else set()
        )
        assert texts <= there, f"{name}: {sorted(texts - there)} no longer spelled there: drop the entry"
