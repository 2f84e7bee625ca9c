"""Video meetings (Zoom-like): staff-hosted meetings, many tied to calendar events, with attendance,
recordings and transcripts."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.clock import NOW
from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, paginate, tool
from toolkit.envs.servers.dates import Since, Until, Window, parse_time

MeetingId = Annotated[str, Field(description="Meeting id, e.g. 'vm-001'.")]
StaffId = Annotated[str, Field(description="Staff id, e.g. 'st-001'.")]
MeetingStatus = Literal["scheduled", "ended", "cancelled"]


def _summary(m: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "title", "host_id", "start", "end", "status", "event_id", "participant_ids")
    return {**{k: m[k] for k in keys}, "recorded": m["recording"] is not None}


class VideoMeeting(DomainServer):
    name = "video_meeting"
    description = (
        "Video meetings: schedule, reschedule and cancel meetings (optionally for a calendar event), manage "
        "participants, read attendance, recordings and transcripts, and usage per host."
    )

    def _meeting(self, meeting_id: str) -> dict[str, Any]:
        return self.require(
            "video_meetings", meeting_id, "Meeting", "Use list_video_meetings to find meeting ids."
        )

    def _upcoming(self, meeting_id: str) -> dict[str, Any]:
        m = self._meeting(meeting_id)
        if m["status"] != "scheduled":
            raise conflict(f"meeting {meeting_id} is {m['status']}; only scheduled meetings can be changed.")
        return m

    def _staff(self, staff_id: str) -> dict[str, Any]:
        return self.require("staff", staff_id, "Staff member", "Use search_staff to find staff ids.")

    @tool(read_only=True)
    def list_video_meetings(
        self,
        host_id: Annotated[str | None, Field(description="Only meetings hosted by this staff id.")] = None,
        participant_id: Annotated[
            str | None, Field(description="Only meetings with this staff id invited.")
        ] = None,
        status: Annotated[MeetingStatus | None, Field(description="Only meetings with this status.")] = None,
        since: Since = None,
        until: Until = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Meetings by host, participant, status and start-date window, earliest first."""
        window = Window(since, until)
        rows = [
            _summary(m)
            for m in self.db.values("video_meetings")
            if (host_id is None or m["host_id"] == host_id)
            and (participant_id is None or participant_id in m["participant_ids"])
            and (status is None or m["status"] == status)
            and window(m["start"])
        ]
        return paginate(sorted(rows, key=lambda m: (m["start"], m["id"])), limit, cursor)

    @tool(read_only=True)
    def get_video_meeting(
        self,
        meeting_id: Annotated[str | None, Field(description="Meeting id, e.g. 'vm-001'.")] = None,
        event_id: Annotated[
            str | None, Field(description="Or: the calendar event id the meeting belongs to.")
        ] = None,
    ) -> dict[str, Any]:
        """One meeting (by its id, or by its calendar event id) with join link, attendance and recording."""
        if (meeting_id is None) == (event_id is None):
            raise invalid("give exactly one of meeting_id or event_id.")
        if meeting_id is not None:
            m = self._meeting(meeting_id)
        else:
            self.require("events", event_id, "Event", "Use list_events to find event ids.")
            found = [m for m in self.db.values("video_meetings") if m["event_id"] == event_id]
            if not found:
                raise invalid(
                    f"event {event_id} has no video meeting; schedule_video_meeting can create one."
                )
            m = min(found, key=lambda m: (m["status"] == "cancelled", m["id"]))  # the live one if any
        return {k: v for k, v in m.items() if k != "transcript"} | {
            "has_transcript": m["transcript"] is not None
        }

    @tool(idempotent=False)
    def schedule_video_meeting(
        self,
        title: Annotated[str, Field(min_length=3, description="Meeting title.")],
        host_id: StaffId,
        start: Annotated[
            str, Field(description="Start, ISO date-time like 2025-11-20T14:00 (in the future).")
        ],
        duration_minutes: Annotated[
            int, Field(ge=15, le=240, description="Length in minutes (15-240).")
        ] = 30,
        participant_ids: Annotated[list[str] | None, Field(description="Staff ids to invite.")] = None,
        event_id: Annotated[str | None, Field(description="Calendar event id this meeting is for.")] = None,
    ) -> dict[str, Any]:
        """Schedule a video meeting (optionally for a calendar event, one meeting per event)."""
        self._staff(host_id)
        for p in participant_ids or []:
            self._staff(p)
        begin = parse_time(start, "start")
        if begin <= NOW:
            raise invalid(f"start {start} is not in the future (now is {NOW.isoformat(timespec='minutes')}).")
        if event_id is not None:
            self.require("events", event_id, "Event", "Use list_events to find event ids.")
            if any(
                m["event_id"] == event_id and m["status"] != "cancelled"
                for m in self.db.values("video_meetings")
            ):
                raise conflict(
                    f"event {event_id} already has a video meeting; use get_video_meeting with event_id."
                )
        mid = self.next_id("video_meetings", "vm-")
        meeting = {
            "id": mid,
            "title": title,
            "host_id": host_id,
            "start": begin.isoformat(timespec="minutes"),
            "end": (begin + timedelta(minutes=duration_minutes)).isoformat(timespec="minutes"),
            "participant_ids": sorted({host_id, *(participant_ids or [])}),
            "event_id": event_id,
            "status": "scheduled",
            "join_url": f"https://meet.northwind.example/{mid}",
            "attendance": [],
            "recording": None,
            "transcript": None,
        }
        self.db.put("video_meetings", mid, meeting)
        return meeting

    @tool(idempotent=True)
    def reschedule_video_meeting(
        self,
        meeting_id: MeetingId,
        start: Annotated[str, Field(description="New start, ISO date-time (in the future).")],
        duration_minutes: Annotated[
            int | None, Field(ge=15, le=240, description="New length; default keeps it.")
        ] = None,
    ) -> dict[str, Any]:
        """Move a scheduled meeting to a new time (optionally with a new length)."""
        m = self._upcoming(meeting_id)
        begin = parse_time(start, "start")
        if begin <= NOW:
            raise invalid(f"start {start} is not in the future.")
        minutes = duration_minutes or int(
            (parse_time(m["end"]) - parse_time(m["start"])).total_seconds() // 60
        )
        m = self.db.edit("video_meetings", meeting_id)
        m["start"] = begin.isoformat(timespec="minutes")
        m["end"] = (begin + timedelta(minutes=minutes)).isoformat(timespec="minutes")
        return _summary(m)

    @tool(destructive=True, idempotent=True)
    def cancel_video_meeting(self, meeting_id: MeetingId) -> dict[str, Any]:
        """Cancel a scheduled meeting (it stays on record as cancelled)."""
        self._upcoming(meeting_id)
        m = self.db.edit("video_meetings", meeting_id)
        m["status"] = "cancelled"
        return _summary(m)

    @tool(idempotent=True)
    def add_video_meeting_participant(self, meeting_id: MeetingId, staff_id: StaffId) -> dict[str, Any]:
        """Invite a staff member to a scheduled meeting."""
        self._upcoming(meeting_id)
        self._staff(staff_id)
        m = self.db.edit("video_meetings", meeting_id)
        m["participant_ids"] = sorted({*m["participant_ids"], staff_id})
        return _summary(m)

    @tool(destructive=True, idempotent=True)
    def remove_video_meeting_participant(self, meeting_id: MeetingId, staff_id: StaffId) -> dict[str, Any]:
        """Remove an invited staff member from a scheduled meeting (not the host)."""
        m = self._upcoming(meeting_id)
        if staff_id == m["host_id"]:
            raise invalid(f"{staff_id} hosts {meeting_id}; cancel the meeting instead.")
        if staff_id not in m["participant_ids"]:
            raise conflict(
                f"{staff_id} is not invited to {meeting_id}; participants: {m['participant_ids']}."
            )
        m = self.db.edit("video_meetings", meeting_id)
        m["participant_ids"] = [p for p in m["participant_ids"] if p != staff_id]
        return _summary(m)

    @tool(read_only=True)
    def get_video_meeting_attendance(self, meeting_id: MeetingId) -> dict[str, Any]:
        """Who joined an ended meeting and for how many minutes, and which invitees never joined."""
        m = self._meeting(meeting_id)
        if m["status"] != "ended":
            raise conflict(
                f"meeting {meeting_id} is {m['status']}; attendance exists only for ended meetings."
            )
        joined = {a["staff_id"] for a in m["attendance"]}
        return {
            "meeting_id": meeting_id,
            "attended": sorted(m["attendance"], key=lambda a: a["staff_id"]),
            "absent": [p for p in m["participant_ids"] if p not in joined],
        }

    @tool(read_only=True)
    def list_video_meeting_recordings(
        self,
        host_id: Annotated[str | None, Field(description="Only meetings hosted by this staff id.")] = None,
        since: Since = None,
        until: Until = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Recordings of ended meetings (minutes, size, whether a transcript exists), newest first."""
        window = Window(since, until)
        rows = [
            {
                "meeting_id": m["id"],
                "title": m["title"],
                "host_id": m["host_id"],
                "start": m["start"],
                **m["recording"],
                "has_transcript": m["transcript"] is not None,
            }  # fmt: skip
            for m in self.db.values("video_meetings")
            if m["recording"] and (host_id is None or m["host_id"] == host_id) and window(m["start"])
        ]
        return paginate(
            sorted(rows, key=lambda r: (r["start"], r["meeting_id"]), reverse=True), limit, cursor
        )

    @tool(read_only=True)
    def get_video_meeting_transcript(self, meeting_id: MeetingId) -> dict[str, Any]:
        """The transcript of a recorded meeting."""
        m = self._meeting(meeting_id)
        if m["transcript"] is None:
            why = "was not recorded" if m["recording"] is None else "has a recording but no transcript"
            raise invalid(f"meeting {meeting_id} {why}; list_video_meeting_recordings shows which have one.")
        return {"meeting_id": meeting_id, "title": m["title"], "transcript": m["transcript"]}

    @tool(read_only=True)
    def video_meeting_usage_report(
        self,
        since: Since = None,
        until: Until = None,
    ) -> dict[str, Any]:
        """Per host, over ended meetings in a window: meetings held, meeting minutes and attendee minutes."""
        window = Window(since, until)
        rows: dict[str, dict[str, int]] = defaultdict(
            lambda: {"meetings": 0, "minutes": 0, "attendee_minutes": 0}
        )
        for m in self.db.values("video_meetings"):
            if m["status"] == "ended" and window(m["start"]):
                r = rows[m["host_id"]]
                r["meetings"] += 1
                r["minutes"] += int((parse_time(m["end"]) - parse_time(m["start"])).total_seconds() // 60)
                r["attendee_minutes"] += sum(a["minutes"] for a in m["attendance"])
        out = [{"host_id": h, **r} for h, r in rows.items()]
        out.sort(key=lambda r: (-r["minutes"], r["host_id"]))
        return {"hosts": out, "total_meetings": sum(r["meetings"] for r in out)}
