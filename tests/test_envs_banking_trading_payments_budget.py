"""The banking, trading, payments and budget servers: every tool through a real MCP client session,
writes seen in the state diff, errors that name the way out, isolation, and a deterministic world."""

from __future__ import annotations

import anyio
import pytest

from toolkit.envs import open_episode
from toolkit.envs.registry import DOMAIN_SERVERS
from toolkit.envs.world import generate_world, world_hash

SEED = 0
SERVERS = ["banking", "trading", "payments", "budget"]
COLLECTIONS = ["bank_accounts", "bank_transactions", "bank_payees", "bank_cards", "trade_orders",
               "trade_watchlists", "trade_alerts", "pay_methods", "pay_payments", "pay_refunds",
               "pay_invoices", "budget_plans", "budget_expenses"]  # fmt: skip


def run_episode(body, **kw):
    """Run ``body(call, tb)`` in one episode; ``call`` asserts the outcome and records the tool name."""
    called: set[str] = set()

    async def main():
        async with open_episode(seed=SEED, servers=SERVERS, **kw) as tb:

            async def call(name, args, ok=True):
                r = await tb.call_tool(name, args)
                assert r.ok == ok, (name, args, r.text)
                called.add(name)
                return r.structured if ok else r.text

            await body(call, tb)

    anyio.run(main)
    return called


def test_world_is_deterministic_cross_referenced_and_leaves_the_core_alone():
    a, b = generate_world(3), generate_world(3)
    assert world_hash(a) == world_hash(b) and world_hash(a) != world_hash(generate_world(4))
    w = generate_world(SEED)
    for coll in COLLECTIONS:
        assert 4 <= len(w[coll]) <= 150, coll
    for acct in w["bank_accounts"].values():
        assert acct["customer_id"] in w["customers"]
    for t in w["bank_transactions"].values():
        assert t["account_id"] in w["bank_accounts"]
    for o in w["trade_orders"].values():
        assert o["symbol"] in w["quotes"] and o["placed_by"] in w["staff"]
    for p in w["pay_payments"].values():
        if p["order_id"] is not None:
            assert w["orders"][p["order_id"]]["total"] == p["amount"]
        else:  # an invoice's payment
            assert w["pay_invoices"][p["description"].split()[-1]]["payment_id"] == p["id"]
        assert w["pay_methods"][p["method_id"]]["customer_id"] == p["customer_id"]
    for e in w["budget_expenses"].values():
        assert w["staff"][e["staff_id"]]["team"] == e["team"]
    # Each domain builder has its own random stream: the core collections are as they were.
    from toolkit.envs import world

    saved = list(world.DOMAIN_BUILDERS)
    try:
        world.DOMAIN_BUILDERS[:] = []
        core = generate_world(SEED)
    finally:
        world.DOMAIN_BUILDERS[:] = saved
    assert all(w[c] == core[c] for c in core)


