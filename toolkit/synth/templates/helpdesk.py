"""Helpdesk templates: ticket lookups, counts and percentages, earliest/latest, and ticket writes."""

from __future__ import annotations

from toolkit.synth.base import Answer, Draft, Step
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import (
    chain,
    change,
    count,
    field_of,
    find,
    items,
    listing,
    lookup,
    one_of,
    pct,
    read,
    unique_by,
    write,
)

STATUSES = ("new", "open", "pending", "solved", "closed")
PRIORITIES = ("low", "normal", "high", "urgent")
FIELD_WORDS = {"status": "status", "priority": "priority", "channel": "channel", "subject": "subject"}


def _tags(ctx: Ctx) -> list[str]:
    return sorted({tag for t in ctx.records("tickets") for tag in t["tags"]})


@template("hd_ticket_field", "lookup", ["helpdesk"])
def ticket_field(ctx: Ctx) -> Draft:
    ctx.need("view_ticket")
    t = ctx.choose(ctx.records("tickets"))
    fld = ctx.choose(sorted(FIELD_WORDS))
    prompt = ctx.say(
        [
            "What is the {f} of ticket {id}?",
            "Can you check ticket {id} and tell me its {f}?",
            "I need the current {f} of support ticket {id}.",
            "Look up ticket {id}: what {f} does it have?",
        ],
        ["Tell me which {f} ticket {id} has right now.", "Ticket {id} - what's its {f}?"],
        f=FIELD_WORDS[fld],
        id=t["id"],
    )
    words = FIELD_WORDS[fld]
    return lookup(
        prompt,
        Step("view_ticket", {"ticket_id": t["id"]}, purpose=f"read ticket {t['id']}"),
        fld,
        t[fld],
        f"the {words} of ticket {t['id']} is {t[fld]}",
        f"Ticket {t['id']} has {words} {t[fld]}.",
        keep=[t["id"]],
    )


@template("hd_count_status", "aggregate", ["helpdesk"])
def count_status(ctx: Ctx) -> Draft:
    ctx.need("search_tickets")
    status = ctx.choose(STATUSES)
    n = len(ctx.records("tickets", lambda t: t["status"] == status))
    prompt = ctx.say(
        [
            "How many tickets are currently {s}?",
            "Count the support tickets with status {s}.",
            "What's the number of {s} tickets in the helpdesk?",
        ],
        ["Give me a count of all tickets whose status is {s}."],
        s=status,
    )
    step = listing(
        "search_tickets", {"status": status}, f"find the {status} tickets", alternatives=["ticket_stats"]
    )
    return count(prompt, step, n, f"{status} tickets")


@template("hd_count_tag", "aggregate", ["helpdesk"])
def count_tag(ctx: Ctx) -> Draft:
    ctx.need("search_tickets")
    tag = ctx.choose(_tags(ctx))
    n = len(ctx.records("tickets", lambda t: tag in t["tags"]))
    prompt = ctx.say(
        [
            'How many tickets are tagged "{tag}"?',
            "Count the tickets carrying the {tag} tag.",
            "How many {tag} tickets do we have in total?",
        ],
        ['What number of support tickets have the tag "{tag}"?'],
        tag=tag,
    )
    step = listing("search_tickets", {"tag": tag}, f"find tickets tagged {tag}")
    text = f'{n} tickets are tagged "{tag}"'
    return count(prompt, step, n, "", text, text + ".", keep=[tag])


@template("hd_pct_priority", "aggregate", ["helpdesk"])
def pct_priority(ctx: Ctx) -> Draft:
    ctx.need("search_tickets")
    status = ctx.choose(("open", "pending", "new", "solved"))
    pool = ctx.records("tickets", lambda t: t["status"] == status)
    prio = ctx.choose(sorted({t["priority"] for t in pool}))
    value = pct(sum(t["priority"] == prio for t in pool), len(pool))
    prompt = ctx.say(
        [
            "What percentage of {s} tickets have {p} priority?",
            "Of all {s} tickets, what share is {p} priority (as a percent)?",
            "Among tickets with status {s}, how many percent are marked {p}?",
        ],
        ["Work out the percentage of {s} tickets that are {p} priority."],
        s=status,
        p=prio,
    )

    def recompute(r):
        rows = items(r[0])
        return {"percentage": pct(sum(t["priority"] == prio for t in rows), len(rows))}

    return read(
        prompt,
        listing("search_tickets", {"status": status}, f"list the {status} tickets"),
        [
            Answer(
                "percentage", value, "number", 0.1, text=f"{value}% of {status} tickets have {prio} priority"
            )
        ],
        f"{value}% of the {status} tickets ({len(pool)} in total) have {prio} priority.",
        recompute,
    )


