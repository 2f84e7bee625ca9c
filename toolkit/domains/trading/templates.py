"""Trading templates: order lookups, filled volume in a date window, order edits, cancelling a
ticker's open orders, a watchlist's top mover, and a market buy found by company name (finance)."""

from __future__ import annotations

from datetime import date, timedelta

from toolkit.envs.clock import TODAY
from toolkit.synth.base import Answer, Draft, Step
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import ALL, field_of, fmt_num, items, unique_by

ORDER_FIELDS = {"status": "status", "limit_price": "limit price", "quantity": "quantity", "symbol": "ticker"}


@template("trade_order_field", "lookup", ["trading"])
def order_field(ctx: Ctx) -> Draft:
    ctx.need("get_trade_order")
    o = ctx.choose(ctx.records("trade_orders"))
    fld = ctx.choose(sorted(k for k in ORDER_FIELDS if o[k] is not None))
    norm = "number" if fld in ("limit_price", "quantity") else "text"
    prompt = ctx.say(
        ["What is the {w} of trade order {id}?", "Look up order {id} and tell me its {w}.",
         "Which {w} does the trade order {id} have?"],
        ["Trade order {id}: I need its {w}."],
        w=ORDER_FIELDS[fld], id=o["id"],
    )  # fmt: skip
    return Draft(
        "", "", prompt, ["trading"],
        [Step("get_trade_order", {"order_id": o["id"]}, purpose=f"read order {o['id']}")],
        answers=[Answer(fld, o[fld], norm, text=f"the {ORDER_FIELDS[fld]} of {o['id']} is {o[fld]}")],
        reference_answer=f"Trade order {o['id']} has {ORDER_FIELDS[fld]} {o[fld]}.",
        recompute=lambda r: {fld: field_of(r[0], fld)},
        keep=[o["id"]],
    )  # fmt: skip


@template("trade_filled_volume", "aggregate", ["trading"])
def filled_volume(ctx: Ctx) -> Draft:
    """Shares bought (or sold) of a ticker in filled orders placed inside a date window."""
    ctx.need("list_trade_orders")
    o = ctx.choose(ctx.records("trade_orders", lambda o: o["status"] == "filled"))
    day = date.fromisoformat(o["placed_at"][:10])
    a = (day - timedelta(days=ctx.rng.randint(3, 12))).isoformat()
    b = min(day + timedelta(days=ctx.rng.randint(0, 6)), TODAY).isoformat()
    pool = ctx.records("trade_orders", lambda x: x["status"] == "filled" and x["symbol"] == o["symbol"]
                       and x["side"] == o["side"] and a <= x["placed_at"][:10] <= b)  # fmt: skip
    shares = sum(x["quantity"] for x in pool)
    verb = "bought" if o["side"] == "buy" else "sold"
    prompt = ctx.say(
        ["How many shares of {s} did we {v} in filled orders placed between {a} and {b}?",
         "Total the filled {side} orders for {s} placed from {a} to {b}: how many shares?",
         "Between {a} and {b}, how many {s} shares were {done} through filled orders?"],
        ["Count the shares of {s} {done} by orders that filled, placed {a} to {b} inclusive."],
        s=o["symbol"], v=o["side"], done=verb, side=o["side"], a=a, b=b,
    )  # fmt: skip
    return Draft(
        "", "", prompt, ["trading"],
        [Step("list_trade_orders", {"status": "filled", "symbol": o["symbol"], "side": o["side"], "start_date": a,
                                    "end_date": b, "limit": ALL},
              alternatives=["trade_fill_summary"], checked_args=["symbol", "start_date", "end_date"],
              purpose=f"list the filled {o['symbol']} orders from {a} to {b}")],
        answers=[Answer("shares", shares, "number", text=f"{shares} shares of {o['symbol']} were {verb}")],
        reference_answer=f"{shares} shares of {o['symbol']} were {verb} in {len(pool)} filled orders placed {a} to {b}.",
        recompute=lambda r: {"shares": sum(x["quantity"] for x in items(r[0]))},
        keep=[o["symbol"], a, b],
    )  # fmt: skip


