"""What `mcp-rl notebooks run` (`make demo`) shows while it works, and what the kernels keep out of the
executed notebooks (issue 51): a line per code cell as it starts and ends (the notebook, cell i of n, the
elapsed time), a line now and then for a cell that runs long (notebook 04's training cell ran for minutes
with nothing but library log lines), and no library log lines or warnings in the outputs unless asked for."""

from __future__ import annotations

import re

import nbformat
import pytest

from toolkit import notebooks


def _write(path, cells):
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("SMOKE = False\nOUT_DIR = 'unset'")
    params.metadata["tags"] = ["parameters"]
    body = [
        nbformat.v4.new_markdown_cell(c[3:]) if c.startswith("md:") else nbformat.v4.new_code_cell(c)
        for c in cells
    ]
    nb.cells = [params, *body]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))


def test_progress_counts_code_cells_only_and_names_the_notebook():
    cells = [
        nbformat.v4.new_code_cell("SMOKE = True", metadata={"tags": ["injected-parameters"]}),
        nbformat.v4.new_markdown_cell("# title"),
        nbformat.v4.new_code_cell("\n\nx = 1  # first line with text"),
        nbformat.v4.new_code_cell("raise ValueError"),
    ]
    lines: list[str] = []
    progress = notebooks.CellProgress("04_grpo_training", cells, lines.append, heartbeat_s=3600)
    try:
        for index, cell in enumerate(cells):
            progress.cell_started(cell, index)
            progress.cell_finished(cell, index, failed=index == 3)
    finally:
        progress.close()
    assert len(lines) == 4, lines  # the injected and the markdown cell say nothing
    assert re.fullmatch(
        r"\[notebooks\] 04_grpo_training cell 1/2 started \(elapsed 0:00\): x = 1 .*", lines[0]
    )
    assert re.fullmatch(
        r"\[notebooks\] 04_grpo_training cell 1/2 done in \d+\.\d s \(elapsed 0:00\)", lines[1]
    )
    assert "cell 2/2 started" in lines[2] and "cell 2/2 FAILED after" in lines[3]


def test_the_clock_reads_minutes_then_hours():
    assert [notebooks._clock(s) for s in (0, 59.9, 61, 3599, 3600, 7325)] == [
        "0:00",
        "0:59",
        "1:01",
        "59:59",
        "1:00:00",
        "2:02:05",
    ]


def test_last_printed_line_reads_stdout_and_kit_progress_on_stderr():
    """Before: only stdout was read, so a cell whose work reports on stderr (``run_eval``'s Progress, as
    notebook 05's BFCL cell) beat for 14 minutes with no last output."""
    cell = nbformat.v4.new_code_cell("")
    assert notebooks.last_printed_line(cell) == ""
    cell.outputs = [
        nbformat.v4.new_output(
            "stream", name="stdout", text="step 1/4 reward 0.10\nstep 2/4 reward 0.20\n\n"
        ),
        nbformat.v4.new_output("stream", name="stderr", text="a warning\n[W socket] noise\n"),
    ]
    assert notebooks.last_printed_line(cell) == "step 2/4 reward 0.20"  # library noise is not echoed
    cell.outputs.append(
        nbformat.v4.new_output(
            "stream",
            name="stderr",
            text="[eval] 3/30 episodes, 9.0 s/episode\n[eval] 6/30 episodes, 8.7 s/episode, pass so far 0.17\n",
        )
    )
    assert notebooks.last_printed_line(cell) == "[eval] 6/30 episodes, 8.7 s/episode, pass so far 0.17"
    cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text="before: done\n"))
    assert notebooks.last_printed_line(cell) == "before: done"


@pytest.mark.integration
def test_run_reports_every_cell_and_beats_while_one_runs_long(tmp_path, monkeypatch):
    """Before: `run_notebook` printed nothing per cell (papermill's progress bar was off) and took no
    `progress` writer; `make demo` showed one line per notebook."""
    monkeypatch.setattr(notebooks, "HEARTBEAT_S", 0.5)
    _write(
        tmp_path / "01_long.ipynb",
        [
            "md:# a heading",
            "import time\nfor i in range(4):\n    print(f'step {i}/4', flush=True)\n    time.sleep(0.6)",
            "y = 2",
        ],
    )
    lines: list[str] = []
    notebooks.run_notebook(tmp_path / "01_long.ipynb", tmp_path / "build", smoke=True, progress=lines.append)
    started = [line for line in lines if " started " in line]
    done = [line for line in lines if " done in " in line]
    assert [re.search(r"cell (\d/\d)", line).group(1) for line in started] == ["1/3", "2/3", "3/3"]
    assert len(done) == 3 and all("01_long" in line and "elapsed" in line for line in started + done)
    beats = [line for line in lines if "still running" in line]
    assert beats and all("01_long cell 2/3" in line for line in beats), lines
    assert any(re.search(r"last output: step \d/4$", line) for line in beats), beats