def test_banking_tools():
    w = generate_world(SEED)
    accts = sorted(w["bank_accounts"].values(), key=lambda a: a["id"])
    src = next(a for a in accts if a["type"] == "checking" and a["status"] == "open")
    dst = next(a for a in accts if a["status"] == "open" and a["id"] != src["id"])
    frozen = next(a for a in accts if a["status"] == "frozen")
    cust = src["customer_id"]
    tx = next(t for t in w["bank_transactions"].values() if t["account_id"] == src["id"])
    payee = next(p for p in w["bank_payees"].values() if p["customer_id"] == cust)
    card = next(c for c in w["bank_cards"].values() if c["status"] == "active")

    async def body(call, tb):
        page = await call("list_bank_accounts", {"limit": 5})
        assert len(page["items"]) == 5 and page["total"] == len(accts) and page["next_cursor"] == "5"
        page2 = await call("list_bank_accounts", {"limit": 5, "cursor": page["next_cursor"]})
        assert page2["items"][0]["id"] == accts[5]["id"]
        mine = await call("list_bank_accounts", {"customer_id": cust})
        assert {a["customer_id"] for a in mine["items"]} == {cust}
        got = await call("get_bank_account", {"account_id": src["id"]})
        assert got["owner_name"] == w["customers"][cust]["name"]
        assert "Did you mean" in await call(
            "get_bank_account", {"account_id": src["id"][:-1] + "x"}, ok=False
        )
        bal = await call("get_bank_balance", {"account_id": src["id"]})
        assert bal["available"] == pytest.approx(src["balance"] + src["overdraft_limit"])
        # Date window: every row inside it, newest first.
        rows = (await call("list_bank_transactions", {"account_id": src["id"], "start_date": "2025-10-01",
                                                      "end_date": "2025-11-15", "limit": 50}))["items"]  # fmt: skip
        assert all("2025-10-01" <= r["date"] <= "2025-11-15" for r in rows)
        assert [r["date"] for r in rows] == sorted((r["date"] for r in rows), reverse=True)
        assert "YYYY-MM-DD" in await call("list_bank_transactions", {"account_id": src["id"],
                                                                     "start_date": "1/10/2025"}, ok=False)  # fmt: skip
        assert (await call("get_bank_transaction", {"transaction_id": tx["id"]}))["amount"] == tx["amount"]
        found = await call("search_bank_transactions", {"query": tx["description"][:5], "customer_id": cust})
        assert tx["id"] in {t["id"] for t in found["items"]}
        summ = await call("bank_spending_summary", {"account_id": src["id"]})
        assert summ["money_out"] == pytest.approx(sum(summ["by_category"].values()), abs=0.02)
        stmt = await call("get_bank_statement", {"account_id": src["id"], "month": "2025-11"})
        assert stmt["closing_balance"] == src["balance"]
        assert stmt["opening_balance"] + stmt["money_in"] - stmt["money_out"] == pytest.approx(
            stmt["closing_balance"]
        )
        await call("get_bank_statement", {"account_id": src["id"], "month": "Nov"}, ok=False)

        dep = await call("deposit_to_bank_account", {"account_id": src["id"], "amount": 100.0})
        assert dep["balance_after"] == pytest.approx(src["balance"] + 100)
        await call("withdraw_from_bank_account", {"account_id": src["id"], "amount": 40.5})
        assert "insufficient funds" in await call("withdraw_from_bank_account",
                                                  {"account_id": src["id"], "amount": 999999.0}, ok=False)  # fmt: skip
        assert "frozen" in await call("deposit_to_bank_account", {"account_id": frozen["id"], "amount": 1.0},
                                      ok=False)  # fmt: skip
        tr = await call("transfer_between_bank_accounts", {"from_account_id": src["id"], "to_account_id": dst["id"],
                                                           "amount": 10.0, "memo": "rent share"})  # fmt: skip
        assert tr["debit"]["amount"] == -10.0 and tr["credit"]["amount"] == 10.0
        payees = await call("list_bank_payees", {"customer_id": cust})
        assert payee["id"] in {p["id"] for p in payees["items"]}
        new = await call(
            "add_bank_payee", {"customer_id": cust, "name": "Lakeside Dental", "account_number": "EX123456"}
        )
        assert "already has payee" in await call("add_bank_payee", {"customer_id": cust, "name": "lakeside dental",
                                                                    "account_number": "EX999999"}, ok=False)  # fmt: skip
        paid = await call("pay_bank_payee", {"account_id": src["id"], "payee_id": new["id"], "amount": 25.0})
        assert paid["counterparty"] == "Lakeside Dental"
        cards = await call("list_bank_cards", {"customer_id": card["customer_id"]})
        assert card["id"] in {c["id"] for c in cards["cards"]}
        assert (await call("set_bank_card_status", {"card_id": card["id"], "status": "blocked"}))[
            "status"
        ] == "blocked"
        opened = await call(
            "open_bank_account", {"customer_id": cust, "type": "savings", "initial_deposit": 50.0}
        )
        assert opened["balance"] == 50.0 and opened["customer_id"] == cust
        assert "move it out" in await call("close_bank_account", {"account_id": opened["id"]}, ok=False)
        await call("withdraw_from_bank_account", {"account_id": opened["id"], "amount": 50.0})
        assert (await call("close_bank_account", {"account_id": opened["id"]}))["status"] == "closed"
        assert (await call("set_bank_account_frozen", {"account_id": dst["id"], "frozen": True}))[
            "status"
        ] == "frozen"

        diff = tb.state_diff()
        assert diff[f"bank_accounts/{src['id']}"]["after"]["balance"] == pytest.approx(
            src["balance"] + 100 - 40.5 - 10 - 25
        )
        assert diff[f"bank_accounts/{opened['id']}"]["before"] is None
        assert diff[f"bank_cards/{card['id']}"]["after"]["status"] == "blocked"
        assert diff[f"bank_payees/{new['id']}"]["after"]["name"] == "Lakeside Dental"
        assert sum(k.startswith("bank_transactions/") for k in diff) == 7

    assert run_episode(body) == set(DOMAIN_SERVERS["banking"].tool_names())


