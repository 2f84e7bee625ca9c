"""LoRA adapters saved by the trainers, loaded back strictly.

A key that does not match leaves a layer with the wrong weights and no error (``strict=False`` loads
do exactly that), so every load here checks that each tensor of the adapter came from the file and
each tensor of the file landed in the adapter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class AdapterMismatch(ValueError):
    """A saved adapter that does not fit the live LoRA (config, shapes or weight keys)."""


def load_weights_strict(model: Any, folder: str | Path, adapter_name: str) -> int:
    """Load the adapter weights saved in ``folder`` into ``model``'s adapter ``adapter_name``; every tensor
    of the adapter must come from the file, every tensor of the file must land in it, and the values are
    compared after loading. Returns the number of tensors; raises ``AdapterMismatch`` naming the keys."""
    from peft.utils import get_peft_model_state_dict, load_peft_weights, set_peft_model_state_dict

    folder = Path(folder)
    weights = load_peft_weights(str(folder), device="cpu")
    try:
        result = set_peft_model_state_dict(model, weights, adapter_name=adapter_name)
    except RuntimeError as exc:  # torch's load_state_dict: a tensor of another shape (another rank)
        raise AdapterMismatch(
            f"{folder}: its {adapter_name!r} adapter does not fit the policy: {exc}"
        ) from exc
    loaded = get_peft_model_state_dict(model, adapter_name=adapter_name)
    problems = [f"not an adapter weight: {k}" for k in result.unexpected_keys]
    problems += [f"missing from the file: {k}" for k in sorted(set(loaded) - set(weights))]
    problems += [f"not in the model: {k}" for k in sorted(set(weights) - set(loaded))]
    problems += [
        f"not loaded: {k}"
        for k in sorted(set(weights) & set(loaded))
        if not loaded[k].detach().cpu().equal(weights[k].to(loaded[k].dtype))
    ]
    if problems:
        shown = "; ".join(problems[:5]) + (f"; ... ({len(problems)} in all)" if len(problems) > 5 else "")
        raise AdapterMismatch(f"{folder}: its {adapter_name!r} adapter does not fit the policy: {shown}")
    return len(loaded)


def load_checkpoint_adapter(model: Any, checkpoint: str | Path) -> int:
    """Put the trained adapter saved in a GRPO checkpoint into the policy, strictly
    (``load_weights_strict``); returns the number of tensors loaded (0 for a model without adapters, or
    a checkpoint without adapter weights).

    Why: with ``beta > 0`` the PEFT model holds two adapters, the trained ``"default"`` and TRL's frozen
    ``"ref"``, so PEFT saves ``"default"`` at the checkpoint's root and ``"ref"`` in ``ref/``. transformers'
    ``Trainer._load_from_checkpoint`` then loads only the subfolders: the step, optimiser and scheduler
    resume, and the trained adapter stays the warm start."""
    folder = Path(checkpoint)
    if not getattr(model, "peft_config", None) or not any(
        (folder / name).is_file() for name in ("adapter_model.safetensors", "adapter_model.bin")
    ):
        return 0
    return load_weights_strict(model, folder, model.active_adapter)
