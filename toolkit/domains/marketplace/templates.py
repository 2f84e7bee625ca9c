"""Marketplace templates: a listing lookup, average asking price, answering an offer, accepting the best offer."""

from __future__ import annotations

from toolkit.synth.base import Answer, Draft, Step
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import ALL, field_of, fmt_num, items
from toolkit.synth.templates.drafting import changed, draft, sole_best

CONDITION_WORDS = {"new": "new", "like_new": "like-new", "used": "used", "refurbished": "refurbished"}


@template("mkt_listing_lookup", "lookup", ["marketplace"])
def listing_lookup(ctx: Ctx) -> Draft:
    ctx.need("get_market_listing")
    x = ctx.choose(ctx.records("market_listings"))
    seller = ctx.world["market_sellers"][x["seller_id"]]["name"]
    prompt = ctx.say(
        ["Who sells marketplace listing {id}, and what is its asking price?",
         "Look up listing {id} on the marketplace: which seller posted it and for how much?"],
        ["For marketplace listing {id}, tell me the seller's name and the price."],
        id=x["id"],
    )  # fmt: skip
    return draft(
        prompt,
        ["marketplace"],
        [Step("get_market_listing", {"listing_id": x["id"]}, purpose=f"read listing {x['id']}")],
        answers=[
            Answer("seller", seller, "text", text=f"listing {x['id']} is sold by {seller}"),
            Answer(
                "price", x["price"], "number", 0.01, text=f"its asking price is {fmt_num(x['price'])} USD"
            ),
        ],
        reference_answer=f"Listing {x['id']} ({x['title']}) is sold by {seller} for {fmt_num(x['price'])} USD.",
        recompute=lambda r: {"seller": field_of(r[0], "seller_name"), "price": field_of(r[0], "price")},
        keep=[x["id"]],
    )


@template("mkt_avg_price", "aggregate", ["marketplace"])
def avg_price(ctx: Ctx) -> Draft:
    ctx.need("search_market_listings")
    cond = ctx.choose(sorted(CONDITION_WORDS))
    pool = ctx.records("market_listings", lambda x: x["condition"] == cond and x["status"] == "active")
    if not pool:
        raise Skip("no such listings")
    avg = round(sum(x["price"] for x in pool) / len(pool), 2)
    prompt = ctx.say(
        ["What is the average asking price of the active {c} listings on the marketplace?",
         "On the marketplace, how much do active listings in {c} condition cost on average?"],
        ["Give me the mean price of all {c} items currently listed (active) on the marketplace."],
        c=CONDITION_WORDS[cond],
    )  # fmt: skip

    def recompute(r):
        rows = items(r[0])
        return {"average": round(sum(x["price"] for x in rows) / len(rows), 2)}

    return draft(
        prompt,
        ["marketplace"],
        [
            Step(
                "search_market_listings",
                {"condition": cond, "status": "active", "limit": ALL},
                checked_args=["condition", "status"],
                purpose=f"list the active {cond} listings",
            )
        ],  # fmt: skip
        answers=[Answer("average", avg, "number", 0.5, text=f"the average price is {fmt_num(avg)} USD")],
        reference_answer=f"The {len(pool)} active {CONDITION_WORDS[cond]} listings average {fmt_num(avg)} USD.",
        recompute=recompute,
    )


@template("mkt_answer_offer", "write", ["marketplace"])
def answer_offer(ctx: Ctx) -> Draft:
    ctx.need("respond_market_offer")
    lst = ctx.world["market_listings"]
    o = ctx.choose(ctx.records("market_offers", lambda o: o["status"] == "pending"))
    decision = ctx.choose(("accept", "reject") if lst[o["listing_id"]]["quantity"] >= 1 else ("reject",))
    status = "accepted" if decision == "accept" else "rejected"
    prompt = ctx.say(
        [
            "Please {d} marketplace offer {id}.",
            "The seller wants to {d} offer {id} on the marketplace; do it.",
        ],
        ["Go ahead and {d} the buyer's offer {id}."],
        d=decision,
        id=o["id"],
    )
    return draft(
        prompt,
        ["marketplace"],
        [
            Step(
                "respond_market_offer",
                {"offer_id": o["id"], "decision": decision},
                purpose=f"{decision} the offer",
            )
        ],
        state_changes=[
            (
                f"Offer {o['id']} must be {status} afterwards.",
                changed("market_offers", o["id"], "status", status),
            )
        ],  # fmt: skip
        reference_answer=f"Offer {o['id']} is now {status}.",
        keep=[o["id"]],
        read_only=False,
    )


@template("mkt_accept_best_offer", "chain", ["marketplace"], calls=(2, 2))
def accept_best_offer(ctx: Ctx) -> Draft:
    ctx.need("list_market_offers", "respond_market_offer")
    lst = ctx.choose(ctx.records("market_listings", lambda x: x["quantity"] >= 1 and any(
        o["listing_id"] == x["id"] and o["status"] == "pending" for o in ctx.world["market_offers"].values())))  # fmt: skip
    offers = ctx.records("market_offers", lambda o: o["listing_id"] == lst["id"] and o["status"] == "pending")
    best = sole_best(offers, "amount")
    prompt = ctx.say(
        ["Accept the highest pending offer on marketplace listing {id} and tell me how much it is.",
         "For listing {id}, find the best pending offer, accept it, and report the amount."],
        ["Listing {id} has offers waiting: take the top one and say what it was worth."],
        id=lst["id"],
    )  # fmt: skip

    def recompute(r):
        top = items(r[0])[0]
        if field_of(r[1], "id") != top["id"]:
            raise ValueError("accepted a different offer")
        return {"amount": top["amount"]}

    return draft(
        prompt,
        ["marketplace"],
        [
            Step(
                "list_market_offers",
                {"listing_id": lst["id"], "status": "pending"},
                checked_args=["listing_id"],
                purpose=f"list the pending offers on {lst['id']}",
                produces="offer id",
            ),
            Step(
                "respond_market_offer",
                {"offer_id": best["id"], "decision": "accept"},
                depends_on=[0],
                purpose="accept the highest offer",
            ),
        ],  # fmt: skip
        answers=[
            Answer(
                "amount",
                best["amount"],
                "number",
                0.01,
                text=f"the accepted offer is {fmt_num(best['amount'])} USD",
            )
        ],
        state_changes=[
            (
                f"Offer {best['id']} (the highest) must be accepted afterwards.",
                changed("market_offers", best["id"], "status", "accepted"),
            )
        ],  # fmt: skip
        reference_answer=f"Accepted offer {best['id']} of {fmt_num(best['amount'])} USD on listing {lst['id']}.",
        recompute=recompute,
        keep=[lst["id"]],
        read_only=False,
    )
