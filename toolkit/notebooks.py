"""`mcp-rl notebooks run` / `publish`: execute the numbered notebooks headless with papermill, and
publish the executed copies of a full run as the committed docs/notebooks/.

The notebooks' sources are jupytext percent scripts (``notebooks/NN_name.py``) paired with the
``.ipynb`` files. Executed copies go to build/notebooks/, never over the sources. Parameters are
injected into the cell tagged ``parameters``: ``SMOKE`` (tiny budgets for CI) and ``OUT_DIR`` (where a
notebook writes its artifacts), plus any ``--param NAME=VALUE``. A cell error stops the run and names the notebook and the cell.

Progress: one line as each code cell starts and ends (which notebook, cell i of n, its seconds, the time since
the notebook started), and every ``HEARTBEAT_S`` a line for a cell still running, with its latest printed
line or kit progress line (notebook 04's training cell runs for minutes). The kernels start quiet: libraries' log lines and
warnings are turned down as ``mcp-rl train`` does (``toolkit.train.quiet``) before any cell runs, so they
reach neither the terminal nor the executed copies; ``--verbose`` / ``MCP_RL_VERBOSE=1`` keeps them.

Each notebook opens with the same two cells (``header_cells``): an "Open in Colab" link plus a link to
its executed copy, and an install cell that acts only in Colab (``toolkit.colab``). The repository URL they use is
``REPO_URL`` below, the one place it is written.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable
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
HEARTBEAT_S = 60.0  # a cell running longer gets a "still running" line this often
# Run by each kernel before the notebook's first cell (IPython's exec_lines): nothing shows in the notebook.
KERNEL_SETUP = "from toolkit.notebooks import quiet_kernel; quiet_kernel()"


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


def run_notebook(
    path: Path,
    out_dir: Path,
    *,
    smoke: bool,
    extra: dict | None = None,
    progress: Callable[[str], None] | None = None,
) -> NotebookRun:
    """Execute ``path`` into ``out_dir``; ``progress`` gets the per-cell lines (default: print them)."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    from toolkit.train.quiet import verbose_requested

    out_dir.mkdir(parents=True, exist_ok=True)
    artifacts = (out_dir / path.stem).resolve()  # absolute: the kernel runs in the notebook's folder
    artifacts.mkdir(parents=True, exist_ok=True)
    output = out_dir / path.name
    params = {"SMOKE": smoke, "OUT_DIR": str(artifacts), **(extra or {})}
    say = progress or _print_line
    log = None if verbose_requested() else kernel_log_path(output)
    if log is not None:
        log.unlink(missing_ok=True)
    start = time.perf_counter()
    try:
        papermill.execute_notebook(
            str(path),
            str(output),
            parameters=params,
            cwd=str(path.parent),
            kernel_name="python3",
            progress_bar=False,
            engine_name=_progress_engine(),
            progress=say,
            extra_arguments=kernel_arguments(),
            kernel_manager_class=kernel_manager_class(log),
        )
    except PapermillExecutionError as exc:
        index, source = _failed_cell(output, exc.exec_count)
        where = f"\n  the kernel's own output: {log}" if log is not None and log.exists() else ""
        raise NotebookError(
            f"{path.name}: cell {index} failed: {exc.ename}: {exc.evalue}\n"
            f"  cell starts: {source!r}\n  executed copy: {output}{where}"
        ) from None
    if log is not None and log.exists() and log.stat().st_size:
        lines = len(log.read_bytes().splitlines())
        say(f"[notebooks] {path.stem}: {lines} lines of library and engine output kept out of sight in {log}")
    return NotebookRun(path.name, time.perf_counter() - start, output)


def kernel_log_path(output: Path) -> Path:
    """Where a quiet run keeps what the kernel process and its children write to their own stdout and
    stderr (not the cells' outputs, which travel over the kernel's messages)."""
    return output.resolve().with_suffix(".kernel.log")  # absolute: papermill runs in the notebook's folder


def kernel_manager_class(log: Path | None) -> type:
    """jupyter_client's kernel manager, whose kernels write their process-level output to ``log``.

    A cell's prints reach the notebook through the kernel's messages, but the processes a cell starts
    inherit the kernel's file descriptors: vLLM's engine process wrote its weight-loading bar, torch's C++
    warnings and Python FutureWarnings straight to `make demo`'s terminal, past the quiet kernel. None
    (verbose): the kernel shares the runner's terminal, as papermill starts it."""
    from jupyter_client import AsyncKernelManager

    if log is None:
        return AsyncKernelManager

    class LoggedKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "ab") as sink:  # the kernel holds its own copy of the descriptor
                kw.setdefault("stdout", sink)
                kw.setdefault("stderr", sink)
                await super()._async_launch_kernel(kernel_cmd, **kw)

    return LoggedKernelManager


