"""Drills: train-only templates that rehearse one skill the held-out templates combine.

The eval split holds out whole templates (heldout.py) to measure transfer. A small model transfers a
skill it has practised, not one it has never seen: no train template asks for a count filtered by a
staff id read from a first search, or for the size of a list that a weather tool returns. Each drill
rehearses one such step on other tools or another server pair, never a held-out template's own pair
of calls. Drills are drawn only when the synth config's ``drill_share`` is above 0 (off by default, so
every existing config generates the same bytes) and never for the eval split.
"""

from __future__ import annotations

from toolkit.envs.clock import TODAY
from toolkit.synth.base import Answer, Draft, Step, payload
from toolkit.synth.templates import Ctx, template
from toolkit.synth.templates.common import chain, count, find, listing, read, unique_by
from toolkit.synth.templates.crm import STAGES

TICKET_STATUSES = ("open", "pending", "solved")  # the statuses hd_agent_workload asks about


@template("drill_tickets_by_assignee", "aggregate", ["helpdesk"], drill=True)
def tickets_by_assignee(ctx: Ctx) -> Draft:
    """A count filtered by a staff id the prompt gives: the filter argument, then the total."""
    ctx.need("search_tickets")
    staff = ctx.choose(sorted({t["assignee_id"] for t in ctx.records("tickets") if t["assignee_id"]}))
    status = ctx.choose(TICKET_STATUSES)
    n = len(ctx.records("tickets", lambda t: t["assignee_id"] == staff and t["status"] == status))
    prompt = ctx.say(
        [
            "How many {s} tickets are assigned to staff member {id}?",
            "Count the {s} helpdesk tickets whose assignee is {id}.",
            "Staff id {id}: how many of the tickets assigned to them are {s}?",
        ],
        s=status,
        id=staff,
    )
    step = listing(
        "search_tickets", {"assignee_id": staff, "status": status}, f"list {staff}'s {status} tickets"
    )
    text = f"{staff} has {n} {status} tickets assigned"
    return count(prompt, step, n, "", text, f"Staff member {staff} has {n} {status} tickets.", [staff])


@template("drill_deals_by_owner", "aggregate", ["crm", "directory"], calls=(2, 2), drill=True)
def deals_by_owner(ctx: Ctx) -> Draft:
    """Name -> staff id -> a list filtered by that id -> its total (the crm side of a staff id)."""
    ctx.need("search_staff", "list_deals")
    owners = {d["owner_id"] for d in ctx.records("deals")}
    person = ctx.choose([s for s in unique_by(ctx, "staff", "name") if s["id"] in owners])
    mine = ctx.records("deals", lambda d: d["owner_id"] == person["id"])
    # a stage the person has deals in: a drill of zeros would teach "answer 0"
    stage = ctx.choose([s for s in STAGES if any(d["stage"] == s for d in mine)])
    n = sum(d["stage"] == stage for d in mine)
    prompt = ctx.say(
        [
            "How many deals in the {s} stage does {n} own?",
            "Count {n}'s deals that are at stage {s}.",
            "{n} owns some CRM deals: how many of them are in {s}?",
        ],
        s=stage,
        n=person["name"],
    )
    steps = chain(
        find("search_staff", person["name"], "staff id", purpose=f"find {person['name']}'s staff id"),
        listing(
            "list_deals", {"owner_id": person["id"], "stage": stage}, f"list {person['name']}'s {stage} deals"
        ),
    )
    text = f"{person['name']} owns {n} {stage} deals"
    reference = f"{person['name']} ({person['id']}) owns {n} deals in the {stage} stage."
    return count(prompt, steps, n, "", text, reference, keep=[person["name"]])


@template("drill_weather_alert_count", "aggregate", ["weather"], drill=True)
def weather_alert_count(ctx: Ctx) -> Draft:
    """The size of a list a tool returns without a total: count the items."""
    ctx.need("get_weather_alerts")
    city = ctx.choose(sorted({w["city"] for w in ctx.records("weather")}))
    days = ctx.records("weather", lambda w: w["city"] == city and w["date"] >= TODAY.isoformat())
    # the server's rule: one alert per strong-wind day and one per heavy-rain day
    n = sum(w["wind_kph"] >= 40 for w in days) + sum(w["precipitation_mm"] >= 10 for w in days)
    prompt = ctx.say(
        [
            "How many weather alerts are there for {c}?",
            "Count the weather alerts issued for {c}.",
            "Does {c} have weather alerts? Tell me how many.",
        ],
        c=city,
    )

    def n_alerts(result) -> int:
        data = payload(result)
        if not isinstance(data, dict) or "alerts" not in data:
            raise ValueError(f"not an alerts reply: {str(data)[:120]}")
        return len(data["alerts"])

    step = Step(
        "get_weather_alerts",
        {"city": city},
        normalize={"city": "text"},
        purpose=f"read {city}'s weather alerts",
    )
    return read(
        prompt,
        step,
        [Answer("count", n, "number", text=f"{city} has {n} weather alerts")],
        f"{city} has {n} weather alerts from today on.",
        lambda r: {"count": n_alerts(r[0])},
        keep=[city],
    )
