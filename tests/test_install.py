"""A non-editable install (`pip install .`, i.e. a wheel) carries everything the kit reads at run time:
recipes, the held-out task sample, the published reference numbers. Built from a copy of the source
(the checkout stays clean) and run from another directory, so nothing can come from the checkout.

The repository keeps that data once, in the top-level data/ (what a reader opens); setup.py copies it
into the wheel as toolkit/data."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

from toolkit.paths import DATA_DIR, PACKAGE_DIR, REPO_ROOT

CHECK = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import toolkit
    from toolkit.eval import plots, suites
    from toolkit.train.config import list_recipes, load_recipe

    here = Path(toolkit.__file__).resolve().parent
    assert here.is_relative_to(Path(sys.argv[1]).resolve()), f"imported from {here}, not the install"
    recipe = load_recipe("scale")  # names the task sample shipped in the package
    tasks = suites.get_suite("kit-eval").load_tasks(limit=3)
    print(json.dumps({
        "recipes": list_recipes(),
        "scale_tasks_exist": Path(recipe.tasks).is_file() and Path(recipe.eval_tasks).is_file(),
        "kit_eval": len(tasks),
        "reference": len(plots.load_reference()),
    }))
    """
)


@pytest.mark.integration
def test_wheel_install_runs_from_another_directory(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy(REPO_ROOT / name, src / name)
    for folder in ("toolkit", "data"):
        shutil.copytree(REPO_ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    wheels, site = tmp_path / "wheels", tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(src)],
                   check=True, capture_output=True, timeout=600)  # fmt: skip
    (wheel,) = wheels.glob("mcp_rl_kit-*.whl")
    shipped = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("toolkit/data/")}
    assert {"toolkit/data/reference_results.json", "toolkit/data/tasks/eval.jsonl"} <= shipped
    subprocess.run([*pip, "install", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, timeout=600)  # fmt: skip

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # Only the installed copy on the path: not the checkout, not an editable install's finder.
    env = {**os.environ, "PYTHONPATH": str(site), "PYTHONSAFEPATH": "1"}
    run = dict(capture_output=True, text=True, cwd=elsewhere, env=env, timeout=300)
    proc = subprocess.run([sys.executable, "-c", CHECK, str(site)], **run)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import json

    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {"bespoke", "cpu-demo", "prove", "scale"} <= set(out["recipes"])
    assert out["scale_tasks_exist"] and out["kit_eval"] == 3 and out["reference"] > 0

    listing = subprocess.run([sys.executable, "-m", "toolkit.cli", "envs", "list"], **run)
    assert listing.returncode == 0, listing.stderr[-3000:]
    assert "servers," in listing.stdout.splitlines()[-1]
    assert not (elsewhere / "build").exists() and not (elsewhere / "runs").exists()


def test_the_checkout_keeps_one_copy_of_the_data_at_the_top():
    """data/ at the top of the checkout is what the kit reads there; no second copy inside the package."""
    assert DATA_DIR == REPO_ROOT / "data"
    assert (DATA_DIR / "reference_results.json").is_file() and (DATA_DIR / "tasks" / "eval.jsonl").is_file()
    assert not (PACKAGE_DIR / "data").exists()
