"""The LoRA reference refresh: copy_adapter_weights and PeftRefSyncCallback on a real PEFT model with a
trained "default" adapter and a frozen "ref" adapter, as TRL sets them up for GRPO with beta > 0."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from toolkit.train.callbacks import PeftRefSyncCallback, copy_adapter_weights


@pytest.fixture
def two_adapters():
    """tiny-random with LoRA adapters "default" (moved away from its init) and "ref" (the start)."""
    from peft import LoraConfig, get_peft_model

    from toolkit.models import load_policy

    base, _ = load_policy("tiny-random")
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    model = get_peft_model(base, config)
    model.add_adapter("ref", config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if ".default." in name:
                param.add_(torch.full_like(param, 0.5))  # "training" moved the default adapter
    return model


def lora(model, adapter: str) -> dict[str, torch.Tensor]:
    return {
        name.replace(f".{adapter}.", "."): p.detach().clone()
        for name, p in model.named_parameters()
        if f".{adapter}." in name
    }


def test_copy_adapter_weights_copies_or_mixes_every_lora_tensor(two_adapters):
    model = two_adapters
    default, ref = lora(model, "default"), lora(model, "ref")
    assert default.keys() == ref.keys() and all(not torch.equal(default[k], ref[k]) for k in default)

    n = copy_adapter_weights(model, "default", "ref", alpha=0.5)
    assert n == len(default) == 2 * 2 * 2  # 2 layers x (q_proj, v_proj) x (lora_A, lora_B)
    mixed = lora(model, "ref")
    for k in default:
        torch.testing.assert_close(mixed[k], 0.5 * default[k] + 0.5 * ref[k])
    assert all(torch.equal(default[k], lora(model, "default")[k]) for k in default)  # source untouched

    copy_adapter_weights(model, "default", "ref")  # alpha 1: a plain copy
    assert all(torch.equal(default[k], lora(model, "ref")[k]) for k in default)


def test_peft_ref_sync_callback_refreshes_every_n_steps_through_the_accelerator(two_adapters):
    model = two_adapters
    before = lora(model, "ref")
    unwrapped = []
    accelerator = SimpleNamespace(unwrap_model=lambda m: unwrapped.append(m) or m)
    callback = PeftRefSyncCallback(every=3, accelerator=accelerator)

    for step in (1, 2):  # not a multiple of 3: the reference stays as it was
        callback.on_step_end(None, SimpleNamespace(global_step=step), None, model=model)
    assert callback.syncs == 0 and all(torch.equal(before[k], lora(model, "ref")[k]) for k in before)

    callback.on_step_end(None, SimpleNamespace(global_step=3), None, model=model)
    assert callback.syncs == 1 and unwrapped == [model]
    default = lora(model, "default")
    assert all(torch.equal(default[k], lora(model, "ref")[k]) for k in default)


def test_peft_ref_sync_callback_skips_models_without_a_reference_adapter():
    from peft import LoraConfig, get_peft_model

    from toolkit.models import load_policy

    base, _ = load_policy("tiny-random")
    model = get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj"]))  # beta = 0: no "ref"
    callback = PeftRefSyncCallback(every=1)
    callback.on_step_end(None, SimpleNamespace(global_step=1), None, model=model)
    callback.on_step_end(None, SimpleNamespace(global_step=2), None, model=None)
    assert callback.syncs == 0
    with pytest.raises(ValueError, match=">= 1"):
        PeftRefSyncCallback(every=0)


@pytest.mark.parametrize("ipython", [True, False])
def test_step_lines_replace_the_printers_with_and_without_ipython(monkeypatch, ipython):
    """transformers' notebook table imports IPython, which a plain GPU machine need not have: training
    there failed at its first trainer (2026-11-28, an H200 image without IPython). The table is removed
    where IPython exists (a notebook would draw it), and not imported where it does not."""
    import sys

    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    from toolkit.train.callbacks import StepLines, use_step_lines

    if ipython:
        pytest.importorskip("IPython")
    else:
        for name in [
            m
            for m in sys.modules
            if m == "IPython" or m.startswith(("IPython.", "transformers.utils.notebook"))
        ]:
            monkeypatch.delitem(sys.modules, name)
        monkeypatch.setitem(sys.modules, "IPython", None)  # import IPython raises ImportError
    removed, added = [], []
    trainer = SimpleNamespace(remove_callback=removed.append, add_callback=added.append)
    lines = use_step_lines(trainer, "grpo")
    expected = [PrinterCallback, ProgressCallback]
    if ipython:
        from transformers.utils.notebook import NotebookProgressCallback

        expected.append(NotebookProgressCallback)
    assert removed == expected and added == [lines] and isinstance(lines, StepLines)
