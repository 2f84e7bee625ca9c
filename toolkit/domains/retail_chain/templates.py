"""Retail chain templates: stock at a store, chain-wide stock, store revenue over a date window, a
stock count, and a transfer from the best-stocked store."""

from __future__ import annotations

from datetime import timedelta

from toolkit.envs.clock import TODAY
from toolkit.synth.base import Answer, Draft, Step, payload
from toolkit.synth.templates import Ctx, template
from toolkit.synth.templates.common import field_of, fmt_num, items
from toolkit.synth.templates.drafting import changed, draft, next_key, sole_best


@template("retail_store_stock", "lookup", ["retail_chain"])
def store_stock(ctx: Ctx) -> Draft:
    ctx.need("get_retail_store_stock")
    line = ctx.choose(ctx.records("retail_stock"))
    store, product = ctx.world["retail_stores"][line["store_id"]], ctx.world["products"][line["product_id"]]
    prompt = ctx.say(
        ["How many units of {p} ({pid}) does store {sid} have on hand?",
         "Check the stock at store {sid}: how many {p} ({pid}) are there?"],
        ["What is the on-hand quantity of product {pid} ({p}) at our {sid} store?"],
        p=product["name"], pid=product["id"], sid=store["id"],
    )  # fmt: skip
    return draft(
        prompt,
        ["retail_chain"],
        [
            Step(
                "get_retail_store_stock",
                {"store_id": store["id"], "product_id": product["id"]},
                alternatives=["find_retail_stock"],
                purpose=f"read the stock of {product['id']} at {store['id']}",
            )
        ],  # fmt: skip
        answers=[
            Answer(
                "quantity",
                line["quantity"],
                "number",
                text=f"store {store['id']} has {line['quantity']} units of {product['name']}",
            )
        ],  # fmt: skip
        reference_answer=f"Store {store['id']} ({store['name']}) has {line['quantity']} units of {product['name']}.",
        recompute=lambda r: {"quantity": items(r[0])[0]["quantity"]},
        keep=[store["id"], product["id"]],
    )


@template("retail_chain_total", "aggregate", ["retail_chain"])
def chain_total(ctx: Ctx) -> Draft:
    ctx.need("find_retail_stock")
    pid = ctx.choose(sorted({r["product_id"] for r in ctx.records("retail_stock")}))
    product = ctx.world["products"][pid]
    total = sum(r["quantity"] for r in ctx.records("retail_stock", lambda r: r["product_id"] == pid))
    prompt = ctx.say(
        ["How many units of {p} ({pid}) do we hold across all our stores?",
         "Add up the stock of product {pid} ({p}) over every store in the chain."],
        ["What's the chain-wide on-hand total for {p} ({pid})?"],
        p=product["name"], pid=pid,
    )  # fmt: skip
    return draft(
        prompt,
        ["retail_chain"],
        [Step("find_retail_stock", {"product_id": pid}, purpose=f"find the stores holding {pid}")],
        answers=[
            Answer(
                "total", total, "number", text=f"the stores hold {total} units of {product['name']} in all"
            )
        ],
        reference_answer=f"Across the chain there are {total} units of {product['name']} ({pid}).",
        recompute=lambda r: {"total": payload(r[0])["chain_total"]},
        keep=[pid],
    )


@template("retail_store_revenue", "aggregate", ["retail_chain"])
def store_revenue(ctx: Ctx) -> Draft:
    ctx.need("retail_sales_report")
    store = ctx.choose(ctx.records("retail_stores"))
    days = ctx.choose((7, 14, 30))
    start, end = (TODAY - timedelta(days=days)).isoformat(), TODAY.isoformat()
    sales = ctx.records("retail_sales", lambda s: s["store_id"] == store["id"] and start <= s["date"] <= end)
    revenue = round(sum(s["amount"] for s in sales), 2)
    prompt = ctx.say(
        ["What revenue did store {sid} make from sales between {a} and {b}?",
         "Total the sales revenue of store {sid} from {a} to {b}, inclusive."],
        ["How much did our {sid} store sell (in USD) in the window {a} - {b}?"],
        sid=store["id"], a=start, b=end,
    )  # fmt: skip
    return draft(
        prompt,
        ["retail_chain"],
        [
            Step(
                "retail_sales_report",
                {"start_date": start, "end_date": end, "store_id": store["id"]},
                checked_args=["start_date", "end_date", "store_id"],
                normalize={"start_date": "date", "end_date": "date"},
                purpose=f"total {store['id']}'s sales in the window",
            )
        ],  # fmt: skip
        answers=[
            Answer(
                "revenue", revenue, "number", 0.01, text=f"store {store['id']} sold {fmt_num(revenue)} USD"
            )
        ],
        reference_answer=f"Store {store['id']} made {fmt_num(revenue)} USD from {len(sales)} sales between {start} and {end}.",
        recompute=lambda r: {"revenue": payload(r[0])["revenue"]},
        keep=[store["id"], start, end],
    )


