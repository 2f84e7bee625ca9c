"""Banking world: accounts of CRM customers, their transactions, saved payees and cards.

Accounts belong to ``customers``; payees are the world's ``companies`` (and a few utilities), so a
transfer to "Granite Bank" names the same company the CRM knows. Balances are the current ones and
every transaction of the last 60 days is kept, so a statement can be rebuilt from them.
"""

from __future__ import annotations

from datetime import timedelta
from random import Random

from toolkit.envs.clock import TODAY, World, iso

CATEGORIES = ["groceries", "travel", "utilities", "dining", "shopping", "salary", "rent", "transfer", "fees"]
MERCHANTS = {
    "groceries": ["FreshMart", "Corner Grocer", "Daily Greens"],
    "travel": ["SkyJet Airlines", "Metro Transit", "CityCab"],
    "utilities": ["PowerGrid Co", "AquaWorks", "FiberNet"],
    "dining": ["Bistro Nine", "Noodle House", "Cafe Lumen"],
    "shopping": ["Gadget Hub", "BookNook", "Style Street"],
    "rent": ["Harbor Properties"],
}
UTILITIES = ["PowerGrid Co", "AquaWorks", "FiberNet", "Harbor Properties"]


def add_banking(w: World, rng: Random) -> None:
    customers = sorted(w["customers"])
    holders = customers[:14]
    accounts: dict[str, dict] = {}
    for cu in holders:
        kinds = ["checking"] + (["savings"] if rng.random() < 0.7 else [])
        for kind in kinds:
            aid = f"ba-{1001 + len(accounts)}"
            accounts[aid] = {
                "id": aid,
                "customer_id": cu,
                "type": kind,
                "number": f"NW{rng.randrange(10**9, 10**10)}",
                "balance": round(rng.uniform(200, 9000 if kind == "checking" else 40000), 2),
                "currency": "USD",
                "status": rng.choices(["open", "frozen"], weights=[12, 1])[0],
                "overdraft_limit": 500.0 if kind == "checking" else 0.0,
                "opened": iso(TODAY - timedelta(days=rng.randint(90, 2000))),
            }
    w["bank_accounts"] = accounts

    txs: dict[str, dict] = {}
    checking = [a for a in accounts.values() if a["type"] == "checking"]
    for a in accounts.values():
        n = rng.randint(3, 9) if a["type"] == "checking" else rng.randint(1, 3)
        for _ in range(n):
            day = TODAY - timedelta(days=rng.randint(0, 59))
            if a["type"] == "savings":
                kind, cat, amount, desc = (
                    "deposit",
                    "transfer",
                    round(rng.uniform(50, 800), 2),
                    "Monthly saving",
                )
            elif rng.random() < 0.15:
                kind, cat, amount, desc = "deposit", "salary", round(rng.uniform(2500, 6000), 2), "Payroll"
            else:
                cat = rng.choice(sorted(MERCHANTS))
                desc = rng.choice(MERCHANTS[cat])
                kind = "card" if cat != "rent" else "withdrawal"
                amount = -round(rng.uniform(5, 1500 if cat == "rent" else 300), 2)
            tid = f"btx-{len(txs) + 1:04d}"
            txs[tid] = {"id": tid, "account_id": a["id"], "date": iso(day), "amount": amount, "kind": kind,
                        "category": cat, "description": desc, "counterparty": desc}  # fmt: skip
    # A few transfers between two customers' checking accounts (both legs recorded).
    for _ in range(6):
        src, dst = rng.sample(checking, 2)
        day, amount = iso(TODAY - timedelta(days=rng.randint(0, 59))), round(rng.uniform(20, 400), 2)
        for acct, sign, kind, other in ((src, -1, "transfer_out", dst), (dst, 1, "transfer_in", src)):
            tid = f"btx-{len(txs) + 1:04d}"
            txs[tid] = {"id": tid, "account_id": acct["id"], "date": day, "amount": sign * amount, "kind": kind,
                        "category": "transfer", "description": f"Transfer {'to' if sign < 0 else 'from'} {other['id']}",
                        "counterparty": other["id"]}  # fmt: skip
    w["bank_transactions"] = dict(sorted(txs.items(), key=lambda kv: (kv[1]["date"], kv[0])))

    payees: dict[str, dict] = {}
    names = [c["name"] for c in w["companies"].values()] + UTILITIES
    for cu in holders:
        for name in rng.sample(names, rng.randint(1, 3)):
            pid = f"bpy-{len(payees) + 1:03d}"
            payees[pid] = {"id": pid, "customer_id": cu, "name": name,
                           "account_number": f"EX{rng.randrange(10**7, 10**8)}"}  # fmt: skip
    w["bank_payees"] = payees

    cards: dict[str, dict] = {}
    for a in checking:
        cid = f"card-{len(cards) + 1:03d}"
        cards[cid] = {"id": cid, "account_id": a["id"], "customer_id": a["customer_id"],
                      "last4": f"{rng.randrange(10000):04d}", "network": rng.choice(["visa", "mastercard"]),
                      "status": rng.choices(["active", "blocked"], weights=[8, 1])[0],
                      "daily_limit": float(rng.choice([500, 1000, 2500]))}  # fmt: skip
    w["bank_cards"] = cards
