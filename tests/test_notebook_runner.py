"""The papermill runner: parameters are injected, outputs go to the build folder, and a failing cell
is reported with the notebook and the cell named."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from toolkit import notebooks


def _write(path, cells):
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("SMOKE = False\nOUT_DIR = 'unset'")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params] + [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))


def test_find_notebooks_orders_and_filters(tmp_path):
    for name in ["02_b.ipynb", "01_a.ipynb", "scratch.ipynb", "10_c.ipynb"]:
        _write(tmp_path / name, [])
    assert [p.name for p in notebooks.find_notebooks(tmp_path)] == ["01_a.ipynb", "02_b.ipynb", "10_c.ipynb"]
    assert [p.name for p in notebooks.find_notebooks(tmp_path, only=["02"])] == ["02_b.ipynb"]


@pytest.mark.integration
def test_runner_injects_parameters_and_names_failing_cell(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    _write(
        src / "01_ok.ipynb", ["from pathlib import Path\nPath(OUT_DIR, 'smoke.txt').write_text(str(SMOKE))"]
    )
    _write(src / "02_bad.ipynb", ["x = 1", "raise ValueError('boom in cell')"])
    out = tmp_path / "build"

    run = notebooks.run_notebook(src / "01_ok.ipynb", out, smoke=True)
    assert (out / "01_ok" / "smoke.txt").read_text() == "True"
    assert run.output == out / "01_ok.ipynb" and run.output.exists()
    assert (src / "01_ok.ipynb").read_text().count("outputs") == nbformat.read(
        str(src / "01_ok.ipynb"), as_version=4
    ).cells.__len__(), "the source notebook must not be overwritten with outputs"

    with pytest.raises(notebooks.NotebookError) as err:
        notebooks.run_notebook(src / "02_bad.ipynb", out, smoke=True)
    msg = str(err.value)
    assert "02_bad.ipynb" in msg and "ValueError" in msg and "boom in cell" in msg
    assert "cell 2 failed" in msg and "raise ValueError" in msg  # index and first line in the source


@pytest.mark.integration
def test_a_relative_out_folder_holds_the_artifacts_too(tmp_path, monkeypatch):
    """The kernel runs in the notebook's folder: a relative OUT_DIR would land under it (it did, for
    `make docs-notebooks`'s `--out build/notebooks`)."""
    src = tmp_path / "src"
    src.mkdir()
    _write(src / "01_ok.ipynb", ["from pathlib import Path\nPath(OUT_DIR, 'made.txt').write_text('x')"])
    monkeypatch.chdir(tmp_path)
    notebooks.run_notebook(src / "01_ok.ipynb", Path("build"), smoke=True)
    assert (tmp_path / "build" / "01_ok" / "made.txt").exists()
    assert not (src / "build").exists()


@pytest.mark.integration
def test_notebooks_run_passes_params_to_the_notebook(tmp_path, monkeypatch):
    """Before: `mcp-rl notebooks run` had no --param (argparse exit 2), so a budget could only be changed
    by editing the notebook or calling papermill by hand."""
    from toolkit.cli import main

    src = tmp_path / "src"
    src.mkdir()
    _write(src / "01_p.ipynb", ["import json\nfrom pathlib import Path\nPath(OUT_DIR, 'p.json').write_text("
                                "json.dumps([STEPS, RATE, NAME, FLAG]))"])  # fmt: skip
    monkeypatch.setattr(notebooks, "NOTEBOOKS_DIR", src)
    argv = ["notebooks", "run", "--smoke", "--out", str(tmp_path / "build")]
    params = ["--param", "STEPS=3", "--param", "RATE=0.5", "--param", "NAME=abc", "--param", "FLAG=true"]
    assert main([*argv, *params]) == 0
    assert json.loads((tmp_path / "build" / "01_p" / "p.json").read_text()) == [3, 0.5, "abc", True]


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("STEPS", "expected NAME=VALUE"),
        ("2X=1", "expected NAME=VALUE"),
        ("SMOKE=false", "SMOKE is set by --smoke"),
        ("OUT_DIR=x", "OUT_DIR is set by --out"),
        ("L=[1,", "not a YAML value"),
    ],
)
def test_a_bad_param_is_refused_before_any_notebook_runs(bad, why, capsys):
    from toolkit.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["notebooks", "run", "--param", bad])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "--param" in err and why in err
