"""Writes that must be refused are refused, and what a write grants is taken back when it is cancelled.

A failed call rolls back (``WorldState.atomic``); travel bookings must fit their trip (route, dates, not
in the past); loyalty points follow a flight booking through change and cancel; a cancelled food order
frees its courier. Each case here was reproduced on the code before the fix.
"""

from __future__ import annotations

import copy
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver.exceptions import ToolError

from toolkit.domains.banking.server import Banking
from toolkit.envs import open_episode
from toolkit.envs.servers.base import DomainServer, invalid, tool
from toolkit.envs.state import WorldState, base_world
from toolkit.envs.world import diff_states

SEED = 0
W = base_world(SEED)
TRIP = "trip-017"  # approved, Osaka -> Berlin, 2025-11-18..23, three bookable outbound flights
OUT, OUT_DEAR, OUT_LATER = "fl-044", "fl-045", "fl-063"  # 975, 1365 and 575 USD
TRAVELER = W["travel_trips"][TRIP]["traveler_id"]


def episode(server: str, body: Any, state: dict | None = None) -> None:
    async def main():
        async with open_episode(servers=[server], seed=SEED, state=state) as ep:

            async def call(name, args, ok=True):
                r = await ep.call_tool(name, args)
                assert r.ok == ok, (name, args, r.text)
                return r.structured if ok else r.text

            await body(call, ep)

    anyio.run(main)


# -- rollback of a failed call ------------------------------------------------------------------
def test_atomic_puts_back_every_kind_of_write():
    st = WorldState.from_seed(SEED)
    st.edit("tickets", "t-1001")["status"] = "closed"  # owned before the block
    before_diff, before_snap = copy.deepcopy(st.diff()), copy.deepcopy(st.snapshot())
    with pytest.raises(RuntimeError), st.atomic():
        st.edit("tickets", "t-1001")["status"] = "open"  # an owned record, changed in place
        st.edit("tickets", "t-1002")["tags"].append("x")  # a base record
        st.put("tickets", "t-9999", {"id": "t-9999"})  # a new record
        st.delete("customers", "cu-001")  # a collection first written inside the block
        st.put("calc_memory", "m", {"v": 1})
        raise RuntimeError("the tool failed")
    assert st.diff() == before_diff
    assert diff_states(before_snap, st.snapshot()) == {}
    with st.atomic():  # a block that succeeds keeps its writes
        st.put("tickets", "t-9999", {"id": "t-9999"})
    assert "tickets/t-9999" in st.diff()


class _WritesThenFails(DomainServer):
    name = "writes_then_fails"
    description = "test server"

    @tool()
    def half_done(self, note: str) -> dict[str, Any]:
        """Write, then find the argument bad."""
        self.db.edit("tickets", "t-1001")["status"] = note
        raise invalid("note refused after the write")


def test_a_tool_that_raises_after_writing_changes_nothing_through_mcp():
    state = WorldState.from_seed(SEED)

    async def main():
        async with Client(_WritesThenFails(state).mcp_server(), cache=None) as client:
            r = await client.call_tool("half_done", {"note": "oops"})
            assert r.is_error and "refused after the write" in r.content[0].text

    anyio.run(main)
    assert state.diff() == {}


def test_open_bank_account_validates_the_deposit_before_writing():
    state = WorldState.from_seed(SEED)
    with pytest.raises(ToolError, match="more than 2 decimals"):
        Banking(state).open_bank_account("cu-001", "checking", 0.001)  # the method itself, no rollback
    assert state.diff() == {}


# -- travel: bookings must fit the trip ------------------------------------------------------------
def _other_route_flight() -> str:
    t = W["travel_trips"][TRIP]
    legs = {(t["origin"], t["destination"]), (t["destination"], t["origin"])}
    return next(f["id"] for f in W["travel_flights"].values() if (f["origin"], f["destination"]) not in legs)


def _route_flight_outside_dates() -> dict:
    """A world copy with one more Osaka -> Berlin flight, a week after the trip."""
    w = copy.deepcopy(W)
    w["travel_flights"]["fl-900"] = {**w["travel_flights"][OUT], "id": "fl-900", "depart": "2025-11-30T10:00"}
    return w


