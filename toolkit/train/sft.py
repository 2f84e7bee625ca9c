"""SFT warm start on gold trajectories (TRL SFTTrainer, loss on the assistant's tokens only).

Why: SmolLM2-135M-Instruct never emits a tool call on its own, so every GRPO group starts with zero
reward variance and nothing is learned (measured, see DESIGN.md). A short LoRA SFT on replayed gold
trajectories teaches the call format; GRPO then has partial credit to work with.

The data are the gold policy's episodes through the same agent loop that GRPO and evaluation use
(same system prompt, same tool list with the ``finish`` tool, same tool outputs after truncation).
Each conversation is rendered with TRL's training variant of the tool template, whose
``{% generation %}`` markers give the assistant-token mask; the rows are handed to SFTTrainer
already tokenized (``input_ids`` + ``assistant_masks``), so nested tool arguments never pass through
Arrow's one-schema-per-column typing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolkit.records import Task, Trajectory


def gold_trajectories(
    tasks: Sequence[Task], loop_config: Any, *, open_episode: Any = None
) -> list[Trajectory]:
    """Replay every task's gold calls through the agent loop; keep episodes that ended cleanly.

    The replay gets enough turns for the longest gold chain plus the finish call, whatever the
    training budget says (the other budgets, truncation and system prompt stay the loop's)."""
    import dataclasses

    from toolkit.agent.loop import rollout
    from toolkit.agent.policies import GoldPolicy

    longest = max((len(t.gold) for t in tasks), default=0)
    loop_config = dataclasses.replace(loop_config, max_turns=max(loop_config.max_turns, longest + 1))
    trajs = rollout(list(tasks), GoldPolicy(), loop_config, open_episode=open_episode)
    return [t for t in trajs if t.stop_reason in ("finish", "no_tool_call") and all(c.ok for c in t.calls)]


def chat_messages(traj: Trajectory) -> list[dict[str, Any]]:
    """The trajectory as chat-template messages (the loop's bookkeeping keys dropped)."""
    out = []
    for m in traj.messages:
        msg = {k: v for k, v in m.items() if k in ("role", "content", "tool_calls", "name", "tool_call_id")}
        if msg.get("content") is None:
            msg["content"] = ""
        out.append(msg)
    return out


def training_template(tokenizer: Any) -> str:
    """The tokenizer's template with ``{% generation %}`` markers (TRL ships one per known template)."""
    from trl.chat_template_utils import get_training_chat_template

    return get_training_chat_template(tokenizer) or tokenizer.chat_template


def tokenize_example(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict] | None, template: str
) -> dict:
    """``input_ids`` and ``assistant_masks`` (1 on the assistant's tokens, its end-of-turn included)."""
    out = tokenizer.apply_chat_template(
        messages,
        tools=tools or None,
        chat_template=template,
        tokenize=True,
        return_dict=True,
        return_assistant_tokens_mask=True,
    )
    ids, mask = list(out["input_ids"]), list(out["assistant_masks"])
    if not any(mask):
        raise ValueError("an SFT example has no assistant tokens (the template lacks generation markers)")
    return {"input_ids": ids, "assistant_masks": mask}


def sft_rows(trajs: Sequence[Trajectory], tokenizer: Any, *, max_length: int | None = None) -> list[dict]:
    """Tokenized SFT rows from gold trajectories; examples longer than ``max_length`` are dropped."""
    template = training_template(tokenizer)
    rows = []
    for traj in trajs:
        row = tokenize_example(tokenizer, chat_messages(traj), traj.metadata.get("tools"), template)
        if max_length is None or len(row["input_ids"]) <= max_length:
            rows.append(row)
    return rows


def run_sft(
    model: Any,
    tokenizer: Any,
    rows: list[dict],
    sft_config: Any,
    lora_config: Any = None,
    callbacks: list[Any] | None = None,
    resume_from_checkpoint: str | None = None,
) -> Any:
    """Train with TRL's SFTTrainer on tokenized rows; returns the trainer (its model has the adapter)."""
    from datasets import Dataset
    from trl import SFTTrainer

    from toolkit.train.trl_compat import install_logprob_fallback

    install_logprob_fallback()  # TRL 1.15 on a CPU torch build

    if not rows:
        raise ValueError("no SFT examples: the gold replay produced no clean trajectories")
    trainer = SFTTrainer(
        model=model,
        args=sft_config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=lora_config,
        callbacks=callbacks,
    )
    trainer.train(resume_from_checkpoint=resume_from_checkpoint)
    return trainer


def masked_preview(row: dict, tokenizer: Any, marker: tuple[str, str] = ("[[", "]]")) -> str:
    """The example's text with the trained (assistant) spans wrapped in ``marker``: what SFT learns."""
    out, span, inside = [], [], False
    for token, m in zip(row["input_ids"], row["assistant_masks"], strict=True):
        if bool(m) != inside:
            out.append(tokenizer.decode(span))
            out.append(marker[0] if m else marker[1])
            span, inside = [], bool(m)
        span.append(token)
    out.append(tokenizer.decode(span) + (marker[1] if inside else ""))
    return "".join(out)
