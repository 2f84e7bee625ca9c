"""The torch stand-in for TRL 1.15's Triton LM head computes what TRL would: log-probs at the
sampling temperature and the entropy, with gradients."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def test_torch_logprobs_match_log_softmax_with_temperature_softcap_and_grad():
    from toolkit.train.trl_compat import TorchChunkedLogProbs

    torch.manual_seed(0)
    n, h, v = 600, 8, 50  # more rows than one chunk
    hidden = torch.randn(n, h, requires_grad=True)
    weight = torch.randn(v, h)
    bias = torch.randn(v)
    targets = torch.randint(0, v, (n,))
    logp, entropy, lssp, mean, top1 = TorchChunkedLogProbs.apply(
        hidden, weight, bias, targets, 0.7, 4096, 30.0, 1.0, ("entropy", "log_sum_sq_probs", "is_top1")
    )
    z = 30.0 * torch.tanh((hidden @ weight.T + bias) / 30.0) / 0.7
    ref = torch.log_softmax(z, -1)
    assert torch.allclose(logp, ref.gather(-1, targets[:, None]).squeeze(-1), atol=1e-5)
    assert torch.allclose(entropy, -(ref.exp() * ref).sum(-1), atol=1e-5)
    assert torch.allclose(lssp, torch.log((ref.exp() ** 2).sum(-1)), atol=1e-5)
    assert mean is None
    assert torch.equal(top1, z.argmax(-1) == targets)
    logp.sum().backward()
    assert hidden.grad is not None and hidden.grad.abs().sum() > 0


def test_fallback_fills_only_an_empty_slot(monkeypatch):
    from trl.trainer import utils as trl_utils

    from toolkit.train.trl_compat import TorchChunkedLogProbs, install_logprob_fallback

    sentinel = object()
    monkeypatch.setattr(trl_utils, "_ChunkedLogProbFunction", sentinel, raising=False)
    assert install_logprob_fallback() is False
    assert trl_utils._ChunkedLogProbFunction is sentinel
    monkeypatch.setattr(trl_utils, "_ChunkedLogProbFunction", None)
    assert install_logprob_fallback() is True
    assert trl_utils._ChunkedLogProbFunction is TorchChunkedLogProbs
