"""Maps world: places with coordinates in the world's cities (each company's headquarters among them),
traffic incidents, and places staff members saved.

A company HQ place carries its ``company_id``; saved places belong to ``staff`` members.
Coordinates are offsets around real city centres, so distances between places are plausible.
"""

from __future__ import annotations

from datetime import timedelta
from random import Random

from toolkit.envs.clock import NOW, World, iso

CITY_CENTERS = {
    "Berlin": (52.52, 13.405), "Lisbon": (38.722, -9.139), "Toronto": (43.653, -79.383), "Austin": (30.267, -97.743),
    "Nairobi": (-1.286, 36.817), "Osaka": (34.694, 135.502), "Sydney": (-33.869, 151.209), "Madrid": (40.417, -3.704),
    "Chicago": (41.878, -87.630), "Oslo": (59.914, 10.752),
}  # fmt: skip
STREETS = ["Main St", "Harbor Rd", "Park Ave", "Station Sq", "Market St", "River Ln", "Hill Rd", "Elm St"]
KINDS = [("cafe", ["Bean There", "Daily Grind", "Cup & Co"]), ("restaurant", ["Corner Kitchen", "Blue Plate"]),
         ("hotel", ["Stay Inn", "Harbor Lodge"]), ("parking", ["City Garage"]), ("fuel", ["QuickFuel"]),
         ("pharmacy", ["Care Pharmacy"]), ("airport", ["International Airport"])]  # fmt: skip


def add_maps(w: World, rng: Random) -> None:
    cities = sorted({r["city"] for r in w["weather"].values()} & set(CITY_CENTERS))
    places = {}

    def add(name: str, category: str, city: str, **extra: object) -> None:
        pid = f"pl-{len(places) + 1:03d}"
        lat0, lon0 = CITY_CENTERS[city]
        spread = 0.15 if category == "airport" else 0.04
        opens = 0 if category in ("airport", "fuel", "parking") else rng.choice([6, 7, 8, 9])
        places[pid] = {
            "id": pid,
            "name": name,
            "category": category,
            "city": city,
            "address": f"{rng.randint(1, 240)} {rng.choice(STREETS)}, {city}",
            "lat": round(lat0 + rng.uniform(-spread, spread), 5),
            "lon": round(lon0 + rng.uniform(-spread, spread), 5),
            "rating": round(rng.uniform(3.0, 5.0), 1),
            "opens": f"{opens:02d}:00",
            "closes": "24:00" if opens == 0 else f"{rng.choice([17, 18, 20, 22]):02d}:00",
            "company_id": None,
            **extra,
        }

    for co in sorted(w["companies"].values(), key=lambda c: c["id"]):
        add(f"{co['name']} HQ", "office", co["city"], company_id=co["id"])
    for city in cities:
        for category, names in KINDS:
            for name in rng.sample(names, rng.randint(1, len(names))):
                add(f"{city} {name}" if category == "airport" else name, category, city)
    w["maps_places"] = places
    by_city: dict[str, list[str]] = {}
    for pid, p in places.items():
        by_city.setdefault(p["city"], []).append(pid)
    incidents = {}
    for i in range(16):
        iid = f"inc-{i + 1:03d}"
        city = rng.choice(cities)
        incidents[iid] = {
            "id": iid,
            "city": city,
            "near_place_id": rng.choice(by_city[city]),
            "kind": rng.choice(["accident", "roadwork", "congestion", "closure"]),
            "delay_min": rng.choice([5, 10, 15, 25, 40]),
            "reported": iso(NOW - timedelta(minutes=rng.randint(10, 60 * 48))),
            "active": rng.random() < 0.6,
        }
    w["maps_incidents"] = incidents
    saved = {}
    for sid in sorted(w["staff"]):
        for pid in rng.sample(by_city.get(w["staff"][sid]["city"], []) or list(places), rng.randint(0, 3)):
            key = f"{sid}|{pid}"
            saved[key] = {
                "staff_id": sid,
                "place_id": pid,
                "label": rng.choice(["", "favourite", "meetings"]),
            }
    w["maps_saved"] = saved
