"""Vehicle fleet templates: telemetry lookups, kilometres in a date window, reservations, and chains
from a vehicle to its driver's trips or from a free car to a booking."""

from __future__ import annotations

from datetime import timedelta

from toolkit.envs.clock import TODAY
from toolkit.synth.base import Answer, Draft, Step
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import ALL, field_of, fmt_num, items, total
from toolkit.synth.templates.crm import next_key

SERVER = "vehicle"
SERVICE_WORDS = {"oil_change": "an oil change", "tire_change": "a tire change", "inspection": "an inspection",
                 "brakes": "a brake service", "battery_check": "a battery check"}  # fmt: skip
TELEMETRY = {
    "fuel_pct": ("fuel or charge level (%)", "number"),
    "odometer_km": ("odometer reading (km)", "number"),
}


def free_between(ctx: Ctx, vehicle_id: str, start: str, end: str) -> bool:
    return not ctx.records(
        "vehicle_reservations",
        lambda r: r["vehicle_id"] == vehicle_id and r["start_date"] <= end and start <= r["end_date"],
    )


def future_range(ctx: Ctx) -> tuple[str, str]:
    start = TODAY + timedelta(days=ctx.rng.randint(3, 40))
    return start.isoformat(), (start + timedelta(days=ctx.rng.randint(0, 2))).isoformat()


@template("veh_telemetry", "lookup", [SERVER])
def telemetry(ctx: Ctx) -> Draft:
    ctx.need("get_vehicle_telemetry")
    car = ctx.choose(ctx.records("vehicle_fleet"))
    fld = ctx.choose(sorted(TELEMETRY))
    words, norm = TELEMETRY[fld]
    prompt = ctx.say(
        ["What is the {w} of fleet vehicle {id}?", "Check the telemetry of car {id}: what's its {w}?"],
        ["Read vehicle {id}'s {w} for me."],
        w=words, id=car["id"],
    )  # fmt: skip
    return Draft(
        "", "", prompt, [SERVER],
        [Step("get_vehicle_telemetry", {"vehicle_id": car["id"]}, alternatives=["get_vehicle"],
              purpose=f"read vehicle {car['id']}'s telemetry")],
        answers=[Answer(fld, car[fld], norm, text=f"the {words} of {car['id']} is {car[fld]}")],
        reference_answer=f"Vehicle {car['id']} ({car['plate']}) reports a {words} of {car[fld]}.",
        recompute=lambda r: {fld: field_of(r[0], fld)},
        keep=[car["id"]],
    )  # fmt: skip


@template("veh_km_window", "aggregate", [SERVER])
def km_window(ctx: Ctx) -> Draft:
    ctx.need("list_vehicle_trips")
    since = (TODAY - timedelta(days=ctx.rng.randint(20, 60))).isoformat()
    until = (TODAY - timedelta(days=ctx.rng.randint(0, 10))).isoformat()
    car = ctx.choose(ctx.records("vehicle_fleet"))
    trips = ctx.records(
        "vehicle_trips", lambda t: t["vehicle_id"] == car["id"] and since <= t["date"] <= until
    )
    if not trips:
        raise Skip("no trips in the window")
    km = round(sum(t["km"] for t in trips), 1)
    prompt = ctx.say(
        [
            "How many kilometres did vehicle {id} cover in logged trips between {a} and {b}?",
            "Add up the trip distances of car {id} from {a} to {b}.",
        ],
        ["What distance did fleet car {id} log from {a} through {b}?"],
        id=car["id"], a=since, b=until,
    )  # fmt: skip
    return Draft(
        "", "", prompt, [SERVER],
        [Step("list_vehicle_trips", {"vehicle_id": car["id"], "since": since, "until": until, "limit": ALL},
              alternatives=["vehicle_mileage_report"], checked_args=["since", "until"],
              normalize={"since": "date", "until": "date"}, purpose="list the vehicle's trips in the window")],
        answers=[Answer("km", km, "number", 0.1, text=f"vehicle {car['id']} drove {fmt_num(km)} km")],
        reference_answer=f"Vehicle {car['id']} logged {len(trips)} trips between {since} and {until}, "
        f"{fmt_num(km)} km in total.",
        recompute=lambda r: {"km": round(sum(t["km"] for t in items(r[0])), 1)},
        keep=[car["id"], since, until],
    )  # fmt: skip


