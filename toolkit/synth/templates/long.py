"""Long, Scale-like tasks: one multi-part request needing 8-11 calls across 4-5 servers.

Scale's sample task (reference 000) takes 14 calls: it pages through a list with a cursor, filters by a
time window, follows ids from one server to the next, and ignores a finance server that is enabled
but not needed. These templates have the same parts on the kit's core servers: a whole list read a
page at a time (the servers' default page of 10, following ``next_cursor``), date windows the model
applies itself or passes to a tool, id hops across servers, and a closing write judged by the state
change. The ``long`` preset adds whole distractor servers. Each part has its own answers, so a
task's rubric has 20-30 items in all four categories.
"""

from __future__ import annotations

import math
from datetime import date, timedelta
from typing import Any

from toolkit.synth.base import Answer, Draft, Step, dress, payload
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import (
    ALL,
    change,
    field_of,
    find,
    fmt_num,
    items,
    listing,
    unique_by,
    write,
)
from toolkit.synth.templates.crm import next_key
from toolkit.toolbox import ToolResult

PAGE = 10  # the servers' default page size: a list call without ``limit`` returns 10 and a cursor


class Plan:
    """Gold steps added one at a time, each naming the earlier steps it needs."""

    def __init__(self) -> None:
        self.steps: list[Step] = []

    def add(self, step: Step, *after: int) -> int:
        step.depends_on = sorted(set(after))
        self.steps.append(step)
        return len(self.steps) - 1

    def pages(self, tool: str, args: dict[str, Any], n_items: int, purpose: str, *after: int) -> list[int]:
        """Read a whole list a page at a time: the first call with the filters, then one call per
        ``next_cursor``. Paging is the natural way to read it, not the only one (a model may ask for
        ``limit=50``), so the cursor calls' query items are optional."""
        first = self.add(Step(tool, dict(args), checked_args=list(args), purpose=purpose), *after)
        out = [first]
        for k in range(1, max(1, math.ceil(n_items / PAGE))):
            step = Step(
                tool,
                {**args, "cursor": str(k * PAGE)},
                checked_args=["cursor"],
                purpose=f"{purpose} (page {k + 1}, with the cursor page {k} returned)",
                optional=True,
            )
            out.append(self.add(step, out[-1]))
        return out


def read_pages(results: list[ToolResult]) -> list[dict[str, Any]]:
    """The records of consecutive pages, checking that each call used the cursor the page before
    returned and that the last page has none (so the pages cover the whole list)."""
    rows: list[dict[str, Any]] = []
    for i, res in enumerate(results):
        data = payload(res)
        rows += items(res)
        expected = str(len(rows)) if i + 1 < len(results) else None
        if data.get("next_cursor") != expected:
            raise ValueError(f"page {i + 1}: next_cursor {data.get('next_cursor')!r}, expected {expected!r}")
    return rows


def in_window(stamp: str, lo: str, hi: str) -> bool:
    return lo <= stamp[:10] <= hi


def _day(d: str, days: int) -> str:
    return (date.fromisoformat(d) + timedelta(days=days)).isoformat()


def _intro(ctx: Ctx, train: list[str], held_out: list[str], **fields: Any) -> str:
    """The opening line, undressed (the whole prompt is dressed once); it names the phrasing."""
    ctx.bare = True
    try:
        return ctx.say(train, held_out, **fields)
    finally:
        ctx.bare = False


def _numbered(ctx: Ctx, intro: str, parts: list[str]) -> str:
    return dress(ctx.rng, intro + "\n" + "\n".join(f"{k}. {p}" for k, p in enumerate(parts, start=1)))


def _say(ctx: Ctx, train: list[str], held_out: list[str], **fields: Any) -> str:
    """One part's wording: a train or held-out variant by split (the intro's ctx.say names the phrasing)."""
    options = held_out if ctx.split == "eval" and held_out else train
    return ctx.choose(options).format(**fields)