def test_trading_tools():
    w = generate_world(SEED)
    open_order = next(o for o in w["trade_orders"].values() if o["status"] == "open")
    filled = next(o for o in w["trade_orders"].values() if o["status"] == "filled")
    held = sorted(w["holdings"])[0]
    not_held = next(s for s in sorted(w["quotes"]) if s not in w["holdings"])
    wl = w["trade_watchlists"]["wl-001"]
    off_list = next(s for s in sorted(w["quotes"]) if s not in wl["symbols"])
    last = w["quotes"][not_held]["history"][-1]["close"]

    async def body(call, tb):
        page = await call("list_trade_orders", {"status": "open", "limit": 50})
        assert open_order["id"] in {o["id"] for o in page["items"]} and page["total"] >= 1
        window = await call(
            "list_trade_orders", {"start_date": "2025-11-01", "end_date": "2025-11-10", "limit": 50}
        )
        assert all("2025-11-01" <= o["placed_at"][:10] <= "2025-11-10" for o in window["items"])
        assert "Did you mean" in await call("list_trade_orders", {"symbol": "ACMX"}, ok=False)
        assert "is after end_date" in await call("list_trade_orders", {"start_date": "2025-11-10",
                                                                         "end_date": "2025-11-01"}, ok=False)  # fmt: skip
        got = await call("get_trade_order", {"order_id": filled["id"]})
        assert got["notional"] == pytest.approx(filled["quantity"] * filled["filled_price"])
        buy = await call("place_trade_order", {"symbol": not_held.lower(), "side": "buy", "quantity": 10})
        assert buy["status"] == "filled" and buy["filled_price"] == last
        assert "needs limit_price" in await call("place_trade_order", {"symbol": held, "side": "buy", "quantity": 1,
                                                                        "order_type": "limit"}, ok=False)  # fmt: skip
        assert "portfolio holds" in await call("place_trade_order", {"symbol": held, "side": "sell",
                                                                      "quantity": 99999}, ok=False)  # fmt: skip
        lim = await call("place_trade_order", {"symbol": held, "side": "sell", "quantity": 2, "order_type": "limit",
                                               "limit_price": 999.0, "time_in_force": "gtc"})  # fmt: skip
        assert lim["status"] == "open"
        mod = await call("modify_trade_order", {"order_id": lim["id"], "quantity": 3})
        assert mod["quantity"] == 3 and mod["limit_price"] == 999.0
        assert (await call("cancel_trade_order", {"order_id": open_order["id"]}))["status"] == "cancelled"
        assert "only open orders" in await call("cancel_trade_order", {"order_id": filled["id"]}, ok=False)
        summ = await call("trade_fill_summary", {"start_date": "2025-11-15"})
        today = [
            o
            for o in w["trade_orders"].values()
            if o["filled_at"] == "2025-11-15" and o["symbol"] == not_held
        ]
        row = next(r for r in summ["symbols"] if r["symbol"] == not_held)
        assert row["fills"] == len(today) + 1
        assert row["bought"] == 10 + sum(o["quantity"] for o in today if o["side"] == "buy")
        lists = await call("list_trade_watchlists", {"limit": 2})
        assert len(lists["items"]) == 2 and lists["next_cursor"] == "2"
        assert [
            q["symbol"] for q in (await call("get_trade_watchlist", {"watchlist_id": "wl-001"}))["quotes"]
        ] == wl["symbols"]
        created = await call("create_trade_watchlist", {"name": "Shortlist", "symbols": ["grnb", "HLXP"]})
        assert created["symbols"] == ["GRNB", "HLXP"]
        added = await call("add_to_trade_watchlist", {"watchlist_id": "wl-001", "symbol": off_list})
        assert off_list in added["symbols"]
        assert off_list not in (await call("remove_from_trade_watchlist", {"watchlist_id": "wl-001",
                                                                           "symbol": off_list}))["symbols"]  # fmt: skip
        await call("remove_from_trade_watchlist", {"watchlist_id": created["id"], "symbol": "ACMR"}, ok=False)
        await call("delete_trade_watchlist", {"watchlist_id": created["id"]})
        alerts = await call("list_trade_alerts", {"active": True, "limit": 50})
        assert all(a["active"] for a in alerts["items"])
        alert = await call("create_trade_alert", {"symbol": held, "condition": "above", "price": 0.01})
        hits = await call("check_trade_alerts", {})
        assert alert["id"] in {h["id"] for h in hits["triggered"]}
        await call("delete_trade_alert", {"alert_id": alert["id"]})

        diff = tb.state_diff()
        assert diff[f"holdings/{not_held}"]["after"]["shares"] == 10
        assert diff["accounts/cash"]["after"]["balance"] == pytest.approx(25_000 - 10 * last)
        assert diff[f"trade_orders/{open_order['id']}"]["after"]["status"] == "cancelled"
        assert f"trade_watchlists/{created['id']}" not in diff  # created, then deleted: no net change
        assert f"trade_alerts/{alert['id']}" not in diff

    assert run_episode(body) == set(DOMAIN_SERVERS["trading"].tool_names())


