"""Chat rendering with exact token bookkeeping.

The loop never re-tokenizes a conversation. The prompt (system + tools + first user message) is
rendered and tokenized once; each model turn keeps the token ids it sampled; between turns only the
text the chat template adds (end of the assistant turn, tool responses, the next user message, the
generation prompt) is rendered and tokenized. That text is found by rendering a short dummy
conversation with and without the new messages and taking the difference after the assistant's
end-of-turn token (the approach of TRL's ``GRPOTrainer._get_tool_suffix_ids``).
"""

from __future__ import annotations

import re
from typing import Any

_PROBE_USER = "PROBE_USER_TURN"
_PROBE_ASSISTANT = "PROBE_ASSISTANT_TURN"
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """Text a tokenizer can encode: UTF-16 surrogates are not characters (a JSON ``"\\ud800"`` escape
    decodes to one), and fast tokenizers refuse them. A surrogate pair becomes the character it stands
    for, a lone surrogate U+FFFD; every real character is kept as it is."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class ChatFormat:
    """Renders a tokenizer's chat template piecewise so that token ids concatenate exactly.

    Args:
        tokenizer: a Hugging Face tokenizer whose chat template supports ``tools=`` (e.g. TRL's
            Qwen2.5 template) and whose assistant turns end with ``tokenizer.eos_token``.
    """

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self.eos_token: str = tokenizer.eos_token
        if not self.eos_token:
            raise ValueError("the tokenizer has no eos_token; the loop needs it to end assistant turns")
        probe = self.render(
            [{"role": "user", "content": _PROBE_USER}, {"role": "assistant", "content": _PROBE_ASSISTANT}]
        )
        after = probe[probe.index(_PROBE_ASSISTANT) + len(_PROBE_ASSISTANT) :]
        if not after.startswith(self.eos_token):
            raise ValueError(
                f"the chat template does not end assistant turns with eos_token {self.eos_token!r} "
                f"(renders {after[:20]!r}); pick a ChatML-style tool template"
            )
        self.eos_token_id: int = tokenizer.convert_tokens_to_ids(self.eos_token)
        user = [{"role": "user", "content": _PROBE_USER}]
        with_prompt = self.render(user, add_generation_prompt=True)
        self.generation_prompt: str = with_prompt[len(self.render(user)) :]  # e.g. "<|im_start|>assistant\n"

    def render(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict] | None = None,
        *,
        add_generation_prompt: bool = False,
    ) -> str:
        """The template's text for messages (``tools`` in OpenAI function format)."""
        return self.tokenizer.apply_chat_template(
            messages, tools=tools or None, tokenize=False, add_generation_prompt=add_generation_prompt
        )

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(clean_text(text), add_special_tokens=False)["input_ids"])

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    def prompt_text(self, messages: list[dict[str, Any]], tools: list[dict] | None) -> str:
        """The first prompt: system (with tools) + user, ending with the assistant generation prompt."""
        return self.render(messages, tools, add_generation_prompt=True)

    def env_text(self, new_messages: list[dict[str, Any]], tools: list[dict] | None) -> str:
        """Text the template adds after a model turn's eos token: the newline closing the turn, the
        new tool / user messages, and the next generation prompt."""
        assistant: dict[str, Any] = {"role": "assistant", "content": _PROBE_ASSISTANT}
        if new_messages and new_messages[0].get("role") == "tool":  # some templates name the call's tool
            name = new_messages[0].get("name") or "tool"
            assistant["tool_calls"] = [{"type": "function", "function": {"name": name, "arguments": {}}}]
        dummy = [{"role": "user", "content": _PROBE_USER}, assistant]
        base = self.render(dummy, tools)
        full = self.render(dummy + new_messages, tools, add_generation_prompt=True)
        cut = base.rindex(self.eos_token) + len(self.eos_token)
        if full[:cut] != base[:cut]:
            raise ValueError("the chat template renders earlier turns differently when messages are added")
        return full[cut:]

    def transcript(self, messages: list[dict[str, Any]], tools: list[dict] | None) -> str:
        """The whole conversation as the model saw it: assistant turns are rendered from the raw text
        the model generated (``message["raw"]``), not re-serialised from parsed tool calls."""
        shown = []
        for m in messages:
            if m.get("role") == "assistant" and "raw" in m:
                shown.append({"role": "assistant", "content": m["raw"]})
            else:
                shown.append({k: v for k, v in m.items() if k != "raw"})
        return self.render(shown, tools)
