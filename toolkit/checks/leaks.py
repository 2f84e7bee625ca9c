"""Leaked answers: a task whose expected value an earlier hop already states is not the task it claims.

"Trace deal d-009 through its company and report the name" is a two-hop chain only if the deal does not
already say the company's name; the deal "Granite Bank - Renewal" does, and a model passes after one
call. Synthesis drops such a chain (``toolkit.synth.replay``, own-server replays too): an expected
answer value that a last hop states is leaked when an earlier hop that hop depends on (directly or
through others) states it too, by the mention rules of the answer check (``toolkit.checks.answer``); a
number only in a field of the same name, so that a 1 in some other field is no statement of it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from toolkit.checks.answer import (
    date_mentions,
    fold,
    number_mentions,
    string_leaves,
    text_mentions,
    value_kind,
)
from toolkit.checks.normalize import numbers_close, parse_date, parse_number

# A listing's own bookkeeping ("total": 1 results, a cursor) says how many records matched the search,
# not anything about them: not a statement of an answer.
PAGING_KEYS = frozenset(
    {"total", "count", "next_cursor", "cursor", "offset", "limit", "page", "page_size", "has_more"}
)


def listing_content(output: str) -> Any:
    """A tool output parsed as JSON, without the paging fields of a listing; None when it is not JSON."""
    try:
        data = json.loads(output)
    except (ValueError, RecursionError):
        return None
    if isinstance(data, dict) and any(isinstance(v, list) for v in data.values()):
        data = {k: v for k, v in data.items() if k not in PAGING_KEYS}
    return data


def _number_leaves(obj: Any, key: str = "") -> list[tuple[str, float]]:
    if isinstance(obj, bool):
        return []
    if isinstance(obj, int | float):
        return [(key, float(obj))]
    if isinstance(obj, dict):
        return [leaf for k, v in obj.items() for leaf in _number_leaves(v, str(k))]
    if isinstance(obj, list):
        return [leaf for v in obj for leaf in _number_leaves(v, key)]
    return []


def stating_fields(
    text: str, value: Any, rule: str | None, tolerance: float = 0.0, deciding: bool = True
) -> set[str] | None:
    """The fields of tool output ``text`` that state ``value`` under ``rule`` and so decide it: JSON
    fields that hold it and no other value (a field listing several candidates, as a watchlist's
    symbols or a listing's prices, decides nothing); {""} for a non-JSON output that mentions it; None
    when it states nothing. Fields are compared by name, so a 1 in another field is no statement.
    ``deciding=False``: every field that states it (the last hop, which may list others beside it)."""
    kind = value_kind(value, rule)
    want = parse_number(value) if kind == "number" else parse_date(value) if kind == "date" else value
    if want is None:
        return None
    data = listing_content(text)
    if data is None:  # not JSON: whether the text mentions it at all
        return {""} if _states(fold(text), kind, want, rule, tolerance) else None
    if kind == "number":
        leaves: list[tuple[str, Any]] = _number_leaves(data)
        hits = {k for k, v in leaves if numbers_close(v, want, tolerance)}
    else:
        leaves = [(k, fold(v)) for k, v in string_leaves(data)]
        hits = {k for k, v in leaves if _states(v, kind, want, rule, tolerance)}
    if deciding:  # a field that holds it and no other value (not one value of a list)
        hits = {k for k in hits if len({v for kk, v in leaves if kk == k}) == 1}
    return hits or None


def _states(folded: str, kind: str, want: Any, rule: str | None, tolerance: float) -> bool:
    if kind == "number":
        return any(numbers_close(m.value, want, tolerance) for m in number_mentions(folded))
    if kind == "date":
        return any(m.value == want for m in date_mentions(folded))
    return bool(text_mentions(folded, str(want), rule))


def leaked_answer(gold: Sequence[Any], outputs: Sequence[str], checks: Sequence[dict[str, Any]]) -> str:
    """Why a task's answer leaks ("" when it does not): ``gold`` its gold calls (``depends_on``),
    ``outputs`` their outputs in order, ``checks`` its essential ``answer`` check specs."""
    n = len(gold)
    parents = [set(g.depends_on) for g in gold]
    children = [{j for j in range(n) if i in parents[j]} for i in range(n)]
    sinks = [i for i in range(n) if not children[i]]

    def ancestors(i: int) -> set[int]:
        seen: set[int] = set()
        todo = list(parents[i])
        while todo:
            j = todo.pop()
            if j not in seen and 0 <= j < n:
                seen.add(j)
                todo.extend(parents[j])
        return seen

    for check in checks:
        value, rule, tol = check.get("value"), check.get("normalize"), float(check.get("tolerance", 0.0))

        def fields(i: int, deciding: bool, value=value, rule=rule, tol=tol) -> set[str] | None:
            return stating_fields(outputs[i], value, rule, tol, deciding) if i < len(outputs) else None

        # the value's source is a last hop that states it (among other values, maybe); an earlier hop it
        # depends on leaks it when a field of the same name there states it and nothing else. A value no
        # last hop states was computed or taken from an earlier hop on purpose: not judged here.
        for sink in sinks:
            last = fields(sink, deciding=False)
            for anc in sorted(ancestors(sink)) if last else []:
                early = fields(anc, deciding=True)
                if early and early & last:
                    return f"{value!r} is already stated by step {anc} ({gold[anc].name})"
    return ""


def chain_leak(task: Any, outputs: Sequence[str]) -> str:
    """``leaked_answer`` for a read-only chain task (kind ``chain``: an answer the last hop produces); ""
    for other kinds, whose answers earlier hops may produce on purpose (a review's intermediate values),
    and for a chain that writes ("book the cheapest flight and tell me its price": the search already
    shows the price, and the booking is the point)."""
    if task.metadata.get("kind") != "chain" or any(it.check.get("type") == "state" for it in task.rubric):
        return ""  # a chain that writes needs its write whatever the reads already show
    checks = [it.check for it in task.rubric if it.essential and it.check.get("type") == "answer"]
    return leaked_answer(task.gold, outputs, checks)
