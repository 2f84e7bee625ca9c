"""Tasks whose right answer is not a tool call: ask for missing information, or decline.

Clarification: a write request that names a real entity but leaves out what the tool needs ("update
Ann Lee's phone number" without the number); the model must ask, not guess. Abstention: a request
none of the enabled tools can serve; the model must say so without calling tools. Both are PROVE's
perturbations (reference 002).
"""

from __future__ import annotations

from typing import Any

from toolkit.synth.base import Draft
from toolkit.synth.templates import Ctx, template
from toolkit.synth.templates.common import unique_by

# (server, tools the request would need, entity collection, request wordings leaving out a required value)
MISSING_INFO: list[tuple[str, list[str], str, list[str]]] = [
    (
        "crm",
        ["search_contacts", "update_contact"],
        "customers",
        [
            "Update {name}'s phone number.",
            "Change the job title of {name} in the CRM.",
            "{name} has a new email address, please update it.",
        ],
    ),
    (
        "helpdesk",
        ["search_contacts", "submit_ticket"],
        "customers",
        ["Open a support ticket for {name}.", "File a ticket on behalf of {name}."],
    ),
    (
        "helpdesk",
        ["view_ticket", "set_ticket_priority"],
        "tickets",
        ["Change the priority of ticket {id}.", "Ticket {id} needs a different priority."],
    ),
    (
        "helpdesk",
        ["view_ticket", "add_ticket_tags"],
        "tickets",
        ["Add a tag to ticket {id}.", "Please tag ticket {id}."],
    ),
    (
        "crm",
        ["get_deal", "update_deal"],
        "deals",
        ["Update the amount of deal {id}.", "Change the close date on deal {id}."],
    ),
    (
        "calendar",
        ["search_staff", "create_event"],
        "staff",
        ["Schedule a meeting with {name}.", "Book a call with {name} for me."],
    ),
    (
        "directory",
        ["search_staff", "update_staff"],
        "staff",
        ["Move {name} to another team.", "Change {name}'s city in the directory."],
    ),
    (
        "crm",
        ["search_companies", "update_company"],
        "companies",
        ["Change the account tier of {name}.", "Give {name} a new account manager."],
    ),
]
MISSING_HELD_OUT = [
    "Please make the change we discussed for {label}.",
    "Go ahead and update {label} as agreed.",
]

IRRELEVANT = [
    "Book me a flight from {city} to {city2} next Friday.",
    "What's the population of {city}?",
    "Write a short poem about {thing}.",
    "Translate '{phrase}' into Japanese.",
    "Order a large pizza to the {city} office.",
    "Recommend a good restaurant in {city}.",
    "Find me a hotel in {city2} for two nights.",
    "What time is sunset in {city} today?",
]
IRRELEVANT_HELD_OUT = ["Call a taxi to the {city} airport for me.", "Tell me a joke about {thing}."]
CITIES = [
    "Paris",
    "Lima",
    "Seoul",
    "Cairo",
    "Dublin",
    "Denver",
    "Hanoi",
    "Quito",
    "Perth",
    "Riga",
    "Accra",
    "Zagreb",
]
THINGS = ["autumn", "coffee", "the ocean", "spreadsheets", "mountains", "trains", "databases", "gardening"]
PHRASES = [
    "good morning",
    "thank you very much",
    "see you tomorrow",
    "where is the station",
    "happy birthday",
]


def _available(ctx: Ctx, tools: list[str]) -> bool:
    return not ctx.tools or all(t in ctx.tools for t in tools)


@template("clarify_missing", "clarify", ["crm", "helpdesk", "calendar", "directory"], calls=(0, 0))
def clarify_missing(ctx: Ctx) -> Draft:
    server, tools, coll, wordings = ctx.choose([m for m in MISSING_INFO if _available(ctx, m[1])])
    rec: dict[str, Any] = ctx.choose(
        unique_by(ctx, coll, "name") if coll in ("customers", "staff", "companies") else ctx.records(coll)
    )
    label = rec.get("name") or rec["id"]
    prompt = ctx.say(wordings, MISSING_HELD_OUT, name=label, id=rec["id"], label=label)
    return Draft(
        prompt=prompt,
        servers=[server],
        reference_answer=f"Happy to help with {label}. What exactly should the new value be? Please tell me and I will make the change.",
        metadata={"enable_tools": tools},
        keep=[label],
    )


@template("abstain_irrelevant", "abstain", ["crm", "helpdesk"], calls=(0, 0))
def abstain_irrelevant(ctx: Ctx) -> Draft:
    server, tools, _, _ = ctx.choose([m for m in MISSING_INFO if _available(ctx, m[1])])
    city, city2 = ctx.rng.sample(CITIES, 2)
    prompt = ctx.say(
        IRRELEVANT,
        IRRELEVANT_HELD_OUT,
        city=city,
        city2=city2,
        thing=ctx.choose(THINGS),
        phrase=ctx.choose(PHRASES),
    )
    return Draft(
        prompt=prompt,
        servers=[server],
        reference_answer="Sorry, none of the tools I have access to can help with that request.",
        metadata={"enable_tools": tools},
    )