def test_payments_tools():
    w = generate_world(SEED)
    pay = next(p for p in w["pay_payments"].values() if p["status"] == "succeeded")
    unpaid = next(o for o in sorted(w["orders"].values(), key=lambda o: o["id"]) if o["status"] == "pending")
    cust = unpaid["customer_id"]
    expired = next(m for m in w["pay_methods"].values() if m["expires"] and m["expires"] < "2025-11")
    inv = next(i for i in w["pay_invoices"].values() if i["status"] == "open"
               and any(m["default"] and (m["expires"] is None or m["expires"] >= "2025-11")
                       for m in w["pay_methods"].values() if m["customer_id"] == i["customer_id"]))  # fmt: skip
    other_inv = next(i for i in w["pay_invoices"].values() if i["status"] == "open" and i["id"] != inv["id"])

    async def body(call, tb):
        page = await call("list_payments", {"status": "succeeded", "start_date": "2025-10-01", "limit": 50})
        assert all(p["status"] == "succeeded" and p["created"] >= "2025-10-01" for p in page["items"])
        got = await call("get_payment", {"payment_id": pay["id"]})
        assert "YYYY-MM-DD" in await call("list_payments", {"start_date": "2025-13-01"}, ok=False)
        assert "Did you mean" in await call("list_payment_invoices", {"customer_id": "cu-0001"}, ok=False)
        assert got["refundable"] == pay["amount"]
        assert "not 1.0" in await call("create_payment", {"customer_id": cust, "amount": 1.0, "description": "Order",
                                                          "order_id": unpaid["id"]}, ok=False)  # fmt: skip
        assert "expired" in await call("create_payment", {"customer_id": expired["customer_id"], "amount": 5.0,
                                                          "description": "Test", "method_id": expired["id"]}, ok=False)  # fmt: skip
        methods = await call("list_payment_methods", {"customer_id": cust})
        assert all(m["customer_id"] == cust for m in methods["methods"])
        card = await call("add_payment_method", {"customer_id": cust, "type": "card", "last4": "4242",
                                                 "expires": "2029-01", "make_default": True})  # fmt: skip
        assert card["default"] is True
        new = await call("create_payment", {"customer_id": cust, "amount": unpaid["total"],
                                            "description": "Order payment", "order_id": unpaid["id"]})  # fmt: skip
        assert new["method_id"] == card["id"] and new["status"] == "succeeded"
        assert "already paid" in await call("create_payment", {"customer_id": cust, "amount": unpaid["total"],
                                                               "description": "again", "order_id": unpaid["id"]}, ok=False)  # fmt: skip
        part = await call("refund_payment", {"payment_id": pay["id"], "amount": 1.0, "reason": "goodwill"})
        assert part["payment_status"] == "partially_refunded"
        assert "exceeds" in await call(
            "refund_payment", {"payment_id": pay["id"], "amount": pay["amount"]}, ok=False
        )
        full = await call("refund_payment", {"payment_id": pay["id"]})
        assert full["payment_status"] == "refunded" and full["refunded_total"] == pay["amount"]
        refunds = await call("list_payment_refunds", {"payment_id": pay["id"]})
        assert refunds["total"] == 2
        report = await call("payment_volume_report", {"group_by": "month"})
        assert report["total_amount"] == pytest.approx(sum(p["amount"] for p in w["pay_payments"].values())
                                                      + unpaid["total"])  # fmt: skip
        first_default = next(m for m in methods["methods"] if m["default"])
        assert (await call("set_default_payment_method", {"method_id": first_default["id"]}))[
            "default"
        ] is True
        assert "is the default" in await call(
            "remove_payment_method", {"method_id": first_default["id"]}, ok=False
        )
        await call("remove_payment_method", {"method_id": card["id"]})
        invs = await call(
            "list_payment_invoices", {"status": "open", "due_before": "2025-11-30", "limit": 50}
        )
        assert all(i["status"] == "open" and i["due_date"] <= "2025-11-30" for i in invs["items"])
        assert any(i["overdue"] for i in invs["items"]) or all(
            i["due_date"] >= "2025-11-15" for i in invs["items"]
        )
        res = await call("pay_payment_invoice", {"invoice_id": inv["id"]})
        assert res["invoice"]["status"] == "paid" and res["payment"]["amount"] == inv["amount"]
        assert "only open invoices" in await call("pay_payment_invoice", {"invoice_id": inv["id"]}, ok=False)
        assert (await call("void_payment_invoice", {"invoice_id": other_inv["id"]}))["status"] == "void"

        diff = tb.state_diff()
        assert diff[f"pay_payments/{pay['id']}"]["after"]["status"] == "refunded"
        assert diff[f"pay_invoices/{inv['id']}"]["after"]["payment_id"] == res["payment"]["id"]
        assert diff[f"pay_payments/{new['id']}"]["before"] is None
        assert f"pay_methods/{card['id']}" not in diff

    assert run_episode(body) == set(DOMAIN_SERVERS["payments"].tool_names())


