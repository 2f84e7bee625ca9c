"""Templates held out for the eval split: new question shapes the training tasks never show.

They reuse tools that train tasks use, in combinations and with aggregations train never asks for,
so an eval score measures transfer rather than recall of a template.
"""

from __future__ import annotations

from toolkit.synth.base import Answer, Draft, Step, payload
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import ALL, chain, count, find, items, listing, read, unique_by


@template("hd_agent_workload", "aggregate", ["directory", "helpdesk"], calls=(2, 2), eval_only=True)
def agent_workload(ctx: Ctx) -> Draft:
    ctx.need("search_staff", "search_tickets")
    agent = ctx.choose([s for s in unique_by(ctx, "staff", "name") if s["team"] == "support"])
    status = ctx.choose(("open", "pending", "solved"))
    n = len(ctx.records("tickets", lambda t: t["assignee_id"] == agent["id"] and t["status"] == status))
    prompt = ctx.say(
        ["How many {s} tickets are assigned to {n}?"],
        [
            "What is {n}'s current number of {s} tickets?",
            "Check {n}'s workload: how many {s} tickets do they own?",
        ],
        s=status,
        n=agent["name"],
    )
    steps = chain(
        find("search_staff", agent["name"], "staff id"),
        listing(
            "search_tickets",
            {"assignee_id": agent["id"], "status": status},
            f"list {agent['name']}'s {status} tickets",
        ),
    )
    text = f"{agent['name']} has {n} {status} tickets"
    reference = f"{agent['name']} ({agent['id']}) has {n} {status} tickets assigned."
    return count(prompt, steps, n, "", text, reference, keep=[agent["name"]])


@template("shop_units_ordered", "aggregate", ["shop"], calls=(2, 2), eval_only=True)
def units_ordered(ctx: Ctx) -> Draft:
    ctx.need("search_products", "list_orders")
    prod = ctx.choose(unique_by(ctx, "products", "name"))
    orders = ctx.records("orders")
    if len(orders) > ALL:
        raise Skip("more orders than one page")

    def units(rows: list[dict]) -> int:
        return sum(
            it["qty"]
            for o in rows
            if o["status"] != "cancelled"
            for it in o["items"]
            if it["product_id"] == prod["id"]
        )

    n = units(orders)
    prompt = ctx.say(
        ["How many units of {p} have been ordered (excluding cancelled orders)?"],
        [
            "Across all non-cancelled orders, what quantity of {p} was ordered?",
            "Total up the {p} units in every order that was not cancelled.",
        ],
        p=prod["name"],
    )
    steps = [
        find(
            "search_products",
            prod["name"],
            "product id",
            norm="text",
            purpose=f"find {prod['name']}'s product id",
        ),
        listing("list_orders", {}, "list all orders"),  # needs no id: every order is read
    ]
    return read(
        prompt,
        steps,
        [Answer("units", n, "number", text=f"{n} units of {prod['name']} were ordered")],
        f"{n} units of {prod['name']} ({prod['id']}) were ordered in non-cancelled orders.",
        lambda r: {"units": units(items(r[1]))},
        keep=[prod["name"]],
    )


@template("wx_rainy_days", "aggregate", ["weather"], eval_only=True)
def rainy_days(ctx: Ctx) -> Draft:
    ctx.need("find_rainy_days")
    city = ctx.choose(sorted({w["city"] for w in ctx.records("weather")}))
    n = len(ctx.records("weather", lambda w: w["city"] == city and w["precipitation_mm"] >= 0.1))
    prompt = ctx.say(
        ["How many rainy days does {c} have in the covered window?"],
        ["Count the days with rain in {c}.", "In {c}, on how many days is there precipitation?"],
        c=city,
    )
    return read(
        prompt,
        Step(
            "find_rainy_days",
            {"city": city},
            normalize={"city": "text"},
            purpose=f"find the rainy days in {city}",
        ),
        [Answer("count", n, "number", text=f"{city} has {n} rainy days")],
        f"{city} has {n} days with rain in the covered window.",
        lambda r: {"count": int(payload(r[0])["count"])},
        keep=[city],
    )
