"""A CPU stand-in for ``unsloth.FastLanguageModel`` (tests only): the same call signatures as Unsloth
2026.10.7 (``unsloth/models/loader.py``, ``unsloth/models/llama.py``), backed by transformers + PEFT.
It has no vLLM engine: ``fast_inference=True`` is refused, as Unsloth refuses it without vLLM."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class FakeFastLanguageModel:
    calls: list[tuple[str, dict[str, Any]]] = []
    modes: list[str] = []  # for_inference / for_training, in call order

    @classmethod
    def reset(cls) -> None:
        cls.calls, cls.modes = [], []

    @classmethod
    def from_pretrained(
        cls, model_name, max_seq_length=2048, load_in_4bit=True, fast_inference=False, max_lora_rank=64, **kw
    ):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        cls.calls.append(
            (
                "from_pretrained",
                dict(model_name=model_name, max_seq_length=max_seq_length, load_in_4bit=load_in_4bit,
                     fast_inference=fast_inference, max_lora_rank=max_lora_rank, **kw),
            )
        )  # fmt: skip
        if fast_inference:
            raise ImportError("Unsloth: fast_inference=True needs vLLM (the fake has none)")
        if not Path(model_name).is_dir():  # offline: a kit name must arrive resolved to its folder
            raise OSError(f"{model_name!r} is not a folder (and there is no network here)")
        return AutoModelForCausalLM.from_pretrained(model_name), AutoTokenizer.from_pretrained(model_name)

    @classmethod
    def get_peft_model(
        cls, model, r=16, target_modules=None, lora_alpha=16, lora_dropout=0.0, use_gradient_checkpointing=True,
        random_state=3407, **kw,
    ):  # fmt: skip
        from peft import LoraConfig, get_peft_model

        cls.calls.append(("get_peft_model", dict(r=r, target_modules=target_modules, lora_alpha=lora_alpha)))
        config = LoraConfig(
            r=r, lora_alpha=lora_alpha, lora_dropout=lora_dropout, target_modules=target_modules,
            task_type="CAUSAL_LM",
        )  # fmt: skip
        return get_peft_model(model, config)

    @classmethod
    def for_inference(cls, model):
        cls.modes.append("inference")
        model.eval()
        return model

    @classmethod
    def for_training(cls, model, use_gradient_checkpointing=None):
        cls.modes.append("training")
        model.train()
        return model
