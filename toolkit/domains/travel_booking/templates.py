"""Travel booking templates: a flight lookup, the cheapest fare on a route and day, a trip's
remaining budget, cancelling a booking, and booking the cheapest flight for a trip."""

from __future__ import annotations

from toolkit.envs.clock import TODAY
from toolkit.synth.base import Answer, Draft, Step, payload
from toolkit.synth.templates import Ctx, template
from toolkit.synth.templates.common import field_of, fmt_num, items
from toolkit.synth.templates.drafting import changed, draft, next_key, sole_best


def bookable(ctx: Ctx, origin: str, dest: str, day: str) -> list[dict]:
    """Flights on a route and day with a free seat (what search_travel_flights lists)."""
    return ctx.records("travel_flights", lambda f: (f["origin"], f["destination"], f["depart"][:10]) == (origin, dest, day)
                       and f["seats_left"] >= 1)  # fmt: skip


@template("travel_flight_lookup", "lookup", ["travel_booking"])
def flight_lookup(ctx: Ctx) -> Draft:
    ctx.need("get_travel_flight")
    f = ctx.choose(ctx.records("travel_flights"))
    prompt = ctx.say(
        ["Where does flight {n} fly to, and what does a seat cost?",
         "Look up flight {n}: destination and fare, please."],
        ["Give me the arrival city and the ticket price of flight {n}."],
        n=f["flight_number"],
    )  # fmt: skip
    return draft(
        prompt,
        ["travel_booking"],
        [
            Step(
                "get_travel_flight",
                {"flight_id": f["flight_number"]},
                normalize={"flight_id": "text"},
                purpose=f"read flight {f['flight_number']}",
            )
        ],  # fmt: skip
        answers=[
            Answer(
                "destination",
                f["destination"],
                "text",
                text=f"flight {f['flight_number']} flies to {f['destination']}",
            ),
            Answer("price", f["price"], "number", 0.01, text=f"the fare is {fmt_num(f['price'])} USD"),
        ],
        reference_answer=f"Flight {f['flight_number']} flies {f['origin']} to {f['destination']} for {fmt_num(f['price'])} USD.",
        recompute=lambda r: {"destination": field_of(r[0], "destination"), "price": field_of(r[0], "price")},
        keep=[f["flight_number"]],
    )


@template("travel_cheapest_fare", "aggregate", ["travel_booking"])
def cheapest_fare(ctx: Ctx) -> Draft:
    ctx.need("search_travel_flights")
    routes = sorted(
        {(f["origin"], f["destination"], f["depart"][:10]) for f in ctx.records("travel_flights")}
    )
    o, d, day = ctx.choose([r for r in routes if bookable(ctx, *r)])
    best = sole_best(bookable(ctx, o, d, day), "price", highest=False)
    prompt = ctx.say(
        ["What is the cheapest fare with a free seat from {o} to {d} on {day}, and which flight is it?",
         "Find the lowest-priced flight from {o} to {d} departing {day} that still has seats."],
        ["On {day}, which {o}-{d} flight with seats left costs least, and how much?"],
        o=o, d=d, day=day,
    )  # fmt: skip

    def recompute(r):
        top = items(r[0])[0]
        return {"flight": top["flight_number"], "price": top["price"]}

    return draft(
        prompt,
        ["travel_booking"],
        [
            Step(
                "search_travel_flights",
                {"origin": o, "destination": d, "date": day},
                normalize={"origin": "text", "destination": "text", "date": "date"},
                purpose=f"search {o}-{d} flights on {day}",
            )
        ],  # fmt: skip
        answers=[
            Answer(
                "flight",
                best["flight_number"],
                "text",
                text=f"the cheapest is flight {best['flight_number']}",
            ),
            Answer("price", best["price"], "number", 0.01, text=f"it costs {fmt_num(best['price'])} USD"),
        ],
        reference_answer=f"The cheapest is {best['flight_number']} ({best['airline']}) at {fmt_num(best['price'])} USD.",
        recompute=recompute,
        keep=[o, d, day],
    )


@template("travel_trip_budget", "aggregate", ["travel_booking"])
def trip_budget(ctx: Ctx) -> Draft:
    ctx.need("travel_trip_cost")
    trip = ctx.choose(ctx.records("travel_trips"))
    spent = round(sum(b["price"] for b in ctx.records("travel_bookings", lambda b: b["trip_id"] == trip["id"]
                                                        and b["status"] == "confirmed")), 2)  # fmt: skip
    left = round(trip["budget"] - spent, 2)
    prompt = ctx.say(
        ["How much of trip {id}'s budget is left after its confirmed bookings?",
         "For business trip {id}, what remains of the budget once flights and hotels are paid?"],
        ["Trip {id}: budget minus confirmed bookings comes to how much?"],
        id=trip["id"],
    )  # fmt: skip
    return draft(
        prompt,
        ["travel_booking"],
        [
            Step(
                "travel_trip_cost",
                {"trip_id": trip["id"]},
                alternatives=["get_travel_trip", "list_travel_bookings"],
                purpose=f"total trip {trip['id']}'s bookings",
            )
        ],  # fmt: skip
        answers=[
            Answer("remaining", left, "number", 0.01, text=f"{fmt_num(left)} USD of the budget is left")
        ],
        reference_answer=f"Trip {trip['id']} has a budget of {fmt_num(trip['budget'])} USD, {fmt_num(spent)} USD is "
        f"booked, so {fmt_num(left)} USD remains.",
        recompute=lambda r: {"remaining": payload(r[0])["remaining"]},
        keep=[trip["id"]],
    )


