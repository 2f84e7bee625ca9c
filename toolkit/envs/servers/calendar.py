"""Calendar: staff meetings with attendees; scheduling checks for clashes."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Annotated, Any

from pydantic import Field

from toolkit.envs.clock import NOW
from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, paginate, tool

EventId = Annotated[str, Field(description="Event id, e.g. 'ev-001'.")]
StaffId = Annotated[str, Field(description="Staff id, e.g. 'st-001'.")]
WORK_START, WORK_END = 9, 17


def _dt(value: str, what: str) -> datetime:
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise invalid(f"{what} '{value}' is not an ISO date-time like 2025-11-17T14:00.") from None


def _future(value: str, what: str) -> datetime:
    """A start time for a new or moved event: a local date-time not before the world's clock."""
    s = _dt(value, what)
    if s.tzinfo is not None:
        raise invalid(f"{what} '{value}' has a time zone; give local time like 2025-11-17T14:00.")
    if s < NOW:
        raise invalid(f"{what} {value} is in the past (now is {NOW.isoformat(timespec='minutes')}).")
    return s


def _day(value: str, what: str = "date") -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise invalid(f"{what} '{value}' is not a date like 2025-11-17.") from None


class Calendar(DomainServer):
    name = "calendar"
    description = "Staff calendars: list, create, reschedule and cancel meetings; find free slots."

    def _event(self, event_id: str) -> dict[str, Any]:
        return self.require("events", event_id, "Event", "Use list_events to find event ids.")

    def _staff(self, staff_id: str) -> dict[str, Any]:
        return self.require("staff", staff_id, "Staff member", "Use search_staff to find staff ids.")

    def _busy(self, staff_id: str, start: datetime, end: datetime, skip: str | None = None) -> list[str]:
        return [
            e["id"]
            for e in self.db.values("events")
            if e["id"] != skip
            and staff_id in e["attendee_ids"]
            and datetime.fromisoformat(e["start"]) < end
            and start < datetime.fromisoformat(e["end"])
        ]

    @tool(read_only=True)
    def list_events(
        self,
        start_date: Annotated[str | None, Field(description="First day to include, YYYY-MM-DD.")] = None,
        end_date: Annotated[str | None, Field(description="Last day to include, YYYY-MM-DD.")] = None,
        attendee_id: Annotated[str | None, Field(description="Only events this staff id attends.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List calendar events in a date range, earliest first."""
        lo = _day(start_date, "start_date") if start_date else date.min
        hi = _day(end_date, "end_date") if end_date else date.max
        rows = [
            e
            for e in self.db.values("events")
            if lo <= date.fromisoformat(e["start"][:10]) <= hi
            and (attendee_id is None or attendee_id in e["attendee_ids"])
        ]
        rows.sort(key=lambda e: (e["start"], e["id"]))
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_event(self, event_id: EventId) -> dict[str, Any]:
        """One event with its attendees' names."""
        e = self._event(event_id)
        names = {s: self.db.get("staff", s)["name"] for s in e["attendee_ids"] if self.db.get("staff", s)}
        return {**e, "attendees": names}

    @tool(idempotent=False)
    def create_event(
        self,
        title: Annotated[str, Field(min_length=1, description="Event title.")],
        start: Annotated[str, Field(description="Start, ISO date-time like 2025-11-17T14:00.")],
        duration_minutes: Annotated[int, Field(ge=5, le=600, description="Length in minutes.")],
        organizer_id: StaffId,
        attendee_ids: Annotated[
            list[str] | None, Field(description="Staff ids invited (organizer is added).")
        ] = None,
        location: Annotated[str, Field(description="Room or 'Video call'.")] = "Video call",
    ) -> dict[str, Any]:
        """Schedule a meeting (from now on). Fails with a conflict if an attendee is already busy then."""
        s = _future(start, "start")
        e = s + timedelta(minutes=duration_minutes)
        people = sorted({organizer_id, *(attendee_ids or [])})
        for p in people:
            self._staff(p)
        clashes = {p: self._busy(p, s, e) for p in people}
        clashes = {p: ids for p, ids in clashes.items() if ids}
        if clashes:
            raise conflict(
                f"attendees already busy at that time: {clashes}. Use find_free_slots to pick a time."
            )
        eid = self.next_id("events", "ev-")
        rec = {"id": eid, "title": title, "start": s.isoformat(timespec="minutes"),
               "end": e.isoformat(timespec="minutes"), "organizer_id": organizer_id, "attendee_ids": people,
               "location": location, "description": ""}  # fmt: skip
        self.db.put("events", eid, rec)
        return rec

    @tool(idempotent=True)
    def reschedule_event(
        self,
        event_id: EventId,
        start: Annotated[str, Field(description="New start, ISO date-time like 2025-11-17T14:00.")],
        duration_minutes: Annotated[
            int | None, Field(ge=5, le=600, description="New length (default: same).")
        ] = None,
    ) -> dict[str, Any]:
        """Move an event to a new time, from now on (checks every attendee is free)."""
        ev = self._event(event_id)
        s = _future(start, "start")
        length = duration_minutes or int(
            (datetime.fromisoformat(ev["end"]) - datetime.fromisoformat(ev["start"])).total_seconds() // 60
        )
        e = s + timedelta(minutes=length)
        clashes = {p: self._busy(p, s, e, skip=event_id) for p in ev["attendee_ids"]}
        clashes = {p: ids for p, ids in clashes.items() if ids}
        if clashes:
            raise conflict(f"attendees already busy at that time: {clashes}.")
        ev = self.db.edit("events", event_id)
        ev["start"], ev["end"] = s.isoformat(timespec="minutes"), e.isoformat(timespec="minutes")
        return ev

    @tool(destructive=True, idempotent=True)
    def cancel_event(self, event_id: EventId) -> dict[str, Any]:
        """Cancel (delete) an event."""
        self._event(event_id)
        self.db.delete("events", event_id)
        return {"cancelled": event_id}

    @tool(idempotent=True)
    def add_attendee(self, event_id: EventId, staff_id: StaffId) -> dict[str, Any]:
        """Invite a staff member to an event (fails if they are busy then)."""
        ev = self._event(event_id)
        self._staff(staff_id)
        if staff_id in ev["attendee_ids"]:
            return ev
        busy = self._busy(staff_id, datetime.fromisoformat(ev["start"]), datetime.fromisoformat(ev["end"]))
        if busy:
            raise conflict(f"{staff_id} is busy then (events {busy}).")
        ev = self.db.edit("events", event_id)
        ev["attendee_ids"] = sorted([*ev["attendee_ids"], staff_id])
        return ev

    @tool(idempotent=True)
    def remove_attendee(self, event_id: EventId, staff_id: StaffId) -> dict[str, Any]:
        """Remove a staff member from an event (not the organizer)."""
        ev = self._event(event_id)
        if staff_id == ev["organizer_id"]:
            raise invalid("the organizer cannot be removed; cancel_event or change the organizer instead.")
        if staff_id not in ev["attendee_ids"]:
            raise invalid(f"{staff_id} is not an attendee of {event_id}; attendees: {ev['attendee_ids']}.")
        ev = self.db.edit("events", event_id)
        ev["attendee_ids"] = [a for a in ev["attendee_ids"] if a != staff_id]
        return ev

    @tool(read_only=True)
    def find_free_slots(
        self,
        staff_ids: Annotated[list[str], Field(min_length=1, description="Everyone who must be free.")],
        day: Annotated[str, Field(description="The day, YYYY-MM-DD.")],
        duration_minutes: Annotated[int, Field(ge=15, le=480, description="Needed length in minutes.")] = 30,
    ) -> dict[str, Any]:
        """Start times (on the half hour, 09:00-17:00) when all the given staff are free."""
        d = _day(day, "day")
        for p in staff_ids:
            self._staff(p)
        slots = []
        t = datetime(d.year, d.month, d.day, WORK_START)
        end_of_day = datetime(d.year, d.month, d.day, WORK_END)
        while t + timedelta(minutes=duration_minutes) <= end_of_day:
            if not any(self._busy(p, t, t + timedelta(minutes=duration_minutes)) for p in staff_ids):
                slots.append(t.isoformat(timespec="minutes"))
            t += timedelta(minutes=30)
        return {"day": day, "duration_minutes": duration_minutes, "free_starts": slots}

    @tool(read_only=True)
    def day_agenda(
        self, staff_id: StaffId, day: Annotated[str, Field(description="YYYY-MM-DD.")]
    ) -> dict[str, Any]:
        """One person's events on one day, in order."""
        self._staff(staff_id)
        d = _day(day, "day").isoformat()
        rows = sorted(
            (e for e in self.db.values("events") if staff_id in e["attendee_ids"] and e["start"][:10] == d),
            key=lambda e: e["start"],
        )
        return {"staff_id": staff_id, "day": d, "events": rows}

    @tool(read_only=True)
    def list_calendar_conflicts(
        self, staff_id: Annotated[str | None, Field(description="Only this staff id.")] = None
    ) -> dict[str, Any]:
        """Pairs of overlapping events that share an attendee (double bookings)."""
        evs = sorted(self.db.values("events"), key=lambda e: e["start"])
        out = []
        for i, a in enumerate(evs):
            for b in evs[i + 1 :]:
                if b["start"] >= a["end"]:
                    break
                shared = sorted(set(a["attendee_ids"]) & set(b["attendee_ids"]))
                if staff_id is not None:
                    shared = [s for s in shared if s == staff_id]
                if shared:
                    out.append({"events": [a["id"], b["id"]], "staff_ids": shared})
        return {"conflicts": out, "count": len(out)}