@template(
    "long_account_review",
    "long",
    ["crm", "directory", "helpdesk", "calendar", "email"],
    calls=(8, 10),
)
def account_review(ctx: Ctx) -> Draft:
    """Company -> account manager (directory) -> contacts -> every ticket, paged, filtered to the
    company's contacts and a date window -> the first one's details -> the manager's meetings in a
    week -> an email to the manager."""
    ctx.need(
        "search_companies",
        "get_staff",
        "search_contacts",
        "search_tickets",
        "view_ticket",
        "list_events",
        "send_email",
    )
    tickets = ctx.records("tickets")
    by_company: dict[str, list[dict[str, Any]]] = {}
    for c in ctx.records("customers"):
        by_company.setdefault(c["company_id"], []).append(c)
    companies = [c for c in unique_by(ctx, "companies", "name") if by_company.get(c["id"])]
    company = ctx.choose(companies)
    contacts = by_company[company["id"]]
    contact_ids = {c["id"] for c in contacts}
    if len(contacts) > ALL:
        raise Skip("more contacts than one page")
    own = [t for t in tickets if t["requester_id"] in contact_ids]
    anchor = ctx.choose(own)
    hi = _day(anchor["created"][:10], ctx.rng.randint(0, 10))
    lo = _day(hi, -ctx.rng.randint(14, 30))
    window = sorted(
        (t for t in own if in_window(t["created"], lo, hi)), key=lambda t: (t["created"], t["id"])
    )
    first = window[0]
    if len(window) > 1 and window[1]["created"] == first["created"]:
        raise Skip("tie for the first ticket")
    mgr = ctx.world["staff"][company["account_manager_id"]]
    week = ctx.choose(sorted({e["start"][:10] for e in ctx.records("events")}))
    week_end = _day(week, 6)
    n_meetings = sum(
        mgr["id"] in e["attendee_ids"] and in_window(e["start"], week, week_end)
        for e in ctx.records("events")
    )
    with_meetings = ctx.rng.random() < 0.7
    subject = f"{company['name']} account review"
    email_id = next_key(ctx, "emails", "m-")

    intro = _intro(
        ctx,
        [
            "I'm preparing the account review for {c}. Please:",
            "Help me get ready for my meeting about {c}:",
            "A few things about our customer {c}:",
        ],
        ["Before the {c} review, I need the following:"],
        c=company["name"],
    )
    parts = [
        _say(
            ctx,
            [
                "Tell me who their account manager is and give me that person's email address.",
                "Find out who manages the account and what their email is.",
            ],
            ["Name the account manager and their email address."],
        ),
        _say(
            ctx,
            [
                "Count the support tickets opened by {c}'s contacts between {lo} and {hi} (both days included).",
                "How many helpdesk tickets did people at {c} open from {lo} to {hi}, inclusive?",
            ],
            ["Between {lo} and {hi} (inclusive), how many tickets came from {c}'s contacts?"],
            c=company["name"],
            lo=lo,
            hi=hi,
        ),
        _say(
            ctx,
            [
                "Which of those tickets was opened first, and through which channel did it come in?",
                "For the earliest of those tickets, give me its id and the channel it arrived through.",
            ],
            ["Which one of them is the oldest, and which channel was it submitted through?"],
        ),
    ]
    if with_meetings:
        parts.append(
            _say(
                ctx,
                [
                    "How many calendar events does the account manager attend between {a} and {b}?",
                    "Check the account manager's calendar from {a} to {b}: how many events are they in?",
                ],
                ["How many meetings is the account manager part of from {a} through {b}?"],
                a=week,
                b=week_end,
            )
        )
    parts.append(
        _say(
            ctx,
            [
                'Finally, email the account manager with the subject "{s}" and the ticket count in the body.',
                'Then send the account manager an email titled "{s}" summarising the ticket numbers.',
            ],
            ['Last, mail the account manager (subject "{s}") with a short summary.'],
            s=subject,
        )
    )
    prompt = _numbered(ctx, intro, parts)

    plan = Plan()
    s_co = plan.add(
        find("search_companies", company["name"], "company id and account manager id", norm="text")
    )
    s_mgr = plan.add(
        Step("get_staff", {"staff_id": mgr["id"]}, purpose="read the account manager's profile"), s_co
    )
    s_ct = plan.add(
        listing(
            "search_contacts",
            {"company_id": company["id"]},
            f"list {company['name']}'s contacts",
            produces="contact ids",
        ),
        s_co,
    )
    s_pages = plan.pages("search_tickets", {}, len(tickets), "read every ticket")
    read_all = (s_pages[0], s_pages[-1])  # what needs the whole list needs its first and last page
    s_view = plan.add(
        Step("view_ticket", {"ticket_id": first["id"]}, purpose="read the first ticket's channel"),
        s_ct,
        *read_all,
    )
    if with_meetings:
        s_ev = plan.add(
            Step(
                "list_events",
                {"attendee_id": mgr["id"], "start_date": week, "end_date": week_end},
                normalize={"start_date": "date", "end_date": "date"},
                purpose=f"list the account manager's events from {week} to {week_end}",
            ),
            s_co,
        )
    plan.add(
        Step(
            "send_email",
            {"to": [mgr["email"]], "subject": subject, "body": f"{len(window)} tickets from {lo} to {hi}."},
            checked_args=["to", "subject"],
            normalize={"subject": "text"},
            purpose="email the account manager",
        ),
        s_mgr,
    )

    answers = [
        Answer(
            "company_id",
            company["id"],
            "text",
            text=f"{company['name']} is company {company['id']}",
            intermediate=True,
        ),
        Answer(
            "manager", mgr["name"], "name", text=f"the account manager of {company['name']} is {mgr['name']}"
        ),
        Answer("manager_email", mgr["email"], "text", text=f"the account manager's email is {mgr['email']}"),
        Answer(
            "tickets",
            len(window),
            "number",
            text=f"{company['name']}'s contacts opened {len(window)} tickets from {lo} to {hi}",
        ),
        Answer("first_ticket", first["id"], "text", text=f"the first of those tickets is {first['id']}"),
        Answer(
            "channel",
            first["channel"],
            "text",
            text=f"ticket {first['id']} came in through {first['channel']}",
        ),
    ]
    if with_meetings:
        answers.append(
            Answer(
                "meetings",
                n_meetings,
                "number",
                text=f"{mgr['name']} attends {n_meetings} events from {week} to {week_end}",
            )
        )

    def recompute(r: list[ToolResult]) -> dict[str, Any]:
        found = items(r[s_co])
        if len(found) != 1:
            raise ValueError(f"company search found {len(found)} records")
        co = found[0]
        if field_of(r[s_mgr], "id") != co["account_manager_id"]:
            raise ValueError("read someone other than the account manager")
        ids = {c["id"] for c in items(r[s_ct])}
        rows = read_pages(r[s_pages[0] : s_pages[-1] + 1])
        hits = sorted(
            (t for t in rows if t["requester_id"] in ids and in_window(t["created"], lo, hi)),
            key=lambda t: (t["created"], t["id"]),
        )
        if field_of(r[s_view], "id") != hits[0]["id"]:
            raise ValueError("viewed a ticket other than the first one")
        out = {
            "company_id": co["id"],
            "manager": field_of(r[s_mgr], "name"),
            "manager_email": field_of(r[s_mgr], "email"),
            "tickets": len(hits),
            "first_ticket": hits[0]["id"],
            "channel": field_of(r[s_view], "channel"),
        }
        if with_meetings:
            out["meetings"] = int(payload(r[s_ev])["total"])
        return out

    rule = f'An email to {mgr["email"]} with the subject "{subject}" must have been sent ({email_id}).'
    reference = (
        f"{company['name']} ({company['id']}) is managed by {mgr['name']} ({mgr['email']}). "
        f"Its contacts opened {len(window)} tickets from {lo} to {hi}; the first was {first['id']}, "
        f"which came in through {first['channel']}. "
        + (f"{mgr['name']} attends {n_meetings} events from {week} to {week_end}. " if with_meetings else "")
        + f'I emailed {mgr["email"]} with the subject "{subject}".'
    )
    draft = write(
        prompt,
        plan.steps,
        [change(rule, "emails", email_id, "subject", subject, "create")],
        reference,
        keep=[company["name"], lo, hi, subject],
        servers=sorted(
            {"crm", "directory", "helpdesk", "email"} | ({"calendar"} if with_meetings else set())
        ),
    )
    draft.answers, draft.recompute = answers, recompute
    return draft


