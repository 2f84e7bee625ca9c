"""Templates held out for the eval split: new question shapes the training tasks never show.

They reuse tools that train tasks use, in combinations and with aggregations train never asks for,
so an eval score measures transfer rather than recall of a template.
"""

from __future__ import annotations

from toolkit.synth.base import Answer, Draft, Step, payload
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import ALL, items, total, unique_by


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
    return Draft(
        "",
        "",
        prompt,
        ["directory", "helpdesk"],
        [
            Step(
                "search_staff",
                {"query": agent["name"]},
                normalize={"query": "name"},
                purpose=f"find {agent['name']}",
                produces="staff id",
            ),
            Step(
                "search_tickets",
                {"assignee_id": agent["id"], "status": status, "limit": ALL},
                depends_on=[0],
                checked_args=["assignee_id", "status"],
                purpose=f"list {agent['name']}'s {status} tickets",
            ),
        ],
        answers=[Answer("count", n, "number", text=f"{agent['name']} has {n} {status} tickets")],
        reference_answer=f"{agent['name']} ({agent['id']}) has {n} {status} tickets assigned.",
        recompute=lambda r: {"count": total(r[1])},
        keep=[agent["name"]],
    )


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
    return Draft(
        "",
        "",
        prompt,
        ["shop"],
        [
            Step(
                "search_products",
                {"query": prod["name"]},
                normalize={"query": "text"},
                purpose=f"find {prod['name']}'s product id",
                produces="product id",
            ),
            Step("list_orders", {"limit": ALL}, checked_args=[], purpose="list all orders"),
        ],
        answers=[Answer("units", n, "number", text=f"{n} units of {prod['name']} were ordered")],
        reference_answer=f"{n} units of {prod['name']} ({prod['id']}) were ordered in non-cancelled orders.",
        recompute=lambda r: {"units": units(items(r[1]))},
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
    return Draft(
        "",
        "",
        prompt,
        ["weather"],
        [
            Step(
                "find_rainy_days",
                {"city": city},
                normalize={"city": "text"},
                purpose=f"find the rainy days in {city}",
            )
        ],
        answers=[Answer("count", n, "number", text=f"{city} has {n} rainy days")],
        reference_answer=f"{city} has {n} days with rain in the covered window.",
        recompute=lambda r: {"count": int(payload(r[0])["count"])},
        keep=[city],
    )