@template("trade_modify_limit", "write", ["trading"])
def modify_limit(ctx: Ctx) -> Draft:
    ctx.need("modify_trade_order")
    o = ctx.choose(ctx.records("trade_orders", lambda o: o["status"] == "open"))
    price = round(o["limit_price"] * ctx.choose((0.95, 0.97, 1.02, 1.04)), 2)
    prompt = ctx.say(
        ["Change the limit price of order {id} to {p}.", "Set trade order {id}'s price to {p} USD.",
         "Please move the limit on order {id} to {p}."],
        ["Order {id} should now trigger at {p} USD; update it."],
        id=o["id"], p=fmt_num(price),
    )  # fmt: skip
    check = {"type": "state", "collection": "trade_orders", "key": o["id"], "field": "limit_price",
             "value": price, "op": "update"}  # fmt: skip
    return Draft(
        "", "", prompt, ["trading"],
        [Step("modify_trade_order", {"order_id": o["id"], "limit_price": price}, purpose="change the limit price")],
        state_changes=[(f"Order {o['id']} must have limit price {fmt_num(price)} afterwards.", check)],
        reference_answer=f"Order {o['id']} now has limit price {fmt_num(price)} USD.",
        keep=[o["id"], fmt_num(price)],
        read_only=False,
    )  # fmt: skip


@template("trade_cancel_open_orders", "write", ["trading"], calls=(2, 4))
def cancel_open_orders(ctx: Ctx) -> Draft:
    """List a ticker's open orders, then cancel each: the ids come from the first call."""
    ctx.need("list_trade_orders", "cancel_trade_order")
    syms = sorted({o["symbol"] for o in ctx.records("trade_orders", lambda o: o["status"] == "open")})
    sym = ctx.choose(syms)
    pool = ctx.records("trade_orders", lambda o: o["status"] == "open" and o["symbol"] == sym)
    if len(pool) + 1 > ctx.max_calls or len(pool) > 3:
        raise Skip("too many orders")
    prompt = ctx.say(
        ["Cancel every open order for {s}.", "We no longer want to trade {s}: cancel all of its open orders.",
         "Please pull all open {s} orders from the book."],
        ["Make sure no open order for {s} is left; cancel them."],
        s=sym,
    )  # fmt: skip
    steps = [Step("list_trade_orders", {"status": "open", "symbol": sym, "limit": ALL},
                  checked_args=["status", "symbol"], purpose=f"find the open {sym} orders", produces="order id")]  # fmt: skip
    steps += [Step("cancel_trade_order", {"order_id": o["id"]}, depends_on=[0], purpose="cancel the order")
              for o in pool]  # fmt: skip
    checks = [(f"Order {o['id']} must be cancelled afterwards.",
               {"type": "state", "collection": "trade_orders", "key": o["id"], "field": "status",
                "value": "cancelled", "op": "update"}) for o in pool]  # fmt: skip
    ids = ", ".join(o["id"] for o in pool)
    return Draft(
        "", "", prompt, ["trading"], steps,
        answers=[Answer("cancelled", len(pool), "number", text=f"{len(pool)} orders were cancelled", intermediate=True)],
        state_changes=checks,
        reference_answer=f"Cancelled {len(pool)} open {sym} orders: {ids}.",
        recompute=lambda r: {"cancelled": len(items(r[0]))},
        keep=[sym],
        read_only=False,
    )  # fmt: skip


