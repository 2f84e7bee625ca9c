"""Save and merge LoRA adapters (the merge itself lives in ``toolkit.models``, below the agent layer,
which merges adapters for vLLM evaluation too)."""

from toolkit.models import merge_adapter, merged_checkpoint

__all__ = ["merge_adapter", "merged_checkpoint"]
