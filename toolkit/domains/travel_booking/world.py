"""Travel booking world: flights between the world's cities, hotels, staff business trips and the
flight and hotel bookings made for them, and each traveller's loyalty points.

Travellers are ``staff`` members; a trip goes from the traveller's city to another city, the
schedule has flights on every trip's route around its dates, and a trip's bookings reference
flights and hotels of this world.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from random import Random
from typing import Any

from toolkit.envs.clock import TODAY, World, iso

AIRLINES = {"NW": "Northwind Air", "SK": "SkyLink", "BL": "BlueJet"}
HOTEL_WORDS = ["Grand", "Central", "Harbor", "Park", "City", "Plaza"]


def add_travel_booking(w: World, rng: Random) -> None:
    cities = sorted({c["city"] for c in w["companies"].values()} | {s["city"] for s in w["staff"].values()})
    staff = sorted(w["staff"])
    trips = {}
    for i in range(20):
        tid = f"trip-{i + 1:03d}"
        traveler = rng.choice(staff)
        home = w["staff"][traveler]["city"]
        start = TODAY + timedelta(days=rng.randint(-12, 30))
        end = start + timedelta(days=rng.randint(1, 5))
        status = "completed" if end < TODAY else rng.choice(["planned", "approved", "approved", "cancelled"])
        trips[tid] = {
            "id": tid,
            "traveler_id": traveler,
            "origin": home,
            "destination": rng.choice([c for c in cities if c != home]),
            "start_date": iso(start),
            "end_date": iso(end),
            "purpose": rng.choice(["customer visit", "conference", "training", "team offsite"]),
            "budget": float(rng.randrange(800, 4000, 100)),
            "status": status,
            "notes": "",
        }
    w["travel_trips"] = trips

    flights: dict[str, dict[str, Any]] = {}

    def add_flight(origin: str, dest: str, day: date) -> None:
        dep = datetime(
            day.year, day.month, day.day, rng.choice([6, 8, 10, 13, 16, 19]), rng.choice([0, 15, 30, 45])
        )
        minutes = rng.randint(70, 720)
        code = rng.choice(sorted(AIRLINES))
        fid = f"fl-{len(flights) + 1:03d}"
        flights[fid] = {
            "id": fid,
            "flight_number": f"{code}{100 + len(flights) * 7}",
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

    for t in trips.values():  # every trip's route is flown on its first and last day
        for _ in range(rng.randint(1, 3)):
            add_flight(t["origin"], t["destination"], date.fromisoformat(t["start_date"]))
        add_flight(t["destination"], t["origin"], date.fromisoformat(t["end_date"]))
    for _ in range(30):
        origin, dest = rng.sample(cities, 2)
        add_flight(origin, dest, TODAY + timedelta(days=rng.randint(-5, 25)))
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

    bookings = {}
    for t in trips.values():
        if t["status"] == "cancelled" or rng.random() < 0.25:  # some trips are not booked yet
            continue
        start, end = date.fromisoformat(t["start_date"]), date.fromisoformat(t["end_date"])
        out = [f for f in flights.values() if (f["origin"], f["destination"], f["depart"][:10]) ==
               (t["origin"], t["destination"], t["start_date"])]  # fmt: skip
        picks = [("flight", rng.choice(out))]
        stays = [h for h in hotels.values() if h["city"] == t["destination"]]
        if stays:
            picks.append(("hotel", rng.choice(stays)))
        for kind, rec in picks:
            bid = f"bk-{len(bookings) + 1:03d}"
            nights = (end - start).days
            price = rec["price"] if kind == "flight" else round(rec["nightly_rate"] * nights, 2)
            bookings[bid] = {
                "id": bid,
                "trip_id": t["id"],
                "traveler_id": t["traveler_id"],
                "kind": kind,
                "item_id": rec["id"],
                "check_in": t["start_date"] if kind == "hotel" else None,
                "nights": nights if kind == "hotel" else None,
                "price": price,
                "status": "confirmed",
                "booked": iso(start - timedelta(days=rng.randint(3, 30))),
            }
    w["travel_bookings"] = bookings
    w["travel_loyalty"] = {
        s: {"traveler_id": s, "program": "Northwind Miles", "points": rng.randrange(0, 90000, 50),
            "tier": rng.choice(["basic", "silver", "gold"]), "seat_preference": rng.choice(["aisle", "window"])}
        for s in staff
    }  # fmt: skip