def kernel_arguments() -> list[str]:
    """The kernel's command-line options: run ``KERNEL_SETUP`` first, and unless verbose, keep its own
    log (the "running over TCP without encryption" warning every kernel start prints) to errors."""
    from toolkit.train.quiet import verbose_requested

    args = [f"--IPKernelApp.exec_lines={KERNEL_SETUP}"]
    return args if verbose_requested() else [*args, "--IPKernelApp.log_level=ERROR"]


def _print_line(line: str) -> None:
    print(line, flush=True)


def quiet_kernel() -> bool:
    """In a notebook kernel, before the first cell: the libraries' logs and warnings down to errors
    (``quiet_libraries``), and the root logger at WARNING with a plain stderr handler. The MCP SDK's
    servers call ``logging.basicConfig(INFO)`` with a rich handler, which in a kernel renders every INFO
    record of any library (vLLM's Triton note, matplotlib's category units) as a display output of the
    cell; with a root handler already set, that call does nothing. ``MCP_RL_VERBOSE=1`` leaves all as is."""
    from toolkit.train.quiet import quiet_libraries

    if not quiet_libraries():
        return False
    logging.basicConfig(level=logging.WARNING)
    return True


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}" if minutes >= 60 else f"{minutes}:{secs:02d}"


class CellProgress:
    """The per-cell progress lines of one notebook run, from papermill's cell callbacks.

    Code cells are counted, markdown is not, and neither is papermill's injected-parameters cell. A
    daemon thread writes a line every ``heartbeat_s`` while a cell runs, ending with the last line the
    cell printed so far (read from the outputs nbclient appends as they arrive)."""

    def __init__(
        self, name: str, cells: list, write: Callable[[str], None], heartbeat_s: float | None = None
    ):
        self.name = name
        self.write = write
        self.heartbeat_s = HEARTBEAT_S if heartbeat_s is None else heartbeat_s
        own = [
            i
            for i, c in enumerate(cells)
            if c.get("cell_type") == "code"
            and "injected-parameters" not in c.get("metadata", {}).get("tags", [])
        ]
        self.numbers = {index: n for n, index in enumerate(own, 1)}
        self.total = len(own)
        self.started_at = time.perf_counter()
        self._cell: Any = None
        self._cell_label = ""
        self._cell_start = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"progress {name}", daemon=True)
        self._thread.start()

    def _elapsed(self) -> str:
        return _clock(time.perf_counter() - self.started_at)

    def cell_started(self, cell: Any, index: int) -> None:
        if index not in self.numbers:
            return
        first = next((line for line in cell.get("source", "").splitlines() if line.strip()), "")
        with self._lock:
            self._cell, self._cell_start = cell, time.perf_counter()
            self._cell_label = f"{self.name} cell {self.numbers[index]}/{self.total}"
        self.write(f"[notebooks] {self._cell_label} started (elapsed {self._elapsed()}): {first[:80]}")

    def cell_finished(self, cell: Any, index: int, failed: bool) -> None:
        if index not in self.numbers:
            return
        with self._lock:
            seconds, label, self._cell = time.perf_counter() - self._cell_start, self._cell_label, None
        status = "FAILED after" if failed else "done in"
        self.write(f"[notebooks] {label} {status} {seconds:.1f} s (elapsed {self._elapsed()})")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _beat(self) -> None:
        last = time.perf_counter()
        while not self._stop.wait(min(self.heartbeat_s, 1.0)):
            with self._lock:
                cell, label, began = self._cell, self._cell_label, self._cell_start
            now = time.perf_counter()
            if cell is None or now - max(last, began) < self.heartbeat_s:
                continue
            last = now
            said = last_printed_line(cell)
            self.write(
                f"[notebooks] {label} still running, {now - began:.0f} s (elapsed {self._elapsed()})"
                + (f"; last output: {said[:120]}" if said else "")
            )


