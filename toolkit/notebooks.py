"""`mcp-rl notebooks run`: execute the numbered notebooks headless with papermill.

Executed copies go to build/notebooks/, never over the sources. Parameters are injected into the
cell tagged ``parameters``: ``SMOKE`` (tiny budgets for CI) and ``OUT_DIR`` (where a notebook writes
its artifacts). A cell error stops the run and names the notebook and the cell.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from toolkit.paths import BUILD_DIR, NOTEBOOKS_DIR

NOTEBOOK_PATTERN = re.compile(r"^(\d\d)_[\w-]+\.ipynb$")


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
    artifacts = out_dir / path.stem
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


def run_all(*, smoke: bool, only: list[str] | None = None, out_dir: Path | None = None) -> list[NotebookRun]:
    out_dir = out_dir or BUILD_DIR / ("notebooks-smoke" if smoke else "notebooks")
    notebooks = find_notebooks(only=only)
    if not notebooks:
        raise NotebookError(f"no notebooks matching {only or 'NN_*.ipynb'} in {NOTEBOOKS_DIR}")
    runs = []
    for path in notebooks:
        print(f"[notebooks] running {path.name} ({'smoke' if smoke else 'full'}) ...", flush=True)
        run = run_notebook(path, out_dir, smoke=smoke)
        print(f"[notebooks] {path.name} done in {run.seconds:.1f} s -> {run.output}", flush=True)
        runs.append(run)
    return runs


def _cmd_run(args: argparse.Namespace) -> int:
    try:
        run_all(smoke=args.smoke, only=args.only, out_dir=Path(args.out) if args.out else None)
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
    run.set_defaults(func=_cmd_run)
