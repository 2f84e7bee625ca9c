"""Retail chain world: the company's physical stores, stock of catalogue hardware per store,
transfers of stock between stores, and recent store sales.

Stores stand in the world's cities and are managed by ``staff`` members; stock and sales name
``products`` (hardware only: software and services are not shelved).
"""

from __future__ import annotations

from datetime import timedelta
from random import Random

from toolkit.envs.clock import NOW, TODAY, World, iso


def add_retail_chain(w: World, rng: Random) -> None:
    cities = sorted({c["city"] for c in w["companies"].values()} | {s["city"] for s in w["staff"].values()})
    staff = sorted(w["staff"])
    stores = {}
    for i, city in enumerate(rng.sample(cities, min(8, len(cities)))):
        sid = f"rs-{i + 1:03d}"
        stores[sid] = {
            "id": sid,
            "name": f"Northwind {city}" + (" Central" if i % 3 == 0 else ""),
            "city": city,
            "manager_id": rng.choice(staff),
            "opened": iso(TODAY - timedelta(days=rng.randint(200, 3000))),
            "format": rng.choice(["flagship", "standard", "outlet"]),
        }
    w["retail_stores"] = stores
    hardware = sorted(p for p, rec in w["products"].items() if rec["category"] == "hardware")
    stock = {}
    for sid in stores:
        for pid in hardware:
            if rng.random() < 0.8:
                stock[f"{sid}|{pid}"] = {
                    "store_id": sid,
                    "product_id": pid,
                    "quantity": rng.randint(0, 40),
                    "reorder_level": rng.choice([5, 8, 10]),
                }
    w["retail_stock"] = stock
    transfers = {}
    for i in range(18):
        tid = f"rt-{i + 1:03d}"
        src, dst = rng.sample(sorted(stores), 2)
        status = rng.choice(["requested", "in_transit", "received", "received", "cancelled"])
        transfers[tid] = {
            "id": tid,
            "from_store_id": src,
            "to_store_id": dst,
            "product_id": rng.choice(hardware),
            "quantity": rng.randint(1, 10),
            "status": status,
            "created": iso(TODAY - timedelta(days=rng.randint(0, 45))),
            "note": "",
        }
    w["retail_transfers"] = transfers
    sales = {}
    keys = sorted(stock)
    for i in range(80):
        sid = f"sale-{i + 1:04d}"
        s = stock[rng.choice(keys)]
        qty = rng.randint(1, 3)
        price = w["products"][s["product_id"]]["price"]
        sales[sid] = {
            "id": sid,
            "store_id": s["store_id"],
            "product_id": s["product_id"],
            "quantity": qty,
            "amount": round(qty * price, 2),
            "date": iso((NOW - timedelta(hours=rng.randint(1, 24 * 30))).date()),
        }
    w["retail_sales"] = sales