def test_budget_tools():
    w = generate_world(SEED)
    sub = next(
        e for e in w["budget_expenses"].values() if e["status"] == "submitted" and e["team"] != "finance"
    )
    approved = next(e for e in w["budget_expenses"].values() if e["status"] == "approved")
    reviewer = next(s for s in sorted(w["staff"]) if w["staff"][s]["team"] == "finance")
    plan = next(b for b in w["budget_plans"].values() if b["month"] == "2025-11" and b["team"] == "sales")
    other = next(b for b in w["budget_plans"].values() if b["month"] == "2025-11" and b["id"] != plan["id"])
    old = next(b for b in w["budget_plans"].values() if b["month"] == "2025-09")

    async def body(call, tb):
        page = await call("list_budgets", {"month": "2025-11", "team": "sales"})
        assert page["total"] == 5 and all(b["team"] == "sales" for b in page["items"])
        assert "YYYY-MM" in await call("list_budgets", {"month": "November"}, ok=False)
        got = await call("get_budget", {"budget_id": plan["id"]})
        assert got["remaining"] == pytest.approx(plan["amount"] - got["spent"])
        assert "already has" in await call("create_budget", {"team": plan["team"], "category": plan["category"],
                                                             "month": "2025-11", "amount": 10.0}, ok=False)  # fmt: skip
        new = await call(
            "create_budget", {"team": "sales", "category": "travel", "month": "2025-12", "amount": 5000}
        )
        assert new["amount"] == 5000.0
        assert (await call("update_budget_amount", {"budget_id": new["id"], "amount": 6000}))[
            "amount"
        ] == 6000.0
        moved = await call("transfer_budget_amount", {"from_budget_id": plan["id"], "to_budget_id": other["id"],
                                                      "amount": 100.0})  # fmt: skip
        assert moved["to"]["amount"] == other["amount"] + 100
        assert "is for" in await call("transfer_budget_amount", {"from_budget_id": plan["id"], "to_budget_id": old["id"],
                                                                 "amount": 1.0}, ok=False)  # fmt: skip
        await call("delete_budget", {"budget_id": new["id"]})
        exps = await call(
            "list_budget_expenses", {"status": "submitted", "start_date": "2025-10-01", "limit": 50}
        )
        assert all(e["status"] == "submitted" and e["date"] >= "2025-10-01" for e in exps["items"])
        assert (await call("get_budget_expense", {"expense_id": sub["id"]}))["staff_id"] == sub["staff_id"]
        claim = await call("submit_budget_expense", {"staff_id": sub["staff_id"], "category": "training",
                                                     "amount": 320.0, "merchant": "LearnFast"})  # fmt: skip
        assert claim["team"] == sub["team"] and claim["status"] == "submitted"
        assert "future" in await call("submit_budget_expense", {"staff_id": sub["staff_id"], "category": "travel",
                                                                "amount": 1.0, "merchant": "Cab", "date": "2026-01-01"},
                                      ok=False)  # fmt: skip
        assert "reviewers are in finance" in await call("review_budget_expense", {"expense_id": sub["id"],
                                                        "decision": "approved", "reviewer_id": sub["staff_id"]}, ok=False)  # fmt: skip
        rev = await call("review_budget_expense", {"expense_id": sub["id"], "decision": "approved",
                                                   "reviewer_id": reviewer})  # fmt: skip
        assert rev["status"] == "approved"
        assert (await call("reimburse_budget_expense", {"expense_id": approved["id"]}))[
            "status"
        ] == "reimbursed"
        await call("reimburse_budget_expense", {"expense_id": claim["id"]}, ok=False)
        bva = await call("budget_vs_actual", {"month": "2025-11", "team": "sales"})
        assert len(bva["budgets"]) == 5 and bva["planned"] == pytest.approx(
            sum(b["planned"] for b in bva["budgets"])
        )
        by = await call("budget_spending_by", {"group_by": "team", "month": "2025-10"})
        assert by["groups"] == sorted(by["groups"], key=lambda g: (-g["amount"], g["group"]))
        over = await call("list_overspent_budgets", {"month": "2025-10"})
        assert all(b["over_budget"] and b["spent"] > b["planned"] for b in over["budgets"])

        diff = tb.state_diff()
        assert diff[f"budget_expenses/{sub['id']}"]["after"]["reviewer_id"] == reviewer
        assert diff[f"budget_expenses/{claim['id']}"]["before"] is None
        assert diff[f"budget_plans/{plan['id']}"]["after"]["amount"] == plan["amount"] - 100
        assert f"budget_plans/{new['id']}" not in diff

    assert run_episode(body) == set(DOMAIN_SERVERS["budget"].tool_names())


