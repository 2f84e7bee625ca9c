"""What `mcp-rl train` prints (issue 51): a start banner, one compact line per step, the libraries' log
noise off unless asked for, a closing line with the adapter and the next command; and a default recipe
whose first steps learn."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TASKS = Path(__file__).parent / "data" / "train_tasks.jsonl"
TINY = {
    "description": "tiny",
    "model": "tiny-random",
    "reward": "rubric",
    "tasks": str(TASKS),
    "eval_tasks": str(TASKS),
    "lora": {"r": 4, "lora_alpha": 8, "target_modules": "all-linear"},
    "rollout": {"max_turns": 1, "max_new_tokens": 6, "max_context_tokens": 1024, "temperature": 1.0},
    "grpo": {"num_generations": 2, "per_device_train_batch_size": 2, "max_steps": 2, "beta": 0.01},
    "sft": {"max_examples": 2, "max_steps": 2, "per_device_train_batch_size": 2},
}
GRPO_LINE = re.compile(
    r"grpo step (\d+)/2 \| reward [\d.]+ ± [\d.]+ \| answered right [\d.]+ \| calls/episode [\d.]+ \| "
    r"kl [\d.]+ \| clipped [\d.]+ \| [\d.]+ s/step, \S+ left$"
)
SFT_LINE = re.compile(r"sft step (\d+)/2 \| loss [\d.]+ \| lr [\d.e+-]+ \| [\d.]+ s/step, \S+ left$")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MCP_RL_VERBOSE", "VLLM_LOGGING_LEVEL")}
    return env | {"PYTHONPATH": str(ROOT), "MCP_RL_THREADS": "1", "TRL_EXPERIMENTAL_SILENCE": "1"} | extra


@pytest.mark.integration
def test_a_run_prints_a_banner_a_line_per_step_no_library_noise_and_where_the_adapter_is(tmp_path):
    recipe, out = tmp_path / "tiny.json", tmp_path / "run"
    recipe.write_text(json.dumps(TINY))
    cmd = [sys.executable, "-m", "toolkit.cli", "train", "--recipe", str(recipe), "--backend", "cpu"]
    done = subprocess.run(
        [*cmd, "--out", str(out)], capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [re.sub(r"^\[mcp-rl train [\d:]+\] ", "", line) for line in done.stdout.splitlines()]
    # no raw log dict (TRL's ~60 keys, or the summary as JSON), on either stream
    assert not [line for line in done.stdout.splitlines() + done.stderr.splitlines() if "{" in line]
    assert [int(m[1]) for m in map(GRPO_LINE.match, lines) if m] == [1, 2], done.stdout
    assert [int(m[1]) for m in map(SFT_LINE.match, lines) if m] == [1, 2], done.stdout
    for phase in ("sft", "grpo"):
        assert any(
            re.match(rf"{phase}: steps 1-2; trainable parameters [\d.]+M of [\d.]+M", x) for x in lines
        )
    # the banner: the machine, and the backend in plain words
    machine = next(x for x in lines if x.startswith("machine: "))
    assert re.search(r"\d+ cores, .*[\d.]+ GiB memory$", machine), machine
    assert "generation: transformers on the CPU; update: transformers + PEFT on the CPU" in lines
    # the libraries' warnings, INFO lines and progress bars stay out (--verbose shows them)
    for noise in ("Warning", "Triton", "Loading weights", "it/s]", "INFO"):
        assert noise not in done.stderr, done.stderr[-2000:]
    # the closing lines: where the adapter is, and a next command the CLI accepts, on that adapter
    assert any(x.startswith(f"adapter: {out / 'adapter'} (warm start: ") for x in lines)
    assert (out / "adapter" / "adapter_config.json").is_file()
    assert lines[-1].startswith("next: mcp-rl eval "), lines[-3:]
    from toolkit.cli import build_parser

    args = build_parser().parse_args(shlex.split(lines[-1].removeprefix("next: mcp-rl ")))
    assert (Path(args.adapter), Path(args.recipe), args.policy) == (
        out / "adapter",
        out / "recipe.json",
        "tiny-random",
    )
    assert (out / "recipe.json").is_file() and args.suite == "kit-eval" and Path(args.tasks) == TASKS


QUIET_PROBE = r"""
import logging, sys, warnings
from toolkit.train.quiet import quiet_libraries
logging.basicConfig(level=logging.INFO)
print(quiet_libraries(True if sys.argv[1] == "flag" else None))
warnings.warn_explicit("library warning", UserWarning, "lib.py", 1, module="trl.generation")
warnings.warn_explicit("kit warning", UserWarning, "kit.py", 1, module="toolkit.train.pipeline")
logging.getLogger("vllm.triton_utils.importing").info("library info")
logging.getLogger("transformers.tokenization").warning("library warning line")
logging.getLogger("toolkit.train").info("kit info")
"""


@pytest.mark.parametrize("how", ["default", "env", "flag"])
def test_library_logs_and_warnings_are_off_unless_asked_for(how):
    env = _env(MCP_RL_VERBOSE="1") if how == "env" else _env()
    arg = "flag" if how == "flag" else "-"
    done = subprocess.run(
        [sys.executable, "-c", QUIET_PROBE, arg], capture_output=True, text=True, env=env, check=True
    )
    quiet = how == "default"
    assert done.stdout.strip() == str(quiet)
    assert "kit warning" in done.stderr and "kit info" in done.stderr  # the kit's own always show
    for line in ("library warning", "library info", "library warning line"):
        assert (line not in done.stderr.replace("kit warning", "")) == quiet, (how, done.stderr)


def test_the_train_command_has_a_verbose_flag():
    from toolkit.cli import build_parser

    args = build_parser().parse_args(["train", "--out", "x", "--verbose"])
    assert args.verbose is True


def test_the_default_recipe_learns_from_its_first_step():
    """With a warmup, transformers runs the first step at learning rate 0 (the kit's own warning said
    so for cpu-demo, the default, on every run): the step costs a batch and changes nothing."""
    from trl import GRPOConfig, SFTConfig

    from toolkit.cli.train import DEFAULT_RECIPE
    from toolkit.train import config as cfg

    recipe = cfg.load_recipe(DEFAULT_RECIPE)
    assert cfg.schedule_warnings(recipe) == []
    for section, cls in ((recipe.sft, SFTConfig), (recipe.grpo, GRPOConfig)):
        assert cfg.first_step_learning_rate(section, cls) == pytest.approx(section["learning_rate"])


CPUINFO = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8488C
flags\t\t: fpu sse2 avx avx2 avx512f avx512bw avx512_bf16 amx_bf16 amx_tile
processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8488C
"""


