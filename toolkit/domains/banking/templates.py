"""Banking templates: a balance lookup, spending in a date window, a transfer, and chains from a
customer's name (CRM) to their accounts and cards."""

from __future__ import annotations

from datetime import date, timedelta

from toolkit.envs.clock import TODAY
from toolkit.synth.base import Answer, Draft, Step
from toolkit.synth.templates import Ctx, template
from toolkit.synth.templates.common import ALL, field_of, fmt_num, items, unique_by


def find_contact(name: str) -> Step:
    """The first hop of a chain that starts from a customer's name."""
    return Step("search_contacts", {"query": name}, normalize={"query": "name"},
                purpose=f"find {name}'s customer id", produces="customer id")  # fmt: skip


def only_match(result, want_id: str) -> None:
    found = items(result)
    if len(found) != 1 or found[0]["id"] != want_id:
        raise ValueError("the name search is ambiguous")


@template("bank_balance_lookup", "lookup", ["banking"])
def balance_lookup(ctx: Ctx) -> Draft:
    ctx.need("get_bank_balance")
    a = ctx.choose(ctx.records("bank_accounts"))
    prompt = ctx.say(
        ["What is the current balance of bank account {id}?", "How much money is in account {id}?",
         "Check the balance on bank account {id} for me."],
        ["Account {id}: what balance does it show right now?"],
        id=a["id"],
    )  # fmt: skip
    return Draft(
        "", "", prompt, ["banking"],
        [Step("get_bank_balance", {"account_id": a["id"]}, alternatives=["get_bank_account"],
              purpose=f"read the balance of {a['id']}")],
        answers=[Answer("balance", a["balance"], "number", 0.01, text=f"the balance is {fmt_num(a['balance'])} USD")],
        reference_answer=f"Account {a['id']} holds {fmt_num(a['balance'])} USD.",
        recompute=lambda r: {"balance": field_of(r[0], "balance")},
        keep=[a["id"]],
    )  # fmt: skip


@template("bank_category_spend", "aggregate", ["banking"])
def category_spend(ctx: Ctx) -> Draft:
    """Spending of one category inside a date window: the window filter is the point."""
    ctx.need("list_bank_transactions")
    tx = ctx.choose(ctx.records("bank_transactions", lambda t: t["amount"] < 0 and t["kind"] == "card"))
    days = ctx.choose((14, 21, 30))
    end = date.fromisoformat(tx["date"]) + timedelta(days=ctx.rng.randint(0, 5))
    end = min(end, TODAY)
    start = end - timedelta(days=days)
    a, b, cat = start.isoformat(), end.isoformat(), tx["category"]
    rows = ctx.records("bank_transactions", lambda t: t["account_id"] == tx["account_id"] and a <= t["date"] <= b
                       and t["category"] == cat)  # fmt: skip
    spent = round(-sum(t["amount"] for t in rows if t["amount"] < 0), 2)
    prompt = ctx.say(
        ["How much did account {acct} spend on {cat} between {a} and {b}?",
         "Total the {cat} spending of bank account {acct} from {a} to {b} (inclusive).",
         "What were the {cat} expenses on account {acct} in the window {a} to {b}?"],
        ["Between {a} and {b}, how much {cat} spending went through account {acct}?"],
        acct=tx["account_id"], cat=cat, a=a, b=b,
    )  # fmt: skip

    def recompute(r):
        return {"spent": round(-sum(t["amount"] for t in items(r[0]) if t["amount"] < 0), 2)}

    return Draft(
        "", "", prompt, ["banking"],
        [Step("list_bank_transactions",
              {"account_id": tx["account_id"], "start_date": a, "end_date": b, "category": cat, "limit": ALL},
              alternatives=["bank_spending_summary"], checked_args=["account_id", "start_date", "end_date"],
              purpose=f"list the account's transactions from {a} to {b}")],
        answers=[Answer("spent", spent, "number", 0.01, text=f"{fmt_num(spent)} USD was spent on {cat}")],
        reference_answer=f"Account {tx['account_id']} spent {fmt_num(spent)} USD on {cat} between {a} and {b}.",
        recompute=recompute,
        keep=[tx["account_id"], a, b, cat],
    )  # fmt: skip