@template("hd_earliest_latest", "aggregate", ["helpdesk"])
def earliest_latest(ctx: Ctx) -> Draft:
    ctx.need("search_tickets")
    tag = ctx.choose(_tags(ctx))
    pool = ctx.records("tickets", lambda t: tag in t["tags"])
    latest = ctx.rng.random() < 0.5
    pick = max(pool, key=lambda t: t["created"]) if latest else min(pool, key=lambda t: t["created"])
    if sum(t["created"] == pick["created"] for t in pool) > 1:
        raise Skip("tie on created time")
    word = "most recently" if latest else "first"
    prompt = ctx.say(
        [
            "Which ticket tagged {tag} was created {w}? Give me its id.",
            "Find the {w2} {tag} ticket and tell me its id and subject.",
            "Among tickets with the {tag} tag, which one was opened {w}?",
        ],
        ["I need the id of the {w2} ticket carrying the {tag} tag."],
        tag=tag,
        w=word,
        w2="newest" if latest else "oldest",
    )

    def recompute(r):
        rows = items(r[0])
        best = max(rows, key=lambda t: t["created"]) if latest else min(rows, key=lambda t: t["created"])
        return {"ticket_id": best["id"]}

    return read(
        prompt,
        listing("search_tickets", {"tag": tag}, f"list the tickets tagged {tag}"),
        [Answer("ticket_id", pick["id"], "text", text=f"the {word} created {tag} ticket is {pick['id']}")],
        f'Ticket {pick["id"]} ("{pick["subject"]}", created {pick["created"]}) was created {word}.',
        recompute,
        keep=[tag],
    )


@template("hd_satisfaction_share", "aggregate", ["helpdesk"])
def satisfaction_share(ctx: Ctx) -> Draft:
    ctx.need("list_satisfaction_ratings")
    rated = ctx.records("tickets", lambda t: bool(t["satisfaction"]))
    rating = ctx.choose(("good", "bad"))
    value = pct(sum(t["satisfaction"]["rating"] == rating for t in rated), len(rated))
    prompt = ctx.say(
        [
            "What percentage of customer satisfaction ratings are {r}?",
            "Of all satisfaction ratings left on tickets, what share is {r}?",
        ],
        ["How many percent of the CSAT ratings we received were {r}?"],
        r=rating,
    )

    def recompute(r):
        rows = items(r[0])
        return {"percentage": pct(sum(x["rating"] == rating for x in rows), len(rows))}

    return read(
        prompt,
        listing("list_satisfaction_ratings", {}, "read all satisfaction ratings"),
        [Answer("percentage", value, "number", 0.1, text=f"{value}% of ratings are {rating}")],
        f"{value}% of the {len(rated)} satisfaction ratings are {rating}.",
        recompute,
    )


@template("hd_set_priority", "write", ["helpdesk"])
def set_priority(ctx: Ctx) -> Draft:
    ctx.need("set_ticket_priority")
    t = ctx.choose(ctx.records("tickets"))
    prio = one_of(ctx, PRIORITIES, avoid=t["priority"])
    prompt = ctx.say(
        [
            "Please set the priority of ticket {id} to {p}.",
            "Change ticket {id} to {p} priority.",
            "Ticket {id} needs to be {p} priority, can you update it?",
        ],
        ["Bump ticket {id} so its priority reads {p}."],
        id=t["id"],
        p=prio,
    )
    return write(
        prompt,
        Step(
            "set_ticket_priority",
            {"ticket_id": t["id"], "priority": prio},
            purpose=f"set the priority to {prio}",
        ),
        [
            change(
                f"Ticket {t['id']} must have priority {prio} afterwards.",
                "tickets",
                t["id"],
                "priority",
                prio,
            )
        ],
        f"Ticket {t['id']} now has {prio} priority.",
        keep=[t["id"]],
    )


@template("hd_set_status", "write", ["helpdesk"])
def set_status(ctx: Ctx) -> Draft:
    ctx.need("set_ticket_status")
    t = ctx.choose(ctx.records("tickets", lambda t: t["status"] in ("open", "pending", "new")))
    status = one_of(ctx, ("pending", "solved"), avoid=t["status"])
    prompt = ctx.say(
        [
            "Mark ticket {id} as {s}.",
            "Please move ticket {id} to status {s}.",
            "Can you set ticket {id} to {s}?",
        ],
        ["Update the status of ticket {id}; it should now be {s}."],
        id=t["id"],
        s=status,
    )
    return write(
        prompt,
        Step(
            "set_ticket_status",
            {"ticket_id": t["id"], "status": status},
            checked_args=["ticket_id", "status"],
            purpose=f"set the status to {status}",
        ),
        [
            change(
                f"Ticket {t['id']} must have status {status} afterwards.",
                "tickets",
                t["id"],
                "status",
                status,
            )
        ],
        f"Ticket {t['id']} is now {status}.",
        keep=[t["id"]],
    )


