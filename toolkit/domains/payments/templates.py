"""Payments templates: the payment of a shop order, takings in a date window, partial refunds, and
chains from a customer's name (CRM) to their open invoices."""

from __future__ import annotations

from datetime import timedelta

from toolkit.domains.banking.templates import find_contact, only_match
from toolkit.envs.clock import TODAY
from toolkit.synth.base import Answer, Draft, Step
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import ALL, fmt_num, items, unique_by


@template("pay_order_payment_status", "lookup", ["payments"])
def order_payment_status(ctx: Ctx) -> Draft:
    ctx.need("list_payments")
    p = ctx.choose(ctx.records("pay_payments", lambda p: p["order_id"] is not None))
    if len(ctx.records("pay_payments", lambda x: x["order_id"] == p["order_id"])) != 1:
        raise Skip("several payments")
    prompt = ctx.say(
        ["What is the status of the payment for order {o}?", "Did the payment for shop order {o} go through?",
         "Check the payment of order {o}: what status does it have?"],
        ["Order {o} - what happened to its payment?"],
        o=p["order_id"],
    )  # fmt: skip

    def recompute(r):
        rows = items(r[0])
        if len(rows) != 1:
            raise ValueError("expected one payment")
        return {"status": rows[0]["status"], "payment_id": rows[0]["id"]}

    return Draft(
        "", "", prompt, ["payments"],
        [Step("list_payments", {"order_id": p["order_id"]}, purpose=f"find the payment of {p['order_id']}")],
        answers=[Answer("status", p["status"], "text", text=f"the payment is {p['status']}"),
                 Answer("payment_id", p["id"], "text", text=f"the payment is {p['id']}", intermediate=True)],
        reference_answer=f"The payment for order {p['order_id']} ({p['id']}, {fmt_num(p['amount'])} USD) is {p['status']}.",
        recompute=recompute,
        keep=[p["order_id"]],
    )  # fmt: skip


@template("pay_succeeded_total", "aggregate", ["payments"])
def succeeded_total(ctx: Ctx) -> Draft:
    ctx.need("list_payments")
    end = TODAY - timedelta(days=ctx.rng.randint(0, 30))
    start = end - timedelta(days=ctx.choose((14, 30, 45)))
    a, b = start.isoformat(), end.isoformat()
    pool = ctx.records("pay_payments", lambda p: p["status"] == "succeeded" and a <= p["created"][:10] <= b)
    if not pool:
        raise Skip("no payments in the window")
    value = round(sum(p["amount"] for p in pool), 2)
    prompt = ctx.say(
        ["How much did we collect in succeeded payments created between {a} and {b}?",
         "Sum the successful payments from {a} to {b} (inclusive).",
         "What is the total of payments with status succeeded made between {a} and {b}?"],
        ["Between {a} and {b}, what did the succeeded payments add up to?"],
        a=a, b=b,
    )  # fmt: skip
    return Draft(
        "", "", prompt, ["payments"],
        [Step("list_payments", {"status": "succeeded", "start_date": a, "end_date": b, "limit": ALL},
              alternatives=["payment_volume_report"], checked_args=["start_date", "end_date"],
              purpose=f"list the payments from {a} to {b}")],
        answers=[Answer("total", value, "number", 0.01, text=f"the succeeded payments total {fmt_num(value)} USD"),
                 Answer("count", len(pool), "number", text=f"{len(pool)} payments", intermediate=True)],
        reference_answer=f"{len(pool)} succeeded payments between {a} and {b} total {fmt_num(value)} USD.",
        recompute=lambda r: {"total": round(sum(p["amount"] for p in items(r[0])), 2), "count": len(items(r[0]))},
        keep=[a, b],
    )  # fmt: skip


@template("pay_partial_refund", "write", ["payments"])
def partial_refund(ctx: Ctx) -> Draft:
    ctx.need("refund_payment")
    p = ctx.choose(ctx.records("pay_payments", lambda p: p["status"] == "succeeded" and p["amount"] >= 40))
    amount = round(p["amount"] * ctx.choose((0.1, 0.2, 0.25, 0.5)), 2)
    reason = ctx.choose(("damaged", "late delivery", "goodwill"))
    prompt = ctx.say(
        ["Refund {amt} USD of payment {id}; the reason is {why}.", "Issue a partial refund of {amt} USD on {id} ({why}).",
         "Payment {id} needs a {amt} USD refund because of: {why}."],
        ["Give back {amt} USD from payment {id}, reason {why}."],
        amt=fmt_num(amount), id=p["id"], why=reason,
    )  # fmt: skip
    check = {"type": "state", "collection": "pay_payments", "key": p["id"], "field": "refunded_amount",
             "value": amount, "op": "update"}  # fmt: skip
    check2 = {"type": "state", "collection": "pay_payments", "key": p["id"], "field": "status",
              "value": "partially_refunded", "op": "update"}  # fmt: skip
    return Draft(
        "", "", prompt, ["payments"],
        [Step("refund_payment", {"payment_id": p["id"], "amount": amount, "reason": reason},
              checked_args=["payment_id", "amount"], purpose=f"refund {fmt_num(amount)} USD")],
        state_changes=[(f"Payment {p['id']} must show {fmt_num(amount)} USD refunded afterwards.", check),
                       (f"Payment {p['id']} must be partially_refunded afterwards.", check2)],
        reference_answer=f"Refunded {fmt_num(amount)} USD of payment {p['id']} ({reason}).",
        keep=[p["id"], fmt_num(amount)],
        read_only=False,
    )  # fmt: skip


