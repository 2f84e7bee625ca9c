"""Leaked answers: a task whose expected value an earlier hop already states is not the task it claims.

"Trace deal d-009 through its company and report the name" is a two-hop chain only if the deal does not
already say the company's name; the deal "Granite Bank - Renewal" does, and a model passes after one
call. Synthesis drops such a task (``toolkit.synth.replay``): an expected answer value is leaked when
the output of a gold call that the call producing it depends on (directly or through other calls)
already states it, by the mention rules of the answer check (``toolkit.checks.answer``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from toolkit.checks.answer import date_mentions, fold, number_mentions, text_mentions, value_kind
from toolkit.checks.normalize import numbers_close, parse_date, parse_number

# A listing's own bookkeeping ("total": 1 results, a cursor) says how many records matched the search,
# not anything about them: not a statement of an answer.
PAGING_KEYS = frozenset(
    {"total", "count", "next_cursor", "cursor", "offset", "limit", "page", "page_size", "has_more"}
)


def content(output: str) -> str:
    """A tool output without the paging fields of a listing (JSON), else as it is."""
    try:
        data = json.loads(output)
    except (ValueError, RecursionError):
        return output
    if isinstance(data, dict) and any(isinstance(v, list) for v in data.values()):
        data = {k: v for k, v in data.items() if k not in PAGING_KEYS}
    return json.dumps(data, ensure_ascii=False)


def states(text: str, value: Any, rule: str | None, tolerance: float = 0.0) -> bool:
    """Whether ``text`` (a tool output) states ``value`` under ``rule``, as a mention of its own kind."""
    folded = fold(content(text))
    kind = value_kind(value, rule)
    if kind == "number":
        want = parse_number(value)
        return want is not None and any(
            numbers_close(m.value, want, tolerance) for m in number_mentions(folded)
        )
    if kind == "date":
        want = parse_date(value)
        return want is not None and any(m.value == want for m in date_mentions(folded))
    return bool(text_mentions(folded, str(value), rule))


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
        stated = {i for i in range(min(n, len(outputs))) if states(outputs[i], value, rule, tol)}
        # the call that produces the value: a last hop that states it; a value no last hop states is
        # computed (a count, a sum), produced by every last hop of a single-part task; in a multi-part
        # task its part is unknown, so it is not judged
        needed = [i for i in sinks if i in stated] or (sinks if _connected(parents) else [])
        early = sorted({a for i in needed for a in ancestors(i)} & stated)
        if early:
            return f"{value!r} is already stated by step {early[0]} ({gold[early[0]].name})"
    return ""


def _connected(parents: Sequence[set[int]]) -> bool:
    """Whether the gold calls form one dependency graph (one part), ignoring direction."""
    n = len(parents)
    if n <= 1:
        return True
    links = {i: set() for i in range(n)}
    for j, ps in enumerate(parents):
        for i in ps:
            if 0 <= i < n:
                links[i].add(j)
                links[j].add(i)
    seen, todo = {0}, [0]
    while todo:
        for k in links[todo.pop()] - seen:
            seen.add(k)
            todo.append(k)
    return len(seen) == n
