"""Graph-walk templates: follow foreign keys from one record to the next, one tool call per hop.

The world's foreign keys (``tickets.requester_id`` -> customers, ``customers.company_id`` ->
companies, ``companies.account_manager_id`` -> staff, ...) are found from the data itself
(``graph.foreign_keys``); each collection is read by one getter tool. A walk of h hops is a gold
chain of h + 1 calls where every call needs the id the previous one returned, within one server or
across several: the dependency-graph-guided chains of PROVE (reference 002), grounded in entities
that exist. ``entity_field`` is the one-call case.
"""

from __future__ import annotations

from typing import Any

from toolkit.synth.base import Answer, Draft, Step, payload
from toolkit.synth.graph import foreign_keys
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import ENTITY, RELATION, items

# collection -> (getter tool, id argument, server)
GETTERS: dict[str, tuple[str, str, str]] = {
    "tickets": ("view_ticket", "ticket_id", "helpdesk"),
    "customers": ("get_contact", "contact_id", "crm"),
    "companies": ("get_company", "company_id", "crm"),
    "deals": ("get_deal", "deal_id", "crm"),
    "staff": ("get_staff", "staff_id", "directory"),
    "events": ("get_event", "event_id", "calendar"),
    "orders": ("get_order", "order_id", "shop"),
    "products": ("get_product", "product_id", "shop"),
}
# collection -> (search tool, query argument, server): find a record by its name first.
SEARCHERS: dict[str, tuple[str, str, str]] = {
    "customers": ("search_contacts", "query", "crm"),
    "companies": ("search_companies", "query", "crm"),
    "staff": ("search_staff", "query", "directory"),
}
# collection -> [(field, words, normalisation)] a prompt may ask about.
ASKABLE: dict[str, list[tuple[str, str, str]]] = {
    "customers": [
        ("email", "email address", "text"),
        ("phone", "phone number", "text"),
        ("title", "job title", "text"),
        ("name", "name", "name"),
    ],
    "companies": [
        ("industry", "industry", "text"),
        ("tier", "account tier", "text"),
        ("city", "city", "text"),
        ("name", "name", "text"),
    ],
    "staff": [
        ("last_login", "last login date", "date"),
        ("email", "email address", "text"),
        ("team", "team", "text"),
        ("name", "name", "name"),
        ("city", "city", "text"),
    ],
    "tickets": [
        ("status", "status", "text"),
        ("priority", "priority", "text"),
        ("subject", "subject", "text"),
    ],
    "deals": [
        ("stage", "stage", "text"),
        ("amount", "amount", "number"),
        ("close_date", "expected close date", "date"),
    ],
    "events": [("title", "title", "text"), ("location", "location", "text"), ("start", "start date", "date")],
    "orders": [("status", "status", "text"), ("total", "total", "number")],
    "products": [
        ("price", "price", "number"),
        ("category", "category", "text"),
        ("stock", "stock level", "number"),
    ],
}


def hops(ctx: Ctx) -> dict[str, list[tuple[str, str]]]:
    """collection -> [(fk field, target collection)] usable for walks in this environment."""
    out: dict[str, list[tuple[str, str]]] = {}
    fks = foreign_keys_cached(ctx.world)
    for (coll, fld), target in sorted(fks.items()):
        if (
            fld in RELATION
            and coll in GETTERS
            and target in GETTERS
            and _has(ctx, coll)
            and _has(ctx, target)
        ):
            if fld == "company_id" and coll == "tickets":
                continue  # a ticket's company is its requester's: ask via the requester instead
            out.setdefault(coll, []).append((fld, target))
    return out


_FK_CACHE: dict[int, tuple[dict, dict[tuple[str, str], str]]] = {}


def foreign_keys_cached(world: dict) -> dict[tuple[str, str], str]:
    """foreign_keys among the walkable collections, per world object (the base worlds are cached and
    never mutated). Only GETTERS' collections take part, so collections other domains add to the
    world can never change which keys the walks follow."""
    hit = _FK_CACHE.get(id(world))
    if hit is None or hit[0] is not world:
        walkable = {c: world[c] for c in sorted(world) if c in GETTERS}
        hit = _FK_CACHE[id(world)] = (world, foreign_keys(walkable))
    return hit[1]


def _has(ctx: Ctx, coll: str) -> bool:
    return not ctx.tools or GETTERS[coll][0] in ctx.tools


def _name_of(rec: dict[str, Any]) -> str:
    return str(rec.get("name") or rec.get("title") or rec.get("subject") or rec["id"])


