"""Marketplace world: third-party sellers, their listings, buyers' offers and seller reviews.

The shop sells the company's own catalogue; the marketplace is where outside sellers list goods.
Listings may name a catalogue product (``product_id`` is a ``products`` key, or None for other goods),
offers and reviews come from CRM ``customers``, and sellers are based in the world's cities.
"""

from __future__ import annotations

from datetime import timedelta
from random import Random

from toolkit.envs.clock import TODAY, World, iso

SELLERS = [
    "Gearhub Resale", "Nordic Parts", "Bright Deals", "Second Circuit", "Maple Traders", "Sakura Supply",
    "Harbor Goods", "Savanna Tech", "Iberia Outlet", "Lakeside Surplus", "Fjordline Market", "Kestrel Store",
]  # fmt: skip
OTHER_GOODS = [
    ("Office Chair", 89.0), ("Standing Desk", 320.0), ("Monitor 27in", 210.0), ("Mechanical Keyboard", 75.0),
    ("Laser Printer", 180.0), ("Network Switch", 140.0), ("Webcam HD", 45.0), ("Noise-cancelling Headset", 120.0),
]  # fmt: skip
CONDITIONS = ["new", "like_new", "used", "refurbished"]


def add_marketplace(w: World, rng: Random) -> None:
    cities = sorted({c["city"] for c in w["companies"].values()} | {s["city"] for s in w["staff"].values()})
    sellers = {}
    for i, name in enumerate(SELLERS):
        sid = f"sel-{i + 1:03d}"
        sellers[sid] = {
            "id": sid,
            "name": name,
            "city": rng.choice(cities),
            "joined": iso(TODAY - timedelta(days=rng.randint(60, 1500))),
            "verified": rng.random() < 0.6,
        }
    w["market_sellers"] = sellers
    hardware = [p for p in w["products"].values() if p["category"] == "hardware"]
    listings = {}
    for i in range(45):
        lid = f"lst-{i + 1:03d}"
        if rng.random() < 0.5:
            p = rng.choice(hardware)
            title, base, product_id = p["name"], p["price"], p["id"]
        else:
            (title, base), product_id = rng.choice(OTHER_GOODS), None
        cond = rng.choice(CONDITIONS)
        factor = {"new": 1.0, "like_new": 0.85, "used": 0.6, "refurbished": 0.75}[cond]
        listings[lid] = {
            "id": lid,
            "seller_id": rng.choice(list(sellers)),
            "title": title,
            "product_id": product_id,
            "condition": cond,
            "price": round(base * factor * rng.uniform(0.9, 1.1), 2),
            "quantity": rng.randint(0, 12),
            "status": rng.choices(["active", "paused", "sold_out"], weights=[7, 2, 1])[0],
            "created": iso(TODAY - timedelta(days=rng.randint(0, 120))),
        }
    w["market_listings"] = listings
    customers = sorted(w["customers"])
    offers = {}
    for i in range(36):
        oid = f"ofr-{i + 1:03d}"
        lst = listings[rng.choice(list(listings))]
        offers[oid] = {
            "id": oid,
            "listing_id": lst["id"],
            "buyer_id": rng.choice(customers),
            "amount": round(lst["price"] * rng.uniform(0.6, 0.98), 2),
            "quantity": 1,
            "status": rng.choices(["pending", "accepted", "rejected", "withdrawn"], weights=[5, 2, 2, 1])[0],
            "created": iso(TODAY - timedelta(days=rng.randint(0, 30))),
            "message": rng.choice(["", "Can you ship this week?", "Would you take this?", "Cash ready."]),
        }
    w["market_offers"] = offers
    reviews = {}
    for i in range(40):
        rid = f"rev-{i + 1:03d}"
        reviews[rid] = {
            "id": rid,
            "seller_id": rng.choice(list(sellers)),
            "buyer_id": rng.choice(customers),
            "rating": rng.choices([1, 2, 3, 4, 5], weights=[1, 1, 2, 4, 4])[0],
            "comment": rng.choice(
                ["Fast shipping.", "As described.", "Item was scratched.", "Great seller!"]
            ),
            "date": iso(TODAY - timedelta(days=rng.randint(0, 200))),
        }
    w["market_reviews"] = reviews
