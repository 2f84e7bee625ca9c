"""The notebooks: jupytext sources paired with the .ipynb files, the same Colab header on each, and every
notebook executing top to bottom headless in smoke mode (what CI runs) with the outputs it should show."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from toolkit import notebooks

NOTEBOOKS = notebooks.find_notebooks()
ids = [p.stem for p in NOTEBOOKS]
# Text each notebook prints or displays in smoke mode: its story got told, not just "no exception".
EXPECTED = {
    "01_mcp_environments": ["domain servers", "episode b still sees assignee", "search_tickets ->"],
    "02_rubric_data": ["gold policy: mean rubric reward 1.000"],
    "03_rewards": ["share of gold trajectories at full marks:", "wrong order:"],
    "04_grpo_training": ["grpo_steps", "evaluation skipped (EVALUATE=False)"],
    "05_results": [
        "(GRPO)",
        "before = ",
        "image/png",
        "ci_low",
        "viewer_before_after.html",
        "shipping notebook 04's smoke run",
        "on 2 tasks from seed 2028: the interval",
        "exact_high",
    ],
}


def cells_of(nb) -> list[tuple[str, str, list[str]]]:
    return [(c.cell_type, c.source.strip(), sorted(c.metadata.get("tags", []))) for c in nb.cells]


def test_every_notebook_is_known_and_has_its_percent_script():
    assert ids == list(EXPECTED)
    for path in NOTEBOOKS:
        assert path.with_suffix(".py").is_file(), f"{path.name} has no jupytext source {path.stem}.py"
    assert not (notebooks.NOTEBOOKS_DIR / "_build").exists()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_ipynb_matches_its_jupytext_source(path):
    """Edit the .py (or the notebook in JupyterLab with jupytext), then `jupytext --sync notebooks/*.py`."""
    jupytext = pytest.importorskip("jupytext", reason="jupytext comes with the dev extra (`make setup`)")
    source = jupytext.read(path.with_suffix(".py"))
    assert cells_of(source) == cells_of(nbformat.read(str(path), as_version=4)), (
        f"{path.name} differs from {path.stem}.py: run `jupytext --sync notebooks/{path.stem}.py`"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_notebook_opens_with_the_colab_header_and_has_parameters(path):
    nb = nbformat.read(str(path), as_version=4)
    links, install = notebooks.header_cells(path.stem)
    assert [c.source.strip() for c in nb.cells[:2]] == [links.strip(), install.strip()]
    assert notebooks.REPO_URL in install and '"google.colab" in sys.modules' in install
    assert sum("parameters" in c.metadata.get("tags", []) for c in nb.cells) == 1
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "sources carry no outputs"


@pytest.fixture(scope="module")
def smoke_dir(tmp_path_factory) -> Path:
    """One folder for the whole smoke run: notebook 05 evaluates the run notebook 04 leaves there."""
    return tmp_path_factory.mktemp("notebooks-smoke")


@pytest.mark.integration
@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids)
def test_notebook_runs_in_smoke_mode(path, smoke_dir):
    if path.stem == "05_results" and not (smoke_dir / "04_grpo_training" / "run" / "adapter").exists():
        notebooks.run_notebook(notebooks.NOTEBOOKS_DIR / "04_grpo_training.ipynb", smoke_dir, smoke=True)
    run = notebooks.run_notebook(path, smoke_dir, smoke=True)
    assert notebooks.error_outputs(run.output) == []
    nb = nbformat.read(str(run.output), as_version=4)
    own = [
        c
        for c in nb.cells
        if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])
    ]
    assert all(c.execution_count for c in own), "every code cell ran"
    shown = "\n".join(
        str(out.get("text", "")) + "\n".join(f"{k}\n{v}" for k, v in out.get("data", {}).items())
        for c in own
        for out in c.get("outputs", [])
    )
    for text in EXPECTED[path.stem]:
        assert text in shown, (path.name, text)


def test_publish_refuses_smoke_runs_and_errors(tmp_path):
    def executed(name: str, smoke: bool, error: bool = False) -> Path:
        nb = nbformat.v4.new_notebook()
        cell = nbformat.v4.new_code_cell("1")
        cell.outputs = (
            [nbformat.v4.new_output("error", ename="ValueError", evalue="x", traceback=[])] if error else []
        )
        nb.cells = [cell]
        nb.metadata["papermill"] = {"parameters": {"SMOKE": smoke, "OUT_DIR": "x"}}
        folder = tmp_path / name
        folder.mkdir(exist_ok=True)
        nbformat.write(nb, str(folder / "01_a.ipynb"))
        return folder

    dest = tmp_path / "docs"
    with pytest.raises(notebooks.NotebookError, match="not a full run"):
        notebooks.publish(executed("smoke", smoke=True), dest)
    with pytest.raises(notebooks.NotebookError, match="error outputs: cell 0: ValueError"):
        notebooks.publish(executed("broken", smoke=False, error=True), dest)
    assert not dest.exists()
    assert notebooks.publish(executed("full", smoke=False), dest) == [dest / "01_a.ipynb"]


def test_a_published_copy_links_back_to_its_source(tmp_path):
    """The source's header links to docs/notebooks/NAME.ipynb; the copy there links to the source."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(notebooks.header_cells("01_a")[0])]
    nb.metadata["papermill"] = {"parameters": {"SMOKE": False, "OUT_DIR": "x"}}
    (tmp_path / "run").mkdir()
    nbformat.write(nb, str(tmp_path / "run" / "01_a.ipynb"))
    [copy] = notebooks.publish(tmp_path / "run", tmp_path / "docs" / "notebooks")
    header = nbformat.read(str(copy), as_version=4).cells[0].source
    assert "(../../notebooks/01_a.ipynb)" in header and "../docs/notebooks" not in header


def test_published_copies_drop_stderr_and_the_repository_path(tmp_path):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("run()")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stderr", text="100%|####| 4/4 UserWarning: ...\n"),
        nbformat.v4.new_output("stream", name="stdout", text=f"run {tmp_path}/runs/a: done\n"),
        nbformat.v4.new_output("execute_result", data={"text/plain": "42"}, execution_count=1),
    ]
    nb.cells = [nbformat.v4.new_markdown_cell("# title"), cell]
    cleaned = notebooks.for_readers(nb, root=tmp_path)
    outputs = cleaned.cells[1].outputs
    assert [o.output_type for o in outputs] == ["stream", "execute_result"]
    assert outputs[0].text == "run runs/a: done\n"