def _walk(ctx: Ctx, n_hops: int) -> tuple[str, list[dict[str, Any]], list[str], list[str]]:
    """A random walk of exactly n_hops: (start collection, records, fk fields, collections)."""
    graph = hops(ctx)
    starts = (
        [c for c in sorted(graph) if c in ctx.world]
        if n_hops
        else [c for c in sorted(GETTERS) if c in ctx.world and _has(ctx, c)]
    )
    for _ in range(20):
        coll = ctx.choose(starts)
        rec = ctx.choose(ctx.records(coll))
        recs, fields, colls = [rec], [], [coll]
        while len(fields) < n_hops:
            options = [(f, t) for f, t in graph.get(colls[-1], []) if recs[-1].get(f) and t not in colls]
            if not options:
                break
            f, t = ctx.choose(options)
            recs.append(ctx.world[t][recs[-1][f]])
            fields.append(f)
            colls.append(t)
        if len(fields) == n_hops:
            return coll, recs, fields, colls
    raise Skip(f"no walk of {n_hops} hops")


def _ask(ctx: Ctx, coll: str, rec: dict[str, Any]) -> tuple[str, str, str]:
    options = [(f, w, n) for f, w, n in ASKABLE.get(coll, []) if rec.get(f) not in (None, "")]
    return ctx.choose(options)


def _tail(ctx: Ctx, coll: str, rec: dict[str, Any]) -> tuple[Step, str, int, Any] | None:
    """An extra aggregate call at the end of a walk: (step, question words, value, recompute)."""
    if coll == "customers" and _has_tool(ctx, "search_tickets"):
        status = ctx.choose(("open", "solved", "closed", "pending"))
        n = sum(
            t["requester_id"] == rec["id"] and t["status"] == status for t in ctx.world["tickets"].values()
        )
        step = Step(
            "search_tickets",
            {"requester_id": rec["id"], "status": status, "limit": 50},
            checked_args=["requester_id", "status"],
            purpose=f"count their {status} tickets",
        )
        return (
            step,
            f"How many {status} tickets has that person raised?",
            n,
            lambda r: int(payload(r)["total"]),
        )
    if coll == "staff" and _has_tool(ctx, "day_agenda"):
        day = ctx.choose(sorted({e["start"][:10] for e in ctx.world["events"].values()}))
        n = sum(
            rec["id"] in e["attendee_ids"] and e["start"][:10] == day for e in ctx.world["events"].values()
        )
        step = Step(
            "day_agenda",
            {"staff_id": rec["id"], "day": day},
            normalize={"day": "date"},
            purpose=f"read their agenda for {day}",
        )
        return (
            step,
            f"How many meetings does that person have on {day}?",
            n,
            lambda r: len(payload(r)["events"]),
        )
    if coll == "companies" and _has_tool(ctx, "list_deals"):
        n = sum(d["company_id"] == rec["id"] for d in ctx.world["deals"].values())
        step = Step(
            "list_deals",
            {"company_id": rec["id"], "limit": 50},
            checked_args=["company_id"],
            purpose="list the company's deals",
        )
        return step, "How many deals does that company have on record?", n, lambda r: int(payload(r)["total"])
    return None


def _has_tool(ctx: Ctx, tool: str) -> bool:
    return not ctx.tools or tool in ctx.tools


