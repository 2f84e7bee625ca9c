"""The install story: pins agree between pyproject.toml and environment.yml, the CLI loads, and
importing the package never pulls in the GPU stack."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib

import pytest

from toolkit.paths import REPO_ROOT


def _pyproject() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


def _pins(lines: list[str]) -> dict[str, str]:
    pins = {}
    for line in lines:
        m = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)==([^\s;]+)\s*", line)
        if m:
            pins[m.group(1).lower()] = m.group(2)
    return pins


def _environment_pip_lines() -> list[str]:
    text = (REPO_ROOT / "environment.yml").read_text()
    block = text.split("- pip:", 1)[1]
    return [ln.strip()[2:] for ln in block.splitlines() if ln.strip().startswith("- ")]


def test_environment_yml_matches_pyproject_pins():
    project = _pyproject()["project"]
    extras = project["optional-dependencies"]
    wanted = _pins(project["dependencies"] + extras["dev"] + extras["bfcl"])
    have = _pins(_environment_pip_lines())
    assert have == wanted, (
        f"environment.yml pip section differs from pyproject.toml: {set(have.items()) ^ set(wanted.items())}"
    )
    assert "python=3.11" in (REPO_ROOT / "environment.yml").read_text()


def test_every_runtime_dependency_is_pinned():
    project = _pyproject()["project"]
    for dep in project["dependencies"] + [
        d for deps in project["optional-dependencies"].values() for d in deps
    ]:
        assert "==" in dep, f"{dep} is not pinned"


def test_cpu_install_pins_the_cpu_torch():
    assert "torch==2.13.0" in _pyproject()["project"]["dependencies"]
    assert "torch==2.13.0" in (REPO_ROOT / "Makefile").read_text()
    from toolkit.colab import TORCH  # what the Colab install cell installs

    assert f"torch=={TORCH}" in _pyproject()["project"]["dependencies"]


def test_import_toolkit_never_imports_gpu_stack():
    code = (
        "import sys, importlib, pkgutil, toolkit\n"
        "for m in pkgutil.walk_packages(toolkit.__path__, 'toolkit.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in {'unsloth', 'vllm'})\n"
        "print(bad)\n"
        "assert not bad, bad\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def test_cli_help_lists_core_commands():
    out = subprocess.run(
        [sys.executable, "-m", "toolkit.cli", "--help"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "notebooks" in out.stdout


@pytest.mark.parametrize("target", ["setup", "demo", "test", "notebooks", "lint"])
def test_makefile_has_target(target):
    assert re.search(rf"^{target}:", (REPO_ROOT / "Makefile").read_text(), re.M)


def test_ci_calls_make_test():
    assert "make test" in (REPO_ROOT / ".ci" / "run").read_text()


def test_make_test_lints_first():
    """CI runs `make test`: it must fail on a lint error or an unformatted file, not only on tests."""
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert re.search(r"^test: .*\blint\b", makefile, re.M)
    lint = re.search(r"^lint:.*\n((?:\t.*\n)+)", makefile, re.M)[1]
    assert "ruff check ." in lint and "ruff format --check ." in lint


def test_records_reject_wrong_types_and_survive_hostile_text(tmp_path):
    from toolkit.records import RecordError, Task, Trajectory, read_jsonl, write_jsonl

    path = tmp_path / "t.jsonl"
    # a lone surrogate (valid JSON escape, invalid UTF-8) is written escaped and reads back unchanged
    write_jsonl(path, [Trajectory("t", [{"role": "assistant", "content": "ok \ud800"}])])
    assert read_jsonl(path, Trajectory)[0].messages[0]["content"] == "ok \ud800"
    bad = {"id": "a", "split": "train", "prompt": None, "servers": [], "tools": "abc", "seed": 0}
    path.write_text(
        '{"id": "ok", "split": "train", "prompt": "p", "servers": [], "tools": [], "seed": 0}\n'
        + json.dumps(bad)
        + "\n"
    )
    with pytest.raises(RecordError, match=r"t.jsonl:2: .*Task.prompt"):
        read_jsonl(path, Task)
    path.write_text("[" * 100000 + "\n")
    with pytest.raises(RecordError, match=r"t.jsonl:1"):
        read_jsonl(path, Task)
