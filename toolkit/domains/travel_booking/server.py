"""Travel booking: flights and hotels, staff business trips, the bookings made for them, and
travellers' loyalty accounts.

A trip belongs to a staff member; flight and hotel bookings hang off a trip, take a seat or room
from the inventory while confirmed and give it back when cancelled. A booking must fit its trip: a
flight on the trip's route (out or back) departing within its dates and not yet gone, a hotel in the
destination for nights within the trip, from today on. Loyalty points a flight booking earns are
recorded on the booking and taken back when it is cancelled (or moved to another fare).
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.clock import NOW_ISO, TODAY
from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, paginate, tool
from toolkit.envs.servers.dates import check_day

FlightId = Annotated[str, Field(description="Flight id, e.g. 'fl-001' (not the flight number).")]
HotelId = Annotated[str, Field(description="Hotel id, e.g. 'ht-001'.")]
TripId = Annotated[str, Field(description="Trip id, e.g. 'trip-001'.")]
BookingId = Annotated[str, Field(description="Booking id, e.g. 'bk-001'.")]
StaffId = Annotated[str, Field(description="Traveller: a staff id, e.g. 'st-001'.")]
TripStatus = Literal["planned", "approved", "completed", "cancelled"]
# Allowed moves of a trip; anything else is a conflict.
NEXT = {"planned": {"approved", "cancelled"}, "approved": {"completed", "cancelled"}}
POINTS_PER_USD = 5  # loyalty points earned per dollar of a flight booking


class TravelBooking(DomainServer):
    name = "travel_booking"
    description = (
        "Corporate travel: flight and hotel search, staff business trips (plan, approve, cancel), flight and "
        "hotel bookings (book, change, cancel), trip costs, travel spend, loyalty points."
    )

    def _flight(self, flight_id: str) -> dict[str, Any]:
        return self.require(
            "travel_flights", flight_id, "Flight", "Use search_travel_flights to find flight ids."
        )

    def _hotel(self, hotel_id: str) -> dict[str, Any]:
        return self.require("travel_hotels", hotel_id, "Hotel", "Use search_travel_hotels to find hotel ids.")

    def _trip(self, trip_id: str) -> dict[str, Any]:
        return self.require("travel_trips", trip_id, "Trip", "Use list_travel_trips to find trip ids.")

    def _booking(self, booking_id: str) -> dict[str, Any]:
        return self.require("travel_bookings", booking_id, "Booking", "Use list_travel_bookings to find ids.")

    def _open_trip(self, trip_id: str) -> dict[str, Any]:
        t = self._trip(trip_id)
        if t["status"] not in ("planned", "approved"):
            raise conflict(
                f"trip {trip_id} is '{t['status']}'; only planned or approved trips take bookings."
            )
        return t

    def _cities(self) -> list[str]:
        return sorted(
            {f["origin"] for f in self.db.values("travel_flights")}
            | {h["city"] for h in self.db.values("travel_hotels")}
        )

    def _city(self, city: str | None, arg: str) -> str | None:
        if city is None:
            return None
        for c in self._cities():
            if c.lower() == city.lower():
                return c
        raise invalid(f"{arg} '{city}' is not served; known cities: {', '.join(self._cities())}.")

    def _fits_flight(self, trip: dict[str, Any], flight: dict[str, Any]) -> None:
        """Refuse a flight that is not on the trip's route and dates, or has already departed."""
        route = (flight["origin"], flight["destination"])
        if route not in ((trip["origin"], trip["destination"]), (trip["destination"], trip["origin"])):
            raise invalid(f"flight {flight['id']} flies {route[0]}->{route[1]}; trip {trip['id']} goes "
                          f"{trip['origin']}->{trip['destination']} (and back).")  # fmt: skip
        day = flight["depart"][:10]
        if not trip["start_date"] <= day <= trip["end_date"]:
            raise invalid(f"flight {flight['id']} departs {day}, outside trip {trip['id']} "
                          f"({trip['start_date']}..{trip['end_date']}).")  # fmt: skip
        if flight["depart"] < NOW_ISO:
            raise invalid(f"flight {flight['id']} departed {flight['depart']} (now is {NOW_ISO}).")

    def _earn(self, traveler_id: str, price: float) -> int:
        """Credit a flight's loyalty points (none without a loyalty account); the points credited."""
        if self.db.get("travel_loyalty", traveler_id) is None:
            return 0
        points = int(price * POINTS_PER_USD)
        self.db.edit("travel_loyalty", traveler_id)["points"] += points
        return points

    def _take_back(self, booking: dict[str, Any]) -> None:
        """Debit the loyalty points this booking earned (bookings made before the world began earned none)."""
        points = booking.get("points") or 0
        if points and self.db.get("travel_loyalty", booking["traveler_id"]) is not None:
            self.db.edit("travel_loyalty", booking["traveler_id"])["points"] -= points

    def _new_booking(
        self, trip: dict[str, Any], kind: str, item_id: str, price: float, **extra: Any
    ) -> dict[str, Any]:
        bid = self.next_id("travel_bookings", "bk-")
        rec = {"id": bid, "trip_id": trip["id"], "traveler_id": trip["traveler_id"], "kind": kind, "item_id": item_id,
               "check_in": None, "nights": None, "price": round(price, 2), "status": "confirmed",
               "booked": TODAY.isoformat(), **extra}  # fmt: skip
        self.db.put("travel_bookings", bid, rec)
        return rec

    @tool(read_only=True)
    def list_travel_destinations(self) -> dict[str, Any]:
        """The cities with flights or hotels, with the number of departing flights and hotels in each."""
        out = {c: {"departing_flights": 0, "hotels": 0} for c in self._cities()}
        for f in self.db.values("travel_flights"):
            out[f["origin"]]["departing_flights"] += 1
        for h in self.db.values("travel_hotels"):
            out[h["city"]]["hotels"] += 1
        return {"cities": out}

    @tool(read_only=True)
    def search_travel_flights(
        self,
        origin: Annotated[str, Field(description="Departure city, e.g. 'Berlin'.")],
        destination: Annotated[str, Field(description="Arrival city, e.g. 'Lisbon'.")],
        date: Annotated[
            str | None, Field(description="Departure day, YYYY-MM-DD (omit for any day).")
        ] = None,
        max_price: Annotated[float | None, Field(ge=0, description="Only flights up to this price.")] = None,
        seats_needed: Annotated[
            int, Field(ge=1, le=9, description="Only flights with this many free seats.")
        ] = 1,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Flights between two cities, cheapest first (then earliest)."""
        o, d = self._city(origin, "origin"), self._city(destination, "destination")
        check_day(date, "date")
        rows = [
            f
            for f in self.db.values("travel_flights")
            if f["origin"] == o
            and f["destination"] == d
            and (date is None or f["depart"][:10] == date)
            and (max_price is None or f["price"] <= max_price)
            and f["seats_left"] >= seats_needed
        ]
        rows.sort(key=lambda f: (f["price"], f["depart"], f["id"]))
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_travel_flight(
        self,
        flight_id: Annotated[str, Field(description="Flight id ('fl-001') or flight number ('NW100').")],
    ) -> dict[str, Any]:
        """One flight, by id or flight number."""
        for f in self.db.values("travel_flights"):
            if f["flight_number"].lower() == flight_id.lower():
                return f
        return self._flight(flight_id)

    @tool(read_only=True)
    def search_travel_hotels(
        self,
        city: Annotated[str, Field(description="City, e.g. 'Oslo'.")],
        min_stars: Annotated[
            int, Field(ge=1, le=5, description="Only hotels with at least this many stars.")
        ] = 1,
        max_rate: Annotated[
            float | None, Field(ge=0, description="Only hotels up to this nightly rate.")
        ] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Hotels in a city with free rooms, cheapest nightly rate first."""
        c = self._city(city, "city")
        rows = [
            h
            for h in self.db.values("travel_hotels")
            if h["city"] == c and h["stars"] >= min_stars and h["rooms_left"] > 0
            and (max_rate is None or h["nightly_rate"] <= max_rate)
        ]  # fmt: skip
        rows.sort(key=lambda h: (h["nightly_rate"], h["id"]))
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_travel_hotel(self, hotel_id: HotelId) -> dict[str, Any]:
        """One hotel."""
        return self._hotel(hotel_id)

    @tool(read_only=True)
    def quote_travel_hotel(
        self,
        hotel_id: HotelId,
        check_in: Annotated[str, Field(description="Arrival day, YYYY-MM-DD.")],
        nights: Annotated[int, Field(ge=1, le=60, description="Number of nights.")],
    ) -> dict[str, Any]:
        """The price of a stay: nightly rate times nights, and the check-out day."""
        h = self._hotel(hotel_id)
        check_day(check_in, "check_in")
        out = date.fromisoformat(check_in) + timedelta(days=nights)
        return {"hotel_id": hotel_id, "check_in": check_in, "check_out": out.isoformat(), "nights": nights,
                "nightly_rate": h["nightly_rate"], "total": round(h["nightly_rate"] * nights, 2)}  # fmt: skip

    @tool(read_only=True)
    def list_travel_trips(
        self,
        traveler_id: Annotated[str | None, Field(description="Only trips of this staff id.")] = None,
        status: Annotated[TripStatus | None, Field(description="Trip status.")] = None,
        destination: Annotated[str | None, Field(description="Only trips to this city.")] = None,
        start_date: Annotated[
            str | None, Field(description="Trips starting on or after, YYYY-MM-DD.")
        ] = None,
        end_date: Annotated[str | None, Field(description="Trips starting on or before, YYYY-MM-DD.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List business trips by start date, earliest first."""
        check_day(start_date, "start_date"), check_day(end_date, "end_date")
        rows = [
            t
            for t in self.db.values("travel_trips")
            if (traveler_id is None or t["traveler_id"] == traveler_id)
            and (status is None or t["status"] == status)
            and (destination is None or t["destination"].lower() == destination.lower())
            and (start_date is None or t["start_date"] >= start_date)
            and (end_date is None or t["start_date"] <= end_date)
        ]
        rows.sort(key=lambda t: (t["start_date"], t["id"]))
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_travel_trip(self, trip_id: TripId) -> dict[str, Any]:
        """One trip with the traveller's name and its bookings."""
        t = self._trip(trip_id)
        who = self.db.get("staff", t["traveler_id"]) or {}
        bookings = sorted(
            (b for b in self.db.values("travel_bookings") if b["trip_id"] == trip_id), key=lambda b: b["id"]
        )
        return {**t, "traveler_name": who.get("name"), "bookings": bookings}

    @tool(idempotent=False)
    def create_travel_trip(
        self,
        traveler_id: StaffId,
        destination: Annotated[str, Field(description="Destination city.")],
        start_date: Annotated[str, Field(description="First day, YYYY-MM-DD (today or later).")],
        end_date: Annotated[str, Field(description="Last day, YYYY-MM-DD.")],
        purpose: Annotated[str, Field(min_length=3, max_length=200, description="Why the trip is needed.")],
        budget: Annotated[float, Field(gt=0, le=100000, description="Budget in USD.")],
    ) -> dict[str, Any]:
        """Plan a trip for a staff member from their home city (status 'planned')."""
        who = self.require("staff", traveler_id, "Staff member", "Use search_staff to find staff ids.")
        dest = self._city(destination, "destination")
        check_day(start_date, "start_date"), check_day(end_date, "end_date")
        if start_date < TODAY.isoformat():
            raise invalid(f"start_date {start_date} is in the past (today is {TODAY.isoformat()}).")
        if end_date < start_date:
            raise invalid("end_date is before start_date.")
        if dest == who["city"]:
            raise invalid(f"{who['name']} is based in {dest}; a trip needs another city.")
        tid = self.next_id("travel_trips", "trip-")
        rec = {"id": tid, "traveler_id": traveler_id, "origin": who["city"], "destination": dest,
               "start_date": start_date, "end_date": end_date, "purpose": purpose, "budget": round(budget, 2),
               "status": "planned", "notes": ""}  # fmt: skip
        self.db.put("travel_trips", tid, rec)
        return rec

    @tool(idempotent=True)
    def update_travel_trip(
        self,
        trip_id: TripId,
        status: Annotated[
            Literal["approved", "completed", "cancelled"] | None, Field(description="New status.")
        ] = None,
        notes: Annotated[str | None, Field(max_length=1000, description="Replace the trip notes.")] = None,
    ) -> dict[str, Any]:
        """Approve, complete or cancel a trip, or change its notes. Cancelling cancels its bookings."""
        t = self._trip(trip_id)
        if status is None and notes is None:
            raise invalid("give status, notes or both.")
        if status is not None and status != t["status"] and status not in NEXT.get(t["status"], set()):
            allowed = sorted(NEXT.get(t["status"], set())) or "none (final)"
            raise conflict(f"trip {trip_id} is '{t['status']}'; allowed next statuses: {allowed}.")
        if status == "cancelled":
            for b in self.db.values("travel_bookings"):
                if b["trip_id"] == trip_id and b["status"] == "confirmed":
                    self._release(b["id"])
        t = self.db.edit("travel_trips", trip_id)
        if status is not None:
            t["status"] = status
        if notes is not None:
            t["notes"] = notes
        return t

    @tool(read_only=True)
    def list_travel_bookings(
        self,
        trip_id: Annotated[str | None, Field(description="Only bookings of this trip id.")] = None,
        traveler_id: Annotated[str | None, Field(description="Only bookings of this staff id.")] = None,
        kind: Annotated[
            Literal["flight", "hotel"] | None, Field(description="Flight or hotel bookings.")
        ] = None,
        status: Annotated[
            Literal["confirmed", "cancelled"] | None, Field(description="Booking status.")
        ] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List bookings by id."""
        if trip_id is not None:
            self._trip(trip_id)
        rows = [
            b
            for b in sorted(self.db.values("travel_bookings"), key=lambda b: b["id"])
            if (trip_id is None or b["trip_id"] == trip_id)
            and (traveler_id is None or b["traveler_id"] == traveler_id)
            and (kind is None or b["kind"] == kind)
            and (status is None or b["status"] == status)
        ]
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_travel_booking(self, booking_id: BookingId) -> dict[str, Any]:
        """One booking with the flight or hotel it is for."""
        b = self._booking(booking_id)
        coll = "travel_flights" if b["kind"] == "flight" else "travel_hotels"
        return {**b, "item": self.db.get(coll, b["item_id"])}

    @tool(idempotent=False)
    def book_travel_flight(self, trip_id: TripId, flight_id: FlightId) -> dict[str, Any]:
        """Book a seat on a flight for a trip's traveller; earns loyalty points (taken back on cancel).

        The flight must fly the trip's route (outbound or return), depart within the trip's dates and
        not have departed yet."""
        t = self._open_trip(trip_id)
        f = self._flight(flight_id)
        self._fits_flight(t, f)
        for b in self.db.values("travel_bookings"):
            if b["trip_id"] == trip_id and b["item_id"] == flight_id and b["status"] == "confirmed":
                raise conflict(f"trip {trip_id} already has a seat on {flight_id} ({b['id']}).")
        if f["seats_left"] < 1:
            raise conflict(
                f"flight {flight_id} is full; search_travel_flights lists flights with free seats."
            )
        self.db.edit("travel_flights", flight_id)["seats_left"] -= 1
        points = self._earn(t["traveler_id"], f["price"])
        return self._new_booking(t, "flight", flight_id, f["price"], points=points)

    @tool(idempotent=False)
    def book_travel_hotel(
        self,
        trip_id: TripId,
        hotel_id: HotelId,
        check_in: Annotated[
            str | None, Field(description="Arrival day, YYYY-MM-DD (default: trip start).")
        ] = None,
        nights: Annotated[
            int | None, Field(ge=1, le=60, description="Nights (default: the trip's length).")
        ] = None,
    ) -> dict[str, Any]:
        """Book a hotel room for a trip's traveller: a hotel in the trip's destination, for nights within
        the trip's dates, from today on."""
        t = self._open_trip(trip_id)
        h = self._hotel(hotel_id)
        check_day(check_in, "check_in")
        if h["city"] != t["destination"]:
            raise invalid(f"hotel {hotel_id} is in {h['city']}; trip {trip_id} goes to {t['destination']}.")
        start = check_in or t["start_date"]
        first, last = date.fromisoformat(t["start_date"]), date.fromisoformat(t["end_date"])
        n = nights or max(1, (last - first).days)
        if start < TODAY.isoformat():
            raise invalid(f"check-in {start} is in the past (today is {TODAY.isoformat()}); give check_in.")
        out = date.fromisoformat(start) + timedelta(days=n)
        if date.fromisoformat(start) < first or out > max(last, first + timedelta(days=1)):
            raise invalid(f"a stay {start}..{out.isoformat()} is outside trip {trip_id} "
                          f"({t['start_date']}..{t['end_date']}).")  # fmt: skip
        if h["rooms_left"] < 1:
            raise conflict(f"hotel {hotel_id} is full; search_travel_hotels lists hotels with free rooms.")
        self.db.edit("travel_hotels", hotel_id)["rooms_left"] -= 1
        return self._new_booking(t, "hotel", hotel_id, h["nightly_rate"] * n, check_in=start, nights=n)

    def _release(self, booking_id: str) -> dict[str, Any]:
        """Cancel a confirmed booking: its seat or room goes back on sale, its loyalty points are taken back."""
        b = self.db.edit("travel_bookings", booking_id)
        self._take_back(b)
        coll, field = (
            ("travel_flights", "seats_left") if b["kind"] == "flight" else ("travel_hotels", "rooms_left")
        )
        if self.db.get(coll, b["item_id"]) is not None:
            self.db.edit(coll, b["item_id"])[field] += 1
        b["status"] = "cancelled"
        return b

    @tool(destructive=True, idempotent=True)
    def cancel_travel_booking(self, booking_id: BookingId) -> dict[str, Any]:
        """Cancel a confirmed booking (the seat or room goes back on sale, the points it earned are taken back)."""
        b = self._booking(booking_id)
        if b["status"] == "cancelled":
            return b
        return self._release(booking_id)

    @tool(idempotent=False)
    def change_travel_flight(self, booking_id: BookingId, new_flight_id: FlightId) -> dict[str, Any]:
        """Move a confirmed flight booking to another flight on the same route within the trip's dates; the
        price becomes the new fare and the loyalty points follow it."""
        b = self._booking(booking_id)
        if b["kind"] != "flight" or b["status"] != "confirmed":
            raise conflict(
                f"booking {booking_id} is a {b['status']} {b['kind']} booking; only confirmed flights change."
            )
        old, new = self._flight(b["item_id"]), self._flight(new_flight_id)
        if (old["origin"], old["destination"]) != (new["origin"], new["destination"]):
            raise invalid(f"{new_flight_id} flies {new['origin']}->{new['destination']}, the booking is "
                          f"{old['origin']}->{old['destination']}.")  # fmt: skip
        if old["depart"] < NOW_ISO:
            raise conflict(f"{old['id']} departed {old['depart']}; a flown booking cannot change.")
        self._fits_flight(self._trip(b["trip_id"]), new)
        if new["id"] == old["id"]:
            return b
        if new["seats_left"] < 1:
            raise conflict(f"flight {new_flight_id} is full.")
        self.db.edit("travel_flights", old["id"])["seats_left"] += 1
        self.db.edit("travel_flights", new["id"])["seats_left"] -= 1
        self._take_back(b)
        points = self._earn(b["traveler_id"], new["price"]) if "points" in b else 0
        b = self.db.edit("travel_bookings", booking_id)
        b["item_id"], b["price"] = new["id"], new["price"]
        if "points" in b:
            b["points"] = points
        return b

    @tool(read_only=True)
    def travel_trip_cost(self, trip_id: TripId) -> dict[str, Any]:
        """A trip's confirmed booking costs by kind, their total, and what is left of its budget."""
        t = self._trip(trip_id)
        by_kind = {"flight": 0.0, "hotel": 0.0}
        for b in self.db.values("travel_bookings"):
            if b["trip_id"] == trip_id and b["status"] == "confirmed":
                by_kind[b["kind"]] = round(by_kind[b["kind"]] + b["price"], 2)
        total = round(sum(by_kind.values()), 2)
        return {"trip_id": trip_id, "by_kind": by_kind, "total": total, "budget": t["budget"],
                "remaining": round(t["budget"] - total, 2), "over_budget": total > t["budget"]}  # fmt: skip

    @tool(read_only=True)
    def travel_spend_report(
        self,
        start_date: Annotated[
            str | None, Field(description="Trips starting on or after, YYYY-MM-DD.")
        ] = None,
        end_date: Annotated[str | None, Field(description="Trips starting on or before, YYYY-MM-DD.")] = None,
    ) -> dict[str, Any]:
        """Confirmed booking spend per traveller over trips starting in a date range."""
        check_day(start_date, "start_date"), check_day(end_date, "end_date")
        trips = {
            t["id"]: t
            for t in self.db.values("travel_trips")
            if (start_date is None or t["start_date"] >= start_date)
            and (end_date is None or t["start_date"] <= end_date)
        }
        per: dict[str, dict[str, Any]] = {}
        for b in self.db.values("travel_bookings"):
            if b["trip_id"] in trips and b["status"] == "confirmed":
                row = per.setdefault(b["traveler_id"], {"spend": 0.0, "bookings": 0})
                row["spend"] = round(row["spend"] + b["price"], 2)
                row["bookings"] += 1
        return {
            "travelers": dict(sorted(per.items())),
            "total": round(sum(r["spend"] for r in per.values()), 2),
        }

    @tool(read_only=True)
    def get_travel_loyalty(self, traveler_id: StaffId) -> dict[str, Any]:
        """A traveller's loyalty account: points, tier and seat preference."""
        return self.require(
            "travel_loyalty", traveler_id, "Loyalty account", "Loyalty accounts are keyed by staff id."
        )

    @tool(idempotent=True)
    def set_travel_seat_preference(
        self,
        traveler_id: StaffId,
        seat: Annotated[Literal["aisle", "window"], Field(description="Preferred seat.")],
    ) -> dict[str, Any]:
        """Set a traveller's preferred seat."""
        self.require(
            "travel_loyalty", traveler_id, "Loyalty account", "Loyalty accounts are keyed by staff id."
        )
        rec = self.db.edit("travel_loyalty", traveler_id)
        rec["seat_preference"] = seat
        return rec
