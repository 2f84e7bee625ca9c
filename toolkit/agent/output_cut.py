"""Cutting a tool output to the loop's budget (``RolloutConfig.max_tool_output_tokens``).

Two ways, chosen by ``RolloutConfig.tool_output_cut``:

- ``tail``: keep the first ``limit`` tokens and say how many were dropped. A JSON reply loses whatever
  comes last, and servers put their summaries last: ``{"items": [...], "total": 2}``, ``{"rainy_days":
  [...], "count": 5}``. With SmolLM2 and 128 tokens that cut the count out of 14 of the 14 replies of
  ``find_rainy_days`` in the cpu-learn dev set (docs/cpu-proof/README.md, "Tool outputs cut to fit").
- ``json``: the same head of the reply, and when the reply is a JSON object the marker also names its
  top-level fields that the cut hid: scalars with their values (``"count": 5``, ``"total": 2``,
  ``"next_cursor": null``; strings over 40 characters left out) and lists and objects by their size
  (``"rainy_days": [5 items]``). The head is shortened until head and marker fit the budget together.
  Taking whole items off the end of the lists instead kept fewer items in view than the head does
  (one holding of four where the head shows two, no ticket of two where it shows one).
  Anything else (not JSON, a JSON list, a marker too long for the budget) is cut as ``tail``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

TOOL_OUTPUT_CUTS = ("tail", "json")
MAX_FIELD_CHARS = 40  # a longer string field is left out of the marker


def check_tool_output_cut(name: str) -> None:
    if name not in TOOL_OUTPUT_CUTS:
        raise ValueError(f"tool_output_cut {name!r}: expected one of {', '.join(TOOL_OUTPUT_CUTS)}")


def cut_tail(text: str, limit: int, encode: Callable[[str], list[int]] | None, decode: Any) -> str:
    """The first ``limit`` tokens (or ``4 * limit`` characters without a tokenizer) and a marker."""
    if encode is not None:
        ids = encode(text)
        if len(ids) <= limit:
            return text
        return decode(ids[:limit]) + f"\n[... truncated: showing {limit} of {len(ids)} tokens]"
    chars = 4 * limit
    if len(text) <= chars:
        return text
    return text[:chars] + f"\n[... truncated: showing {chars} of {len(text)} characters]"


def _field_notes(data: dict[str, Any]) -> list[str]:
    """The top-level fields of a JSON object as short notes: scalars as ``"key": value`` (long strings
    left out), lists and objects by their size (``"key": [5 items]``)."""
    notes = []
    for key, value in data.items():
        if isinstance(value, list):
            notes.append(f"{json.dumps(key)}: [{len(value)} item{'' if len(value) == 1 else 's'}]")
        elif isinstance(value, dict):
            notes.append(f"{json.dumps(key)}: {{{len(value)} field{'' if len(value) == 1 else 's'}}}")
        else:
            shown = json.dumps(value, ensure_ascii=False)
            if len(shown) <= MAX_FIELD_CHARS:
                notes.append(f"{json.dumps(key)}: {shown}")
    return notes


def cut_json(text: str, limit: int, encode: Callable[[str], list[int]] | None, decode: Any) -> str:
    """``text`` cut to ``limit`` tokens; a JSON object's top-level fields that the cut hides are named
    in the marker (module docstring). Without a tokenizer: ``4 * limit`` characters."""
    if encode is None:  # characters stand for tokens
        budget, unit, ids = 4 * limit, "characters", text
        size, head_of = len, lambda k: text[:k]
    else:
        budget, unit, ids = limit, "tokens", encode(text)
        size, head_of = (lambda s: len(encode(s))), (lambda k: decode(ids[:k]))
    if len(ids) <= budget:
        return text
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return cut_tail(text, limit, encode, decode)
    notes = _field_notes(data)
    keep = budget
    while keep > 0:  # the hidden fields depend on where the cut falls, the cut on the marker's length
        head = head_of(keep)
        hidden = [n for n in notes if n not in head]
        marker = f"\n[... truncated: showing {keep} of {len(ids)} {unit}"
        marker += f"; fields after the cut: {', '.join(hidden)}]" if hidden else "]"
        if keep + size(marker) <= budget:
            return head + marker
        keep = min(keep - 1, budget - size(marker))
    return cut_tail(text, limit, encode, decode)


def cut_tool_output(
    text: str, limit: int, how: str, encode: Callable[[str], list[int]] | None = None, decode: Any = None
) -> str:
    """``text`` within ``limit`` tokens of ``encode`` (about 4 characters a token without one)."""
    if how == "json":
        return cut_json(text, limit, encode, decode)
    return cut_tail(text, limit, encode, decode)