@template("bank_transfer_to_savings", "write", ["banking"])
def transfer_to_savings(ctx: Ctx) -> Draft:
    ctx.need("transfer_between_bank_accounts")
    accts = ctx.records("bank_accounts", lambda a: a["status"] == "open")
    pairs = [(c, s) for c in accts for s in accts if c["customer_id"] == s["customer_id"]
             and c["type"] == "checking" and s["type"] == "savings" and c["balance"] > 150]  # fmt: skip
    src, dst = ctx.choose(pairs)
    amount = float(ctx.rng.randrange(5, int(min(src["balance"], 2000)) // 10) * 10)
    after = round(src["balance"] - amount, 2)
    prompt = ctx.say(
        ["Transfer {amt} USD from checking account {src} to savings account {dst}.",
         "Move {amt} dollars from account {src} into account {dst}.",
         "Please put {amt} USD from {src} into the savings account {dst}."],
        ["Send {amt} USD over from {src} to {dst}, both accounts are the same customer's."],
        amt=fmt_num(amount), src=src["id"], dst=dst["id"],
    )  # fmt: skip
    check = {"type": "state", "collection": "bank_accounts", "key": src["id"], "field": "balance",
             "value": after, "op": "update"}  # fmt: skip
    check2 = {"type": "state", "collection": "bank_accounts", "key": dst["id"], "field": "balance",
              "value": round(dst["balance"] + amount, 2), "op": "update"}  # fmt: skip
    return Draft(
        "", "", prompt, ["banking"],
        [Step("transfer_between_bank_accounts",
              {"from_account_id": src["id"], "to_account_id": dst["id"], "amount": amount},
              purpose=f"move {fmt_num(amount)} USD")],
        state_changes=[(f"Account {src['id']} must hold {fmt_num(after)} USD afterwards.", check),
                       (f"Account {dst['id']} must hold {fmt_num(check2['value'])} USD afterwards.", check2)],
        reference_answer=f"Transferred {fmt_num(amount)} USD from {src['id']} to {dst['id']}.",
        keep=[src["id"], dst["id"], fmt_num(amount)],
        read_only=False,
    )  # fmt: skip


@template("bank_customer_total_balance", "chain", ["crm", "banking"], calls=(2, 2))
def customer_total_balance(ctx: Ctx) -> Draft:
    ctx.need("search_contacts", "list_bank_accounts")
    owners = {a["customer_id"] for a in ctx.records("bank_accounts")}
    cust = ctx.choose([c for c in unique_by(ctx, "customers", "name") if c["id"] in owners])
    accts = ctx.records("bank_accounts", lambda a: a["customer_id"] == cust["id"])
    value = round(sum(a["balance"] for a in accts), 2)
    prompt = ctx.say(
        ["What is the combined balance of all of {n}'s bank accounts?",
         "How much money does {n} hold across their bank accounts in total?",
         "Add up the balances of every account {n} has with us."],
        ["{n}: total balance over all their accounts, please."],
        n=cust["name"],
    )  # fmt: skip

    def recompute(r):
        only_match(r[0], cust["id"])
        return {"total": round(sum(a["balance"] for a in items(r[1])), 2), "accounts": len(items(r[1]))}

    return Draft(
        "", "", prompt, ["crm", "banking"],
        [find_contact(cust["name"]),
         Step("list_bank_accounts", {"customer_id": cust["id"], "limit": ALL}, depends_on=[0],
              checked_args=["customer_id"], purpose=f"list {cust['name']}'s accounts")],
        answers=[Answer("total", value, "number", 0.01, text=f"{cust['name']} holds {fmt_num(value)} USD in total"),
                 Answer("accounts", len(accts), "number", text=f"{cust['name']} has {len(accts)} accounts",
                        intermediate=True)],
        reference_answer=f"{cust['name']} ({cust['id']}) has {len(accts)} accounts holding {fmt_num(value)} USD in total.",
        recompute=recompute,
        keep=[cust["name"]],
    )  # fmt: skip


@template("bank_block_lost_card", "write", ["crm", "banking"], calls=(3, 3))
def block_lost_card(ctx: Ctx) -> Draft:
    """Name -> customer id -> their active card -> block it: a write at the end of a chain."""
    ctx.need("search_contacts", "list_bank_cards", "set_bank_card_status")
    cards = ctx.records("bank_cards", lambda c: c["status"] == "active")
    one = [
        c for c in cards if sum(x["customer_id"] == c["customer_id"] for x in ctx.records("bank_cards")) == 1
    ]
    names = {c["id"]: c for c in unique_by(ctx, "customers", "name")}
    card = ctx.choose([c for c in one if c["customer_id"] in names])
    cust = names[card["customer_id"]]
    prompt = ctx.say(
        ["{n} lost their debit card. Please block it.", "Block {n}'s bank card, it was stolen.",
         "Could you stop {n}'s debit card? They cannot find it."],
        ["{n} reports a missing card; make sure it is blocked."],
        n=cust["name"],
    )  # fmt: skip
    check = {"type": "state", "collection": "bank_cards", "key": card["id"], "field": "status",
             "value": "blocked", "op": "update"}  # fmt: skip

    def recompute(r):
        only_match(r[0], cust["id"])
        return {}

    return Draft(
        "", "", prompt, ["crm", "banking"],
        [find_contact(cust["name"]),
         Step("list_bank_cards", {"customer_id": cust["id"]}, depends_on=[0], purpose="find their card",
              produces="card id"),
         Step("set_bank_card_status", {"card_id": card["id"], "status": "blocked"}, depends_on=[1],
              purpose="block the card")],
        state_changes=[(f"Card {card['id']} of {cust['name']} must be blocked afterwards.", check)],
        reference_answer=f"Blocked {cust['name']}'s card {card['id']} (ending {card['last4']}).",
        recompute=recompute,
        keep=[cust["name"]],
        read_only=False,
    )  # fmt: skip