@template("hd_add_tag", "write", ["helpdesk"])
def add_tag(ctx: Ctx) -> Draft:
    ctx.need("add_ticket_tags")
    t = ctx.choose(ctx.records("tickets"))
    tag = one_of(ctx, [x for x in ("vip", "escalated", "follow-up", "billing", "bug") if x not in t["tags"]])
    new_tags = sorted(set(t["tags"]) | {tag})
    prompt = ctx.say(
        [
            'Add the tag "{tag}" to ticket {id}.',
            "Please tag ticket {id} with {tag}.",
            "Ticket {id} should carry the {tag} tag too.",
        ],
        ['Put a "{tag}" tag on ticket {id}, keeping its other tags.'],
        id=t["id"],
        tag=tag,
    )
    return write(
        prompt,
        Step("add_ticket_tags", {"ticket_id": t["id"], "tags": [tag]}, purpose=f"add the {tag} tag"),
        [
            change(
                f"Ticket {t['id']} must carry the tags {new_tags} afterwards.",
                "tickets",
                t["id"],
                "tags",
                new_tags,
            )
        ],
        f'Ticket {t["id"]} is now tagged "{tag}".',
        keep=[t["id"], tag],
    )


@template("hd_customer_open_tickets", "aggregate", ["crm", "helpdesk"], calls=(2, 2))
def customer_open_tickets(ctx: Ctx) -> Draft:
    """Name -> id -> filtered search: the id has to come from the first call."""
    ctx.need("search_contacts", "search_tickets")
    cust = ctx.choose(unique_by(ctx, "customers", "name"))
    status = ctx.choose(("open", "solved", "pending", "closed"))
    n = len(ctx.records("tickets", lambda t: t["requester_id"] == cust["id"] and t["status"] == status))
    prompt = ctx.say(
        [
            "How many {s} tickets does {name} have?",
            "Count the {s} support tickets raised by {name}.",
            "{name} has been contacting support: how many of their tickets are {s}?",
        ],
        ["Tell me the number of {s} tickets requested by {name}."],
        s=status,
        name=cust["name"],
    )
    steps = chain(
        find("search_contacts", cust["name"], "contact id", purpose=f"find {cust['name']}'s contact id"),
        listing(
            "search_tickets",
            {"requester_id": cust["id"], "status": status},
            f"find {cust['name']}'s {status} tickets",
        ),
    )
    text = f"{cust['name']} has {n} {status} tickets"
    return count(
        prompt, steps, n, "", text, f"{cust['name']} ({cust['id']}) has {n} {status} tickets.", [cust["name"]]
    )


@template("hd_first_comment_author", "chain", ["helpdesk", "crm"], calls=(3, 3))
def first_comment_author(ctx: Ctx) -> Draft:
    """Scale's sample: earliest ticket of a tag -> its first comment -> that author's details."""
    ctx.need("search_tickets", "list_ticket_comments", "get_contact")
    tag = ctx.choose(_tags(ctx))
    pool = ctx.records("tickets", lambda t: tag in t["tags"])
    first = min(pool, key=lambda t: t["created"])
    if sum(t["created"] == first["created"] for t in pool) > 1:
        raise Skip("tie")
    author = first["comments"][0]["author_id"]
    cust = ctx.world["customers"].get(author)
    if cust is None:
        raise Skip("first comment not by a customer")
    attr, word = ctx.choose([("email", "email address"), ("phone", "phone number"), ("title", "job title")])
    prompt = ctx.say(
        [
            "Find the oldest ticket tagged {tag}, look at its first comment, and tell me the {w} of whoever wrote it.",
            "Who wrote the first comment on the earliest {tag} ticket? I need their {w}.",
        ],
        ["Take the first-created ticket with tag {tag}; what is the {w} of the author of its first comment?"],
        tag=tag,
        w=word,
    )

    def recompute(r):
        rows = items(r[0])
        t = min(rows, key=lambda x: x["created"])
        if items(r[1])[0]["author_id"] != field_of(r[2], "id"):
            raise ValueError("looked up someone other than the first comment's author")
        return {"ticket_id": t["id"], "author": field_of(r[2], "name"), attr: field_of(r[2], attr)}

    steps = chain(
        listing("search_tickets", {"tag": tag}, f"list tickets tagged {tag}", produces="ticket id"),
        Step(
            "list_ticket_comments",
            {"ticket_id": first["id"]},
            purpose="read the first comment",
            produces="author id",
        ),
        Step("get_contact", {"contact_id": author}, purpose="look up the comment author"),
    )
    answers = [
        Answer(
            "ticket_id",
            first["id"],
            "text",
            text=f"the earliest {tag} ticket is {first['id']}",
            intermediate=True,
        ),
        Answer(
            "author",
            cust["name"],
            "name",
            text=f"the first comment's author is {cust['name']} ({author})",
            intermediate=True,
        ),
        Answer(attr, cust[attr], "text", text=f"the {word} of {cust['name']} is {cust[attr]}"),
    ]
    reference = (
        f"The earliest {tag} ticket is {first['id']}; its first comment is by {cust['name']} ({author}), "
        f"whose {word} is {cust[attr]}."
    )
    return read(prompt, steps, answers, reference, recompute, keep=[tag])
