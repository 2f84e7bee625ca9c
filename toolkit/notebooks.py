"""`mcp-rl notebooks run` / `publish`: execute the numbered notebooks headless with papermill, and
publish the executed copies of a full run as the committed docs/notebooks/.

The notebooks' sources are jupytext percent scripts (``notebooks/NN_name.py``) paired with the
``.ipynb`` files. Executed copies go to build/notebooks/, never over the sources. Parameters are
injected into the cell tagged ``parameters``: ``SMOKE`` (tiny budgets for CI) and ``OUT_DIR`` (where a
notebook writes its artifacts), plus any ``--param NAME=VALUE``. A cell error stops the run and names the notebook and the cell.

Each notebook opens with the same two cells (``header_cells``): an "Open in Colab" link plus a link to
its executed copy, and an install cell that acts only in Colab (``toolkit.colab``). The repository URL they use is
``REPO_URL`` below, the one place it is written.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.paths import BUILD_DIR, NOTEBOOKS_DIR, REPO_ROOT

NOTEBOOK_PATTERN = re.compile(r"^(\d\d)_[\w-]+\.ipynb$")
# The repository has no public address yet: this placeholder is the one place to change it (the
# notebooks' Colab links and install cells are made from it; `tests/test_notebooks.py` checks that).
# In Colab, MCP_RL_REPO_URL overrides it at run time.
REPO_URL = "https://github.com/OWNER/mcp-rl-kit"
DOCS_NOTEBOOKS = REPO_ROOT / "docs" / "notebooks"  # executed copies of a full `make demo` run
COLAB_DIR = "/content/mcp-rl-kit"  # where the install cell clones the kit in Colab


def header_cells(name: str) -> tuple[str, str]:
    """The first two cells of notebook ``name`` (``"01_mcp_environments"``): markdown with the Colab
    and executed-copy links, and the install cell that does something only in Colab (what it installs
    is decided in one place, ``toolkit.colab.setup_runtime``)."""
    repo_path = REPO_URL.removeprefix("https://github.com/")
    links = (
        f"[![Open in Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        f"(https://colab.research.google.com/github/{repo_path}/blob/main/notebooks/{name}.ipynb) "
        f"· {executed_copy_link(name)}"
    )
    install = f"""# Colab only: fetch the kit and install it for this runtime (toolkit/colab.py decides what, by GPU,
# driver and Python). If it restarts the runtime (a library Colab had imported changed), run this cell
# again. Elsewhere (`make setup` did the install) this cell does nothing.
import os
import sys

if "google.colab" in sys.modules:
    import subprocess

    # The repository has no public address yet: set MCP_RL_REPO_URL to yours.
    REPO_URL = os.environ.get("MCP_RL_REPO_URL", "{REPO_URL}")
    if not os.path.isdir("{COLAB_DIR}"):
        subprocess.run(["git", "clone", "--depth", "1", REPO_URL, "{COLAB_DIR}"], check=True)
    sys.path.insert(0, "{COLAB_DIR}")
    from toolkit.colab import setup_runtime

    setup_runtime("{COLAB_DIR}")
    os.chdir("{COLAB_DIR}/notebooks")"""
    return links, install


def executed_copy_link(name: str) -> str:
    """The header's link from the source notebook (notebooks/) to its executed copy (docs/notebooks/)."""
    return f"[executed copy with outputs](../docs/notebooks/{name}.ipynb) (from `make docs-notebooks`)"


def source_link(name: str) -> str:
    """What the executed copy shows instead: the link above, relative to notebooks/, led nowhere there."""
    return f"[source notebook](../../notebooks/{name}.ipynb) (this is its executed copy, from `make docs-notebooks`)"


class NotebookError(RuntimeError):
    """A cell failed; the message names the notebook, the cell and the error."""


@dataclass
class NotebookRun:
    name: str
    seconds: float
    output: Path


def find_notebooks(folder: Path = NOTEBOOKS_DIR, only: list[str] | None = None) -> list[Path]:
    """The numbered notebooks (NN_name.ipynb) in order, optionally only those whose number or name
    starts with one of ``only``."""
    found = sorted(p for p in folder.glob("*.ipynb") if NOTEBOOK_PATTERN.match(p.name))
    if only:
        found = [p for p in found if any(p.name.startswith(o) for o in only)]
    return found


