"""What the pinned TRL (1.15.0, capped by Unsloth) lacks on a CPU torch build, and nothing more.

Delete this module when the pins move to TRL >= 1.16 (it has the torch path itself).
"""

from __future__ import annotations

from typing import Any


class TorchChunkedLogProbs:
    """TRL 1.15's fused LM head without Triton: the same call and outputs in plain torch (autograd does
    the backward).

    TRL 1.15.0 (the newest that Unsloth 2026.10 accepts: ``trl<=1.15.0``) computes GRPO's per-token
    log-probabilities with ``trl.kernels.ChunkedLogProbFunction``, a Triton kernel; where Triton is
    missing (the CPU torch build) ``trl/trainer/utils.py`` sets ``_ChunkedLogProbFunction = None`` and
    every GRPO step fails with "'NoneType' object has no attribute 'apply'". TRL 1.16 added a torch
    path for that case; this class is that path for 1.15, installed only where TRL left the slot empty
    (``install_logprob_fallback``), so it is inert on a GPU and on TRL >= 1.16.
    """

    TOKENS_PER_CHUNK = 256  # rows of logits materialised at once (the CPU models' vocabularies are small)

    @staticmethod
    def apply(
        hidden: Any,
        weight: Any,
        bias: Any,
        targets: Any,
        temperature: float,
        chunk_size: int,
        final_logit_softcapping: float | None = None,
        logit_scale: float = 1.0,
        outputs: tuple[str, ...] = ("entropy", "log_sum_sq_probs", "mean_logits", "is_top1"),
    ) -> tuple[Any, Any, Any, Any, Any]:
        import torch
        import torch.nn.functional as F

        parts: dict[str, list] = {
            k: [] for k in ("log_probs", "entropy", "log_sum_sq_probs", "mean_logits", "is_top1")
        }
        step = TorchChunkedLogProbs.TOKENS_PER_CHUNK
        for start in range(0, hidden.shape[0], step):
            z = F.linear(hidden[start : start + step], weight, bias).float() * logit_scale
            if final_logit_softcapping:
                z = final_logit_softcapping * torch.tanh(z / final_logit_softcapping)
            z = z / temperature
            logp = torch.log_softmax(z, dim=-1)
            target = targets[start : start + step].unsqueeze(-1)
            parts["log_probs"].append(logp.gather(-1, target).squeeze(-1))
            if "entropy" in outputs:
                parts["entropy"].append(-(logp.exp() * logp).sum(-1))
            if "log_sum_sq_probs" in outputs:
                parts["log_sum_sq_probs"].append(torch.logsumexp(2 * logp, dim=-1).detach())
            if "mean_logits" in outputs:
                parts["mean_logits"].append(z.mean(-1).detach())
            if "is_top1" in outputs:
                parts["is_top1"].append(z.gather(-1, target).squeeze(-1) >= z.max(-1).values)

        def cat(name: str) -> Any:
            if not parts[name]:
                return None if name != "log_probs" else hidden.new_zeros(0, dtype=torch.float32)
            return torch.cat(parts[name])

        return tuple(cat(k) for k in parts)  # type: ignore[return-value]


def install_logprob_fallback() -> bool:
    """Fill TRL's empty fused-LM-head slot with ``TorchChunkedLogProbs``; True when it was empty."""
    try:
        from trl.trainer import utils as trl_utils
    except ImportError:
        return False
    if getattr(trl_utils, "_ChunkedLogProbFunction", "absent") is None:
        trl_utils._ChunkedLogProbFunction = TorchChunkedLogProbs
        return True
    return False