@template("veh_reserve", "write", [SERVER])
def reserve(ctx: Ctx) -> Draft:
    ctx.need("reserve_vehicle")
    car = ctx.choose(ctx.records("vehicle_fleet", lambda v: v["status"] != "maintenance"))
    start, end = future_range(ctx)
    if not free_between(ctx, car["id"], start, end):
        raise Skip("already reserved")
    person = ctx.choose(ctx.records("staff", lambda s: s["active"]))
    purpose = ctx.choose(["customer visit", "trade fair", "site inspection"])
    new_id = next_key(ctx, "vehicle_reservations", "res-")
    prompt = ctx.say(
        [
            "Reserve vehicle {id} for {name} ({sid}) from {a} to {b} for a {p}.",
            "Book fleet car {id} for staff member {sid} ({name}), {a} through {b}, purpose: {p}.",
        ],
        ["{name} ({sid}) needs car {id} from {a} until {b} for a {p}; please reserve it."],
        id=car["id"], name=person["name"], sid=person["id"], a=start, b=end, p=purpose,
    )  # fmt: skip
    check = {"type": "state", "collection": "vehicle_reservations", "key": new_id, "field": "vehicle_id",
             "value": car["id"], "op": "create"}  # fmt: skip
    return Draft(
        "", "", prompt, [SERVER],
        [Step("reserve_vehicle", {"vehicle_id": car["id"], "staff_id": person["id"], "start_date": start,
                                  "end_date": end, "purpose": purpose},
              checked_args=["vehicle_id", "staff_id", "start_date", "end_date"],
              normalize={"start_date": "date", "end_date": "date"}, purpose="book the vehicle")],
        state_changes=[(f"A reservation {new_id} of {car['id']} for {person['id']} must exist.", check)],
        reference_answer=f"Reserved {car['id']} for {person['name']} from {start} to {end} ({new_id}).",
        keep=[car["id"], person["id"], start, end],
        read_only=False,
    )  # fmt: skip


@template("veh_driver_trips", "chain", [SERVER, "directory"], calls=(3, 3))
def driver_trips(ctx: Ctx) -> Draft:
    ctx.need("get_vehicle", "list_vehicle_trips", "get_staff")
    car = ctx.choose(ctx.records("vehicle_fleet", lambda v: v["assigned_to"] is not None))
    person = ctx.world["staff"][car["assigned_to"]]
    since = (TODAY - timedelta(days=ctx.rng.randint(15, 60))).isoformat()
    n = len(ctx.records("vehicle_trips", lambda t: t["driver_id"] == person["id"] and t["date"] >= since))
    prompt = ctx.say(
        [
            "Who is fleet vehicle {id} assigned to, which team are they in, and how many trips has that person "
            "driven since {a} (any vehicle)?",
            "Find the driver of car {id}: give their name and team, and count the trips they logged since {a}.",
        ],
        ["Car {id}'s assignee: name, team, and number of trips driven from {a} on."],
        id=car["id"], a=since,
    )  # fmt: skip

    def recompute(r):
        who = field_of(r[0], "assigned_to")
        if who != field_of(r[2], "id"):
            raise ValueError("wrong person")
        return {"driver": field_of(r[2], "name"), "team": field_of(r[2], "team"), "trips": total(r[1])}

    return Draft(
        "", "", prompt, [SERVER, "directory"],
        [
            Step("get_vehicle", {"vehicle_id": car["id"]}, purpose=f"read vehicle {car['id']}", produces="assignee id"),
            Step("list_vehicle_trips", {"driver_id": person["id"], "since": since, "limit": ALL}, depends_on=[0],
                 checked_args=["driver_id", "since"], normalize={"since": "date"}, purpose="count the driver's trips"),
            Step("get_staff", {"staff_id": person["id"]}, depends_on=[0], purpose="read the driver's team"),
        ],
        answers=[
            Answer("driver", person["name"], "name", text=f"{car['id']} is assigned to {person['name']}"),
            Answer("team", person["team"], "text", text=f"{person['name']} is in the {person['team']} team"),
            Answer("trips", n, "number", text=f"{person['name']} drove {n} trips since {since}"),
        ],
        reference_answer=f"{car['id']} is assigned to {person['name']} ({person['id']}, {person['team']} team), "
        f"who has driven {n} trips since {since}.",
        recompute=recompute,
        keep=[car["id"], since],
    )  # fmt: skip