def _payable(ctx: Ctx) -> dict[str, str]:
    """Customers (unique by name) whose default method can be charged today -> that method id."""
    month = TODAY.strftime("%Y-%m")
    ok = {m["customer_id"]: m["id"] for m in ctx.records("pay_methods")
          if m["default"] and (m["expires"] is None or m["expires"] >= month)}  # fmt: skip
    return {c["id"]: ok[c["id"]] for c in unique_by(ctx, "customers", "name") if c["id"] in ok}


@template("pay_open_invoice_total", "chain", ["crm", "payments"], calls=(2, 2))
def open_invoice_total(ctx: Ctx) -> Draft:
    ctx.need("search_contacts", "list_payment_invoices")
    owners = {i["customer_id"] for i in ctx.records("pay_invoices", lambda i: i["status"] == "open")}
    cust = ctx.choose([c for c in unique_by(ctx, "customers", "name") if c["id"] in owners])
    pool = ctx.records("pay_invoices", lambda i: i["customer_id"] == cust["id"] and i["status"] == "open")
    value = round(sum(i["amount"] for i in pool), 2)
    prompt = ctx.say(
        ["How much does {n} owe us in open invoices?", "What is the total of {n}'s unpaid (open) invoices?",
         "Add up the open invoices of {n}."],
        ["{n}: what's outstanding on their open invoices?"],
        n=cust["name"],
    )  # fmt: skip

    def recompute(r):
        only_match(r[0], cust["id"])
        return {"total": round(sum(i["amount"] for i in items(r[1])), 2), "invoices": len(items(r[1]))}

    return Draft(
        "", "", prompt, ["crm", "payments"],
        [find_contact(cust["name"]),
         Step("list_payment_invoices", {"customer_id": cust["id"], "status": "open", "limit": ALL}, depends_on=[0],
              checked_args=["customer_id", "status"], purpose=f"list {cust['name']}'s open invoices")],
        answers=[Answer("total", value, "number", 0.01, text=f"{cust['name']} owes {fmt_num(value)} USD"),
                 Answer("invoices", len(pool), "number", text=f"{len(pool)} open invoices", intermediate=True)],
        reference_answer=f"{cust['name']} has {len(pool)} open invoices totalling {fmt_num(value)} USD.",
        recompute=recompute,
        keep=[cust["name"]],
    )  # fmt: skip


@template("pay_settle_open_invoices", "write", ["crm", "payments"], calls=(3, 4))
def settle_open_invoices(ctx: Ctx) -> Draft:
    """Name -> customer id -> open invoices -> pay each with the default method."""
    ctx.need("search_contacts", "list_payment_invoices", "pay_payment_invoice")
    payable = _payable(ctx)
    owners = {i["customer_id"] for i in ctx.records("pay_invoices", lambda i: i["status"] == "open")}
    cid = ctx.choose(sorted(set(payable) & owners))
    cust = ctx.world["customers"][cid]
    pool = ctx.records("pay_invoices", lambda i: i["customer_id"] == cid and i["status"] == "open")
    if len(pool) > 2 or len(pool) + 2 > ctx.max_calls:
        raise Skip("too many invoices")
    prompt = ctx.say(
        ["{n} wants to settle all of their open invoices with their default payment method. Please do it.",
         "Pay every open invoice of {n}, charging their default method.",
         "Clear {n}'s open invoices: charge each to the method on file."],
        ["Use {n}'s default payment method to pay whatever invoices they still have open."],
        n=cust["name"],
    )  # fmt: skip
    steps = [find_contact(cust["name"]),
             Step("list_payment_invoices", {"customer_id": cid, "status": "open", "limit": ALL}, depends_on=[0],
                  checked_args=["customer_id", "status"], purpose="find the open invoices", produces="invoice id")]  # fmt: skip
    steps += [Step("pay_payment_invoice", {"invoice_id": i["id"]}, depends_on=[1], purpose="pay the invoice")
              for i in pool]  # fmt: skip
    checks = [(f"Invoice {i['id']} must be paid afterwards.",
               {"type": "state", "collection": "pay_invoices", "key": i["id"], "field": "status", "value": "paid",
                "op": "update"}) for i in pool]  # fmt: skip
    value = round(sum(i["amount"] for i in pool), 2)

    def recompute(r):
        only_match(r[0], cid)
        return {"total": round(sum(i["amount"] for i in items(r[1])), 2)}

    return Draft(
        "", "", prompt, ["crm", "payments"], steps,
        answers=[Answer("total", value, "number", 0.01, text=f"{fmt_num(value)} USD was charged", intermediate=True)],
        state_changes=checks,
        reference_answer=f"Paid {len(pool)} open invoices of {cust['name']} ({', '.join(i['id'] for i in pool)}), "
        f"{fmt_num(value)} USD charged to {payable[cid]}.",
        recompute=recompute,
        keep=[cust["name"]],
        read_only=False,
    )  # fmt: skip
