"""Travel booking world: flights between the world's cities, hotels, staff business trips and the
flight and hotel bookings made for them, and each traveller's loyalty points.

Travellers are ``staff`` members; a trip goes from the traveller's city to a destination city (often
a customer company's), and its bookings reference flights and hotels of this world.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from random import Random

from toolkit.envs.clock import TODAY, World, iso

AIRLINES = {"NW": "Northwind Air", "SK": "SkyLink", "BL": "BlueJet"}
HOTEL_WORDS = ["Grand", "Central", "Harbor", "Park", "City", "Plaza"]


def add_travel_booking(w: World, rng: Random) -> None:
    cities = sorted({c["city"] for c in w["companies"].values()} | {s["city"] for s in w["staff"].values()})
    flights = {}
    for i in range(60):
        origin, dest = rng.sample(cities, 2)
        day = TODAY + timedelta(days=rng.randint(-5, 25))
        dep = datetime(
            day.year, day.month, day.day, rng.choice([6, 8, 10, 13, 16, 19]), rng.choice([0, 15, 30, 45])
        )
        minutes = rng.randint(70, 720)
        code = rng.choice(sorted(AIRLINES))
        fid = f"fl-{i + 1:03d}"
        flights[fid] = {
            "id": fid,
            "flight_number": f"{code}{100 + i * 7}",
            "airline": AIRLINES[code],
            "origin": origin,
            "destination": dest,
            "depart": iso(dep),
            "arrive": iso(dep + timedelta(minutes=minutes)),
            "duration_min": minutes,
            "price": float(rng.randrange(90, 1400, 5)),
            "seats_left": rng.randint(0, 30),
            "cabin": rng.choice(["economy", "economy", "premium", "business"]),
        }
    w["travel_flights"] = flights
    hotels = {}
    for i in range(20):
        hid = f"ht-{i + 1:03d}"
        city = cities[i % len(cities)]
        hotels[hid] = {
            "id": hid,
            "name": f"{rng.choice(HOTEL_WORDS)} Hotel {city}" + ("" if i < len(cities) else " II"),
            "city": city,
            "stars": rng.choice([2, 3, 3, 4, 4, 5]),
            "nightly_rate": float(rng.randrange(60, 420, 5)),
            "rooms_left": rng.randint(0, 15),
        }
    w["travel_hotels"] = hotels
    staff = sorted(w["staff"])
    trips, bookings = {}, {}
    for i in range(14):
        tid = f"trip-{i + 1:03d}"
        traveler = rng.choice(staff)
        home = w["staff"][traveler]["city"]
        dest = rng.choice([c for c in cities if c != home])
        start = TODAY + timedelta(days=rng.randint(-20, 25))
        end = start + timedelta(days=rng.randint(1, 5))
        status = "completed" if end < TODAY else rng.choice(["planned", "approved", "approved", "cancelled"])
        trips[tid] = {
            "id": tid,
            "traveler_id": traveler,
            "origin": home,
            "destination": dest,
            "start_date": iso(start),
            "end_date": iso(end),
            "purpose": rng.choice(["customer visit", "conference", "training", "team offsite"]),
            "budget": float(rng.randrange(800, 4000, 100)),
            "status": status,
            "notes": "",
        }
        if status == "cancelled":
            continue
        out = [f for f in flights.values() if f["origin"] == home and f["destination"] == dest]
        picks = [("flight", f) for f in rng.sample(out, min(1, len(out)))]
        stays = [h for h in hotels.values() if h["city"] == dest]
        if stays:
            picks.append(("hotel", rng.choice(stays)))
        for kind, rec in picks:
            bid = f"bk-{len(bookings) + 1:03d}"
            nights = (end - start).days
            price = rec["price"] if kind == "flight" else round(rec["nightly_rate"] * nights, 2)
            bookings[bid] = {
                "id": bid,
                "trip_id": tid,
                "traveler_id": traveler,
                "kind": kind,
                "item_id": rec["id"],
                "check_in": iso(start) if kind == "hotel" else None,
                "nights": nights if kind == "hotel" else None,
                "price": price,
                "status": "confirmed",
                "booked": iso(start - timedelta(days=rng.randint(3, 30))),
            }
    w["travel_trips"], w["travel_bookings"] = trips, bookings
    w["travel_loyalty"] = {
        s: {"traveler_id": s, "program": "Northwind Miles", "points": rng.randrange(0, 90000, 50),
            "tier": rng.choice(["basic", "silver", "gold"]), "seat_preference": rng.choice(["aisle", "window"])}
        for s in staff
    }  # fmt: skip
