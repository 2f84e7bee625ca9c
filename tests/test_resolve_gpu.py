"""The pinned set resolves for every target, checked with uv's resolver without installing anything.

`uv pip compile` resolves pyproject.toml for a target platform and Python version from PyPI's metadata
(no GPU, no CUDA, no download of the wheels themselves), so this runs on a CPU machine and fails on any
conflict. It needs the network to PyPI; uv caches what it read, so a second run takes seconds.
The commands are the ones docs/gpu.md quotes. Python 3.13 and 3.12 (Colab's runtimes) and 3.11 are
target versions only: no such interpreter is needed here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from toolkit import colab
from toolkit.paths import REPO_ROOT

LINUX_X86_64 = "x86_64-manylinux_2_28"
# Colab's image is Ubuntu 22.04 (glibc 2.35; googlecolab/backend-info os-info-gpu.txt). There every
# package must come as a wheel: a source build of vLLM's dependencies is not an install cell's job.
COLAB = "x86_64-manylinux_2_35"


def _uv() -> str:
    found = shutil.which("uv") or shutil.which("uv", path=str(Path(sys.executable).parent))
    if not found:
        pytest.skip("uv is not installed (it is in the `dev` extra: pip install -e '.[dev]')")
    return found


def _compile(
    pyproject: Path, extras: list[str], python: str, out: Path, platform: str = LINUX_X86_64
) -> subprocess.CompletedProcess:
    cmd = [_uv(), "pip", "compile", str(pyproject), "--python-platform", platform]
    cmd += ["--python-version", python, "--no-header", "-o", str(out)]
    if platform == COLAB:
        cmd += ["--only-binary", ":all:"]
    for extra in extras:
        cmd += ["--extra", extra]
    # never fetch a managed Python: the target version only selects wheels and markers
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)


def _resolved(out: Path) -> dict[str, str]:
    pins = {}
    for line in out.read_text().splitlines():
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==(\S+)", line.strip())
        if m:
            pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    return pins


CASES = {
    "gpu-py312": (["gpu"], "3.12", LINUX_X86_64),  # one CUDA GPU, Linux x86_64
    "gpu-py313": (["gpu"], "3.13", LINUX_X86_64),
    "cpu-py311": (["dev", "bfcl"], "3.11", LINUX_X86_64),  # `make setup` (CPU)
    "cpu-py313": (["dev", "bfcl"], "3.13", LINUX_X86_64),
    # Colab: its default runtime is Python 3.13 (since 2026-08), 3.12 by "Change runtime version".
    # The install cell (toolkit/colab.py) installs `gpu,bfcl` on a GPU runtime, `bfcl` on a CPU one.
    "colab-gpu-py313": (["gpu", "bfcl"], "3.13", COLAB),
    "colab-gpu-py312": (["gpu", "bfcl"], "3.12", COLAB),
    "colab-cpu-py313": (["bfcl"], "3.13", COLAB),
    "colab-cpu-py312": (["bfcl"], "3.12", COLAB),
}


@pytest.mark.parametrize(("extras", "python", "platform"), list(CASES.values()), ids=list(CASES))
def test_pinned_set_resolves(tmp_path, extras, python, platform):
    out = tmp_path / "resolved.txt"
    proc = _compile(REPO_ROOT / "pyproject.toml", extras, python, out, platform)
    assert proc.returncode == 0, f"uv could not resolve {extras} for Python {python}:\n{proc.stderr[-4000:]}"
    resolved = _resolved(out)
    # the exact pins survive resolution: nothing upgraded or swapped them
    assert resolved["torch"] == "2.13.0"
    assert resolved["transformers"] == "5.17.0"
    assert resolved["trl"] == "1.15.0"
    if "gpu" in extras:
        assert resolved["unsloth"] == "2026.10.7"
        assert resolved["unsloth-zoo"] == "2026.10.7"
        assert resolved["vllm"] == "0.30.0"
        # what the Colab install cell takes from the CUDA 12.9 indexes is what the set resolves to
        assert [resolved[p] for p in ("torch", "torchvision", "vllm")] == [
            colab.TORCH, colab.TORCHVISION, colab.VLLM
        ]  # fmt: skip
    else:
        assert "vllm" not in resolved and "unsloth" not in resolved
        # nothing in the CPU set pulls the torch family the Colab cell removes on a CPU runtime
        assert not set(colab.TORCH_FAMILY) & set(resolved), set(colab.TORCH_FAMILY) & set(resolved)


def test_requires_python_admits_colabs_pythons():
    """uv resolves for a target Python without checking the project's own requires-python: this does."""
    from packaging.specifiers import SpecifierSet

    spec = SpecifierSet(
        tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    )
    # Colab's default runtime (googlecolab/backend-info os-info-gpu.txt, 2026-08-19), its 3.12, make setup's
    for version in ("3.13.15", "3.12.12", "3.11.7"):
        assert spec.contains(version), f"requires-python {spec} refuses Python {version}"
    assert colab.PYTHONS == ((3, 11), (3, 12), (3, 13))


# The pins before issue 17 (README's `pip install -e ".[gpu]"` could not install them).
OLD_PINS = {"transformers": "5.23.0", "trl": "1.16.0", "datasets": "5.2.0", "numpy": "2.4.6"}
OLD_GPU = 'gpu = ["unsloth==2026.10.9", "vllm==0.33.0"]'


def _with_old_pins(text: str) -> str:
    for name, version in OLD_PINS.items():
        text, n = re.subn(rf'"{name}==[^"]+"', f'"{name}=={version}"', text)
        assert n == 1, name
    text, n = re.subn(r"^gpu = \[.*\]$", OLD_GPU, text, flags=re.M)
    assert n == 1
    return text


def test_old_pins_fail_to_resolve_for_the_gpu(tmp_path):
    """The check has teeth: the pin set it replaced does not resolve, and uv names the conflict."""
    project = tmp_path / "old"
    project.mkdir()
    (project / "pyproject.toml").write_text(_with_old_pins((REPO_ROOT / "pyproject.toml").read_text()))
    (project / "README.md").write_text("old pins\n")
    proc = _compile(project / "pyproject.toml", ["gpu"], "3.12", tmp_path / "out.txt")
    assert proc.returncode != 0
    assert "No solution found when resolving dependencies" in proc.stderr, proc.stderr[-4000:]
    # the first conflict uv reports: unsloth 2026.10.9 caps trl at 1.15.0, the old set pinned 1.16.0
    assert "unsloth" in proc.stderr and "trl" in proc.stderr, proc.stderr[-4000:]
