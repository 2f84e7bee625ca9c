"""SFT warm start on gold trajectories (TRL SFTTrainer, loss on the assistant's tokens only).

Why: SmolLM2-135M-Instruct never emits a tool call on its own, so every GRPO group starts with zero
reward variance and nothing is learned (measured, see docs/DESIGN.md). A short LoRA SFT on replayed gold
trajectories teaches the call format; GRPO then has partial credit to work with.

The data are the gold policy's episodes through the same agent loop that GRPO and evaluation use
(same system prompt, same tool list with the ``finish`` tool, same tool outputs after truncation).
The replay is token-level with the model's tokenizer (``warm_start_rows``), so tool outputs are cut
to the same ``max_tool_output_tokens`` tokens as when the model samples, and every gold turn is
checked against the sampler's budgets: a turn longer than ``max_new_tokens``, or more generations in
a user turn than ``max_turns``, is something the sampler would cut. Such episodes are counted per task
kind (``GoldFit``, logged and kept in the run's summary) and, with the recipe's
``sft.drop_unfit_gold``, left out of the warm start.
Each conversation is rendered with TRL's training variant of the tool template, whose
``{% generation %}`` markers give the assistant-token mask; the rows are handed to SFTTrainer
already tokenized (``input_ids`` + ``assistant_masks``), so nested tool arguments never pass through
Arrow's one-schema-per-column typing. The optional RFT round (``toolkit.train.rft``) trains with the
same ``run_sft`` on the model's own sampled episodes, as they were sampled (``episode_rows``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from toolkit.records import FINISH_TOOL, Task, Trajectory


def gold_trajectories(
    tasks: Sequence[Task],
    loop_config: Any,
    *,
    tokenizer: Any = None,
    one_call_per_turn: bool = False,
    open_episode: Any = None,
) -> list[Trajectory]:
    """Replay every task's gold calls through the agent loop; keep episodes that ended cleanly.

    With ``tokenizer`` (the model's) the replay is token-level, as sampling is: tool outputs are cut
    to ``max_tool_output_tokens`` tokens of that tokenizer and the context budget holds. Without one,
    outputs are cut at about 4 characters a token (512 characters for 128 tokens, ~235 SmolLM2 tokens
    of JSON), longer than the model ever sees them. ``one_call_per_turn``: see ``GoldPolicy``.

    The replay gets enough turns for the longest gold chain plus the finish call, whatever the
    training budget says (the other budgets, truncation and system prompt stay the loop's)."""
    import dataclasses

    from toolkit.agent.loop import rollout
    from toolkit.agent.policies import GoldPolicy

    longest = max((len(t.gold) for t in tasks), default=0)
    loop_config = dataclasses.replace(loop_config, max_turns=max(loop_config.max_turns, longest + 1))
    policy = GoldPolicy(tokenizer, one_call_per_turn=one_call_per_turn)
    trajs = rollout(list(tasks), policy, loop_config, open_episode=open_episode)
    return [t for t in trajs if t.stop_reason in ("finish", "no_tool_call") and all(c.ok for c in t.calls)]


def model_turns(traj: Trajectory) -> list[list[int]]:
    """The token ids of each model turn of a token-level trajectory (the runs of mask 1), stop token
    included: what the sampler would have to generate within ``max_new_tokens``."""
    turns: list[list[int]] = []
    inside = False
    for token, mask in zip(traj.completion_ids, traj.completion_mask, strict=True):
        if mask and not inside:
            turns.append([])
        if mask:
            turns[-1].append(token)
        inside = bool(mask)
    return turns


def _generations_per_user_turn(traj: Trajectory) -> list[int]:
    counts: list[int] = []
    for m in traj.messages:
        if m["role"] == "user":
            counts.append(0)
        elif m["role"] == "assistant" and counts:
            counts[-1] += 1
    return counts


FIT_KEYS = (
    "episodes",
    "call_turns",
    "call_turns_over",
    "finish_turns",
    "finish_turns_over",
    "over_max_turns",
    "unfit",
    "dropped",
)


@dataclass
class GoldFit:
    """How the gold episodes fit the sampler's budgets, per task kind: model turns that call tools
    (``call_turns``) and turns that answer (``finish_turns``), how many of each are longer than
    ``max_new_tokens`` (``*_over``), episodes needing more generations in a user turn than ``max_turns``
    (``over_max_turns``), the episodes that do not fit for either reason (``unfit``) and those of them
    left out of the warm start (``dropped``)."""

    max_new_tokens: int
    max_turns: int
    kinds: dict[str, Counter] = field(default_factory=dict)

    def add(self, kind: str, **counts: int) -> None:
        self.kinds.setdefault(kind, Counter()).update(counts)

    def total(self, key: str) -> int:
        return sum(c[key] for c in self.kinds.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_new_tokens": self.max_new_tokens,
            "max_turns": self.max_turns,
            "kinds": {k: {key: int(c[key]) for key in FIT_KEYS} for k, c in sorted(self.kinds.items())},
        }

    def summary(self) -> str:
        parts = [
            f"{k}: {c['call_turns_over']}/{c['call_turns']} call turns and "
            f"{c['finish_turns_over']}/{c['finish_turns']} answer turns over {self.max_new_tokens} tokens"
            for k, c in sorted(self.kinds.items())
            if c["call_turns_over"] or c["finish_turns_over"] or c["over_max_turns"]
        ]
        unfit, dropped = self.total("unfit"), self.total("dropped")
        if not unfit:
            return "every gold episode fits the sampler"
        what = "dropped" if dropped else "kept (sft.drop_unfit_gold drops them)"
        return f"{unfit} gold episodes do not fit the sampler, {what}: {'; '.join(parts)}"


def fit_to_sampler(
    trajs: Sequence[Trajectory], kinds: dict[str, str], loop_config: Any, *, drop: bool = True
) -> tuple[list[Trajectory], GoldFit]:
    """Check token-level gold episodes against the sampler: can it generate every model turn (at most
    ``loop_config.max_new_tokens`` tokens, at most ``max_turns`` generations per user turn)? Returns
    the episodes to train on (without the unfit ones when ``drop``) and the count per kind (``kinds``:
    task id -> kind). Training on a turn the sampler cuts teaches the model a turn it can never
    finish: when sampling, that turn ends the episode (stop reason length)."""
    fit = GoldFit(loop_config.max_new_tokens, loop_config.max_turns)
    kept = []
    for traj in trajs:
        kind = kinds.get(traj.task_id, "task")
        assistant = [m for m in traj.messages if m["role"] == "assistant"]
        turns = model_turns(traj)
        if len(turns) != len(assistant):
            raise ValueError(
                f"gold episode {traj.task_id}: {len(assistant)} model turns but {len(turns)} token runs;"
                " the replay must be token-level (pass the tokenizer)"
            )
        counts = Counter(dict.fromkeys(FIT_KEYS, 0), episodes=1)
        for message, ids in zip(assistant, turns, strict=True):
            names = [c["function"]["name"] for c in message.get("tool_calls") or []]
            which = "call_turns" if names and FINISH_TOOL not in names else "finish_turns"
            counts[which] += 1
            counts[f"{which}_over"] += len(ids) > loop_config.max_new_tokens
        too_many = max(_generations_per_user_turn(traj), default=0) > loop_config.max_turns
        counts["over_max_turns"] += too_many
        fits = not (counts["call_turns_over"] or counts["finish_turns_over"] or too_many)
        counts["unfit"] += not fits
        counts["dropped"] += drop and not fits
        fit.add(kind, **counts)
        if fits or not drop:
            kept.append(traj)
    return kept, fit


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
    from toolkit.train.trl_adapter import training_chat_template

    return training_chat_template(tokenizer)


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


def episode_rows(trajs: Sequence[Trajectory], *, max_length: int | None = None) -> list[dict]:
    """SFT rows from sampled token-level episodes as they are (the RFT round, ``toolkit.train.rft``): the
    prompt and everything after it exactly as the sampler tokenized it, ``assistant_masks`` 1 on the
    tokens the model sampled (the loop's ``completion_mask``: its turns with their stop token; tool and
    template tokens 0). Nothing is re-rendered, so the loss is on the model's own text in the context it
    saw. Episodes longer than ``max_length`` are dropped, as ``sft_rows`` drops them."""
    rows = []
    for traj in trajs:
        if not traj.prompt_ids or len(traj.completion_mask) != len(traj.completion_ids):
            raise ValueError(
                f"episode {traj.task_id} is not token-level (no prompt ids, or a mask of another length):"
                " SFT on sampled episodes needs the sampler's token ids"
            )
        if not any(traj.completion_mask):
            raise ValueError(f"episode {traj.task_id} has no model tokens to train on")
        ids = list(traj.prompt_ids) + list(traj.completion_ids)
        if max_length is None or len(ids) <= max_length:
            rows.append(
                {"input_ids": ids, "assistant_masks": [0] * len(traj.prompt_ids) + list(traj.completion_mask)}
            )
    return rows


def template_reproduces(traj: Trajectory, tokenizer: Any, template: str | None = None) -> bool:
    """Whether the training template (the warm start's rendering, ``sft_rows``) renders the model turns of
    a sampled token-level episode as the model sampled them: the text of each assistant span equals the
    text of each sampled turn (its stop token included), up to the whitespace around it. That whitespace
    always differs: the template's span of a call turn with no text begins with a newline, and it ends
    with the newline after the end-of-turn token, which a sampler never generates (it stops at the
    token). Beyond it, a model writes a call its own way (spacing, key order) where the template writes
    the parsed call in one canonical form (``toolkit.agent.parsing.format_call``'s)."""
    template = template or training_template(tokenizer)
    try:
        row = tokenize_example(tokenizer, chat_messages(traj), traj.metadata.get("tools"), template)
    except Exception:  # a conversation the template cannot render does not reproduce the episode
        return False
    spans: list[list[int]] = []
    inside = False
    for token, mask in zip(row["input_ids"], row["assistant_masks"], strict=True):
        if mask and not inside:
            spans.append([])
        if mask:
            spans[-1].append(token)
        inside = bool(mask)
    rendered = [tokenizer.decode(span).strip() for span in spans]
    return rendered == [tokenizer.decode(turn).strip() for turn in model_turns(traj)]


def warm_start_rows(
    tasks: Sequence[Task],
    loop_config: Any,
    tokenizer: Any,
    *,
    max_length: int | None = None,
    one_call_per_turn: bool = False,
    drop_unfit: bool = False,
    open_episode: Any = None,
) -> tuple[list[dict], GoldFit]:
    """The SFT rows of the warm start: the tasks' gold episodes replayed token-level with the model's
    tokenizer (tool outputs cut as when sampling), checked against the sampler's budgets
    (``fit_to_sampler``; with ``drop_unfit`` the episodes it could not generate are left out), then
    tokenized with the training template. Returns the rows and the fit."""
    trajs = gold_trajectories(
        tasks,
        loop_config,
        tokenizer=tokenizer,
        one_call_per_turn=one_call_per_turn,
        open_episode=open_episode,
    )
    kinds = {t.id: str(t.metadata.get("kind") or "task") for t in tasks}
    kept, fit = fit_to_sampler(trajs, kinds, loop_config, drop=drop_unfit)
    return sft_rows(kept, tokenizer, max_length=max_length), fit


def run_sft(
    model: Any,
    tokenizer: Any,
    rows: list[dict],
    sft_config: Any,
    lora_config: Any = None,
    callbacks: list[Any] | None = None,
    resume_from_checkpoint: str | None = None,
    phase: str = "sft",
) -> Any:
    """Train with TRL's SFTTrainer on tokenized rows; returns the trainer (its model has the adapter).
    ``phase`` names the steps in the printed lines (``sft``; ``rft`` for the rejection-sampling round)."""
    from toolkit.train.callbacks import use_step_lines
    from toolkit.train.trl_adapter import sft_trainer

    if not rows:
        raise ValueError("no SFT examples: the gold replay produced no clean trajectories")
    trainer = sft_trainer(model, tokenizer, rows, sft_config, lora_config, callbacks)
    use_step_lines(trainer, phase)  # one line per step, not the raw log dict
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
