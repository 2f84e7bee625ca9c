"""CRM templates: deal aggregates (count, average, total, largest), contact and deal writes."""

from __future__ import annotations

from toolkit.synth.base import Answer, Draft, Step
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import (
    chain,
    change,
    field_of,
    find,
    fmt_num,
    items,
    listing,
    one_of,
    pct,
    read,
    total,
    unique_by,
    write,
)

STAGES = ("prospecting", "qualification", "proposal", "negotiation", "won", "lost")


def next_key(ctx: Ctx, collection: str, prefix: str, width: int = 3, start: int = 1) -> str:
    """The id the servers give the next record of a collection (``DomainServer.next_id``)."""
    coll = ctx.world.get(collection, {})
    n = start + len(coll)
    while f"{prefix}{n:0{width}d}" in coll:
        n += 1
    return f"{prefix}{n:0{width}d}"


@template("crm_deal_avg", "aggregate", ["crm"])
def deal_avg(ctx: Ctx) -> Draft:
    ctx.need("list_deals")
    stage = ctx.choose([s for s in STAGES if ctx.records("deals", lambda d, s=s: d["stage"] == s)])
    pool = ctx.records("deals", lambda d: d["stage"] == stage)
    avg = round(sum(d["amount"] for d in pool) / len(pool), 2)
    prompt = ctx.say(
        [
            "What is the average amount of deals in the {s} stage?",
            "Compute the mean deal value for deals at stage {s}.",
            "On average, how big are our {s} deals (in USD)?",
        ],
        ["Give me the average size of the deals currently in {s}."],
        s=stage,
    )

    def recompute(r):
        rows = items(r[0])
        return {"average": round(sum(d["amount"] for d in rows) / len(rows), 2)}

    return read(
        prompt,
        listing("list_deals", {"stage": stage}, f"list the {stage} deals"),
        [
            Answer(
                "average", avg, "number", 1.0, text=f"the average {stage} deal amount is {fmt_num(avg)} USD"
            )
        ],
        f"The {len(pool)} deals in {stage} average {fmt_num(avg)} USD.",
        recompute,
    )


@template("crm_stage_total", "aggregate", ["crm"])
def stage_total(ctx: Ctx) -> Draft:
    ctx.need("list_deals")
    stage = ctx.choose([s for s in STAGES if ctx.records("deals", lambda d, s=s: d["stage"] == s)])
    pool = ctx.records("deals", lambda d: d["stage"] == stage)
    value = round(sum(d["amount"] for d in pool), 2)
    prompt = ctx.say(
        [
            "What is the total value of all deals in {s}?",
            "Sum up the amounts of the {s} deals.",
            "How much money sits in {s}-stage deals altogether?",
        ],
        ["Add up every {s} deal's amount for me."],
        s=stage,
    )
    return read(
        prompt,
        listing(
            "list_deals",
            {"stage": stage},
            f"find the {stage} deals",
            alternatives=["pipeline_summary"],
            checked_args=[],
        ),
        [Answer("total", value, "number", 1.0, text=f"the {stage} deals total {fmt_num(value)} USD")],
        f"The {len(pool)} {stage} deals total {fmt_num(value)} USD.",
        lambda r: {"total": round(sum(d["amount"] for d in items(r[0])), 2)},
    )


@template("crm_won_share", "aggregate", ["crm"])
def won_share(ctx: Ctx) -> Draft:
    ctx.need("list_deals")
    stage = ctx.choose(("won", "lost", "negotiation", "proposal"))
    deals = ctx.records("deals")
    value = pct(sum(d["stage"] == stage for d in deals), len(deals))
    prompt = ctx.say(
        [
            "What percentage of all deals are {s}?",
            "What share of our deals is in stage {s}, as a percentage?",
        ],
        ["Tell me how many percent of the deals are currently {s}."],
        s=stage,
    )
    return read(
        prompt,
        listing("list_deals", {}, "list all deals", alternatives=["pipeline_summary"]),
        [Answer("percentage", value, "number", 0.1, text=f"{value}% of deals are {stage}")],
        f"{value}% of the {len(deals)} deals are {stage}.",
        lambda r: {"percentage": pct(sum(d["stage"] == stage for d in items(r[0])), total(r[0]))},
    )


