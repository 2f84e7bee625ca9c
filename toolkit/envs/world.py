"""The seeded business world every domain server reads and writes.

One coherent, deterministic world per seed: companies with customers and an account manager, staff
with last-login times, helpdesk tickets (tags, comments, status history, satisfaction) raised by
customers and assigned to staff, CRM deals and activities, products and orders, calendar events,
email threads, a small file tree, stock quotes and a portfolio, weather by city and date, team chat.
Entities cross-reference by id (``ticket.requester_id`` is a ``customers`` key, and so on).

A world state is ``{collection: {key: record}}`` with JSON-serialisable records. Dates are computed
from a fixed ``TODAY`` so a world never depends on the clock.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import random
from datetime import datetime, timedelta
from typing import Any

from toolkit.envs.clock import NOW, NOW_ISO, TODAY, World, iso, slug
from toolkit.envs.domains import DOMAINS

__all__ = ["NOW", "NOW_ISO", "TODAY", "World", "diff_states", "generate_world", "world_hash"]

# Each domain's world builder, add_<domain>(w, rng) in toolkit/domains/<domain>/world.py, in DOMAINS order
# (loaded by name, as a registry loads its members). Each reads the core world and writes only collections
# of its own, prefixed by its domain.
DOMAIN_BUILDERS = [
    getattr(importlib.import_module(f"toolkit.domains.{d}.world"), f"add_{d}") for d in DOMAINS
]

FIRST = [
    "Alice", "Bruno", "Chen", "Dana", "Elif", "Farah", "Gustav", "Hana", "Ivan", "Jamal", "Keiko", "Luis",
    "Maya", "Nikhil", "Olga", "Priya", "Quinn", "Rosa", "Sven", "Tariq", "Uma", "Victor", "Wen", "Yara",
]  # fmt: skip
LAST = [
    "Anders", "Baker", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ito", "Jensen",
    "Kowalski", "Lindqvist", "Moreau", "Novak", "Okafor", "Petrov", "Quintero", "Rossi", "Schmidt", "Tanaka",
]  # fmt: skip
CITIES = ["Berlin", "Lisbon", "Toronto", "Austin", "Nairobi", "Osaka", "Sydney", "Madrid", "Chicago", "Oslo"]
CLIMATE = {  # (mean high in Nov, spread, chance of rain)
    "Berlin": (9, 4, 0.45), "Lisbon": (18, 3, 0.4), "Toronto": (7, 5, 0.4), "Austin": (22, 5, 0.2),
    "Nairobi": (24, 2, 0.5), "Osaka": (17, 3, 0.3), "Sydney": (24, 4, 0.3), "Madrid": (15, 4, 0.25),
    "Chicago": (8, 6, 0.35), "Oslo": (4, 3, 0.5),
}  # fmt: skip
COMPANY_NAMES = [
    ("Acme Robotics", "manufacturing"), ("Bluewave Health", "healthcare"), ("Cobalt Logistics", "logistics"),
    ("Delta Foods", "retail"), ("Evergreen Energy", "energy"), ("Fjord Analytics", "software"),
    ("Granite Bank", "finance"), ("Helix Pharma", "healthcare"),
]  # fmt: skip
TEAMS = {
    "support": "Support Agent",
    "sales": "Account Executive",
    "engineering": "Engineer",
    "finance": "Analyst",
}
TICKET_TOPICS = [
    ("Cannot log in after password reset", ["login", "account"]),
    ("Invoice shows wrong amount", ["billing", "invoice"]),
    ("Order arrived damaged", ["shipping", "damage"]),
    ("Export to CSV times out", ["bug", "export"]),
    ("Request for API rate limit increase", ["api", "limits"]),
    ("Two-factor codes not arriving", ["login", "2fa"]),
    ("Refund not received", ["billing", "refund"]),
    ("Dashboard loads slowly", ["performance", "bug"]),
    ("Need to add five more seats", ["sales", "seats"]),
    ("Webhook deliveries failing", ["api", "webhooks"]),
    ("Wrong item shipped", ["shipping", "returns"]),
    ("SSO configuration help", ["sso", "account"]),
]  # fmt: skip
PRODUCTS = [
    ("Sensor Kit", "hardware", 129.0), ("Robot Arm Mini", "hardware", 899.0), ("Cloud Plan Basic", "software", 29.0),
    ("Cloud Plan Pro", "software", 99.0), ("Support Plus", "service", 199.0), ("USB-C Dock", "hardware", 149.5),
    ("Thermal Camera", "hardware", 459.0), ("Data Export Add-on", "software", 49.0), ("Training Day", "service", 1200.0),
    ("Spare Battery", "hardware", 39.9), ("Label Printer", "hardware", 219.0), ("Analytics Seat", "software", 15.0),
]  # fmt: skip
TICKERS = [
    ("ACMR", "Acme Robotics", "industrials", 84.0), ("BLWV", "Bluewave Health", "healthcare", 41.5),
    ("GRNB", "Granite Bank", "financials", 63.2), ("HLXP", "Helix Pharma", "healthcare", 122.0),
    ("EVGN", "Evergreen Energy", "energy", 27.8), ("FJDA", "Fjord Analytics", "technology", 210.4),
]  # fmt: skip
CONDITIONS = ["sunny", "partly cloudy", "cloudy", "light rain", "rain", "windy"]
TICKET_STATUSES = ["new", "open", "pending", "solved", "closed"]
DEAL_STAGES = ["prospecting", "qualification", "proposal", "negotiation", "won", "lost"]


def generate_world(seed: int = 0) -> World:
    """Build the world for ``seed``: same seed, same world (see ``world_hash``)."""
    rng = random.Random(seed)
    w: World = {}

    # Staff: support, sales, engineering, finance.
    staff: dict[str, dict] = {}
    names = rng.sample([(f, s) for f in FIRST for s in LAST], 12 + 30)
    teams = ["support"] * 5 + ["sales"] * 3 + ["engineering"] * 2 + ["finance"] * 2
    for i, team in enumerate(teams):
        first, last = names[i]
        sid = f"st-{i + 1:03d}"
        staff[sid] = {
            "id": sid,
            "name": f"{first} {last}",
            "email": f"{slug(first)}.{slug(last)}@northwind.example",
            "team": team,
            "role": TEAMS[team],
            "city": rng.choice(CITIES),
            "last_login": iso(NOW - timedelta(hours=rng.randint(1, 24 * 40))),
            "active": rng.random() > 0.1,
        }
    w["staff"] = staff
    by_team = {t: [s for s in staff if staff[s]["team"] == t] for t in TEAMS}

    companies: dict[str, dict] = {}
    for i, (cname, industry) in enumerate(COMPANY_NAMES):
        cid = f"co-{i + 1:03d}"
        companies[cid] = {
            "id": cid,
            "name": cname,
            "industry": industry,
            "city": rng.choice(CITIES),
            "tier": rng.choice(["standard", "standard", "premium", "enterprise"]),
            "account_manager_id": rng.choice(by_team["sales"]),
            "annual_revenue": rng.randrange(2, 400) * 100_000,
        }
    w["companies"] = companies

    customers: dict[str, dict] = {}
    for i in range(30):
        first, last = names[12 + i]
        cuid = f"cu-{i + 1:03d}"
        cid = f"co-{i % len(COMPANY_NAMES) + 1:03d}"
        domain = companies[cid]["name"].split()[0].lower()
        customers[cuid] = {
            "id": cuid,
            "name": f"{first} {last}",
            "email": f"{slug(first)}.{slug(last)}@{domain}.example",
            "phone": f"+1-555-{rng.randrange(1000, 9999)}",
            "company_id": cid,
            "title": rng.choice(["CTO", "Office Manager", "Procurement Lead", "Engineer", "CFO", "IT Admin"]),
            "city": companies[cid]["city"],
            "created": iso(TODAY - timedelta(days=rng.randint(30, 900))),
        }
    w["customers"] = customers
    cust_ids = list(customers)

    tickets: dict[str, dict] = {}
    for i in range(40):
        tid = f"t-{1001 + i}"
        subject, tags = rng.choice(TICKET_TOPICS)
        created = NOW - timedelta(hours=rng.randint(2, 24 * 60))
        status = rng.choices(TICKET_STATUSES, weights=[2, 4, 2, 4, 2])[0]
        assignee = rng.choice(by_team["support"]) if status != "new" else None
        requester = rng.choice(cust_ids)
        history = [{"status": "new", "at": iso(created), "by": requester}]
        t = created
        for st in TICKET_STATUSES[1 : TICKET_STATUSES.index(status) + 1]:
            t = t + timedelta(hours=rng.randint(1, 48))
            history.append({"status": st, "at": iso(min(t, NOW)), "by": assignee})
        comments = [
            {"author_id": requester, "body": f"{subject}. Please help.", "at": iso(created), "public": True}
        ]
        if assignee:
            comments.append(
                {
                    "author_id": assignee,
                    "body": rng.choice(
                        ["Looking into this now.", "Could you share a screenshot?", "Escalated."]
                    ),
                    "at": history[1]["at"],
                    "public": rng.random() > 0.2,
                }
            )
        satisfaction = None
        if status in ("solved", "closed") and rng.random() > 0.3:
            good = rng.random() > 0.35
            satisfaction = {
                "rating": "good" if good else "bad",
                "comment": rng.choice(
                    ["Quick fix, thanks!", "Great help."] if good else ["Took too long.", "Not solved."]
                ),
            }
        tickets[tid] = {
            "id": tid,
            "subject": subject,
            "requester_id": requester,
            "company_id": customers[requester]["company_id"],
            "assignee_id": assignee,
            "status": status,
            "priority": rng.choices(["low", "normal", "high", "urgent"], weights=[2, 5, 3, 1])[0],
            "channel": rng.choice(["email", "web", "phone", "chat"]),
            "tags": list(tags),
            "comments": comments,
            "status_history": history,
            "satisfaction": satisfaction,
            "created": iso(created),
            "updated": history[-1]["at"],
        }
    w["tickets"] = tickets

    deals: dict[str, dict] = {}
    for i in range(16):
        did = f"d-{i + 1:03d}"
        cid = rng.choice(list(companies))
        contacts = [c for c in cust_ids if customers[c]["company_id"] == cid]
        stage = rng.choice(DEAL_STAGES)
        deals[did] = {
            "id": did,
            "name": f"{companies[cid]['name']} - {rng.choice(['Expansion', 'Renewal', 'Pilot', 'New seats'])}",
            "company_id": cid,
            "contact_id": rng.choice(contacts),
            "owner_id": companies[cid]["account_manager_id"],
            "stage": stage,
            "amount": float(rng.randrange(5, 250) * 1000),
            "close_date": iso(TODAY + timedelta(days=rng.randint(-60, 120))),
            "probability": {"won": 100, "lost": 0}.get(stage, rng.choice([10, 25, 40, 60, 80])),
        }
    w["deals"] = deals
    activities: dict[str, dict] = {}
    for i in range(20):
        aid = f"a-{i + 1:03d}"
        did = rng.choice(list(deals))
        activities[aid] = {
            "id": aid,
            "deal_id": did,
            "kind": rng.choice(["call", "meeting", "email", "note"]),
            "summary": rng.choice(
                ["Discussed pricing", "Sent proposal", "Intro call", "Legal review", "Demo given"]
            ),
            "by": deals[did]["owner_id"],
            "at": iso(NOW - timedelta(hours=rng.randint(1, 24 * 30))),
        }
    w["activities"] = activities

    products: dict[str, dict] = {}
    for i, (pname, cat, price) in enumerate(PRODUCTS):
        pid = f"p-{i + 1:03d}"
        products[pid] = {
            "id": pid,
            "sku": f"SKU-{1000 + i * 7}",
            "name": pname,
            "category": cat,
            "price": price,
            "stock": rng.randint(0, 80) if cat == "hardware" else None,
        }
    w["products"] = products
    orders: dict[str, dict] = {}
    for i in range(30):
        oid = f"o-{5001 + i}"
        cuid = rng.choice(cust_ids)
        items = [
            {"product_id": p, "qty": rng.randint(1, 4), "unit_price": products[p]["price"]}
            for p in rng.sample(list(products), rng.randint(1, 3))
        ]
        orders[oid] = {
            "id": oid,
            "customer_id": cuid,
            "items": items,
            "total": round(sum(it["qty"] * it["unit_price"] for it in items), 2),
            "status": rng.choice(["pending", "paid", "shipped", "delivered", "delivered", "cancelled"]),
            "created": iso(TODAY - timedelta(days=rng.randint(0, 90))),
            "ship_city": customers[cuid]["city"],
        }
    w["orders"] = orders

    events: dict[str, dict] = {}
    staff_ids = list(staff)
    for i in range(20):
        eid = f"ev-{i + 1:03d}"
        day = TODAY + timedelta(days=rng.randint(-7, 21))
        start = datetime(
            day.year, day.month, day.day, rng.choice([9, 10, 11, 13, 14, 15, 16]), rng.choice([0, 30])
        )
        organizer = rng.choice(staff_ids)
        attendees = sorted({organizer, *rng.sample(staff_ids, rng.randint(1, 3))})
        events[eid] = {
            "id": eid,
            "title": rng.choice(
                ["Weekly sync", "Customer demo", "Pipeline review", "1:1", "Incident retro", "Planning"]
            ),
            "start": iso(start),
            "end": iso(start + timedelta(minutes=rng.choice([30, 60, 90]))),
            "organizer_id": organizer,
            "attendee_ids": attendees,
            "location": rng.choice(["Room A", "Room B", "Video call", staff[organizer]["city"] + " office"]),
            "description": "",
        }
    w["events"] = events

    emails: dict[str, dict] = {}
    for i in range(30):
        mid = f"m-{i + 1:03d}"
        thread = f"th-{i // 2 + 1:03d}"
        s = rng.choice(staff_ids)
        c = rng.choice(cust_ids)
        inbound = i % 2 == 0
        emails[mid] = {
            "id": mid,
            "thread_id": thread,
            "from": customers[c]["email"] if inbound else staff[s]["email"],
            "to": [staff[s]["email"]] if inbound else [customers[c]["email"]],
            "cc": [],
            "subject": rng.choice(
                ["Quote request", "Meeting follow-up", "Invoice question", "Renewal", "Outage?"]
            ),
            "body": rng.choice(
                ["Could you send the details?", "Thanks for your time today.", "See attached."]
            ),
            "date": iso(NOW - timedelta(hours=rng.randint(1, 24 * 20))),
            "folder": "inbox" if inbound else "sent",
            "read": rng.random() > 0.4,
            "labels": rng.sample(["important", "billing", "sales", "follow-up"], rng.randint(0, 2)),
        }
    w["emails"] = emails

    files: dict[str, dict] = {}

    def add_file(path: str, content: str) -> None:
        files[path] = {
            "path": path,
            "type": "file",
            "content": content,
            "modified": iso(NOW - timedelta(days=3)),
        }

    for d in ["/docs", "/docs/policies", "/reports", "/shared"]:
        files[d] = {"path": d, "type": "dir", "content": None, "modified": iso(NOW - timedelta(days=10))}
    add_file(
        "/docs/README.md", "# Northwind workspace\nPolicies live in /docs/policies, reports in /reports.\n"
    )
    add_file("/docs/policies/refunds.md", "Refunds are issued within 14 days of an approved request.\n")
    add_file(
        "/docs/policies/sla.md", "Urgent tickets: first reply within 1 hour. High: 4 hours. Normal: 1 day.\n"
    )
    revenue = sum(o["total"] for o in orders.values() if o["status"] != "cancelled")
    add_file("/reports/q3_summary.txt", f"Q3 order revenue: {revenue:.2f} USD\nOpen tickets: see helpdesk.\n")
    add_file("/reports/customers.csv", "id,name,company_id\n" + "".join(
        f"{c['id']},{c['name']},{c['company_id']}\n" for c in list(customers.values())[:10]))  # fmt: skip
    add_file("/shared/todo.txt", "- renew Granite Bank contract\n- fix export timeout\n")
    files["/shared/policies"] = {"path": "/shared/policies", "type": "symlink", "target": "/docs/policies",
                                 "content": None, "modified": iso(NOW - timedelta(days=2))}  # fmt: skip
    # A planted trap: a link whose target climbs out of the workspace (the sandbox must refuse it).
    files["/shared/escape"] = {"path": "/shared/escape", "type": "symlink", "target": "../../etc",
                               "content": None, "modified": iso(NOW - timedelta(days=2))}  # fmt: skip
    w["files"] = files

    quotes: dict[str, dict] = {}
    for sym, cname, sector, p0 in TICKERS:
        price = p0
        history = []
        for k in range(30, -1, -1):
            price = round(price * (1 + rng.gauss(0, 0.015)), 2)
            history.append({"date": iso(TODAY - timedelta(days=k)), "close": price})
        quotes[sym] = {"symbol": sym, "name": cname, "sector": sector, "currency": "USD", "history": history}
    w["quotes"] = quotes
    holdings: dict[str, dict] = {}
    for sym in rng.sample([t[0] for t in TICKERS], 4):
        holdings[sym] = {
            "symbol": sym,
            "shares": rng.randint(5, 200),
            "cost_basis": round(rng.uniform(20, 200), 2),
        }
    w["holdings"] = holdings
    w["accounts"] = {"cash": {"id": "cash", "balance": 25_000.0, "currency": "USD"}}
    w["trades"] = {}

    weather: dict[str, dict] = {}
    for city in CITIES:
        high0, spread, rain = CLIMATE[city]
        for k in range(-7, 8):
            d = TODAY + timedelta(days=k)
            high = round(high0 + rng.uniform(-spread, spread), 1)
            wet = rng.random() < rain
            weather[f"{city}|{iso(d)}"] = {
                "city": city,
                "date": iso(d),
                "high_c": high,
                "low_c": round(high - rng.uniform(4, 9), 1),
                "condition": rng.choice(["light rain", "rain"])
                if wet
                else rng.choice(CONDITIONS[:3] + ["windy"]),
                "precipitation_mm": round(rng.uniform(0.5, 15), 1) if wet else 0.0,
                "wind_kph": rng.randint(3, 45),
                "humidity": rng.randint(30, 95),
            }
    w["weather"] = weather

    channels = {
        "ch-general": ["general", "Company-wide announcements", staff_ids],
        "ch-support": ["support", "Support team coordination", by_team["support"] + by_team["engineering"]],
        "ch-sales": ["sales", "Deals and pipeline", by_team["sales"] + by_team["finance"]],
        "ch-incidents": [
            "incidents",
            "Production incidents",
            by_team["engineering"] + by_team["support"][:2],
        ],
    }
    w["channels"] = {
        k: {"id": k, "name": n, "topic": topic, "member_ids": sorted(m)}
        for k, (n, topic, m) in channels.items()
    }
    messages: dict[str, dict] = {}
    lines = ["Morning all!", "Ticket backlog is growing, can someone help?", "Deal moved to negotiation.",
             "Deploy finished.", "Lunch at 12?", "Customer call went well.", "Export bug reproduced."]  # fmt: skip
    for i in range(40):
        ch = rng.choice(list(channels))
        msg_id = f"msg-{i + 1:03d}"
        messages[msg_id] = {
            "id": msg_id,
            "channel_id": ch,
            "author_id": rng.choice(channels[ch][2]),
            "text": rng.choice(lines),
            "ts": iso(NOW - timedelta(minutes=rng.randint(5, 60 * 24 * 10))),
            "reactions": {},
        }
    w["messages"] = messages
    w["calc_memory"] = {}
    # The per-domain builders, each on its own stream: the core world above never changes when one is added.
    for build in DOMAIN_BUILDERS:
        build(w, random.Random(f"{seed}:{build.__name__}"))
    return w


def world_hash(state: World) -> str:
    """A stable hash of a world state (sorted-key JSON, sha256)."""
    return hashlib.sha256(json.dumps(state, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def diff_states(before: World, after: World) -> dict[str, dict[str, Any]]:
    """``{"collection/key": {"before": rec | None, "after": rec | None}}`` for every record that differs."""
    out: dict[str, dict[str, Any]] = {}
    for coll in sorted(set(before) | set(after)):
        b, a = before.get(coll, {}), after.get(coll, {})
        if b is a:
            continue
        for key in sorted(set(b) | set(a)):
            rb, ra = b.get(key), a.get(key)
            if rb is not ra and rb != ra:
                out[f"{coll}/{key}"] = {"before": rb, "after": ra}
    return out
