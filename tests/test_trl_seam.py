"""One seam between the kit and the RL library: TRL is imported in ``toolkit/train/trl_adapter.py`` and,
below the train layer, in ``toolkit/models.py`` (TRL's tool chat template), and nowhere else in toolkit/.
Another module that imports TRL is a second seam: its coupling goes into the adapter instead."""

from __future__ import annotations

import ast
from pathlib import Path

TOOLKIT = Path(__file__).resolve().parents[1] / "toolkit"
SEAM = {"toolkit/train/trl_adapter.py", "toolkit/models.py"}


def modules_importing(package: str, root: Path = TOOLKIT) -> set[str]:
    """toolkit's files with an ``import package`` / ``from package[.x] import ...``, at any depth (the
    imports inside functions count: they are how the kit keeps TRL out of ``import toolkit``)."""
    found = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            if any(n == package or n.startswith(package + ".") for n in names):
                found.add(path.relative_to(root.parent).as_posix())
    return found


def test_trl_is_imported_in_the_adapter_and_the_tool_template_only():
    importing = modules_importing("trl")
    assert importing <= SEAM, f"TRL imported outside the seam: {sorted(importing - SEAM)}"
    assert len(importing) <= 2


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    """The scan is not blind: a module with ``from trl import X`` inside a function is found."""
    (tmp_path / "toolkit").mkdir()
    (tmp_path / "toolkit" / "sneaky.py").write_text("def f():\n    from trl.trainer import utils\n")
    (tmp_path / "toolkit" / "fine.py").write_text("from toolkit.train.trl_adapter import rollout_func\n")
    assert modules_importing("trl", tmp_path / "toolkit") == {"toolkit/sneaky.py"}


def test_importing_the_adapter_imports_no_trl():
    """Unsloth patches TRL only when imported first (``unsloth_backend.import_unsloth``): the adapter
    itself must be importable without TRL coming along."""
    import subprocess
    import sys

    code = "import sys, toolkit.train.trl_adapter, toolkit.train.grpo; print('trl' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
