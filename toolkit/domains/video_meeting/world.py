"""Video meeting world: staff-hosted meetings, many tied to calendar events held by video call, with
participants, attendance, recordings and transcripts."""

from __future__ import annotations

from datetime import datetime, timedelta
from random import Random

from toolkit.envs.clock import NOW, TODAY, World, iso

TITLES = ["Customer onboarding", "Quarterly review", "Support escalation", "Product demo", "Hiring panel"]


def add_video_meeting(w: World, rng: Random) -> None:
    staff_ids = sorted(w["staff"])
    meetings: dict[str, dict] = {}

    def add(
        title: str, host: str, start: datetime, minutes: int, participants: list[str], event_id: str | None
    ):
        mid = f"vm-{len(meetings) + 1:03d}"
        end = start + timedelta(minutes=minutes)
        status = "ended" if end <= NOW else "scheduled"
        if status == "scheduled" and rng.random() < 0.1:
            status = "cancelled"
        attendance = []
        if status == "ended":
            for p in participants:
                if p == host or rng.random() < 0.8:
                    attendance.append({"staff_id": p, "minutes": rng.randint(max(1, minutes // 3), minutes)})
        recorded = status == "ended" and rng.random() < 0.6
        meetings[mid] = {
            "id": mid,
            "title": title,
            "host_id": host,
            "start": iso(start),
            "end": iso(end),
            "participant_ids": sorted(set(participants) | {host}),
            "event_id": event_id,
            "status": status,
            "join_url": f"https://meet.northwind.example/{mid}",
            "attendance": attendance,
            "recording": {"minutes": minutes, "size_mb": round(minutes * rng.uniform(6, 12), 1)}
            if recorded
            else None,
            "transcript": (
                f"{w['staff'][host]['name']}: Welcome everyone. Agenda: {title.lower()}. "
                "Action items were assigned at the end."
            )
            if recorded and rng.random() < 0.7
            else None,  # fmt: skip
        }

    for e in sorted(w["events"].values(), key=lambda e: e["id"]):
        if e["location"] == "Video call":
            start, end = datetime.fromisoformat(e["start"]), datetime.fromisoformat(e["end"])
            add(
                e["title"],
                e["organizer_id"],
                start,
                int((end - start).total_seconds() // 60),
                e["attendee_ids"],
                e["id"],
            )
    while len(meetings) < 26:
        day = TODAY + timedelta(days=rng.randint(-20, 14))
        start = datetime(
            day.year, day.month, day.day, rng.choice([9, 10, 11, 14, 15, 16]), rng.choice([0, 30])
        )
        host = rng.choice(staff_ids)
        add(
            rng.choice(TITLES),
            host,
            start,
            rng.choice([30, 45, 60]),
            rng.sample(staff_ids, rng.randint(1, 5)),
            None,
        )
    w["video_meetings"] = meetings
