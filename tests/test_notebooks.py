"""Every numbered notebook executes top to bottom headless in smoke mode (what CI runs)."""

from __future__ import annotations

import pytest

from toolkit import notebooks


@pytest.mark.integration
@pytest.mark.parametrize("path", notebooks.find_notebooks(), ids=lambda p: p.stem)
def test_notebook_runs_in_smoke_mode(path, tmp_path):
    run = notebooks.run_notebook(path, tmp_path, smoke=True)
    assert run.output.exists()