def test_the_machine_line_names_the_cpu_its_instructions_and_memory():
    from toolkit.train.device import cpu_line

    meminfo = "MemTotal:       16384000 kB\nMemFree:  1 kB\n"
    line = cpu_line(CPUINFO, meminfo, cores=2)
    assert line == "Intel(R) Xeon(R) Platinum 8488C, 2 cores, AVX2 AVX512 AVX512-BF16 AMX, 15.6 GiB memory"
    older = cpu_line(CPUINFO.replace(" avx512f avx512bw avx512_bf16 amx_bf16 amx_tile", ""), "", cores=4)
    assert older == "Intel(R) Xeon(R) Platinum 8488C, 4 cores, AVX2"


def test_the_backend_is_named_by_what_generates_and_what_trains():
    """Not "backend vllm (cpu: transformers + PEFT (no CUDA GPU))", which read as a contradiction."""
    from toolkit.train.device import DeviceInfo, backend_words

    cpu = DeviceInfo(cuda=False, gpu_name=None, missing_gpu_packages=("unsloth",))
    gpu = DeviceInfo(cuda=True, gpu_name="H100", missing_gpu_packages=())
    assert backend_words("vllm", cpu) == (
        "generation: vLLM (CPU build), the adapter reloaded after every step; "
        "update: transformers + PEFT on the CPU"
    )
    assert (
        backend_words("cpu", cpu)
        == "generation: transformers on the CPU; update: transformers + PEFT on the CPU"
    )
    assert (
        backend_words("gpu", gpu)
        == "generation: vLLM inside Unsloth on the GPU; update: Unsloth + PEFT on the GPU"
    )
    assert backend_words("vllm-server", cpu, "http://h:8000/v1").startswith(
        "generation: the vLLM server at http://h:8000/v1;"
    )


def test_a_grpo_step_line_without_a_reference_model_shows_no_kl():
    from types import SimpleNamespace

    from toolkit.train.callbacks import StepLines

    printed: list[str] = []
    lines = StepLines("grpo", print_fn=lambda line, flush: printed.append(line))
    state = SimpleNamespace(global_step=0, max_steps=26, is_world_process_zero=True)
    lines.on_train_begin(None, state, None)
    state.global_step = 1
    logs = {
        "reward": 0.6,
        "reward_std": 0.32,
        "episodes/answer_correct": 0.40625,
        "episodes/tool_calls_mean": 1.4375,
    }
    lines.on_log(
        None, state, None, logs={**logs, "clip_ratio/region_mean": 0.0038, "loss": -0.01, "epoch": 0.01}
    )
    assert re.match(
        r"grpo step 1/26 \| reward 0\.600 ± 0\.320 \| answered right 0\.41 \| calls/episode 1\.44 \| kl - \| "
        r"clipped 0\.004 \| [\d.]+ s/step, \S+ left$",
        printed[0],
    ), printed