@template("crm_company_deals", "aggregate", ["crm"], calls=(2, 2))
def company_deals(ctx: Ctx) -> Draft:
    ctx.need("search_companies", "list_deals")
    company = ctx.choose(
        [
            c
            for c in unique_by(ctx, "companies", "name")
            if ctx.records("deals", lambda d, c=c: d["company_id"] == c["id"])
        ]
    )
    pool = ctx.records("deals", lambda d: d["company_id"] == company["id"])
    ask = ctx.choose(("count", "largest"))
    if ask == "largest":
        best = max(pool, key=lambda d: d["amount"])
        if sum(d["amount"] == best["amount"] for d in pool) > 1:
            raise Skip("tie")
        answer = Answer(
            "deal",
            best["name"],
            "text",
            text=f"the largest deal of {company['name']} is {best['name']} ({best['id']})",
        )
        phr = (
            ["Which is the largest deal we have with {c}?", "Find {c}'s biggest deal by amount."],
            ["What's the name of the highest-value deal for {c}?"],
        )
        ref = f"The largest {company['name']} deal is {best['name']} ({best['id']}, {fmt_num(best['amount'])} USD)."
    else:
        answer = Answer("count", len(pool), "number", text=f"{company['name']} has {len(pool)} deals")
        phr = (
            ["How many deals do we have with {c}?", "Count the CRM deals for {c}."],
            ["What number of deals is on record for {c}?"],
        )
        ref = f"{company['name']} has {len(pool)} deals."
    prompt = ctx.say(*phr, c=company["name"])

    def recompute(r):
        found = items(r[0])
        if len(found) != 1 or found[0]["id"] != company["id"]:
            raise ValueError("company search is ambiguous")
        rows = items(r[1])
        if ask == "count":
            return {"count": total(r[1])}
        return {"deal": max(rows, key=lambda d: d["amount"])["name"]}

    steps = chain(
        find("search_companies", company["name"], "company id", norm="text"),
        listing("list_deals", {"company_id": company["id"]}, f"list {company['name']}'s deals"),
    )
    return read(prompt, steps, [answer], ref, recompute, keep=[company["name"]])


@template("crm_update_deal_stage", "write", ["crm"])
def update_deal_stage(ctx: Ctx) -> Draft:
    ctx.need("update_deal")
    deal = ctx.choose(ctx.records("deals", lambda d: d["stage"] not in ("won", "lost")))
    stage = one_of(ctx, STAGES, avoid=deal["stage"])
    prompt = ctx.say(
        [
            "Move deal {id} to the {s} stage.",
            "Please update deal {id}: it is now in {s}.",
            "Set the stage of deal {id} to {s}.",
        ],
        ["Deal {id} has progressed - record it as {s}."],
        id=deal["id"],
        s=stage,
    )
    return write(
        prompt,
        Step("update_deal", {"deal_id": deal["id"], "stage": stage}, purpose=f"move the deal to {stage}"),
        [
            change(
                f"Deal {deal['id']} must be in stage {stage} afterwards.", "deals", deal["id"], "stage", stage
            )
        ],
        f"Deal {deal['id']} is now in {stage}.",
        keep=[deal["id"]],
    )


@template("crm_update_contact", "write", ["crm"], calls=(2, 2))
def update_contact(ctx: Ctx) -> Draft:
    ctx.need("search_contacts", "update_contact")
    cust = ctx.choose(unique_by(ctx, "customers", "name"))
    fld, words = ctx.choose([("phone", "phone number"), ("title", "job title")])
    value = (
        f"+1-555-{ctx.rng.randrange(1000, 9999)}"
        if fld == "phone"
        else one_of(ctx, ["CTO", "Head of IT", "Procurement Lead", "CFO", "Office Manager"], cust["title"])
    )
    prompt = ctx.say(
        [
            "Update {name}'s {w} to {v}.",
            "{name} has a new {w}: {v}. Please change it in the CRM.",
            "Set the {w} of {name} to {v}.",
        ],
        ["Our contact {name} told us their {w} is now {v}; record that."],
        name=cust["name"],
        w=words,
        v=value,
    )
    rule = f"Contact {cust['id']} ({cust['name']}) must have {words} {value} afterwards."
    return write(
        prompt,
        chain(
            find("search_contacts", cust["name"], "contact id"),
            Step("update_contact", {"contact_id": cust["id"], fld: value}, purpose=f"change the {words}"),
        ),
        [change(rule, "customers", cust["id"], fld, value)],
        f"Updated {cust['name']} ({cust['id']}): {words} is now {value}.",
        keep=[cust["name"], value],
    )


