"""A real (small) language model as the judge, served in-process: a transformers model behind the same
OpenAI-compatible API as any vLLM server, so ``JudgeGrader`` talks to it unchanged.

    with LocalModelJudge("smollm2-135m") as server:
        reward = get_reward("rubric-judge", **server.judge_config())

The kit's embedded SmolLM2-135M is far too small to judge well: most replies are not the requested
JSON and end up ungraded (counted, never fatal). It is here to run the real-model path on a CPU; for
useful verdicts serve a capable model (``vllm serve Qwen/Qwen2.5-7B-Instruct``) or use a hosted API.
Requests are served one at a time (greedy decoding, one model instance).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from toolkit.rewards.standin import ChatServer


class LocalModelJudge(ChatServer):
    """Serve ``model`` (a ``toolkit.models.load_policy`` name: "smollm2-135m", "tiny-random", a
    Hugging Face id or folder) on 127.0.0.1. ``generate`` replaces the model with any
    ``messages -> text`` function (tests)."""

    def __init__(
        self,
        model: str = "smollm2-135m",
        max_new_tokens: int = 384,
        generate: Callable[[list[dict[str, Any]]], str] | None = None,
    ):
        self.model_name, self.max_new_tokens = model, max_new_tokens
        self._generate = generate
        self._loaded: tuple[Any, Any] | None = None
        self._lock = threading.Lock()
        super().__init__(self._respond, model=f"local:{model}")

    def __enter__(self) -> LocalModelJudge:
        if self._generate is None and self._loaded is None:  # load before the first request's timeout starts
            from toolkit.models import load_policy

            self._loaded = load_policy(self.model_name)
        super().__enter__()
        return self

    def _respond(self, messages: list[dict[str, Any]]) -> str:
        with self._lock:
            if self._generate is not None:
                return self._generate(messages)
            return self._hf_generate(messages)

    def _hf_generate(self, messages: list[dict[str, Any]]) -> str:
        import torch

        if self._loaded is None:
            raise RuntimeError("LocalModelJudge: use it as a context manager (the model loads on enter)")
        model, tok = self._loaded
        enc = tok.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        with torch.inference_mode():
            out = model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=False)
        return tok.decode(out[0][enc["input_ids"].shape[1] :], skip_special_tokens=True)
