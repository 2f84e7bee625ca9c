"""Tasks for your own MCP server, grounded in what it returned while explored (``toolkit.synth.explore``).

Kinds, each answer computed from outputs and each rubric item built from the same data
(``toolkit.synth.rubric.build_rubric``, as for the kit's own servers):

- ``lookup``: a field of one output ("the entityType of the entity whose name is Alice");
- ``chain``: a value picked from one output fed to another tool, then a field (or count) of its output;
- ``aggregate``: count (optionally of items with a field value), sum, min, max over a list output;
- ``write``: one write call, checked by a read afterwards (a *probe*, ``toolkit.envs.recipe``) on a
  fresh server; made only for servers started fresh per episode;
- ``abstain``: a request none of the tools can serve (no tool calls).

An answer is recorded with the recipe that computes it from the gold calls' outputs
(``metadata["answer_from"]``), so a replay recomputes it (``compute``).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolkit.synth.base import Answer, Draft, Step, dress
from toolkit.synth.explore import Exploration, Observation, Path_, get_path, name_tokens, parse_output

KINDS = ("lookup", "chain", "aggregate", "write", "abstain")
_ID_KEYS = ("name", "id", "title", "subject", "key", "path", "slug", "email", "filename")
_IRREGULAR = {"children": "child", "people": "person", "data": "data", "entries": "entry", "indices": "index"}
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


def human(name: str) -> str:
    return " ".join(name_tokens(name)) or name


def singular(word: str) -> str:
    word = human(word)
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("sses", "xes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def fmt(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def answerable(value: Any) -> bool:
    """A value an answer check can look for without passing by accident."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return True
    if not isinstance(value, str) or value.strip().lower() in ("true", "false", "none", "null", "n/a"):
        return False
    return 2 <= len(value.strip()) <= 80 and "\n" not in value


def context(obs: Observation) -> str:
    """How a prompt points at a call: "the results of search nodes for query "tea""."""
    what = human(obs.tool)
    if not obs.args:
        return f"the results of {what}"
    args = ", ".join(
        f"{human(k)} {fmt(v[0] if isinstance(v, list) and len(v) == 1 else v)}" for k, v in obs.args.items()
    )
    return f"the results of {what} for {args}"


# ---- records in an output ---------------------------------------------------------------------------


def record_lists(data: Any, path: Path_ = ()) -> Iterator[tuple[Path_, list[Any]]]:
    """Every list in ``data`` (of dicts or of scalars), with its path."""
    if isinstance(data, list):
        yield path, data
        for i, v in enumerate(data):
            if isinstance(v, dict | list):
                yield from record_lists(v, (*path, i))
    elif isinstance(data, dict):
        for k, v in data.items():
            yield from record_lists(v, (*path, k))


def resized(obs: Observation, path: Path_) -> bool:
    """Whether the list at ``path``, or one holding it, had a different length on the two servers."""
    return any(path[:n] in obs.volatile for n in range(len(path) + 1))


def id_field(items: list[dict[str, Any]], volatile: set[Path_], path: Path_) -> str | None:
    """A field whose stable string values tell the items apart (a name, an id, a path)."""
    fields = [k for k in items[0] if all(isinstance(it, dict) and isinstance(it.get(k), str) for it in items)]
    fields.sort(key=lambda k: (not any(t in k.lower() for t in _ID_KEYS), len(k)))
    for k in fields:
        values = [it[k] for it in items]
        if len(set(values)) == len(values) and not any((*path, i, k) in volatile for i in range(len(items))):
            if all(answerable(v) for v in values):
                return k
    return None


def compute(spec: dict[str, Any], outputs: Sequence[Any]) -> Any:
    """An answer from parsed gold outputs, by its recipe (``metadata["answer_from"]``)."""
    data = outputs[spec["call"]]
    op = spec["op"]
    if op == "field":
        return get_path(data, tuple(spec["path"]))
    items = get_path(data, tuple(spec["list"]))
    if op == "field_of":
        ((key, value),) = spec["match"].items()
        hits = [it for it in items if isinstance(it, dict) and it.get(key) == value]
        if len(hits) != 1:
            raise LookupError(f"{len(hits)} items with {key}={value!r}")
        return hits[0][spec["field"]]
    if spec.get("where"):
        ((key, value),) = spec["where"].items()
        items = [it for it in items if isinstance(it, dict) and it.get(key) == value]
    if op == "count":
        return len(items)
    numbers = [it[spec["field"]] for it in items]
    if op == "sum":
        total = sum(numbers)
        return round(total, 6) if isinstance(total, float) else total
    if op == "min":
        return min(numbers)
    if op == "max":
        return max(numbers)
    raise ValueError(f"unknown answer recipe {op!r}")