def _trip_under_way() -> dict:
    """A world copy where the trip started yesterday and a flight on its route left this morning."""
    w = copy.deepcopy(W)
    w["travel_trips"][TRIP]["start_date"] = "2025-11-14"
    w["travel_flights"]["fl-901"] = {**w["travel_flights"][OUT], "id": "fl-901", "depart": "2025-11-15T06:30"}
    return w


@pytest.mark.parametrize(
    ("args", "state", "message"),
    [
        ({"flight_id": _other_route_flight()}, None, "goes Osaka->Berlin"),
        ({"flight_id": "fl-900"}, _route_flight_outside_dates(), "outside trip"),
        ({"flight_id": "fl-901"}, _trip_under_way(), "departed"),
    ],
)
def test_book_travel_flight_refuses_a_flight_that_does_not_fit_the_trip(args, state, message):
    async def body(call, ep):
        err = await call("book_travel_flight", {"trip_id": TRIP, **args}, ok=False)
        assert message in err
        assert ep.state_diff() == {}

    episode("travel_booking", body, state)


def test_book_travel_flight_refuses_a_second_seat_on_the_same_flight():
    async def body(call, ep):
        await call("book_travel_flight", {"trip_id": TRIP, "flight_id": OUT})
        assert "already has a seat" in await call(
            "book_travel_flight", {"trip_id": TRIP, "flight_id": OUT}, ok=False
        )

    episode("travel_booking", body)


def test_book_travel_hotel_refuses_another_city_past_days_and_nights_beyond_the_trip():
    berlin = next(h["id"] for h in W["travel_hotels"].values() if h["city"] == "Berlin" and h["rooms_left"])
    elsewhere = next(
        h["id"] for h in W["travel_hotels"].values() if h["city"] != "Berlin" and h["rooms_left"]
    )

    async def body(call, ep):
        assert "goes to Berlin" in await call(
            "book_travel_hotel", {"trip_id": TRIP, "hotel_id": elsewhere}, ok=False
        )
        assert "in the past" in await call(
            "book_travel_hotel", {"trip_id": TRIP, "hotel_id": berlin, "check_in": "2025-11-10"}, ok=False
        )
        assert "outside trip" in await call(
            "book_travel_hotel", {"trip_id": TRIP, "hotel_id": berlin, "nights": 30}, ok=False
        )
        assert "outside trip" in await call(
            "book_travel_hotel", {"trip_id": TRIP, "hotel_id": berlin, "check_in": "2025-11-16"}, ok=False
        )
        assert ep.state_diff() == {}
        ok = await call("book_travel_hotel", {"trip_id": TRIP, "hotel_id": berlin})
        assert (ok["check_in"], ok["nights"]) == ("2025-11-18", 5)

    episode("travel_booking", body)


def test_book_travel_hotel_under_way_trip_needs_a_check_in_from_today():
    berlin = next(h["id"] for h in W["travel_hotels"].values() if h["city"] == "Berlin" and h["rooms_left"])

    async def body(call, ep):
        assert "give check_in" in await call(
            "book_travel_hotel", {"trip_id": TRIP, "hotel_id": berlin}, ok=False
        )
        ok = await call("book_travel_hotel", {"trip_id": TRIP, "hotel_id": berlin, "check_in": "2025-11-15",
                                              "nights": 3})  # fmt: skip
        assert ok["check_in"] == "2025-11-15"

    episode("travel_booking", body, _trip_under_way())


# -- travel: what a booking grants, cancelling takes back --------------------------------------------
def _points(state_diff: dict) -> int:
    rec = state_diff.get(f"travel_loyalty/{TRAVELER}")
    return (rec["after"] if rec else W["travel_loyalty"][TRAVELER])["points"]


def test_book_and_cancel_leaves_loyalty_points_and_seats_as_they_were():
    start = W["travel_loyalty"][TRAVELER]["points"]

    async def body(call, ep):
        for _ in range(3):  # the pump: book, cancel, book again...
            b = await call("book_travel_flight", {"trip_id": TRIP, "flight_id": OUT})
            assert b["points"] == int(W["travel_flights"][OUT]["price"] * 5)
            assert _points(ep.state_diff()) == start + b["points"]
            await call("cancel_travel_booking", {"booking_id": b["id"]})
            assert _points(ep.state_diff()) == start
        diff = ep.state_diff()
        assert f"travel_loyalty/{TRAVELER}" not in diff and f"travel_flights/{OUT}" not in diff

    episode("travel_booking", body)