def run_notebook(path: Path, out_dir: Path, *, smoke: bool, extra: dict | None = None) -> NotebookRun:
    import papermill
    from papermill.exceptions import PapermillExecutionError

    out_dir.mkdir(parents=True, exist_ok=True)
    artifacts = (out_dir / path.stem).resolve()  # absolute: the kernel runs in the notebook's folder
    artifacts.mkdir(parents=True, exist_ok=True)
    output = out_dir / path.name
    params = {"SMOKE": smoke, "OUT_DIR": str(artifacts), **(extra or {})}
    start = time.perf_counter()
    try:
        papermill.execute_notebook(
            str(path),
            str(output),
            parameters=params,
            cwd=str(path.parent),
            kernel_name="python3",
            progress_bar=False,
        )
    except PapermillExecutionError as exc:
        index, source = _failed_cell(output, exc.exec_count)
        raise NotebookError(
            f"{path.name}: cell {index} failed: {exc.ename}: {exc.evalue}\n"
            f"  cell starts: {source!r}\n  executed copy: {output}"
        ) from None
    return NotebookRun(path.name, time.perf_counter() - start, output)


def _failed_cell(executed: Path, exec_count: int) -> tuple[int | str, str]:
    """Index (0-based, in the source notebook) and first line of the cell that raised.

    papermill adds an error banner and an injected-parameters cell to the executed copy, so the cell
    is found by its execution count and counted among the source's own cells."""
    import nbformat

    try:
        cells = nbformat.read(str(executed), as_version=4).cells
    except Exception:  # an unreadable executed copy still leaves the execution count to go on
        return f"with execution count {exec_count}", ""
    injected = {"injected-parameters", "papermill-error-cell-tag"}
    own = [c for c in cells if not injected & set(c.metadata.get("tags", []))]
    for i, cell in enumerate(own):
        if cell.cell_type == "code" and cell.get("execution_count") == exec_count:
            lines = cell.source.strip().splitlines()
            return i, lines[0][:100] if lines else ""
    return f"with execution count {exec_count}", ""


def run_all(
    *,
    smoke: bool,
    only: list[str] | None = None,
    out_dir: Path | None = None,
    params: dict[str, Any] | None = None,
) -> list[NotebookRun]:
    out_dir = out_dir or BUILD_DIR / ("notebooks-smoke" if smoke else "notebooks")
    notebooks = find_notebooks(NOTEBOOKS_DIR, only=only)
    if not notebooks:
        raise NotebookError(f"no notebooks matching {only or 'NN_*.ipynb'} in {NOTEBOOKS_DIR}")
    runs = []
    for path in notebooks:
        print(f"[notebooks] running {path.name} ({'smoke' if smoke else 'full'}) ...", flush=True)
        run = run_notebook(path, out_dir, smoke=smoke, extra=params)
        print(f"[notebooks] {path.name} done in {run.seconds:.1f} s -> {run.output}", flush=True)
        runs.append(run)
    return runs


def error_outputs(notebook: Path) -> list[str]:
    """``"cell N: Ename: value"`` for every error output in an executed notebook (none in a good run)."""
    import nbformat

    cells = nbformat.read(str(notebook), as_version=4).cells
    return [
        f"cell {i}: {out.get('ename')}: {out.get('evalue')}"
        for i, cell in enumerate(cells)
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]


