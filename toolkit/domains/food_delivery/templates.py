"""Food delivery templates: a restaurant's fee, revenue over a date window, cancelling an order,
and giving an order the best available courier of its city."""

from __future__ import annotations

from datetime import timedelta

from toolkit.envs.clock import TODAY
from toolkit.synth.base import Answer, Draft, Step
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import ALL, field_of, fmt_num, items, unique_by
from toolkit.synth.templates.drafting import changed, draft, sole_best


@template("food_restaurant_lookup", "lookup", ["food_delivery"])
def restaurant_lookup(ctx: Ctx) -> Draft:
    ctx.need("search_food_restaurants")
    rest = ctx.choose(unique_by(ctx, "food_restaurants", "name"))
    fld, words = ctx.choose([("delivery_fee", "delivery fee"), ("rating", "rating")])
    prompt = ctx.say(
        ["What is the {w} of the restaurant {n} on the delivery app?",
         "Look up {n} in food delivery and tell me its {w}."],
        ["I'd like to know the {w} that {n} has for deliveries."],
        w=words, n=rest["name"],
    )  # fmt: skip

    def recompute(r):
        found = items(r[0])
        if len(found) != 1:
            raise ValueError("restaurant search is ambiguous")
        return {fld: found[0][fld]}

    return draft(
        prompt,
        ["food_delivery"],
        [
            Step(
                "search_food_restaurants",
                {"query": rest["name"]},
                normalize={"query": "text"},
                alternatives=["get_food_restaurant"],
                purpose=f"find {rest['name']}",
            )
        ],  # fmt: skip
        answers=[
            Answer(fld, rest[fld], "number", 0.01, text=f"the {words} of {rest['name']} is {rest[fld]}")
        ],
        reference_answer=f"{rest['name']} ({rest['id']}) has a {words} of {rest[fld]}.",
        recompute=recompute,
        keep=[rest["name"]],
    )


@template("food_revenue_window", "aggregate", ["food_delivery"])
def revenue_window(ctx: Ctx) -> Draft:
    ctx.need("list_food_orders")
    days = ctx.choose((7, 14, 21))
    start, end = (TODAY - timedelta(days=days)).isoformat(), TODAY.isoformat()

    def delivered(o, rid=None):
        return (
            o["status"] == "delivered" and start <= o["placed_at"][:10] <= end and o["restaurant_id"] == rid
        )

    rest = ctx.choose(
        ctx.records("food_restaurants", lambda r: ctx.records("food_orders", lambda o: delivered(o, r["id"])))
    )
    pool = ctx.records("food_orders", lambda o: delivered(o, rest["id"]))
    revenue = round(sum(o["subtotal"] for o in pool), 2)
    prompt = ctx.say(
        ["How much food revenue (order subtotals, delivered orders only) did {n} ({id}) make between {a} and {b}?",
         "Sum the subtotals of {n}'s ({id}) delivered orders placed from {a} to {b}."],
        ["What did delivered orders at restaurant {id} ({n}) bring in, before fees and tips, from {a} through {b}?"],
        n=rest["name"], id=rest["id"], a=start, b=end,
    )  # fmt: skip
    return draft(
        prompt,
        ["food_delivery"],
        [
            Step(
                "list_food_orders",
                {
                    "restaurant_id": rest["id"],
                    "status": "delivered",
                    "start_date": start,
                    "end_date": end,
                    "limit": ALL,
                },
                alternatives=["food_restaurant_revenue"],
                checked_args=["start_date", "end_date"],
                normalize={"start_date": "date", "end_date": "date"},
                purpose=f"list {rest['id']}'s delivered orders in the window",
            )
        ],  # fmt: skip
        answers=[
            Answer("revenue", revenue, "number", 0.01, text=f"{rest['name']} made {fmt_num(revenue)} USD")
        ],
        reference_answer=f"{rest['name']} made {fmt_num(revenue)} USD from {len(pool)} delivered orders between {start} and {end}.",
        recompute=lambda r: {"revenue": round(sum(o["subtotal"] for o in items(r[0])), 2)},
        keep=[rest["id"], start, end],
    )


@template("food_cancel_order", "write", ["food_delivery"])
def cancel_order(ctx: Ctx) -> Draft:
    ctx.need("cancel_food_order")
    o = ctx.choose(ctx.records("food_orders", lambda o: o["status"] in ("placed", "preparing")))
    reason = ctx.choose(("customer changed their mind", "duplicate order", "restaurant too slow"))
    prompt = ctx.say(
        ["Cancel food order {id}: {r}.", "Please cancel delivery order {id} ({r})."],
        ["Order {id} from the food app has to be called off - {r}."],
        id=o["id"], r=reason,
    )  # fmt: skip
    return draft(
        prompt,
        ["food_delivery"],
        [
            Step(
                "cancel_food_order",
                {"order_id": o["id"], "reason": reason},
                checked_args=["order_id"],
                purpose="cancel the order",
            )
        ],  # fmt: skip
        state_changes=[
            (
                f"Food order {o['id']} must be cancelled afterwards.",
                changed("food_orders", o["id"], "status", "cancelled"),
            )
        ],  # fmt: skip
        reference_answer=f"Food order {o['id']} is cancelled ({reason}).",
        keep=[o["id"]],
        read_only=False,
    )


@template("food_assign_courier", "chain", ["food_delivery"], calls=(3, 3))
def assign_courier(ctx: Ctx) -> Draft:
    ctx.need("get_food_order", "list_food_couriers", "assign_food_courier")
    couriers = ctx.records("food_couriers", lambda c: c["available"])
    o = ctx.choose(ctx.records("food_orders", lambda o: o["status"] in ("placed", "preparing") and not o["courier_id"]
                               and any(c["city"] == o["city"] for c in couriers)))  # fmt: skip
    best = sole_best([c for c in couriers if c["city"] == o["city"]], "rating")
    if best["city"] != o["city"]:
        raise Skip("no courier")
    prompt = ctx.say(
        ["Assign the best-rated available courier in the order's city to food order {id}, and tell me who it is.",
         "Food order {id} needs a courier: pick the highest-rated free courier in its city and assign them."],
        ["Find a courier for order {id} - the top-rated one who is free where the order is - and assign them."],
        id=o["id"],
    )  # fmt: skip

    def recompute(r):
        city = field_of(r[0], "city")
        top = items(r[1])[0]
        if top["city"] != city or field_of(r[2], "courier_id") != top["id"]:
            raise ValueError("wrong courier")
        return {"courier": top["name"]}

    return draft(
        prompt,
        ["food_delivery"],
        [
            Step("get_food_order", {"order_id": o["id"]}, purpose=f"read order {o['id']}", produces="city"),
            Step(
                "list_food_couriers",
                {"city": o["city"], "available_only": True},
                depends_on=[0],
                normalize={"city": "text"},
                purpose=f"list free couriers in {o['city']}",
                produces="courier id",
            ),
            Step(
                "assign_food_courier",
                {"order_id": o["id"], "courier_id": best["id"]},
                depends_on=[1],
                purpose="assign the courier",
            ),
        ],  # fmt: skip
        answers=[Answer("courier", best["name"], "name", text=f"the courier is {best['name']}")],
        state_changes=[
            (
                f"Food order {o['id']} must have courier {best['id']} afterwards.",
                changed("food_orders", o["id"], "courier_id", best["id"]),
            )
        ],  # fmt: skip
        reference_answer=f"Assigned {best['name']} ({best['id']}, rated {best['rating']}) to food order {o['id']}.",
        recompute=recompute,
        keep=[o["id"]],
        read_only=False,
    )
