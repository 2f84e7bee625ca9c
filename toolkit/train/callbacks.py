"""Trainer callbacks the kit adds to TRL's trainers: a JSONL metrics file and a LoRA reference refresh.

- ``MetricsJsonlCallback`` writes every log line (loss, reward mean/std, zero-variance share, KL,
  completion length, clipped ratio, the loop's tool metrics) to ``<run dir>/metrics.jsonl``: one JSON
  object per step with a ``"step"`` key, appended so a resumed run continues the same file.
- ``PeftRefSyncCallback`` refreshes the reference model every N steps when training a LoRA adapter.
  TRL's own ``sync_ref_model`` needs a separate full reference model and refuses PEFT models; with
  PEFT, TRL keeps the reference as a frozen adapter named ``"ref"`` (a copy of the starting adapter),
  so refreshing means copying the trained ``"default"`` adapter into ``"ref"`` (Bespoke Labs: "we
  update reference model every 100 steps", DeepSeekMath's M = 100).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from toolkit.records import drop_jsonl_records, dumps

METRICS_FILE = "metrics.jsonl"


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):
        return _plain(value.item())
    return value


class MetricsJsonlCallback(TrainerCallback):
    """Append each ``on_log`` record to ``path`` as one JSON line: ``{"step": N, "phase": ..., ...}``."""

    def __init__(self, path: str | Path, phase: str = "grpo", step_offset: int = 0):
        self.path = Path(path)
        self.phase = phase
        self.step_offset = step_offset  # SFT steps come first; GRPO steps continue after them
        self.started = time.time()

    def on_train_begin(self, args, state, control, **kwargs):  # noqa: D102
        # A resumed run restarts at its checkpoint: drop the lines this phase logged after it, so the
        # file has one record per step (the killed run may have logged steps it never saved).
        if not state.is_world_process_zero or state.global_step == 0:
            return
        drop_jsonl_records(
            self.path,
            lambda rec: rec.get("phase") == self.phase and rec.get("phase_step", 0) > state.global_step,
        )

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: D102 (TrainerCallback API)
        if not state.is_world_process_zero or not logs:
            return
        record = {
            "step": state.global_step + self.step_offset,
            "phase": self.phase,
            "phase_step": state.global_step,
        }
        record.update(
            {k: _plain(v) for k, v in logs.items() if isinstance(v, (int, float)) or hasattr(v, "item")}
        )
        record["elapsed_s"] = round(time.time() - self.started, 2)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(dumps(record, sort_keys=True) + "\n")


def copy_adapter_weights(model: Any, source: str = "default", target: str = "ref", alpha: float = 1.0) -> int:
    """``target = alpha * source + (1 - alpha) * target`` for every LoRA parameter; returns how many."""
    import torch

    n = 0
    with torch.no_grad():
        for name, param in model.named_parameters():
            if f".{source}." not in name:
                continue
            ref = model.get_parameter(name.replace(f".{source}.", f".{target}."))
            ref.mul_(1.0 - alpha).add_(param.detach().to(ref.dtype), alpha=alpha)
            n += 1
    return n


class PeftRefSyncCallback(TrainerCallback):
    """Every ``every`` optimiser steps, refresh the frozen ``"ref"`` adapter from the trained one."""

    def __init__(self, every: int, alpha: float = 1.0, accelerator: Any = None):
        if every < 1:
            raise ValueError("ref_model_sync_steps must be >= 1")
        self.every = every
        self.alpha = alpha
        self.accelerator = accelerator
        self.syncs = 0

    def on_step_end(self, args, state, control, model=None, **kwargs):  # noqa: D102
        if model is None or state.global_step % self.every != 0:
            return
        if self.accelerator is not None:
            model = self.accelerator.unwrap_model(model)
        if "ref" not in getattr(model, "peft_config", {}):
            return  # no frozen reference adapter (beta = 0, or a plain model): nothing to refresh
        copy_adapter_weights(model, "default", "ref", self.alpha)
        self.syncs += 1