NOISY_CELL = """import logging, warnings
from mcp.server.mcpserver import MCPServer

MCPServer("noise")  # the SDK's logging.basicConfig(INFO) with a rich handler, as every in-process server
logging.getLogger("vllm.triton_utils.importing").info("Triton not installed or not compatible")
logging.getLogger("matplotlib.category").info("Using categorical units to plot")
logging.getLogger("transformers.tokenization_utils").warning("tokenizer says so")
warnings.warn_explicit("TRL complains", UserWarning, "trl/trainer.py", 1, module="trl.trainer")
print("the kit's own line")
logging.getLogger("toolkit.anything").warning("a kit warning stays")
"""
NOISE = ("Triton not installed", "categorical units", "tokenizer says so", "TRL complains")


def _outputs_text(executed) -> str:
    nb = nbformat.read(str(executed), as_version=4)
    return "\n".join(str(out) for cell in nb.cells for out in cell.get("outputs", []))


@pytest.mark.integration
def test_kernels_keep_library_noise_out_of_the_executed_notebook(tmp_path, monkeypatch):
    """Before: vLLM's Triton INFO line and matplotlib's INFO line reached the published copies
    (docs/notebooks/02, 04, 05) as rich display outputs; library warnings reached the cells' stderr."""
    monkeypatch.delenv("MCP_RL_VERBOSE", raising=False)
    _write(tmp_path / "01_noise.ipynb", [NOISY_CELL])
    run = notebooks.run_notebook(tmp_path / "01_noise.ipynb", tmp_path / "quiet", smoke=True, progress=print)
    text = _outputs_text(run.output)
    assert "the kit's own line" in text and "a kit warning stays" in text
    assert not [n for n in NOISE if n in text], text

    monkeypatch.setenv("MCP_RL_VERBOSE", "1")  # asked for: all of it, as the libraries set it
    run = notebooks.run_notebook(
        tmp_path / "01_noise.ipynb", tmp_path / "verbose", smoke=True, progress=print
    )
    text = _outputs_text(run.output)
    assert all(n in text for n in NOISE), text


ENGINE_CELL = """import subprocess, sys
child = "import os; os.write(2, b'engine noise on fd 2\\\\n'); os.write(1, b'engine line on fd 1\\\\n')"
subprocess.run([sys.executable, "-c", child], check=True)  # as vLLM's engine process: the kernel's fds
print("the cell's own line")
"""


@pytest.mark.integration
def test_processes_a_cell_starts_write_to_the_kernel_log_not_the_terminal(tmp_path, monkeypatch, capfd):
    """Before: vLLM's engine process, started by a cell, wrote its weight-loading bar, torch's C++ warnings
    and Python FutureWarnings straight to `make demo`'s terminal, past the quiet kernel."""
    monkeypatch.delenv("MCP_RL_VERBOSE", raising=False)
    _write(tmp_path / "01_engine.ipynb", [ENGINE_CELL])
    lines: list[str] = []
    run = notebooks.run_notebook(
        tmp_path / "01_engine.ipynb", tmp_path / "build", smoke=True, progress=lines.append
    )
    terminal = "".join(capfd.readouterr())
    assert "engine noise" not in terminal and "engine line" not in terminal, terminal
    log = notebooks.kernel_log_path(run.output)
    assert "engine noise on fd 2" in log.read_text() and "engine line on fd 1" in log.read_text()
    assert "the cell's own line" in _outputs_text(run.output)
    assert any(f"kept out of sight in {log}" in line for line in lines), lines


def test_notebooks_run_verbose_flag_reaches_the_kernels(monkeypatch):
    from toolkit.cli import build_parser

    monkeypatch.setenv("MCP_RL_VERBOSE", "0")  # restored after the test: the flag sets it for the process
    assert "--IPKernelApp.log_level=ERROR" in notebooks.kernel_arguments()
    args = build_parser().parse_args(["notebooks", "run", "--verbose", "--only", "99"])
    assert args.func(args) == 1  # no notebook 99; the flag was applied before the run started
    assert notebooks.kernel_arguments() == [f"--IPKernelApp.exec_lines={notebooks.KERNEL_SETUP}"]
