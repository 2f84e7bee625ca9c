"""Every tool of every domain server, called at least once through a real MCP client session."""

from __future__ import annotations

import anyio

from toolkit.envs import open_episode
from toolkit.envs.registry import tool_specs
from toolkit.envs.world import generate_world

SEED = 0
CORE_SERVERS = (
    "helpdesk",
    "crm",
    "directory",
    "calendar",
    "email",
    "filesystem",
    "shop",
    "finance",
    "weather",
    "chat",
    "calculator",
)


def test_every_tool_through_mcp():
    w = generate_world(SEED)
    active_agent = next(s for s in w["staff"].values() if s["team"] == "support" and s["active"])["id"]
    sales = next(s for s in w["staff"].values() if s["team"] == "sales")["id"]
    new_ticket_requester = next(iter(w["customers"]))
    open_ticket = next(t for t in w["tickets"].values() if t["status"] == "open")["id"]
    other_open = [t["id"] for t in w["tickets"].values() if t["status"] == "open"][1]
    open_deal = next(d for d in w["deals"].values() if d["stage"] not in ("won", "lost"))["id"]
    company = next(iter(w["companies"]))
    held = next(iter(w["holdings"]))
    pending_order = next(o for o in w["orders"].values() if o["status"] == "pending")["id"]
    delivered_order = next(o for o in w["orders"].values() if o["status"] == "delivered")["id"]
    inbound = next(m for m in w["emails"].values() if m["folder"] == "inbox")
    support_msg = next(m for m in w["messages"].values() if m["channel_id"] == "ch-support")
    event = next(iter(w["events"].values()))
    called: set[str] = set()

    async def main():
        async with open_episode(seed=SEED) as tb:

            async def call(name, args, expect_ok=True):
                r = await tb.call_tool(name, args)
                assert r.ok == expect_ok, (name, args, r.text)
                called.add(name)
                return r.structured

            # helpdesk
            page = await call("search_tickets", {"status": "open", "limit": 3})
            assert all(t["status"] == "open" for t in page["items"]) and page["total"] >= len(page["items"])
            assert (await call("view_ticket", {"ticket_id": open_ticket}))["id"] == open_ticket
            new = await call("submit_ticket", {"requester_id": new_ticket_requester, "subject": "Printer on fire",
                                               "description": "It is on fire.", "tags": ["Hardware"]})  # fmt: skip
            assert new["status"] == "new" and new["tags"] == ["hardware"]
            r = await call("assign_ticket", {"ticket_id": new["id"], "assignee_id": active_agent})
            assert r["status"] == "open" and r["assignee_id"] == active_agent
            assert (await call("set_ticket_priority", {"ticket_id": new["id"], "priority": "urgent"}))[
                "priority"
            ] == "urgent"
            await call("add_ticket_comment", {"ticket_id": new["id"], "body": "On it", "public": False})
            comments = await call("list_ticket_comments", {"ticket_id": new["id"], "public_only": True})
            assert [c["body"] for c in comments["items"]] == ["It is on fire."]
            await call("add_ticket_tags", {"ticket_id": new["id"], "tags": ["fire", "urgent"]})
            assert (
                "fire"
                not in (await call("remove_ticket_tag", {"ticket_id": new["id"], "tag": "fire"}))["tags"]
            )
            assert (await call("set_ticket_status", {"ticket_id": new["id"], "status": "solved"}))[
                "status"
            ] == "solved"
            hist = await call("get_ticket_history", {"ticket_id": new["id"]})
            assert [h["status"] for h in hist["history"]] == ["new", "open", "solved"]
            sat = await call("list_satisfaction_ratings", {"rating": "bad"})
            assert all(x["rating"] == "bad" for x in sat["items"])
            merged = await call("merge_tickets", {"source_id": other_open, "target_id": open_ticket})
            assert merged["into"] == open_ticket
            stats = await call("ticket_stats", {"group_by": "priority"})
            assert stats["total"] == len(w["tickets"]) + 1
            wl = await call("agent_workload", {})
            assert {a["staff_id"] for a in wl["agents"]} == {
                s["id"] for s in w["staff"].values() if s["team"] == "support"
            }
            await call("delete_ticket", {"ticket_id": new["id"]})
            await call("view_ticket", {"ticket_id": new["id"]}, expect_ok=False)

            # crm
            cos = await call("search_companies", {"query": "bank"})
            assert [c["name"] for c in cos["items"]] == ["Granite Bank"]
            co = await call("get_company", {"company_id": company})
            assert co["contacts"] and all(c["id"] in w["customers"] for c in co["contacts"])
            assert (await call("update_company", {"company_id": company, "tier": "enterprise"}))[
                "tier"
            ] == "enterprise"
            assert (await call("search_contacts", {"company_id": company}))["total"] == len(co["contacts"])
            assert (await call("get_contact", {"contact_id": co["contacts"][0]["id"]}))["company_name"] == co[
                "name"
            ]
            c = await call(
                "create_contact", {"name": "Zed Zulu", "email": "zed@acme.example", "company_id": company}
            )
            await call(
                "create_contact", {"name": "Zed 2", "email": "zed@acme.example", "company_id": company}, False
            )
            assert (await call("update_contact", {"contact_id": c["id"], "title": "CEO"}))["title"] == "CEO"
            await call("delete_contact", {"contact_id": c["id"]})
            deals = await call("list_deals", {"min_amount": 100000})
            assert all(d["amount"] >= 100000 for d in deals["items"])
            assert (await call("get_deal", {"deal_id": open_deal}))["id"] == open_deal
            d = await call(
                "create_deal",
                {"name": "Big one", "company_id": company, "amount": 5000, "close_date": "2026-01-31"},
            )
            assert (
                d["stage"] == "prospecting" and d["owner_id"] == w["companies"][company]["account_manager_id"]
            )
            assert (await call("update_deal", {"deal_id": d["id"], "stage": "won"}))["probability"] == 100
            await call("update_deal", {"deal_id": d["id"], "stage": "lost"}, expect_ok=False)
            a = await call("log_activity", {"deal_id": d["id"], "kind": "call", "summary": "Signed"})
            assert a["deal_id"] == d["id"]
            pipe = await call("pipeline_summary", {})
            assert pipe["stages"]["won"]["count"] >= 1

            # directory
            assert (await call("list_staff", {"team": "sales"}))["total"] == 3
            assert (await call("get_staff", {"staff_id": sales}))["team"] == "sales"
            first = w["staff"][sales]["name"].split()[0]
            assert sales in [s["id"] for s in (await call("search_staff", {"query": first}))["items"]]
            inactive = await call("list_inactive_logins", {"days": 30})
            assert all(r["days_since_login"] >= 30 for r in inactive["staff"])
            assert sum(t["members"] for t in (await call("list_teams", {}))["teams"].values()) == len(
                w["staff"]
            )
            assert (await call("update_staff", {"staff_id": sales, "city": "Oslo"}))["city"] == "Oslo"
            off = await call("offboard_staff", {"staff_id": active_agent})
            assert all(tid in w["tickets"] or tid.startswith("t-") for tid in off["unassigned_tickets"])

            # calendar
            evs = await call(
                "list_events", {"start_date": "2025-11-15", "end_date": "2025-11-30", "limit": 50}
            )
            assert all("2025-11-15" <= e["start"][:10] <= "2025-11-30" for e in evs["items"])
            assert set((await call("get_event", {"event_id": event["id"]}))["attendees"]) == set(
                event["attendee_ids"]
            )
            free = await call(
                "find_free_slots",
                {"staff_ids": ["st-009", "st-010"], "day": "2025-11-20", "duration_minutes": 60},
            )
            slot = free["free_starts"][0]
            ev = await call("create_event", {"title": "Sync", "start": slot, "duration_minutes": 60,
                                             "organizer_id": "st-009", "attendee_ids": ["st-010"]})  # fmt: skip
            await call("create_event", {"title": "Clash", "start": slot, "duration_minutes": 30,
                                        "organizer_id": "st-010"}, expect_ok=False)  # fmt: skip
            assert (
                "st-011"
                in (await call("add_attendee", {"event_id": ev["id"], "staff_id": "st-011"}))["attendee_ids"]
            )
            assert (
                "st-011"
                not in (await call("remove_attendee", {"event_id": ev["id"], "staff_id": "st-011"}))[
                    "attendee_ids"
                ]
            )
            moved = await call("reschedule_event", {"event_id": ev["id"], "start": "2025-11-21T07:00"})
            assert moved["end"] == "2025-11-21T08:00"
            agenda = await call("day_agenda", {"staff_id": "st-009", "day": "2025-11-21"})
            assert ev["id"] in [e["id"] for e in agenda["events"]]
            conflicts = await call("list_calendar_conflicts", {})
            assert conflicts["count"] == len(conflicts["conflicts"])
            await call("cancel_event", {"event_id": ev["id"]})

            # email
            inbox = await call("list_emails", {"folder": "inbox", "limit": 50})
            assert inbox["total"] == sum(1 for m in w["emails"].values() if m["folder"] == "inbox")
            assert (await call("search_emails", {"sender": inbound["from"]}))["total"] >= 1
            assert (await call("read_email", {"email_id": inbound["id"]}))["read"] is True
            assert (await call("get_thread", {"thread_id": inbound["thread_id"]}))["emails"]
            sent = await call("send_email", {"to": ["a@b.example"], "subject": "Hi", "body": "Hello"})
            await call(
                "send_email", {"to": ["not-an-address"], "subject": "Hi", "body": "x"}, expect_ok=False
            )
            rep = await call("reply_to_email", {"email_id": inbound["id"], "body": "Thanks"})
            assert rep["thread_id"] == inbound["thread_id"] and rep["to"] == [inbound["from"]]
            assert (await call("forward_email", {"email_id": inbound["id"], "to": ["x@y.example"]}))[
                "subject"
            ].startswith("Fwd:")
            assert (await call("mark_email", {"email_id": inbound["id"], "read": False}))["read"] is False
            assert (
                "urgent"
                in (await call("label_email", {"email_id": inbound["id"], "label": "urgent"}))["labels"]
            )
            assert (await call("move_email", {"email_id": sent["id"], "folder": "archive"}))[
                "folder"
            ] == "archive"
            assert (await call("delete_email", {"email_id": sent["id"]}))["folder"] == "trash"
            await call("delete_email", {"email_id": sent["id"], "permanent": True})
            assert (await call("list_email_labels", {}))["labels"]["urgent"] == 1

            # filesystem
            root = await call("list_directory", {"path": "/"})
            assert {e["path"] for e in root["items"]} >= {"/docs", "/reports", "/shared"}
            assert "14 days" in (await call("read_file", {"path": "/shared/policies/refunds.md"}))["content"]
            await call("make_directory", {"path": "/tmp/a/b", "parents": True})
            await call("write_file", {"path": "/tmp/a/b/n.txt", "content": "one\n"})
            await call("write_file", {"path": "/tmp/a/b/n.txt", "content": "x"}, expect_ok=False)
            assert (await call("append_to_file", {"path": "/tmp/a/b/n.txt", "content": "two\n"}))["size"] == 8
            await call("copy_file", {"source": "/tmp/a/b/n.txt", "destination": "/tmp/copy.txt"})
            await call("move_path", {"source": "/tmp/a", "destination": "/tmp/z"})
            assert (await call("file_info", {"path": "/tmp/z/b/n.txt"}))["size"] == 8
            assert (await call("search_files", {"pattern": "*.txt", "path": "/tmp"}))["items"] == [
                "/tmp/copy.txt",
                "/tmp/z/b/n.txt",
            ]
            hits = await call("find_in_files", {"text": "two", "path": "/tmp"})
            assert hits["count"] == 2
            await call("create_symlink", {"path": "/tmp/link", "target": "/tmp/z/b"})
            assert (await call("read_file", {"path": "/tmp/link/n.txt"}))["content"] == "one\ntwo\n"
            await call("delete_path", {"path": "/tmp"}, expect_ok=False)
            assert len((await call("delete_path", {"path": "/tmp", "recursive": True}))["deleted"]) == 6

            # shop
            prods = await call(
                "search_products", {"category": "hardware", "in_stock": True, "max_price": 200}
            )
            assert all(p["category"] == "hardware" and p["price"] <= 200 for p in prods["items"])
            pid = prods["items"][0]["id"]
            stock = (await call("get_product", {"product_id": pid}))["stock"]
            assert (await call("update_stock", {"product_id": pid, "stock": stock + 5}))["stock"] == stock + 5
            assert (await call("update_price", {"product_id": pid, "price": 10.5}))["price"] == 10.5
            assert (await call("list_orders", {"status": "pending"}))["total"] >= 1
            assert (await call("get_order", {"order_id": pending_order}))["customer_name"]
            o = await call(
                "create_order",
                {"customer_id": new_ticket_requester, "items": [{"product_id": pid, "qty": 2}]},
            )
            assert o["total"] == 21.0
            assert (await call("get_product", {"product_id": pid}))["stock"] == stock + 3
            await call("update_order_status", {"order_id": o["id"], "status": "delivered"}, expect_ok=False)
            await call("update_order_status", {"order_id": o["id"], "status": "cancelled"})
            assert (await call("get_product", {"product_id": pid}))["stock"] == stock + 5
            assert (await call("refund_order", {"order_id": delivered_order, "reason": "broken"}))[
                "status"
            ] == "refunded"
            rep = await call("sales_report", {"start_date": "2025-01-01"})
            assert rep["orders"] >= 1 and rep["revenue"] > 0
            assert all(p["stock"] < 50 for p in (await call("list_low_stock", {"threshold": 50}))["products"])

            # finance
            assert (await call("search_symbols", {"query": "health"}))["symbols"]
            q = await call("get_stock_quote", {"symbol": held.lower()})
            assert q["close"] == w["quotes"][held]["history"][-1]["close"]
            assert (
                len((await call("get_price_history", {"symbol": held, "start_date": "2025-11-09"}))["items"])
                == 7
            )
            assert (await call("price_change", {"symbol": held, "days": 5}))["days"] == 5
            before = (await call("get_cash_balance", {}))["balance"]
            t = await call("buy_stock", {"symbol": held, "shares": 2})
            assert t["cash_after"] == round(before - t["amount"], 2)
            await call("sell_stock", {"symbol": held, "shares": 10**5}, expect_ok=False)
            await call("sell_stock", {"symbol": held, "shares": 1})
            assert len((await call("list_trades", {"symbol": held}))["items"]) == 2
            hold = await call("list_holdings", {})
            assert (
                next(h for h in hold["holdings"] if h["symbol"] == held)["shares"]
                == w["holdings"][held]["shares"] + 1
            )
            assert (await call("deposit_cash", {"amount": 100}))["balance"] > 100
            pv = await call("get_portfolio_value", {})
            assert pv["total"] == round(pv["cash"] + pv["holdings"], 2)
            assert (await call("get_sector_performance", {"days": 3}))["sectors"]

            # weather
            cities = (await call("list_weather_cities", {}))["cities"]
            assert len(cities) == 10
            assert (await call("get_weather", {"city": "lisbon", "day": "2025-11-14"}))["kind"] == "observed"
            assert len((await call("get_forecast", {"city": "Oslo", "days": 4}))["forecast"]) == 4
            assert (
                len(
                    (
                        await call(
                            "weather_history",
                            {"city": "Oslo", "start_date": "2025-11-10", "end_date": "2025-11-12"},
                        )
                    )["days"]
                )
                == 3
            )
            cmp = await call("compare_weather", {"cities": ["Oslo", "Austin"]})
            assert cmp["warmest"] in ("Oslo", "Austin")
            assert all(
                d["precipitation_mm"] >= 0.1
                for d in (await call("find_rainy_days", {"city": "Berlin"}))["rainy_days"]
            )
            assert (await call("temperature_stats", {"city": "Sydney"}))["days"] == 15
            await call("get_weather_alerts", {"city": "Chicago"})

            # chat
            assert len((await call("list_channels", {}))["channels"]) == len(w["channels"])
            assert (await call("read_channel", {"channel_id": "ch-support", "limit": 50}))["total"] >= 1
            member = w["channels"]["ch-support"]["member_ids"][0]
            msg = await call(
                "post_message", {"channel_id": "ch-support", "text": "hello team", "author_id": member}
            )
            await call(
                "post_message",
                {"channel_id": "ch-support", "text": "hi", "author_id": sales},
                expect_ok=False,
            )
            assert msg["id"] in [
                m["id"] for m in (await call("search_chat", {"query": "hello team"}))["items"]
            ]
            react = await call(
                "add_reaction", {"message_id": support_msg["id"], "emoji": "eyes", "staff_id": member}
            )
            assert react["reactions"]["eyes"] == [member]
            await call("remove_chat_message", {"message_id": msg["id"]})
            ch = await call("create_channel", {"name": "launch", "topic": "Launch", "member_ids": [member]})
            assert (await call("invite_to_channel", {"channel_id": ch["id"], "staff_id": sales}))[
                "member_ids"
            ] == sorted([member, sales])
            assert (
                sales
                not in (await call("leave_channel", {"channel_id": ch["id"], "staff_id": sales}))[
                    "member_ids"
                ]
            )
            assert (await call("set_channel_topic", {"channel_id": ch["id"], "topic": "Go"}))["topic"] == "Go"

            # calculator
            assert (await call("calculate", {"expression": "sqrt(16) + 2^3"}))["result"] == 12
            assert (await call("percent_of", {"percent": 15, "value": 80}))["result"] == 12
            assert (await call("percent_change", {"old": 80, "new": 100}))["percent_change"] == 25
            assert (await call("describe_numbers", {"values": [1, 2, 3, 4]}))["median"] == 2.5
            assert (await call("convert_units", {"value": 100, "from_unit": "C", "to_unit": "F"}))[
                "result"
            ] == 212
            assert (
                abs(
                    (await call("convert_units", {"value": 1, "from_unit": "mi", "to_unit": "km"}))["result"]
                    - 1.609344
                )
                < 1e-9
            )
            await call("convert_units", {"value": 1, "from_unit": "kg", "to_unit": "km"}, expect_ok=False)
            assert (
                await call(
                    "compound_interest",
                    {"principal": 1000, "rate_percent": 12, "years": 1, "periods_per_year": 1},
                )
            )["future_value"] == 1120
            assert (await call("loan_payment", {"principal": 1200, "annual_rate_percent": 0, "months": 12}))[
                "monthly_payment"
            ] == 100
            assert (await call("days_between", {"start_date": "2025-11-15", "end_date": "2025-12-25"}))[
                "days"
            ] == 40
            await call("store_value", {"name": "total", "value": 42.5})
            assert (await call("recall_value", {"name": "total"}))["value"] == 42.5

            diff = tb.state_diff()
            assert "calc_memory/total" in diff and diff["calc_memory/total"]["before"] is None

    anyio.run(main)
    # The servers added for PROVE's domains have test files of their own (tests/test_envs_*.py).
    missing = {t.name for t in tool_specs(list(CORE_SERVERS))} - called
    assert not missing, f"tools never called: {sorted(missing)}"
