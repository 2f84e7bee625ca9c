"""The optional teacher for own-server tasks: any OpenAI-compatible model (``--teacher-base-url``,
``--teacher-model``).

It does two things, neither of which it is trusted with:

- ``propose_calls``: from the read tools' schemas it proposes argument sets to try. They join the
  exploration as examples, so a task made from one is grounded in the output the server really gave and
  replayed like every other task (a proposal the server rejects is only an error in the report).
- ``phrase``: it rewrites a kept task's templated prompt as a person would ask it. The rewrite is kept
  only when every quoted value and number of the prompt survives (``toolkit.synth.paraphrase``) and its
  ordinal, superlative and comparison words are the same ones (``order_words``: "the second largest"
  rewritten "the first smallest" keeps every value yet asks for another answer); the gold calls,
  answers and rubric do not change (checked), so the replay that validated the task still holds.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from toolkit.endpoint import EndpointError, chat
from toolkit.records import Task
from toolkit.synth.paraphrase import paraphrase, rewriter_endpoint
from toolkit.toolbox import ToolSpec, compact_schema

PROPOSE = (
    "You help test an MCP server. Below are its read-only tools as JSON. Propose up to {n} calls that a "
    "user of this server would make, with realistic argument values, as a JSON list of objects "
    '{{"tool": name, "arguments": {{...}}}}. Reply with the JSON list only.'
)


def _reply(client: Any, model: str, system: str, user: str, seed: int) -> str:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    reply = chat(client, rewriter_endpoint(model), messages, temperature=0, seed=seed, max_tokens=1500)
    return reply.text.strip()


def propose_calls(
    client: Any, model: str, reads: Sequence[ToolSpec], n: int = 20, seed: int = 0
) -> tuple[dict[str, list[dict[str, Any]]], str]:
    """(tool -> proposed argument dicts, a note on what was rejected). Never raises for a bad reply."""
    tools = [{"name": s.name, "description": s.description, "input_schema": compact_schema(s.input_schema)}
             for s in reads]  # fmt: skip
    try:
        text = _reply(client, model, PROPOSE.format(n=n), json.dumps(tools, ensure_ascii=False), seed)
    except Exception as exc:  # noqa: BLE001 (an unreachable teacher leaves exploration as it was)
        return {}, f"teacher unavailable: {exc if isinstance(exc, EndpointError) else type(exc).__name__}"
    match = re.search(r"\[.*\]", text, re.S)
    try:
        items = json.loads(match.group(0)) if match else None
    except ValueError:
        items = None
    if not isinstance(items, list):
        return {}, "teacher reply was not a JSON list"
    names = {s.name for s in reads}
    out: dict[str, list[dict[str, Any]]] = {}
    rejected = 0
    for item in items[:n]:
        ok = (
            isinstance(item, dict)
            and item.get("tool") in names
            and isinstance(item.get("arguments", {}), dict)
        )
        if not ok:
            rejected += 1
            continue
        out.setdefault(item["tool"], []).append(dict(item.get("arguments", {})))
    return out, f"{sum(map(len, out.values()))} proposed calls, {rejected} rejected (not a read tool)"


def keep_strings(prompt: str) -> list[str]:
    """What a rewrite must keep: quoted values and numbers."""
    return re.findall(r'"([^"]+)"', prompt) + re.findall(r"\b\d+(?:\.\d+)?\b", prompt)


_ORDINALS = {w: i for i, w in enumerate(("first", "second", "third", "fourth", "fifth", "sixth", "seventh",
    "eighth", "ninth", "tenth", "eleventh", "twelfth"), 1)}  # fmt: skip
# Words that pick which item, which end or which side a question means. "over" and "under" are left
# out: the aggregate prompts say "over all ... entries", which a rewrite may well say as "across".
_ORDER_WORDS = frozenset({
    "last", "penultimate", "next", "previous",
    "largest", "smallest", "highest", "lowest", "most", "least", "earliest", "latest", "newest", "oldest",
    "biggest", "greatest", "fewest", "cheapest", "priciest", "longest", "shortest", "youngest", "best",
    "worst", "top", "bottom", "maximum", "minimum", "max", "min",
    "more", "less", "greater", "fewer", "higher", "lower", "larger", "smaller", "bigger", "earlier",
    "later", "newer", "older", "cheaper", "longer", "shorter", "before", "after", "above", "below",
    "exceed", "exceeds", "exceeding",
})  # fmt: skip
REJECTED_WORDS = "ordinal, superlative or comparison words changed"
REJECTED_KEEP = "a quoted value or number was dropped, or no reply"
REJECTED_GOLD = "gold calls or answers changed"


def order_words(text: str) -> Counter[str]:
    """The ordinal, superlative and comparison words of ``text``, lower case; an ordinal as its number
    ("second" and "2nd" are both "#2")."""
    out: Counter[str] = Counter()
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if m := re.fullmatch(r"(\d+)(?:st|nd|rd|th)", word):
            out[f"#{int(m[1])}"] += 1
        elif word in _ORDINALS:
            out[f"#{_ORDINALS[word]}"] += 1
        elif word in _ORDER_WORDS:
            out[word] += 1
    return out


def _graded(task: Task) -> str:
    """What the replay validated: a rewrite of the prompt must leave it as it was."""
    meta = {k: task.metadata.get(k) for k in ("answer_from", "fed")}
    return json.dumps([[(g.name, g.arguments) for g in task.gold], task.answers, meta,
                       [(r.id, r.check) for r in task.rubric]], sort_keys=True, default=str)  # fmt: skip


def phrase(
    tasks: Sequence[Task], client: Any, model: str, seed: int = 0, rejected: Counter[str] | None = None
) -> int:
    """Rewrite the prompts of ``tasks`` in place; returns how many rewrites were kept. A rewrite turned
    down leaves the templated prompt; ``rejected`` (when given) counts those by reason."""
    rejected = Counter() if rejected is None else rejected
    kept = 0
    for task in tasks:
        before = _graded(task)
        new, ok = paraphrase(task.prompt, keep_strings(task.prompt), client, model, seed)
        if not ok:
            rejected[REJECTED_KEEP] += 1
        elif new == task.prompt:
            continue
        elif order_words(new) != order_words(task.prompt):
            rejected[REJECTED_WORDS] += 1
        elif _graded(task) != before:  # the rewrite only touches the prompt; never trust that blindly
            rejected[REJECTED_GOLD] += 1
        else:
            task.metadata["templated_prompt"] = task.prompt
            task.prompt = new
            kept += 1
    return kept
