"""LoRA adapters on the tiny model for tests that ship, load or evaluate adapters without training."""

from __future__ import annotations

from pathlib import Path

import torch

from toolkit.models import TINY_MODEL, load_policy


def lora_adapter(folder: Path, seed: int) -> None:
    """A LoRA adapter on the tiny model with non-zero B (so it changes the logits), saved in float32 with
    the extras a trainer leaves beside it."""
    from peft import LoraConfig, get_peft_model

    model, tokenizer = load_policy(TINY_MODEL)
    torch.manual_seed(seed)
    config = LoraConfig(r=4, lora_alpha=16, target_modules="all-linear", init_lora_weights=False)
    get_peft_model(model, config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    (folder / "training_args.bin").write_bytes(b"pickle")