# The kit's own progress lines on stderr ("[eval] 12/30 episodes, 9.1 s/episode", "[grpo] step 3/4 ...");
# other stderr lines are library noise a heartbeat should not echo.
KIT_PROGRESS_LINE = re.compile(r"^\[[a-z][a-z0-9_/-]*\] ")


def last_printed_line(cell: Any) -> str:
    """The last non-empty line a running cell has written so far ("" when none): from stdout, or a kit
    progress line from stderr (``toolkit.eval.watch.Progress`` writes there) when that came later."""
    for out in reversed(list(cell.get("outputs", []))):
        if out.get("output_type") != "stream" or out.get("name") not in ("stdout", "stderr"):
            continue
        text = out.get("text", "")
        lines = [line.strip() for line in ("".join(text) if isinstance(text, list) else text).splitlines()]
        if out["name"] == "stderr":
            lines = [line for line in lines if KIT_PROGRESS_LINE.match(line)]
        lines = [line for line in lines if line]
        if lines:
            return lines[-1]
    return ""


@functools.cache
def _progress_engine() -> str:
    """Register (once) and name papermill's nbclient engine with ``CellProgress`` hooked into its cell
    callbacks. papermill's engines build a ``NotebookExecutionManager`` in ``execute_notebook`` and call
    its ``cell_start`` / ``cell_exception`` / ``cell_complete``; this engine builds a subclass that also
    reports, and passes the ``progress`` writer through (papermill hands engine keyword arguments on)."""
    from papermill.engines import NBClientEngine, NotebookExecutionManager, papermill_engines

    class ProgressManager(NotebookExecutionManager):
        def __init__(self, nb: Any, progress: CellProgress, **kwargs: Any):
            super().__init__(nb, **kwargs)
            self.progress = progress
            self.failed: set[int] = set()

        def cell_start(self, cell: Any, cell_index: int | None = None, **kwargs: Any) -> None:
            super().cell_start(cell, cell_index, **kwargs)
            self.progress.cell_started(cell, cell_index)

        def cell_exception(self, cell: Any, cell_index: int | None = None, **kwargs: Any) -> None:
            super().cell_exception(cell, cell_index, **kwargs)
            self.failed.add(cell_index)

        def cell_complete(self, cell: Any, cell_index: int | None = None, **kwargs: Any) -> None:
            super().cell_complete(cell, cell_index, **kwargs)
            self.progress.cell_finished(cell, cell_index, failed=cell_index in self.failed)

    class ProgressEngine(NBClientEngine):
        @classmethod
        def execute_notebook(  # papermill's Engine.execute_notebook, with the manager above
            cls,
            nb: Any,
            kernel_name: str,
            output_path: str | None = None,
            progress_bar: bool = False,
            log_output: bool = False,
            autosave_cell_every: int = 30,
            progress: Callable[[str], None] = _print_line,
            **kwargs: Any,
        ) -> Any:
            name = Path(kwargs.get("input_path") or "notebook").stem
            reporter = CellProgress(name, nb.cells, progress)
            nb_man = ProgressManager(
                nb,
                reporter,
                output_path=output_path,
                progress_bar=progress_bar,
                log_output=log_output,
                autosave_cell_every=autosave_cell_every,
            )
            nb_man.notebook_start()
            try:
                cls.execute_managed_notebook(nb_man, kernel_name, log_output=log_output, **kwargs)
            finally:
                reporter.close()
                nb_man.cleanup_pbar()
                nb_man.notebook_complete()
            return nb_man.nb

    papermill_engines.register("mcp-rl-progress", ProgressEngine)
    return "mcp-rl-progress"


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
    if args.verbose:  # the kernels inherit the environment: quiet_kernel leaves their libraries as they are
        from toolkit.train.quiet import VERBOSE_ENV

        os.environ[VERBOSE_ENV] = "1"
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
    run.add_argument(
        "--verbose",
        action="store_true",
        help="keep the libraries' log lines and warnings in the notebooks (default: errors only; "
        "MCP_RL_VERBOSE=1 does the same)",
    )
    run.set_defaults(func=_cmd_run)
    pub = nb_sub.add_parser("publish", help="copy a full run's executed notebooks to docs/notebooks/")
    pub.add_argument("executed", help="folder of executed notebooks (e.g. build/notebooks)")
    pub.add_argument("--dest", default=str(DOCS_NOTEBOOKS), help="target folder (default docs/notebooks)")
    pub.set_defaults(func=_cmd_publish)
