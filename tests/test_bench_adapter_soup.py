"""``python -m bench.adapter_soup``: the mean of LoRA adapters, tensor by tensor."""

import pytest
import torch
from safetensors.torch import load_file, save_file

from bench.adapter_soup import WEIGHTS, average_adapters


def _adapter(folder, scale):
    folder.mkdir()
    save_file(
        {"a": torch.full((2, 3), scale, dtype=torch.bfloat16), "b": torch.arange(4.0) * scale},
        folder / WEIGHTS,
    )
    (folder / "adapter_config.json").write_text('{"r": 16}')
    return folder


def test_the_soup_is_the_mean_with_the_first_config(tmp_path):
    soup = average_adapters([_adapter(tmp_path / "x", 1.0), _adapter(tmp_path / "y", 3.0)], tmp_path / "soup")
    t = load_file(soup / WEIGHTS)
    assert t["a"].dtype == torch.bfloat16 and torch.equal(
        t["a"], torch.full((2, 3), 2.0, dtype=torch.bfloat16)
    )
    assert torch.equal(t["b"], torch.arange(4.0) * 2)
    assert (soup / "adapter_config.json").read_text() == '{"r": 16}'


def test_adapters_with_other_tensors_are_refused(tmp_path):
    x = _adapter(tmp_path / "x", 1.0)
    (tmp_path / "y").mkdir()
    save_file({"a": torch.zeros(2, 3)}, tmp_path / "y" / WEIGHTS)
    with pytest.raises(ValueError, match="not the same LoRA"):
        average_adapters([x, tmp_path / "y"], tmp_path / "soup")
    with pytest.raises(ValueError, match="at least two"):
        average_adapters([x], tmp_path / "soup")