@template("travel_cancel_booking", "write", ["travel_booking"])
def cancel_booking(ctx: Ctx) -> Draft:
    ctx.need("cancel_travel_booking")
    b = ctx.choose(ctx.records("travel_bookings", lambda b: b["status"] == "confirmed"))
    prompt = ctx.say(
        ["Cancel travel booking {id}.", "Please cancel the {k} booking {id}; the plans changed."],
        ["Booking {id} is no longer needed - cancel it."],
        id=b["id"], k=b["kind"],
    )  # fmt: skip
    return draft(
        prompt,
        ["travel_booking"],
        [Step("cancel_travel_booking", {"booking_id": b["id"]}, purpose="cancel the booking")],
        state_changes=[
            (
                f"Booking {b['id']} must be cancelled afterwards.",
                changed("travel_bookings", b["id"], "status", "cancelled"),
            )
        ],  # fmt: skip
        reference_answer=f"Booking {b['id']} is cancelled.",
        keep=[b["id"]],
        read_only=False,
    )


@template("travel_book_cheapest", "chain", ["travel_booking"], calls=(3, 3))
def book_cheapest(ctx: Ctx) -> Draft:
    ctx.need("get_travel_trip", "search_travel_flights", "book_travel_flight")
    # A trip yet to start (every flight that day is still to leave) with no flight booked yet: the
    # server refuses departed flights and a second seat on a flight the trip already has.
    flown = {b["trip_id"] for b in ctx.records("travel_bookings", lambda b: b["kind"] == "flight"
                                               and b["status"] == "confirmed")}  # fmt: skip
    trip = ctx.choose(ctx.records("travel_trips", lambda t: t["status"] in ("planned", "approved")
                                  and t["start_date"] > TODAY.isoformat() and t["id"] not in flown
                                  and bookable(ctx, t["origin"], t["destination"], t["start_date"])))  # fmt: skip
    best = sole_best(
        bookable(ctx, trip["origin"], trip["destination"], trip["start_date"]), "price", highest=False
    )
    new_id = next_key(ctx, "travel_bookings", "bk-")
    prompt = ctx.say(
        ["Book the cheapest flight with a free seat for trip {id}, leaving on the trip's start day, and tell me the fare.",
         "For trip {id}, find the lowest fare from the traveller's city to the destination on the first day and book it."],
        ["Get trip {id} a seat on the least expensive outbound flight on its start date; report the flight and price."],
        id=trip["id"],
    )  # fmt: skip

    def recompute(r):
        t = payload(r[0])
        top = items(r[1])[0]
        if (top["origin"], top["destination"], top["depart"][:10]) != (
            t["origin"],
            t["destination"],
            t["start_date"],
        ):
            raise ValueError("searched the wrong route")
        if field_of(r[2], "item_id") != top["id"]:
            raise ValueError("booked another flight")
        return {"flight": top["flight_number"], "price": top["price"]}

    return draft(
        prompt,
        ["travel_booking"],
        [
            Step(
                "get_travel_trip",
                {"trip_id": trip["id"]},
                purpose=f"read trip {trip['id']}",
                produces="route and start date",
            ),
            Step(
                "search_travel_flights",
                {"origin": trip["origin"], "destination": trip["destination"], "date": trip["start_date"]},
                depends_on=[0],
                normalize={"origin": "text", "destination": "text", "date": "date"},
                purpose="search the outbound flights",
                produces="flight id",
            ),
            Step(
                "book_travel_flight",
                {"trip_id": trip["id"], "flight_id": best["id"]},
                depends_on=[1],
                purpose="book the cheapest flight",
            ),
        ],  # fmt: skip
        answers=[
            Answer(
                "flight", best["flight_number"], "text", text=f"the booked flight is {best['flight_number']}"
            ),
            Answer("price", best["price"], "number", 0.01, text=f"the fare is {fmt_num(best['price'])} USD"),
        ],
        state_changes=[
            (
                f"A new booking {new_id} of flight {best['id']} must exist for trip {trip['id']}.",
                changed("travel_bookings", new_id, "item_id", best["id"], op="create"),
            )
        ],  # fmt: skip
        reference_answer=f"Booked {best['flight_number']} ({best['id']}) for trip {trip['id']} at "
        f"{fmt_num(best['price'])} USD (booking {new_id}).",
        recompute=recompute,
        keep=[trip["id"]],
        read_only=False,
    )