def _answer(key: str, value: Any, text: str) -> Answer:
    number = isinstance(value, int | float)
    tol = 0.01 if isinstance(value, float) else 0.0
    return Answer(key, value, "number" if number else "text", tol, text)


def _step(obs: Observation, depends_on: Sequence[int] = (), alternatives: Sequence[str] = ()) -> Step:
    return Step(obs.tool, dict(obs.args), list(depends_on), [a for a in alternatives if a != obs.tool],
                purpose=f"read {context(obs)[4:]}")  # fmt: skip


def _draft(kind: str, template: str, prompt: str, steps: list[Step], answers: list[Answer],
           specs: list[dict[str, Any]], reference: str) -> Draft:  # fmt: skip
    d = Draft(
        template=template, kind=kind, prompt=prompt, steps=steps, answers=answers, reference_answer=reference
    )
    d.metadata = {"answer_from": specs}
    return d


# ---- read kinds --------------------------------------------------------------------------------------


def _read_lists(exp: Exploration) -> list[tuple[str, list[list[dict[str, Any]]]]]:
    """Each successful read, in order: its tool and the dict items of every list in its output (what
    ``_alternatives`` searches; walked once per exploration, not once per fact)."""
    return [
        (o.tool, [[it for it in items if isinstance(it, dict)] for _, items in record_lists(o.data)])
        for o in exp.observations
        if o.ok
    ]


def _alternatives(reads: list[tuple[str, list[list[dict[str, Any]]]]], facts: dict[str, Any]) -> list[str]:
    """Other read tools whose outputs, while explored, showed an item with the same facts (``reads``:
    ``_read_lists`` of the exploration)."""
    tools: list[str] = []
    for tool, lists in reads:
        if tool in tools:
            continue
        for items in lists:
            if any(all(it.get(k) == v for k, v in facts.items()) for it in items):
                tools.append(tool)
                break
    return tools


@dataclass
class Fact:
    """A question one output answers: ``question`` has a ``{where}`` slot for how the call is named."""

    kind: str
    template: str
    question: str
    answer: Answer
    spec: dict[str, Any]
    reference: str
    alternatives: list[str] = field(default_factory=list)