def _chain_draft(ctx: Ctx, n_hops: int, by_name: bool, with_tail: bool = False) -> Draft:
    start, recs, fields, colls = _walk(ctx, n_hops)
    attr, words, norm = _ask(ctx, colls[-1], recs[-1])
    tail = _tail(ctx, colls[-1], recs[-1]) if with_tail else None
    first = recs[0]
    by_name = by_name and start in SEARCHERS and (not ctx.tools or SEARCHERS[start][0] in ctx.tools)
    if by_name:
        names = [r.get("name") for r in ctx.world[start].values()]
        if names.count(first.get("name")) != 1 or (n_hops == 0 and attr == "name"):
            raise Skip("name not unique, or asking for the name it gives")
        intro = f"{ENTITY[start]} {first['name']}"
    else:
        intro = f"{ENTITY[start]} {first['id']}"
    steps: list[Step] = []
    for i, (rec, coll) in enumerate(zip(recs, colls, strict=True)):
        produces = RELATION[fields[i]] + " id" if i < len(fields) else ""
        if i == 0 and by_name:  # a search returns the whole record, foreign keys included
            tool, arg, _ = SEARCHERS[coll]
            steps.append(
                Step(
                    tool,
                    {arg: rec["name"]},
                    normalize={arg: "name"},
                    purpose=f"find {rec['name']}",
                    produces=produces,
                )
            )
            continue
        tool, arg, _ = GETTERS[coll]
        steps.append(
            Step(
                tool,
                {arg: rec["id"]},
                depends_on=[i - 1] if i else [],
                purpose=f"read {ENTITY[coll]} {rec['id']}",
                produces=produces,
            )
        )
    if tail is not None:
        tail[0].depends_on = [len(steps) - 1]
        steps.append(tail[0])
    rels = [RELATION[f] for f in fields]
    path = " of the ".join(reversed(rels))
    target = f"the {path} of {intro}" if rels else intro
    if tail is not None:
        target = f"the {path} of {intro}"
    stepwise = ", then ".join(
        f"its {r}" if i == 0 else f"that {ENTITY[colls[i]]}'s {r}" for i, r in enumerate(rels)
    )
    value = recs[-1][attr]
    if tail is not None:
        question = tail[1]
        prompt = ctx.say(
            [
                "Find {target}. {q}",
                "Starting from {intro}: find {stepwise}. {q}",
                "Look up {intro} and follow {stepwise}. {q}",
            ],
            ["Trace {intro} through {stepwise}, then answer: {q}"],
            target=target,
            intro=intro,
            stepwise=stepwise,
            q=question,
        )
        words = question[0].lower() + question[1:-1]
    elif rels:
        prompt = ctx.say(
            [
                "What is the {w} of {target}?",
                "Look up {intro}, follow {stepwise}, and tell me the {w}.",
                "I need the {w} of {target}.",
                "Starting from {intro}: find {stepwise}. What is the {w}?",
            ],
            [
                "Could you trace {intro} through {stepwise} and report the {w}?",
                "Find out the {w} of {target}.",
            ],
            w=words,
            target=target,
            intro=intro,
            stepwise=stepwise,
        )
    else:
        prompt = ctx.say(
            [
                "What is the {w} of {intro}?",
                "Look up {intro} and tell me the {w}.",
                "I need the {w} of {intro}.",
            ],
            ["Find the {w} on record for {intro}.", "For {intro}, what's the {w}?"],
            w=words,
            intro=intro,
        )
    answers = [
        Answer(
            f"hop{i}_name",
            _name_of(recs[i]),
            "name" if colls[i] in ("customers", "staff") else "text",
            text=f"the {rels[i - 1]} is {_name_of(recs[i])}",
            intermediate=True,
        )
        for i in range(1, len(recs) - (0 if tail else 1))
    ]
    if tail is not None:
        value = tail[2]
        answers.append(Answer("count", value, "number", text=f"the answer to '{question}' is {value}"))
    else:
        answers.append(Answer(attr, value, norm, text=f"the {words} of {target} is {value}"))

    def recompute(results: list[Any]) -> dict[str, Any]:
        walk = results[: len(recs)]
        if by_name:
            found = items(walk[0])
            if len(found) != 1:
                raise ValueError(f"name search found {len(found)} records")
            rows = [found[0]] + [payload(r) for r in walk[1:]]
        else:
            rows = [payload(r) for r in walk]
        out = {}
        for i in range(1, len(rows)):
            if rows[i - 1].get(fields[i - 1]) != rows[i]["id"]:
                raise ValueError(f"hop {i}: {rows[i - 1].get(fields[i - 1])} != {rows[i]['id']}")
            if i < len(rows) - 1 or tail is not None:
                out[f"hop{i}_name"] = _name_of(rows[i])
        if tail is not None:
            out["count"] = tail[3](results[len(recs)])
        else:
            out[attr] = rows[-1][attr]
        return out

    reference = (
        f"The {words} of {target} is {value}." if tail is None else f"{question} The answer is {value}."
    )
    if len(recs) > 2:
        reference = "; ".join(a.text[0].upper() + a.text[1:] for a in answers[:-1]) + f". {reference}"
    servers = {GETTERS[c][2] for c in colls[1:]} | {SEARCHERS[start][2] if by_name else GETTERS[start][2]}
    return Draft(
        prompt=prompt,
        servers=sorted(servers),
        steps=steps,
        answers=answers,
        reference_answer=reference,
        recompute=recompute,
        keep=[first["name"] if by_name else first["id"]],
    )


@template("entity_field", "lookup", ["crm", "helpdesk", "directory", "calendar"], calls=(1, 1))
def entity_field(ctx: Ctx) -> Draft:
    return _chain_draft(ctx, 0, by_name=ctx.rng.random() < 0.5)


@template("fk_chain", "chain", ["crm", "helpdesk", "directory", "calendar"], calls=(2, 6))
def fk_chain(ctx: Ctx) -> Draft:
    # Short episodes get one hop; otherwise two to four (chains of 3-5 calls, PROVE's range).
    lo = max(1 if ctx.max_calls <= 2 else 2, ctx.min_calls - 1)
    hi = max(lo, min(4, ctx.max_calls - 1))
    n_hops = ctx.rng.randint(lo, hi)
    by_name = ctx.rng.random() < 0.3
    with_tail = n_hops >= 2 and n_hops + 2 <= ctx.max_calls and ctx.rng.random() < 0.4
    return _chain_draft(ctx, n_hops, by_name, with_tail)