def publish(executed_dir: Path, dest: Path = DOCS_NOTEBOOKS) -> list[Path]:
    """Copy the executed notebooks of a full run (``executed_dir``, e.g. build/notebooks) to ``dest``.

    Refuses a smoke run (papermill records the injected ``SMOKE``) and a notebook with an error output,
    so CI's smoke runs can never overwrite the committed copies."""
    import nbformat

    found = find_notebooks(executed_dir)
    if not found:
        raise NotebookError(
            f"no executed notebooks (NN_*.ipynb) in {executed_dir}: run `mcp-rl notebooks run`"
        )
    for path in found:
        nb = nbformat.read(str(path), as_version=4)
        if nb.metadata.get("papermill", {}).get("parameters", {}).get("SMOKE", True):
            raise NotebookError(f"{path}: not a full run (SMOKE was not False); {dest} holds full runs only")
        if errors := error_outputs(path):
            raise NotebookError(f"{path}: has error outputs: {errors[0]}")
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for path in found:
        target = dest / path.name
        text = nbformat.writes(for_readers(nbformat.read(str(path), as_version=4)))
        text = text.replace(executed_copy_link(path.stem), source_link(path.stem))
        # paths in displays and papermill's metadata too: relative to the repository
        target.write_text(text.replace(str(REPO_ROOT).rstrip("/") + "/", ""), encoding="utf-8")
        written.append(target)
    return written


def for_readers(nb: Any, root: Path = REPO_ROOT) -> Any:
    """An executed notebook as a reader should see it: without stderr streams (progress bars, library
    warnings: noise on GitHub, and they name the machine's install paths) and with the repository's
    absolute path cut from printed paths."""
    prefix = str(root).rstrip("/") + "/"
    for cell in nb.cells:
        kept = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                if out.get("name") == "stderr":
                    continue
                out["text"] = out["text"].replace(prefix, "")
            kept.append(out)
        if cell.get("cell_type") == "code":
            cell["outputs"] = kept
    return nb


def _cmd_publish(args: argparse.Namespace) -> int:
    try:
        for path in publish(Path(args.executed), Path(args.dest)):
            print(f"[notebooks] published {path}")
    except NotebookError as exc:
        print(f"mcp-rl notebooks publish: {exc}", file=sys.stderr)
        return 1
    return 0


def notebook_param(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` -> ``(NAME, VALUE)``, the value read as YAML as papermill's ``-y`` reads it (``3`` an int,
    ``0.5`` a float, ``true`` a bool, ``null`` None, ``[a, b]`` a list, anything else a string)."""
    import yaml

    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with NAME a Python name, got {text!r}")
    if name in ("SMOKE", "OUT_DIR"):  # one way to set each: the runner's own flags
        raise argparse.ArgumentTypeError(f"{name} is set by --{'smoke' if name == 'SMOKE' else 'out'}")
    try:
        return name, yaml.safe_load(value)
    except yaml.YAMLError as exc:  # e.g. an unclosed bracket: quote a string that looks like YAML
        raise argparse.ArgumentTypeError(f"{name}: {value!r} is not a YAML value ({exc.problem})") from None


def _cmd_run(args: argparse.Namespace) -> int:
    try:
        run_all(
            smoke=args.smoke,
            only=args.only,
            out_dir=Path(args.out) if args.out else None,
            params=dict(args.param),
        )
    except NotebookError as exc:
        print(f"mcp-rl notebooks run: {exc}", file=sys.stderr)
        return 1
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("notebooks", help="run the numbered notebooks headless (papermill)")
    nb_sub = parser.add_subparsers(dest="notebooks_command", metavar="ACTION", required=True)
    run = nb_sub.add_parser("run", help="execute notebooks/NN_*.ipynb in order")
    run.add_argument("--smoke", action="store_true", help="tiny budgets (CI): injects SMOKE=True")
    run.add_argument("--only", nargs="+", metavar="NN", help="run only notebooks starting with these")
    run.add_argument("--out", help="folder for executed copies (default build/notebooks[-smoke])")
    run.add_argument(
        "--param",
        action="append",
        default=[],
        type=notebook_param,
        metavar="NAME=VALUE",
        help="set a variable of the notebooks' parameters cell, e.g. --param MAX_STEPS=5 (repeatable; "
        "the value read as YAML: 5 an int, true a bool, null None, else a string)",
    )
    run.set_defaults(func=_cmd_run)
    pub = nb_sub.add_parser("publish", help="copy a full run's executed notebooks to docs/notebooks/")
    pub.add_argument("executed", help="folder of executed notebooks (e.g. build/notebooks)")
    pub.add_argument("--dest", default=str(DOCS_NOTEBOOKS), help="target folder (default docs/notebooks)")
    pub.set_defaults(func=_cmd_publish)