def facts(
    obs: Observation,
    exp: Exploration | None = None,
    reads: list[tuple[str, list[list[dict[str, Any]]]]] | None = None,
) -> Iterator[Fact]:
    """Lookups and aggregates over one stable output (never a value the call was given); with ``exp``,
    each item field's alternatives (``reads``: ``_read_lists(exp)`` when the caller has it already)."""
    data = obs.data
    given = {json.dumps(v) for v in obs.args.values()} | {
        json.dumps(x) for v in obs.args.values() if isinstance(v, list) for x in v
    }
    if isinstance(data, dict) and len(data) > 1:  # one record: each stable scalar field at the top
        for k, v in data.items():
            if answerable(v) and (k,) not in obs.volatile and json.dumps(v) not in given:
                yield Fact("lookup", "own_field", f"in {{where}}, what is the {human(k)}?",
                           _answer(k, v, f"the {human(k)} is {v}"), {"op": "field", "path": [k]},
                           f"The {human(k)} is {v}.")  # fmt: skip
    for path, items in record_lists(data):
        owner = _owner(obs, path)
        # a list whose length differed between the two servers gives no fact at all (count, sum, min,
        # max, item fields): which items it holds depends on the run (explore._volatile)
        if not items or owner is None or resized(obs, path):
            continue
        noun = singular(str(path[-1])) if path and isinstance(path[-1], str) else "entry"
        things = ("entries" if noun == "entry" else f"{noun} entries") + owner
        base = {"list": list(path)}
        yield Fact("aggregate", "own_count", f"how many {things} are there in {{where}}?",
                   _answer("count", len(items), f"there are {len(items)} {things}"),
                   {**base, "op": "count"}, f"There are {len(items)} {things}.")  # fmt: skip
        if not all(isinstance(it, dict) for it in items):
            continue
        idk = id_field(items, obs.volatile, path)
        for i, it in enumerate(items if idk else []):
            for k, v in it.items():
                if (
                    k == idk
                    or not answerable(v)
                    or (*path, i, k) in obs.volatile
                    or v == it[idk]
                    or json.dumps(v) in given
                ):
                    continue
                if exp and reads is None:
                    reads = _read_lists(exp)
                alts = _alternatives(reads, {idk: it[idk], k: v}) if exp else []
                yield Fact("lookup", "own_item_field",
                           f"in {{where}}, what is the {human(k)} of the {noun} whose {human(idk)} is {fmt(it[idk])}{owner}?",
                           _answer(k, v, f"the {human(k)} of {it[idk]} is {v}"),
                           {**base, "op": "field_of", "match": {idk: it[idk]}, "field": k},
                           f"The {human(k)} of {it[idk]} is {v}.", alts)  # fmt: skip
        if len(items) < 2:
            continue
        for k in items[0]:
            if any((*path, i, k) in obs.volatile for i in range(len(items))):
                continue
            values = [it.get(k) for it in items]
            if all(isinstance(v, str) for v in values) and 1 < len(set(values)) < len(values):
                for v, c in sorted(Counter(values).items()):
                    if answerable(v):
                        yield Fact("aggregate", "own_count_where",
                                   f"how many {things} in {{where}} have {human(k)} {fmt(v)}?",
                                   _answer("count", c, f"{c} {things} have {human(k)} {v}"),
                                   {**base, "op": "count", "where": {k: v}},
                                   f"{c} {things} have {human(k)} {v}.")  # fmt: skip
            numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
            if numeric and not any(t in ("id", "cid", "pk") for t in name_tokens(k)):
                for op, word in (("sum", "total"), ("max", "largest"), ("min", "smallest")):
                    value = compute({**base, "op": op, "field": k, "call": 0}, [data])
                    yield Fact("aggregate", f"own_{op}",
                               f"what is the {word} {human(k)} over all {things} in {{where}}?",
                               _answer(op, value, f"the {word} {human(k)} is {value}"),
                               {**base, "op": op, "field": k}, f"The {word} {human(k)} is {value}.")  # fmt: skip


def _owner(obs: Observation, path: Path_) -> str | None:
    """For a list inside an item of another list (an entity's observations): " of the entity whose
    name is X"; "" for a list not nested in one; None when the owning item cannot be named."""
    idx = [j for j, step in enumerate(path) if isinstance(step, int)]
    if not idx:
        return ""
    j = idx[-1]
    parents = get_path(obs.data, path[:j])
    if not all(isinstance(p, dict) for p in parents):
        return None
    idk = id_field(parents, obs.volatile, path[:j])
    if idk is None:
        return None
    pnoun = singular(str(path[j - 1])) if j and isinstance(path[j - 1], str) else "entry"
    return f" of the {pnoun} whose {human(idk)} is {fmt(parents[path[j]][idk])}"


def singles(exp: Exploration, rng: random.Random) -> Iterator[Draft]:
    """Lookups and aggregates answered by one call."""
    reads = _read_lists(exp)
    for obs in (o for o in exp.observations if o.ok):
        for f in facts(obs, exp, reads):
            prompt = dress(rng, f.question.format(where=context(obs)))
            yield _draft(f.kind, f.template, prompt, [_step(obs, alternatives=f.alternatives)], [f.answer],
                         [{**f.spec, "call": 0}], f.reference)  # fmt: skip


def _selector(src: Observation, path: Path_) -> str | None:
    """How a prompt picks the item of ``src``'s output that holds ``path`` without naming the value:
    by another field that is unique in its list, else by position."""
    for cut in range(len(path) - 1, -1, -1):
        if not isinstance(path[cut], int):
            continue
        lst_path, idx = path[:cut], path[cut]
        if resized(src, lst_path):  # which item sits where depends on the run: no pick at all
            return None
        items = get_path(src.data, lst_path)
        noun = singular(str(lst_path[-1])) if lst_path and isinstance(lst_path[-1], str) else "entry"
        item = items[idx]
        if isinstance(item, dict):
            for k, v in item.items():
                if (
                    (*lst_path, idx, k) == tuple(path)
                    or not answerable(v)
                    or (*lst_path, idx, k) in src.volatile
                ):
                    continue
                if sum(isinstance(o, dict) and o.get(k) == v for o in items) == 1:
                    return f"the {noun} whose {human(k)} is {fmt(v)}"
        if idx < len(_ORDINALS) and len(items) > 1:
            return f"the {_ORDINALS[idx]} {noun} listed"
        return None
    if path and isinstance(path[-1], str):
        return f"the {human(path[-1])}"
    return None