@template("crm_create_contact", "write", ["crm"], calls=(2, 2))
def create_contact(ctx: Ctx) -> Draft:
    ctx.need("search_companies", "create_contact")
    company = ctx.choose(unique_by(ctx, "companies", "name"))
    first, last = (
        ctx.choose(["Ada", "Ben", "Cleo", "Dev", "Eva", "Finn"]),
        ctx.choose(["Stone", "Reyes", "Khan", "Moss", "Lund"]),
    )
    name = f"{first} {last}"
    email = f"{first.lower()}.{last.lower()}@{company['name'].split()[0].lower()}.example"
    if any(c["email"] == email for c in ctx.records("customers")):
        raise Skip("email taken")
    new_id = next_key(ctx, "customers", "cu-")
    prompt = ctx.say(
        [
            "Add {n} ({e}) as a new contact at {c}.",
            "Create a CRM contact for {n} of {c}, email {e}.",
            "Please register {n}, {e}, as a contact for {c}.",
        ],
        ["We have a new person at {c}: {n}, reachable at {e}. Put them in the CRM."],
        n=name,
        e=email,
        c=company["name"],
    )
    rule = f"A new contact {new_id} must exist at {company['name']} ({company['id']})."
    return write(
        prompt,
        chain(
            find("search_companies", company["name"], "company id", norm="text"),
            Step(
                "create_contact",
                {"name": name, "email": email, "company_id": company["id"]},
                normalize={"name": "name", "email": "text"},
                purpose="create the contact",
            ),
        ),
        [change(rule, "customers", new_id, "company_id", company["id"], op="create")],
        f"Created contact {new_id}: {name} ({email}) at {company['name']}.",
        keep=[name, email, company["name"]],
    )


@template("crm_company_manager_login", "chain", ["crm", "directory"], calls=(2, 2), eval_only=True)
def company_manager_login(ctx: Ctx) -> Draft:
    """Held-out template: who manages a company's account and when did they last log in."""
    ctx.need("get_company", "get_staff")
    company = ctx.choose(ctx.records("companies"))
    mgr = ctx.world["staff"][company["account_manager_id"]]
    prompt = ctx.say(
        ["Who manages the {c} account ({id}), and when did that person last log in?"],
        ["For company {id} ({c}), name the account manager and their last login date."],
        c=company["name"],
        id=company["id"],
    )

    def recompute(r):
        if field_of(r[0], "account_manager_id") != field_of(r[1], "id"):
            raise ValueError("wrong manager")
        return {"manager": field_of(r[1], "name"), "last_login": field_of(r[1], "last_login")}

    steps = chain(
        Step(
            "get_company",
            {"company_id": company["id"]},
            purpose=f"read company {company['id']}",
            produces="account manager id",
        ),
        Step("get_staff", {"staff_id": mgr["id"]}, purpose="read the account manager's profile"),
    )
    answers = [
        Answer("manager", mgr["name"], "name", text=f"the account manager is {mgr['name']}"),
        Answer(
            "last_login",
            mgr["last_login"],
            "date",
            text=f"{mgr['name']} last logged in on {mgr['last_login']}",
        ),
    ]
    reference = (
        f"{company['name']}'s account manager is {mgr['name']} ({mgr['id']}), last login {mgr['last_login']}."
    )
    return read(prompt, steps, answers, reference, recompute, keep=[company["id"]])