@template("long_sales_review", "long", ["directory", "crm", "shop", "calendar"], calls=(8, 9))
def sales_review(ctx: Ctx) -> Draft:
    """Sales rep by name -> their deals (open pipeline, largest open deal) -> that deal's contact ->
    every order, paged, filtered by ship city and a date window -> the rep's meetings in a window ->
    a note logged on the deal."""
    ctx.need("search_staff", "list_deals", "get_contact", "list_orders", "list_events", "log_activity")
    reps = [s for s in unique_by(ctx, "staff", "name") if s["team"] == "sales"]
    rep = ctx.choose(reps)
    deals = ctx.records("deals", lambda d: d["owner_id"] == rep["id"])
    open_deals = [d for d in deals if d["stage"] not in ("won", "lost")]
    if not open_deals or len(deals) > ALL:
        raise Skip("no open deals")
    top = max(open_deals, key=lambda d: d["amount"])
    if sum(d["amount"] == top["amount"] for d in open_deals) > 1 or not top.get("contact_id"):
        raise Skip("tie, or no contact on the deal")
    pipeline = round(sum(d["amount"] for d in open_deals), 2)
    contact = ctx.world["customers"][top["contact_id"]]
    orders = ctx.records("orders")
    city = ctx.choose(sorted({o["ship_city"] for o in orders}))
    anchor = ctx.choose([o for o in orders if o["ship_city"] == city])
    hi = _day(anchor["created"], ctx.rng.randint(0, 20))
    lo = _day(hi, -ctx.rng.randint(30, 60))
    shipped = [o for o in orders if o["ship_city"] == city and in_window(o["created"], lo, hi)]
    day = ctx.choose(sorted({e["start"][:10] for e in ctx.records("events")}))
    day_end = _day(day, ctx.rng.randint(3, 10))
    n_meetings = sum(
        rep["id"] in e["attendee_ids"] and in_window(e["start"], day, day_end) for e in ctx.records("events")
    )
    note = f"Pipeline review: {fmt_num(pipeline)} USD open."
    activity_id = next_key(ctx, "activities", "a-")

    intro = _intro(
        ctx,
        [
            "I'm reviewing {r}'s sales work. Please answer these:",
            "Quick sales check-in on {r}:",
            "For my one-on-one with {r}, I need:",
        ],
        ["Put together the following about {r}:"],
        r=rep["name"],
    )
    parts = [
        _say(
            ctx,
            [
                "What is the total amount of {r}'s open deals (not won or lost)?",
                "How much is in {r}'s open pipeline, i.e. deals neither won nor lost?",
            ],
            ["Sum up the amounts of {r}'s deals that are still open."],
            r=rep["name"],
        ),
        _say(
            ctx,
            [
                "Which open deal of theirs is the largest, and who is its contact (name and email)?",
                "Name their biggest open deal and give me the contact person's name and email.",
            ],
            ["What's their largest open deal, and who is the customer contact on it (name, email)?"],
        ),
        _say(
            ctx,
            [
                "Separately: how many shop orders shipped to {c} were placed between {lo} and {hi} (inclusive)?",
                "Also, count the orders with ship city {c} created from {lo} to {hi}, both days included.",
            ],
            ["Also: orders going to {c}, placed {lo} through {hi} - how many are there?"],
            c=city,
            lo=lo,
            hi=hi,
        ),
        _say(
            ctx,
            [
                "How many calendar events does {r} attend from {a} to {b}?",
                "How many events is {r} in between {a} and {b}?",
            ],
            ["Count {r}'s events from {a} through {b}."],
            r=rep["name"],
            a=day,
            b=day_end,
        ),
        _say(
            ctx,
            [
                'Finally, log a note on that largest open deal saying "{n}"',
                'Then record a note activity on the largest open deal: "{n}"',
            ],
            ['Last, add a note to that deal reading "{n}"'],
            n=note,
        ),
    ]
    prompt = _numbered(ctx, intro, parts)

    plan = Plan()
    s_rep = plan.add(find("search_staff", rep["name"], "staff id"))
    s_deals = plan.add(
        listing(
            "list_deals",
            {"owner_id": rep["id"]},
            f"list {rep['name']}'s deals",
            produces="deal and contact ids",
        ),
        s_rep,
    )
    s_ct = plan.add(
        Step("get_contact", {"contact_id": contact["id"]}, purpose="read the deal's contact"), s_deals
    )
    s_pages = plan.pages("list_orders", {}, len(orders), "read every order")
    s_ev = plan.add(
        Step(
            "list_events",
            {"attendee_id": rep["id"], "start_date": day, "end_date": day_end},
            normalize={"start_date": "date", "end_date": "date"},
            purpose=f"list {rep['name']}'s events from {day} to {day_end}",
        ),
        s_rep,
    )
    plan.add(
        Step(
            "log_activity",
            {"deal_id": top["id"], "kind": "note", "summary": note},
            checked_args=["deal_id", "kind"],
            purpose="log the note on the deal",
        ),
        s_deals,
    )

    answers = [
        Answer(
            "rep_id", rep["id"], "text", text=f"{rep['name']} is staff member {rep['id']}", intermediate=True
        ),
        Answer(
            "pipeline",
            pipeline,
            "number",
            1.0,
            text=f"{rep['name']}'s open deals total {fmt_num(pipeline)} USD",
        ),
        Answer("top_deal", top["name"], "text", text=f"the largest open deal is {top['name']}"),
        Answer("contact", contact["name"], "name", text=f"the deal's contact is {contact['name']}"),
        Answer(
            "contact_email", contact["email"], "text", text=f"{contact['name']}'s email is {contact['email']}"
        ),
        Answer(
            "orders",
            len(shipped),
            "number",
            text=f"{len(shipped)} orders shipped to {city} were placed from {lo} to {hi}",
        ),
        Answer(
            "meetings",
            n_meetings,
            "number",
            text=f"{rep['name']} attends {n_meetings} events from {day} to {day_end}",
        ),
    ]

    def recompute(r: list[ToolResult]) -> dict[str, Any]:
        found = items(r[s_rep])
        if len(found) != 1:
            raise ValueError(f"staff search found {len(found)} records")
        rows = items(r[s_deals])
        live = [d for d in rows if d["stage"] not in ("won", "lost")]
        best = max(live, key=lambda d: d["amount"])
        if field_of(r[s_ct], "id") != best["contact_id"]:
            raise ValueError("read a contact other than the largest open deal's")
        every = read_pages(r[s_pages[0] : s_pages[-1] + 1])
        return {
            "rep_id": found[0]["id"],
            "pipeline": round(sum(d["amount"] for d in live), 2),
            "top_deal": best["name"],
            "contact": field_of(r[s_ct], "name"),
            "contact_email": field_of(r[s_ct], "email"),
            "orders": sum(o["ship_city"] == city and in_window(o["created"], lo, hi) for o in every),
            "meetings": int(payload(r[s_ev])["total"]),
        }

    reference = (
        f"{rep['name']} ({rep['id']}) has {fmt_num(pipeline)} USD in open deals. The largest open deal is "
        f"{top['name']} ({top['id']}); its contact is {contact['name']} ({contact['email']}). "
        f"{len(shipped)} orders shipped to {city} were placed from {lo} to {hi}. "
        f"{rep['name']} attends {n_meetings} events from {day} to {day_end}. "
        f'I logged the note "{note}" on {top["id"]} ({activity_id}).'
    )
    rule = f"A note activity {activity_id} must have been logged on deal {top['id']}."
    draft = write(
        prompt,
        plan.steps,
        [change(rule, "activities", activity_id, "deal_id", top["id"], "create")],
        reference,
        keep=[rep["name"], city, lo, hi, day, day_end, note],
    )
    draft.answers, draft.recompute = answers, recompute
    return draft