def chains(exp: Exploration, rng: random.Random) -> Iterator[Draft]:
    """A value picked from one output, fed to another call, then a fact of that call's output."""
    by_id = {o.id: o for o in exp.observations}
    for second in (o for o in exp.observations if o.ok and len(o.fed) == 1):
        ((arg, (src_id, path)),) = second.fed.items()
        src = by_id[src_id]
        pick = _selector(src, tuple(path))
        if pick is None or not src.ok:
            continue
        shown = {k: v for k, v in second.args.items() if k != arg}
        extra = (" with " + ", ".join(f"{human(k)} {fmt(v)}" for k, v in shown.items())) if shown else ""
        lead = f"In {context(src)}, take {pick} and look it up with {human(second.tool)}{extra}."
        steps = [_step(src), _step(second, depends_on=[0])]
        steps[0].produces = human(arg)
        for f in facts(second):
            if f.template not in ("own_field", "own_item_field", "own_count"):
                continue
            question = f.question.format(where="its results")
            prompt = dress(rng, f"{lead} {question[0].upper()}{question[1:]}")
            d = _draft("chain", "own_chain", prompt, steps, [f.answer], [{**f.spec, "call": 1}], f.reference)
            value = get_path(src.data, tuple(path))
            d.metadata["fed"] = {"call": 0, "path": list(path), "to": 1, "arg": arg, "value": value}
            yield d


ABSTAIN = (
    ("send an email to {name} saying the meeting moved to Friday", {"email", "mail", "send", "message"}),
    ("book me a flight from Lisbon to Oslo next Tuesday", {"flight", "book", "travel", "trip"}),
    ("tell me tomorrow's weather forecast for Nairobi", {"weather", "forecast"}),
    ("translate 'good morning, {name}' into Japanese", {"translate", "translation"}),
    ("order a large pizza delivered to my office", {"order", "food", "delivery", "pizza"}),
    ("convert 250 US dollars to euros at today's rate", {"currency", "convert", "exchange", "rate"}),
    ("play my workout playlist on the living-room speaker", {"play", "music", "playlist", "speaker"}),
    ("call a taxi to the central station", {"taxi", "ride", "car"}),
)


def abstentions(exp: Exploration, rng: random.Random) -> Iterator[Draft]:
    tokens = {t for name in exp.specs for t in name_tokens(name)}
    people = re.compile(r"^[A-Z][a-z]+ [A-Z][a-z]+$")  # values that read as a person's name, else stock ones
    names = [p.value for p in exp.pool if isinstance(p.value, str) and people.match(p.value)][:8] or [
        "Sam",
        "Priya",
    ]
    for request, verbs in ABSTAIN:
        if tokens & verbs:
            continue
        for name in sorted(set(names))[:3]:
            d = Draft(template="own_abstain", kind="abstain", prompt=dress(rng, request.format(name=name)),
                      reference_answer="Sorry, none of the tools I have access to can do that.")  # fmt: skip
            d.metadata = {"answer_from": []}
            yield d
            if "{name}" not in request:
                break


READ_MAKERS = {"single": singles, "chain": chains, "abstain": abstentions}


def read_drafts(exp: Exploration, rng: random.Random) -> dict[str, list[Draft]]:
    """Every draft each read kind can make, deduplicated by (calls, answers)."""
    out: dict[str, list[Draft]] = {k: [] for k in KINDS if k != "write"}
    seen: set[str] = set()
    for maker in READ_MAKERS.values():
        for d in maker(exp, rng):
            what = d.prompt if d.kind == "abstain" else [(a.key, a.value) for a in d.answers]
            sig = json.dumps([[(s.name, s.arguments) for s in d.steps], what, d.template],
                             sort_keys=True, default=str)  # fmt: skip
            if sig not in seen:
                seen.add(sig)
                out[d.kind].append(d)
    return out


def outputs_of(results: Sequence[Any]) -> list[Any]:
    return [parse_output(r.text, r.structured) for r in results]
