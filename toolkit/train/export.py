"""Save and merge LoRA adapters."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def merge_adapter(base: str, adapter: str | Path, out_dir: str | Path, *, dtype: Any = None) -> Path:
    """Load ``base`` + ``adapter``, fold the LoRA weights into the base weights, save a plain model.

    The merged folder loads with ``AutoModelForCausalLM.from_pretrained`` (or vLLM) without PEFT.
    """
    from toolkit.models import load_policy

    model, tokenizer = load_policy(base, adapter=str(adapter), dtype=dtype)
    merged = model.merge_and_unload()
    out = Path(out_dir)
    merged.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return out