def test_cancelling_the_trip_takes_back_its_bookings_points():
    start = W["travel_loyalty"][TRAVELER]["points"]

    async def body(call, ep):
        await call("book_travel_flight", {"trip_id": TRIP, "flight_id": OUT})
        await call("book_travel_flight", {"trip_id": TRIP, "flight_id": OUT_LATER})
        assert _points(ep.state_diff()) > start
        await call("update_travel_trip", {"trip_id": TRIP, "status": "cancelled"})
        assert _points(ep.state_diff()) == start

    episode("travel_booking", body)


def test_changing_a_flight_moves_the_points_to_the_new_fare():
    start = W["travel_loyalty"][TRAVELER]["points"]
    dear = W["travel_flights"][OUT_DEAR]

    async def body(call, ep):
        b = await call("book_travel_flight", {"trip_id": TRIP, "flight_id": OUT_LATER})
        ch = await call("change_travel_flight", {"booking_id": b["id"], "new_flight_id": OUT_DEAR})
        assert ch["points"] == int(dear["price"] * 5)
        assert _points(ep.state_diff()) == start + int(dear["price"] * 5)
        await call("cancel_travel_booking", {"booking_id": b["id"]})
        assert _points(ep.state_diff()) == start

    episode("travel_booking", body)


def test_change_travel_flight_refuses_a_flight_outside_the_trip():
    async def body(call, ep):
        b = await call("book_travel_flight", {"trip_id": TRIP, "flight_id": OUT})
        before = copy.deepcopy(ep.state_diff())
        assert "outside trip" in await call(
            "change_travel_flight", {"booking_id": b["id"], "new_flight_id": "fl-900"}, ok=False
        )
        assert ep.state_diff() == before

    episode("travel_booking", body, _route_flight_outside_dates())


# -- food delivery: a cancelled order frees its courier ---------------------------------------------
def test_cancel_food_order_frees_its_courier():
    free = {
        c["city"]: c["id"]
        for c in sorted(W["food_couriers"].values(), key=lambda c: c["id"])
        if c["available"]
    }
    order = next(o for o in W["food_orders"].values() if o["status"] == "placed" and o["city"] in free)
    courier = free[order["city"]]

    async def body(call, ep):
        await call("assign_food_courier", {"order_id": order["id"], "courier_id": courier})
        assert ep.state_diff()[f"food_couriers/{courier}"]["after"]["available"] is False
        await call("cancel_food_order", {"order_id": order["id"], "reason": "customer changed their mind"})
        assert f"food_couriers/{courier}" not in ep.state_diff()  # available again, as in the world

    episode("food_delivery", body)


# -- a tool error, not a crash ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"principal": 1000, "rate_percent": 1000, "years": 200}, "too large"),
        (
            {"principal": 1000, "rate_percent": -5000, "years": 2, "periods_per_year": 1},
            "more than everything",
        ),
    ],
)
def test_compound_interest_out_of_range_is_a_tool_error(args, message):
    from toolkit.envs.servers.calculator import Calculator

    with pytest.raises(ToolError, match=message):
        Calculator(WorldState.from_seed(SEED)).compound_interest(**args)


# -- calendar: no meeting starts in the past -----------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "args"),
    [
        (
            "create_event",
            {"title": "Retro", "start": "2025-11-14T10:00", "duration_minutes": 30, "organizer_id": "st-001"},
        ),  # fmt: skip
        (
            "create_event",
            {"title": "Early", "start": "2025-11-15T08:30", "duration_minutes": 30, "organizer_id": "st-001"},
        ),  # fmt: skip
        (
            "create_event",
            {
                "title": "Zoned",
                "start": "2025-11-20T10:00+02:00",
                "duration_minutes": 30,
                "organizer_id": "st-001",
            },
        ),  # fmt: skip
        ("reschedule_event", {"event_id": "ev-001", "start": "2025-11-01T10:00"}),
    ],
)
def test_calendar_refuses_a_start_in_the_past(name, args):
    async def body(call, ep):
        err = await call(name, args, ok=False)
        assert "in the past" in err or "time zone" in err
        assert ep.state_diff() == {}

    episode("calendar", body)
