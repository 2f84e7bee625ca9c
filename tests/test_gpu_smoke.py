"""``python -m bench.gpu_smoke`` on the CPU: the kit's pipeline through the Unsloth backend with a fake
``FastLanguageModel`` (tests/unsloth_fakes.py) and no vLLM, down to its one JSON line. The GPU runs of the
same command are in docs/gpu.md."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # unsloth_fakes
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ is not part of the installed package
from unsloth_fakes import FakeFastLanguageModel  # noqa: E402


def _line(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.integration
def test_the_smoke_run_trains_and_reports_one_json_line(tmp_path, capsys):
    from bench.gpu_smoke import main

    out = tmp_path / "smoke"
    argv = [
        "--model",
        "tiny-random",
        "--out",
        str(out),
        "--sft-steps",
        "2",
        "--grpo-steps",
        "1",
        "--vllm",
        "off",
    ]
    code = main(argv, fast_language_model=FakeFastLanguageModel, cpu_precision=True)
    result = _line(capsys)
    assert code == 0 and result["ok"] is True, result.get("traceback")
    assert json.loads((out / "smoke.json").read_text()) == result
    assert result["generation"] == "unsloth-transformers" and result["grpo_steps"] == 1
    assert result["versions"]["trl"] and result["versions"]["transformers"]
    assert result["rollout_tokens"] > 0 and result["rollout_tokens_per_s"] > 0
    # the same weights, float32 on both sides: the sampling logprobs are the trainer's
    assert result["logprobs"]["n_tokens"] > 0 and result["logprobs"]["max_abs_diff"] < 0.01
    assert result["adapter_moved"]["sft"] is True and result["adapter_moved"]["keys_equal"] is True
    # TRL's settings, not Unsloth's (here TRL's own classes: the values the cpu backend trains with)
    assert result["sft_config"]["optim"] != "adamw_8bit" and result["sft_config"]["weight_decay"] == 0.0
    assert result["grpo_config"]["use_vllm"] is False


def test_a_failed_smoke_run_is_a_json_line_with_the_error(tmp_path, capsys):
    from bench.gpu_smoke import main

    class Broken(FakeFastLanguageModel):
        @classmethod
        def from_pretrained(cls, model_name, **kwargs):
            raise RuntimeError("CUDA error: no kernel image is available")

    code = main(
        ["--model", "tiny-random", "--out", str(tmp_path / "s"), "--vllm", "off"], fast_language_model=Broken
    )
    result = _line(capsys)
    assert code == 1 and result["ok"] is False and "no kernel image" in result["error"]
    assert "Traceback" in result["traceback"]