def test_writes_stay_in_their_episode():
    w = generate_world(SEED)
    acct = next(a for a in sorted(w["bank_accounts"]) if w["bank_accounts"][a]["status"] == "open")

    async def main():
        async with (
            open_episode(seed=SEED, servers=SERVERS) as a,
            open_episode(seed=SEED, servers=SERVERS) as b,
        ):
            assert (await a.call_tool("deposit_to_bank_account", {"account_id": acct, "amount": 5.0})).ok
            assert (await a.call_tool("delete_trade_watchlist", {"watchlist_id": "wl-001"})).ok
            r = await b.call_tool("get_bank_balance", {"account_id": acct})
            assert r.structured["balance"] == w["bank_accounts"][acct]["balance"]
            assert (await b.call_tool("get_trade_watchlist", {"watchlist_id": "wl-001"})).ok
            assert b.state_diff() == {} and "trade_watchlists/wl-001" in a.state_diff()

    anyio.run(main)


@pytest.mark.parametrize("name", SERVERS)
def test_mcp_rl_serve_each_server_over_stdio(name):
    """`mcp-rl serve <name>` (the CLI entry point) answers a real stdio client: tools, a read, a bad id."""
    import json
    import sys
    from pathlib import Path

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    probe = {"banking": ("get_bank_account", "account_id", "ba-1001"), "trading": ("get_trade_order", "order_id", "tord-001"),
             "payments": ("get_payment", "payment_id", "pay-0001"), "budget": ("get_budget", "budget_id", "bud-001")}  # fmt: skip
    tool, arg, key = probe[name]
    root = Path(__file__).resolve().parents[1]
    params = StdioServerParameters(command=sys.executable, args=["-m", "toolkit.cli", "serve", name, "--seed", "0"],
                                   cwd=str(root))  # fmt: skip

    async def main():
        async with Client(params, read_timeout_seconds=60) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == set(DOMAIN_SERVERS[name].tool_names())
            r = await client.call_tool(tool, {arg: key})
            assert not r.is_error and json.loads(r.content[0].text)["id"] == key
            bad = await client.call_tool(tool, {arg: key[:-1] + "9x"})
            assert bad.is_error and "not found" in bad.content[0].text

    anyio.run(main)