@template("retail_count_stock", "write", ["retail_chain"])
def count_stock(ctx: Ctx) -> Draft:
    ctx.need("set_retail_stock")
    line = ctx.choose(ctx.records("retail_stock"))
    qty = ctx.choose([n for n in range(0, 41) if n != line["quantity"]])
    prompt = ctx.say(
        ["A stock count at store {sid} found {n} units of product {pid}. Update the stock.",
         "Set the on-hand quantity of {pid} at store {sid} to {n}."],
        ["Store {sid} recounted product {pid}: there are {n}. Record it."],
        sid=line["store_id"], pid=line["product_id"], n=qty,
    )  # fmt: skip
    key = f"{line['store_id']}|{line['product_id']}"
    return draft(
        prompt,
        ["retail_chain"],
        [
            Step(
                "set_retail_stock",
                {"store_id": line["store_id"], "product_id": line["product_id"], "quantity": qty},
                purpose="record the counted quantity",
            )
        ],  # fmt: skip
        state_changes=[
            (
                f"Store {line['store_id']} must hold {qty} units of {line['product_id']} afterwards.",
                changed("retail_stock", key, "quantity", qty),
            )
        ],  # fmt: skip
        reference_answer=f"Store {line['store_id']} now shows {qty} units of {line['product_id']}.",
        keep=[line["store_id"], line["product_id"], str(qty)],
        read_only=False,
    )


@template("retail_rebalance", "chain", ["retail_chain"], calls=(2, 2))
def rebalance(ctx: Ctx) -> Draft:
    ctx.need("find_retail_stock", "create_retail_transfer")
    pid = ctx.choose(sorted({r["product_id"] for r in ctx.records("retail_stock")}))
    holders = ctx.records("retail_stock", lambda r: r["product_id"] == pid and r["quantity"] >= 1)
    top = sole_best(holders, "quantity")
    dst = ctx.choose([s for s in sorted(ctx.world["retail_stores"]) if s != top["store_id"]])
    qty = ctx.rng.randint(1, min(5, top["quantity"]))
    new_id = next_key(ctx, "retail_transfers", "rt-")
    prompt = ctx.say(
        ["Store {dst} needs {n} units of product {pid}. Request a transfer from whichever store holds the most.",
         "Move {n} units of {pid} to store {dst}, taking them from the store with the largest stock of it."],
        ["Send {n} x {pid} to {dst}: source them from our best-stocked store and tell me which one that is."],
        dst=dst, n=qty, pid=pid,
    )  # fmt: skip

    def recompute(r):
        src = payload(r[0])["stores"][0]["store_id"]
        if field_of(r[1], "from_store_id") != src:
            raise ValueError("transfer from another store")
        return {"source": src}

    return draft(
        prompt,
        ["retail_chain"],
        [
            Step(
                "find_retail_stock",
                {"product_id": pid},
                purpose=f"find the stores holding {pid}",
                produces="store id",
            ),
            Step(
                "create_retail_transfer",
                {"from_store_id": top["store_id"], "to_store_id": dst, "product_id": pid, "quantity": qty},
                depends_on=[0],
                checked_args=["from_store_id", "to_store_id", "product_id", "quantity"],
                purpose="request the transfer",
            ),
        ],  # fmt: skip
        answers=[
            Answer("source", top["store_id"], "text", text=f"the units come from store {top['store_id']}")
        ],
        state_changes=[
            (
                f"A new transfer {new_id} of {qty} x {pid} from {top['store_id']} to {dst} must exist.",
                changed("retail_transfers", new_id, "from_store_id", top["store_id"], op="create"),
            )
        ],  # fmt: skip
        reference_answer=f"Requested transfer {new_id}: {qty} units of {pid} from store {top['store_id']} to {dst}.",
        recompute=recompute,
        keep=[dst, pid, str(qty)],
        read_only=False,
    )