@template(
    "long_ticket_trend",
    "long",
    ["helpdesk", "calculator", "crm", "directory", "calendar"],
    calls=(11, 11),
)
def ticket_trend(ctx: Ctx) -> Draft:
    """Scale's sample shape: every ticket, paged -> counts in two date windows and their percentage
    change (the calculator is optional) -> the first ticket of the window -> requester -> company ->
    account manager (directory) -> the manager's meetings in a week -> a priority change."""
    ctx.need(
        "search_tickets",
        "percent_change",
        "view_ticket",
        "get_contact",
        "get_company",
        "get_staff",
        "list_events",
        "set_ticket_priority",
    )
    tickets = ctx.records("tickets")
    anchor = ctx.choose(tickets)
    length = ctx.rng.choice((7, 14, 21))
    hi = _day(anchor["created"][:10], ctx.rng.randint(0, 6))
    lo = _day(hi, -(length - 1))
    prev_hi, prev_lo = _day(lo, -1), _day(lo, -length)
    now = sorted(
        (t for t in tickets if in_window(t["created"], lo, hi)), key=lambda t: (t["created"], t["id"])
    )
    before = [t for t in tickets if in_window(t["created"], prev_lo, prev_hi)]
    if not before:
        raise Skip("no tickets in the earlier window")
    change_pct = round((len(now) - len(before)) / len(before) * 100, 1)
    first = now[0]
    if len(now) > 1 and now[1]["created"] == first["created"]:
        raise Skip("tie for the first ticket")
    cust = ctx.world["customers"][first["requester_id"]]
    company = ctx.world["companies"][cust["company_id"]]
    mgr = ctx.world["staff"][company["account_manager_id"]]
    week = ctx.choose(sorted({e["start"][:10] for e in ctx.records("events")}))
    week_end = _day(week, 6)
    n_meetings = sum(
        mgr["id"] in e["attendee_ids"] and in_window(e["start"], week, week_end)
        for e in ctx.records("events")
    )
    prio = ctx.choose([p for p in ("low", "normal", "high", "urgent") if p != first["priority"]])

    intro = _intro(
        ctx,
        ["I'm looking at support volume. Please:", "Help me review recent helpdesk activity:"],
        ["For the support trend report, I need:"],
    )
    parts = [
        _say(
            ctx,
            [
                "How many tickets were opened from {lo} to {hi}, and how many in the {n} days before that ({plo} to {phi})?",
                "Count the tickets created between {lo} and {hi}, and those created between {plo} and {phi}.",
            ],
            ["Tickets opened {lo}..{hi} versus {plo}..{phi}: how many in each period?"],
            lo=lo,
            hi=hi,
            plo=prev_lo,
            phi=prev_hi,
            n=length,
        ),
        _say(
            ctx,
            [
                "By what percentage did the number change from the earlier period to the later one?",
                "What is the percentage change from the earlier count to the later count?",
            ],
            ["Express the change between the two periods as a percentage."],
        ),
        _say(
            ctx,
            [
                "Which ticket was opened first in the {lo} to {hi} period, who raised it, and which company are they with?",
                "For the earliest ticket of the later period, tell me its id, the requester's name and their company.",
            ],
            ["Name the first ticket of the later period, its requester and the requester's company."],
            lo=lo,
            hi=hi,
        ),
        _say(
            ctx,
            [
                "How many comments does that ticket have, and through which channel did it come in?",
                "Check that ticket: how many comments are on it, and what channel was it submitted through?",
            ],
            ["Give me that ticket's comment count and its channel."],
        ),
        _say(
            ctx,
            [
                "Who is that company's account manager, and how many calendar events do they attend from {a} to {b}?",
                "Find the company's account manager and count their calendar events between {a} and {b}.",
            ],
            [
                "Which staff member manages that account, and how many events are they in from {a} through {b}?"
            ],
            a=week,
            b=week_end,
        ),
        _say(
            ctx,
            [
                "Finally, set that first ticket's priority to {p}.",
                "Then change the priority of that ticket to {p}.",
            ],
            ["Last, make that ticket {p} priority."],
            p=prio,
        ),
    ]
    prompt = _numbered(ctx, intro, parts)

    plan = Plan()
    s_pages = plan.pages("search_tickets", {}, len(tickets), "read every ticket")
    read_all = (s_pages[0], s_pages[-1])  # what needs the whole list needs its first and last page
    plan.add(
        Step(
            "percent_change",
            {"old": len(before), "new": len(now)},
            normalize={"old": "number", "new": "number"},
            purpose="compute the percentage change",
            optional=True,
        ),
        *read_all,
    )
    s_view = plan.add(
        Step(
            "view_ticket", {"ticket_id": first["id"]}, purpose="read the first ticket's comments and channel"
        ),
        *read_all,
    )
    s_ct = plan.add(
        Step("get_contact", {"contact_id": cust["id"]}, purpose="read the requester", produces="company id"),
        *read_all,
    )
    s_co = plan.add(
        Step(
            "get_company",
            {"company_id": company["id"]},
            purpose="read the requester's company",
            produces="account manager id",
        ),
        s_ct,
    )
    s_mgr = plan.add(Step("get_staff", {"staff_id": mgr["id"]}, purpose="read the account manager"), s_co)
    s_ev = plan.add(
        Step(
            "list_events",
            {"attendee_id": mgr["id"], "start_date": week, "end_date": week_end},
            normalize={"start_date": "date", "end_date": "date"},
            purpose=f"list the account manager's events from {week} to {week_end}",
        ),
        s_co,
    )
    plan.add(
        Step(
            "set_ticket_priority",
            {"ticket_id": first["id"], "priority": prio},
            purpose=f"set the priority to {prio}",
        ),
        *read_all,
    )

    answers = [
        Answer("tickets_now", len(now), "number", text=f"{len(now)} tickets were opened from {lo} to {hi}"),
        Answer(
            "tickets_before",
            len(before),
            "number",
            text=f"{len(before)} tickets were opened from {prev_lo} to {prev_hi}",
        ),
        Answer(
            "percent_change",
            change_pct,
            "number",
            0.1,
            text=f"the change between the periods is {change_pct}%",
        ),
        Answer(
            "first_ticket", first["id"], "text", text=f"the first ticket of the later period is {first['id']}"
        ),
        Answer(
            "comments",
            len(first["comments"]),
            "number",
            text=f"ticket {first['id']} has {len(first['comments'])} comments",
        ),
        Answer(
            "channel",
            first["channel"],
            "text",
            text=f"ticket {first['id']} came in through {first['channel']}",
        ),
        Answer("requester", cust["name"], "name", text=f"ticket {first['id']} was raised by {cust['name']}"),
        Answer("company", company["name"], "text", text=f"{cust['name']} is with {company['name']}"),
        Answer("manager", mgr["name"], "name", text=f"{company['name']}'s account manager is {mgr['name']}"),
        Answer(
            "meetings",
            n_meetings,
            "number",
            text=f"{mgr['name']} attends {n_meetings} events from {week} to {week_end}",
        ),
    ]

    def recompute(r: list[ToolResult]) -> dict[str, Any]:
        rows = read_pages(r[s_pages[0] : s_pages[-1] + 1])
        later = sorted(
            (t for t in rows if in_window(t["created"], lo, hi)), key=lambda t: (t["created"], t["id"])
        )
        earlier = [t for t in rows if in_window(t["created"], prev_lo, prev_hi)]
        if field_of(r[s_view], "id") != later[0]["id"]:
            raise ValueError("viewed a ticket other than the first one")
        if field_of(r[s_ct], "id") != later[0]["requester_id"]:
            raise ValueError("read someone other than the first ticket's requester")
        if field_of(r[s_co], "id") != field_of(r[s_ct], "company_id"):
            raise ValueError("read a company other than the requester's")
        if field_of(r[s_mgr], "id") != field_of(r[s_co], "account_manager_id"):
            raise ValueError("read someone other than the account manager")
        return {
            "tickets_now": len(later),
            "tickets_before": len(earlier),
            "percent_change": round((len(later) - len(earlier)) / len(earlier) * 100, 1),
            "first_ticket": later[0]["id"],
            "comments": len(field_of(r[s_view], "comments")),
            "channel": field_of(r[s_view], "channel"),
            "requester": field_of(r[s_ct], "name"),
            "company": field_of(r[s_co], "name"),
            "manager": field_of(r[s_mgr], "name"),
            "meetings": int(payload(r[s_ev])["total"]),
        }

    reference = (
        f"{len(now)} tickets were opened from {lo} to {hi} and {len(before)} from {prev_lo} to {prev_hi}, "
        f"a change of {change_pct}%. The first ticket of the later period is {first['id']} "
        f"({len(first['comments'])} comments, came in through {first['channel']}), raised by "
        f"{cust['name']} of {company['name']}, whose account manager {mgr['name']} attends {n_meetings} "
        f"events from {week} to {week_end}. Ticket {first['id']} now has {prio} priority."
    )
    rule = f"Ticket {first['id']} must have priority {prio} afterwards."
    draft = write(
        prompt,
        plan.steps,
        [change(rule, "tickets", first["id"], "priority", prio)],
        reference,
        keep=[lo, hi, prev_lo, prev_hi, week, week_end, prio],
    )
    draft.answers, draft.recompute = answers, recompute
    return draft
