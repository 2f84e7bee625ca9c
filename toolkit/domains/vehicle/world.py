"""Vehicle fleet world: company cars in the staff's cities, assigned to staff, with trips, service,
fuel logs and reservations."""

from __future__ import annotations

from datetime import timedelta
from random import Random

from toolkit.envs.clock import NOW, TODAY, World, iso

MODELS = [("Toyota", "Corolla", "hybrid"), ("Volkswagen", "ID.4", "electric"), ("Ford", "Transit", "diesel"),
          ("Skoda", "Octavia", "petrol"), ("Tesla", "Model 3", "electric"), ("Renault", "Kangoo", "diesel"),
          ("Kia", "Niro", "hybrid")]  # fmt: skip
SERVICE_KINDS = ["oil_change", "tire_change", "inspection", "brakes", "battery_check"]
PURPOSES = ["customer visit", "site inspection", "airport pickup", "trade fair", "equipment delivery"]


def add_vehicle(w: World, rng: Random) -> None:
    staff = w["staff"]
    cities = sorted({s["city"] for s in staff.values()})
    fleet: dict[str, dict] = {}
    for i in range(18):
        vid = f"veh-{i + 1:03d}"
        make, model, fuel = rng.choice(MODELS)
        city = rng.choice(cities)
        locals_ = sorted(s for s in staff if staff[s]["city"] == city and staff[s]["active"])
        assigned = rng.choice(locals_) if locals_ and rng.random() < 0.6 else None
        status = "maintenance" if rng.random() < 0.12 else ("in_use" if assigned else "available")
        fleet[vid] = {
            "id": vid,
            "plate": f"{city[:2].upper()}-{rng.randrange(100, 999)}-{rng.choice('ABCDEFGHJK')}{rng.choice('LMNPRSTVWX')}",
            "make": make,
            "model": model,
            "year": rng.randint(2017, 2025),
            "fuel_type": fuel,
            "city": city,
            "assigned_to": assigned,
            "status": status,
            "odometer_km": rng.randint(4_000, 160_000),
            "fuel_pct": rng.randint(5, 100),
            "locked": rng.random() > 0.1,
            "tire_pressure_bar": [round(rng.uniform(1.9, 2.6), 1) for _ in range(4)],
            "location": f"{city} office car park",
        }
    w["vehicle_fleet"] = fleet
    vids = list(fleet)
    active = sorted(s for s in staff if staff[s]["active"])

    trips: dict[str, dict] = {}
    for i in range(55):
        v = fleet[rng.choice(vids)]
        tid = f"trip-{i + 1:03d}"
        trips[tid] = {
            "id": tid,
            "vehicle_id": v["id"],
            "driver_id": v["assigned_to"] or rng.choice(active),
            "date": iso(TODAY - timedelta(days=rng.randint(1, 60))),
            "km": float(rng.randint(8, 420)),
            "purpose": rng.choice(PURPOSES),
            "customer_id": rng.choice(list(w["customers"])) if rng.random() < 0.4 else None,
        }
    w["vehicle_trips"] = trips

    services: dict[str, dict] = {}
    for i in range(22):
        done = rng.random() < 0.6
        day = TODAY + timedelta(days=-rng.randint(5, 200) if done else rng.randint(2, 45))
        sid = f"svc-{i + 1:03d}"
        services[sid] = {
            "id": sid,
            "vehicle_id": rng.choice(vids),
            "kind": rng.choice(SERVICE_KINDS),
            "date": iso(day),
            "status": "done" if done else "scheduled",
            "cost": round(rng.uniform(60, 900), 2) if done else None,
            "notes": "",
        }
    w["vehicle_services"] = services

    fuel: dict[str, dict] = {}
    for i in range(34):
        v = fleet[rng.choice(vids)]
        fid = f"fuel-{i + 1:03d}"
        electric = v["fuel_type"] == "electric"
        amount = round(rng.uniform(15, 70), 1)
        fuel[fid] = {
            "id": fid,
            "vehicle_id": v["id"],
            "date": iso(TODAY - timedelta(days=rng.randint(0, 60))),
            "amount": amount,
            "unit": "kWh" if electric else "l",
            "cost": round(amount * (0.32 if electric else 1.75), 2),
            "by": v["assigned_to"] or rng.choice(active),
        }
    w["vehicle_fuel_logs"] = fuel

    reservations: dict[str, dict] = {}
    for i in range(12):
        start = TODAY + timedelta(days=rng.randint(1, 30))
        rid = f"res-{i + 1:03d}"
        v = rng.choice(vids)
        end = start + timedelta(days=rng.randint(0, 3))
        clash = any(r["vehicle_id"] == v and r["start_date"] <= iso(end) and iso(start) <= r["end_date"]
                    for r in reservations.values())  # fmt: skip
        if clash:
            continue
        reservations[rid] = {
            "id": rid,
            "vehicle_id": v,
            "staff_id": rng.choice(active),
            "start_date": iso(start),
            "end_date": iso(end),
            "purpose": rng.choice(PURPOSES),
            "created": iso(NOW - timedelta(days=rng.randint(1, 10))),
        }
    w["vehicle_reservations"] = reservations