def test_random_arguments_get_model_readable_errors_never_internal_ones():
    """Every tool, fed random well- and ill-typed arguments (ids of the wrong kind, bad dates, huge and
    negative numbers, unknown enum values), answers or says what was wrong; no KeyError/TypeError leaks."""
    import random

    from toolkit.envs.registry import tool_specs

    pool = {"string": ["", "zz", "2025-13-45", "2025-11", "2025-11-01", "ba-1001", "cu-001", "ACMR", "tord-006",
                       "pay-0002", "pinv-001", "bud-001", "exp-0062", "st-011", "wl-001", "palert-001", "card-001",
                       "bpy-001", "pm-001"],
            "integer": [0, -1, 5, 10**9], "number": [0, -5.5, 1.005, 12.5, 1e12], "boolean": [True, False]}  # fmt: skip
    readable = ("Invalid argument", "not found", "Conflict", "validation error")
    leaks = []

    def value(schema, rng):
        options = [schema, *schema.get("anyOf", [])]
        enum = next((o["enum"] for o in options if "enum" in o), None)
        if enum:
            return rng.choice([*enum, "bogus"])
        kind = next((o["type"] for o in options if o.get("type") not in (None, "null")), "string")
        return [rng.choice(pool["string"])] if kind == "array" else rng.choice(pool.get(kind, pool["string"]))

    async def main():
        async with open_episode(seed=SEED, servers=SERVERS) as tb:
            for spec in tool_specs(SERVERS):
                props = spec.input_schema.get("properties", {})
                for k in range(12):
                    rng = random.Random(f"{spec.name}/{k}")
                    args = {p: value(s, rng) for p, s in props.items() if rng.random() < 0.7}
                    r = await tb.call_tool(spec.name, args)
                    if not r.ok and not any(x in r.text for x in readable):
                        leaks.append((spec.name, args, r.text[:160]))
            assert (
                await tb.call_tool("get_bank_account", {"account_id": "ba-1001"})
            ).ok  # the episode goes on

    anyio.run(main)
    assert not leaks, leaks[:5]