@template("veh_find_and_reserve", "chain", [SERVER], calls=(2, 2))
def find_and_reserve(ctx: Ctx) -> Draft:
    ctx.need("find_available_vehicles", "reserve_vehicle")
    city = ctx.choose(sorted({v["city"] for v in ctx.records("vehicle_fleet")}))
    start, end = future_range(ctx)
    fuel = ctx.choose(["electric", "hybrid", "diesel", "petrol"])
    free = ctx.records("vehicle_fleet", lambda v: v["city"] == city and v["status"] != "maintenance"
                       and v["fuel_type"] == fuel and free_between(ctx, v["id"], start, end))  # fmt: skip
    if len(free) != 1:
        raise Skip("need exactly one free vehicle")
    car = free[0]
    person = ctx.choose(ctx.records("staff", lambda s: s["active"]))
    new_id = next_key(ctx, "vehicle_reservations", "res-")
    prompt = ctx.say(
        [
            "Find the {f} car available in {c} from {a} to {b} and reserve it for {sid} for a customer visit.",
            "{sid} needs a {f} vehicle in {c}, {a} to {b}, for a customer visit: book the one that's free.",
        ],
        ["Book whichever {f} fleet car in {c} is free {a}-{b} for staff member {sid} (customer visit)."],
        f=fuel, c=city, a=start, b=end, sid=person["id"],
    )  # fmt: skip
    check = {"type": "state", "collection": "vehicle_reservations", "key": new_id, "field": "vehicle_id",
             "value": car["id"], "op": "create"}  # fmt: skip

    def recompute(r):
        found = field_of(r[0], "vehicles")
        if [v["id"] for v in found] != [car["id"]]:
            raise ValueError("not exactly one free car")
        return {}

    return Draft(
        "", "", prompt, [SERVER],
        [
            Step("find_available_vehicles", {"city": city, "start_date": start, "end_date": end, "fuel_type": fuel},
                 normalize={"city": "text", "start_date": "date", "end_date": "date"},
                 purpose="find the free vehicle", produces="vehicle id"),
            Step("reserve_vehicle", {"vehicle_id": car["id"], "staff_id": person["id"], "start_date": start,
                                     "end_date": end, "purpose": "customer visit"}, depends_on=[0],
                 checked_args=["vehicle_id", "staff_id", "start_date", "end_date"],
                 normalize={"start_date": "date", "end_date": "date"}, purpose="reserve it"),
        ],
        state_changes=[(f"A reservation {new_id} of {car['id']} for {person['id']} must exist.", check)],
        reference_answer=f"The free {fuel} car in {city} is {car['id']} ({car['plate']}); reserved it for "
        f"{person['id']} from {start} to {end} ({new_id}).",
        recompute=recompute,
        keep=[city, start, end, person["id"]],
        read_only=False,
    )  # fmt: skip


@template("veh_book_service", "write", [SERVER])
def book_service(ctx: Ctx) -> Draft:
    ctx.need("schedule_vehicle_service")
    car = ctx.choose(ctx.records("vehicle_fleet"))
    day = (TODAY + timedelta(days=ctx.rng.randint(2, 30))).isoformat()
    if ctx.records("vehicle_services", lambda s: s["vehicle_id"] == car["id"] and s["date"] == day):
        raise Skip("already booked that day")
    kind = ctx.choose(sorted(SERVICE_WORDS))
    new_id = next_key(ctx, "vehicle_services", "svc-")
    prompt = ctx.say(
        ["Book {k} for vehicle {id} on {d}.", "Schedule service for car {id}: {k} on {d}."],
        ["Car {id} needs {k}; put it in the workshop schedule for {d}."],
        k=SERVICE_WORDS[kind], id=car["id"], d=day,
    )  # fmt: skip
    check = {"type": "state", "collection": "vehicle_services", "key": new_id, "field": "date", "value": day,
             "op": "create"}  # fmt: skip
    return Draft(
        "", "", prompt, [SERVER],
        [Step("schedule_vehicle_service", {"vehicle_id": car["id"], "kind": kind, "date": day},
              normalize={"date": "date"}, purpose="book the service")],
        state_changes=[(f"A service {new_id} for {car['id']} on {day} must exist.", check)],
        reference_answer=f"Booked {SERVICE_WORDS[kind]} for {car['id']} on {day} ({new_id}).",
        keep=[car["id"], day],
        read_only=False,
    )  # fmt: skip