@template("trade_watchlist_top_mover", "chain", ["trading"], calls=(2, 2))
def watchlist_top_mover(ctx: Ctx) -> Draft:
    ctx.need("list_trade_watchlists", "get_trade_watchlist")
    wl = ctx.choose(unique_by(ctx, "trade_watchlists", "name"))
    quotes = ctx.world["quotes"]

    def change(sym: str) -> float:
        h = quotes[sym]["history"]
        return round((h[-1]["close"] / h[-2]["close"] - 1) * 100, 2)

    moves = sorted(((change(s), s) for s in wl["symbols"]), reverse=True)
    if len(moves) > 1 and moves[0][0] == moves[1][0]:
        raise Skip("tie")
    best_change, best = moves[0]
    prompt = ctx.say(
        ["On the watchlist \"{n}\", which ticker rose the most (or fell the least) today?",
         "Which stock on our \"{n}\" watchlist has the best daily change?",
         "Check the \"{n}\" watchlist: what's today's top mover?"],
        ["Of the tickers on watchlist \"{n}\", which did best on the day?"],
        n=wl["name"],
    )  # fmt: skip

    def recompute(r):
        found = [x for x in items(r[0]) if x["name"] == wl["name"]]
        if len(found) != 1 or found[0]["id"] != wl["id"]:
            raise ValueError("watchlist not found by name")
        top = max(field_of(r[1], "quotes"), key=lambda q: q["change_percent"])
        return {"symbol": top["symbol"], "change_percent": top["change_percent"]}

    return Draft(
        "", "", prompt, ["trading"],
        [Step("list_trade_watchlists", {"limit": ALL}, checked_args=[], purpose="find the watchlist id",
              produces="watchlist id"),
         Step("get_trade_watchlist", {"watchlist_id": wl["id"]}, depends_on=[0],
              purpose="read the watchlist's daily changes")],
        answers=[Answer("symbol", best, "text", text=f"the top mover is {best}"),
                 Answer("change_percent", best_change, "number", 0.01, text=f"it moved {best_change}%",
                        intermediate=True)],
        reference_answer=f"{best} is the top mover on \"{wl['name']}\" ({best_change}% today).",
        recompute=recompute,
        keep=[wl["name"]],
    )  # fmt: skip


@template("trade_buy_by_company", "write", ["finance", "trading"], calls=(2, 2))
def buy_by_company(ctx: Ctx) -> Draft:
    """A market buy named by company: the ticker comes from the finance server's symbol search."""
    ctx.need("search_symbols", "place_trade_order")
    q = ctx.choose(ctx.records("quotes"))
    price = q["history"][-1]["close"]
    qty = ctx.rng.randint(1, 40) * 5
    if qty * price > ctx.world["accounts"]["cash"]["balance"]:
        raise Skip("not enough cash")
    held = ctx.world["holdings"].get(q["symbol"], {}).get("shares", 0)
    op = "update" if held else "create"
    prompt = ctx.say(
        ["Buy {k} shares of {c} at market.", "Place a market order for {k} {c} shares.",
         "Get us {k} more shares of {c}, at the current price."],
        ["I want {k} shares of {c} bought now at market."],
        k=qty, c=q["name"],
    )  # fmt: skip
    check = {"type": "state", "collection": "holdings", "key": q["symbol"], "field": "shares",
             "value": held + qty, "op": op}  # fmt: skip

    def recompute(r):
        found = field_of(r[0], "symbols")
        if [x["symbol"] for x in found] != [q["symbol"]]:
            raise ValueError("symbol search is ambiguous")
        return {}

    return Draft(
        "", "", prompt, ["finance", "trading"],
        [Step("search_symbols", {"query": q["name"]}, normalize={"query": "text"}, purpose=f"find {q['name']}'s ticker",
              produces="symbol"),
         Step("place_trade_order", {"symbol": q["symbol"], "side": "buy", "quantity": qty}, depends_on=[0],
              alternatives=["buy_stock"], checked_args=["symbol", "side", "quantity"], purpose="place the market buy")],
        state_changes=[(f"The portfolio must hold {held + qty} shares of {q['symbol']} afterwards.", check)],
        reference_answer=f"Bought {qty} shares of {q['name']} ({q['symbol']}) at {fmt_num(price)} USD.",
        recompute=recompute,
        keep=[q["name"], str(qty)],
        read_only=False,
    )  # fmt: skip
