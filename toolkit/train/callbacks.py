"""Trainer callbacks the kit adds to TRL's trainers: a JSONL metrics file, one line per step on stdout
and a LoRA reference refresh.

- ``MetricsJsonlCallback`` writes every log line (loss, reward mean/std, zero-variance share, KL,
  completion length, clipped ratio, the loop's tool metrics) to the run's metrics file
  (``RunFolder.metrics_file``): one ``toolkit.records.MetricsRow`` per step, appended so a resumed run
  continues the same file.
- ``StepLines`` prints one compact line per logged step (GRPO: reward mean and spread, the share of
  episodes answered right, tool calls per episode, KL, the clipped share, seconds per step; SFT: loss,
  learning rate, seconds per step) in place of the transformers printer's raw dict of ~60 keys
  (``use_step_lines``); the full dict still goes to ``metrics.jsonl`` and ``report_to``.
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

from toolkit.records import MetricsRow, drop_jsonl_records, write_jsonl


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):
        return _plain(value.item())
    return value


class MetricsJsonlCallback(TrainerCallback):
    """Append each ``on_log`` record to ``path`` as one ``MetricsRow``: ``{"step": N, "phase": ..., ...}``."""

    def __init__(self, path: str | Path, phase: str = "grpo", step_offset: int = 0):
        self.path = Path(path)
        self.phase = phase
        self.step_offset = step_offset  # SFT steps come first; GRPO steps continue after them
        self.started = time.time()

    def on_train_begin(self, args, state, control, **kwargs):  # noqa: D102
        # A run restarts at its checkpoint, or at step 0 when it was stopped before its first one: drop
        # the lines this phase logged after that point, so the file has one record per step (the stopped
        # run may have logged steps it never saved). By the whole-run step, not the phase's own: RFT
        # rounds share the phase "rft", and an earlier round's lines lie below this round's offset.
        if not state.is_world_process_zero:
            return
        last = state.global_step + self.step_offset
        drop_jsonl_records(
            self.path, lambda rec: rec.get("phase") == self.phase and rec.get("step", 0) > last
        )

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: D102 (TrainerCallback API)
        if not state.is_world_process_zero or not logs:
            return
        row = MetricsRow(
            step=state.global_step + self.step_offset,
            phase=self.phase,
            phase_step=state.global_step,
            elapsed_s=round(time.time() - self.started, 2),
            values={
                k: _plain(v) for k, v in logs.items() if isinstance(v, (int, float)) or hasattr(v, "item")
            },
        )
        write_jsonl(self.path, [row], append=True)


def _number(logs: dict[str, Any], key: str, fmt: str) -> str:
    value = _plain(logs.get(key))
    return format(value, fmt) if isinstance(value, (int, float)) else "-"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def _millions(n: int) -> str:
    return f"{n / 1e6:.2f}M" if n < 1e9 else f"{n / 1e9:.2f}B"


class StepLines(TrainerCallback):
    """One line per ``on_log``: ``grpo step 3/26 | reward 0.600 ± 0.324 | answered right 0.41 | ...``."""

    def __init__(self, phase: str, print_fn: Any = print):
        self.phase = phase
        self.print = print_fn
        self.start = self.last = (time.time(), 0)

    def _say(self, state: Any, line: str) -> None:
        if state.is_world_process_zero:
            self.print(line, flush=True)

    def on_train_begin(self, args, state, control, model=None, **kwargs):  # noqa: D102
        self.start = self.last = (time.time(), state.global_step)
        if model is None:
            return
        params = list(model.parameters())
        total = sum(p.numel() for p in params)
        trainable = sum(p.numel() for p in params if p.requires_grad)
        self._say(
            state,
            f"{self.phase}: steps {state.global_step + 1}-{state.max_steps}; trainable parameters "
            f"{_millions(trainable)} of {_millions(total)} ({100 * trainable / max(total, 1):.2f}%)",
        )

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: D102
        if not logs:
            return
        now, step = time.time(), state.global_step
        if "train_runtime" in logs:  # the trainer's closing summary
            done = step - self.start[1]
            self._say(state, f"{self.phase} done: {done} steps in {_duration(now - self.start[0])}")
            return
        per_step = (now - self.last[0]) / max(step - self.last[1], 1)
        average = (now - self.start[0]) / max(step - self.start[1], 1)
        self.last = (now, step)
        if self.phase == "grpo":
            fields = [
                f"reward {_number(logs, 'reward', '.3f')} ± {_number(logs, 'reward_std', '.3f')}",
                f"answered right {_number(logs, 'episodes/answer_correct', '.2f')}",
                f"calls/episode {_number(logs, 'episodes/tool_calls_mean', '.2f')}",
                f"kl {_number(logs, 'kl', '.4f')}",  # no key with beta 0: no reference model
                f"clipped {_number(logs, 'clip_ratio/region_mean', '.3f')}",
            ]
        else:
            fields = [f"loss {_number(logs, 'loss', '.4f')}", f"lr {_number(logs, 'learning_rate', '.1e')}"]
        left = _duration(average * max(state.max_steps - step, 0))
        fields.append(f"{per_step:.1f} s/step, {left} left")
        self._say(state, f"{self.phase} step {step}/{state.max_steps} | " + " | ".join(fields))


def use_step_lines(trainer: Any, phase: str) -> StepLines:
    """Replace the trainer's printer of raw log dicts (a tqdm bar with the dict, the plain printer, or the
    notebook table) with ``StepLines``."""
    import importlib.util

    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    printers: list[type] = [PrinterCallback, ProgressCallback]
    if importlib.util.find_spec("IPython") is not None:  # transformers' notebook table imports IPython
        from transformers.utils.notebook import NotebookProgressCallback

        printers.append(NotebookProgressCallback)
    for printer in printers:
        trainer.remove_callback(printer)
    lines = StepLines(phase)
    trainer.add_callback(lines)
    return lines


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
