"""Video meeting templates: meeting lookups, hosting minutes in a date window, cancelling, a video
meeting for a calendar event, and a chain from a meeting's attendance to who missed it."""

from __future__ import annotations

from datetime import datetime, timedelta

from toolkit.envs.clock import NOW, TODAY
from toolkit.synth.base import Answer, Draft, Step
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import field_of
from toolkit.synth.templates.crm import next_key

SERVER = "video_meeting"


def minutes(m: dict) -> int:
    return int((datetime.fromisoformat(m["end"]) - datetime.fromisoformat(m["start"])).total_seconds() // 60)


@template("vm_meeting_field", "lookup", [SERVER])
def meeting_field(ctx: Ctx) -> Draft:
    ctx.need("get_video_meeting")
    m = ctx.choose(ctx.records("video_meetings"))
    fld, words, norm = ctx.choose([("join_url", "join link", "text"), ("start", "start date", "date"),
                                   ("status", "status", "text")])  # fmt: skip
    prompt = ctx.say(
        ["What is the {w} of video meeting {id}?", "Look up meeting {id} and give me its {w}."],
        ["Video call {id}: what's its {w}?"],
        w=words, id=m["id"],
    )  # fmt: skip
    return Draft(
        "", "", prompt, [SERVER],
        [Step("get_video_meeting", {"meeting_id": m["id"]}, purpose=f"read meeting {m['id']}")],
        answers=[Answer(fld, m[fld], norm, text=f"the {words} of {m['id']} is {m[fld]}")],
        reference_answer=f"Meeting {m['id']} ({m['title']}) has {words} {m[fld]}.",
        recompute=lambda r: {fld: field_of(r[0], fld)},
        keep=[m["id"]],
    )  # fmt: skip


@template("vm_host_minutes", "aggregate", [SERVER])
def host_minutes(ctx: Ctx) -> Draft:
    ctx.need("video_meeting_usage_report")
    since = (TODAY - timedelta(days=ctx.rng.randint(8, 25))).isoformat()
    until = TODAY.isoformat()
    held = [
        m
        for m in ctx.records("video_meetings")
        if m["status"] == "ended" and since <= m["start"][:10] <= until
    ]
    host = ctx.choose(sorted({m["host_id"] for m in held}))
    mins = sum(minutes(m) for m in held if m["host_id"] == host)
    prompt = ctx.say(
        [
            "How many minutes of video meetings did staff member {h} host between {a} and {b}?",
            "From {a} to {b}, how long in total (minutes) were the ended video meetings hosted by {h}?",
        ],
        ["Total the meeting minutes {h} hosted over {a} to {b}."],
        h=host, a=since, b=until,
    )  # fmt: skip

    def recompute(r):
        rows = [x for x in field_of(r[0], "hosts") if x["host_id"] == host]
        return {"minutes": rows[0]["minutes"] if rows else 0}

    return Draft(
        "", "", prompt, [SERVER],
        [Step("video_meeting_usage_report", {"since": since, "until": until}, alternatives=["list_video_meetings"],
              normalize={"since": "date", "until": "date"}, purpose="sum meeting minutes per host in the window")],
        answers=[Answer("minutes", mins, "number", text=f"{host} hosted {mins} minutes of meetings")],
        reference_answer=f"Between {since} and {until}, {host} hosted {mins} minutes of video meetings.",
        recompute=recompute,
        keep=[host, since, until],
    )  # fmt: skip


@template("vm_cancel", "write", [SERVER])
def cancel(ctx: Ctx) -> Draft:
    ctx.need("cancel_video_meeting")
    m = ctx.choose(ctx.records("video_meetings", lambda m: m["status"] == "scheduled"))
    prompt = ctx.say(
        ['Cancel the video meeting {id} ("{t}").', "Meeting {id} is off - please cancel it."],
        ['Call off video meeting {id}, "{t}".'],
        id=m["id"], t=m["title"],
    )  # fmt: skip
    check = {"type": "state", "collection": "video_meetings", "key": m["id"], "field": "status",
             "value": "cancelled", "op": "update"}  # fmt: skip
    return Draft(
        "", "", prompt, [SERVER],
        [Step("cancel_video_meeting", {"meeting_id": m["id"]}, purpose="cancel the meeting")],
        state_changes=[(f"Meeting {m['id']} must be cancelled afterwards.", check)],
        reference_answer=f"Cancelled video meeting {m['id']} ({m['title']}).",
        keep=[m["id"]],
        read_only=False,
    )  # fmt: skip


@template("vm_meeting_for_event", "write", ["calendar", SERVER], calls=(2, 2))
def meeting_for_event(ctx: Ctx) -> Draft:
    ctx.need("get_event", "schedule_video_meeting")
    linked = {m["event_id"] for m in ctx.records("video_meetings") if m["event_id"]}
    ev = ctx.choose(
        ctx.records("events", lambda e: e["id"] not in linked and datetime.fromisoformat(e["start"]) > NOW)
    )
    mins = minutes(ev)
    others = [a for a in ev["attendee_ids"] if a != ev["organizer_id"]]
    new_id = next_key(ctx, "video_meetings", "vm-")
    prompt = ctx.say(
        [
            "Set up a video meeting for calendar event {id}: same title, start time and length, hosted by the "
            "organizer, with the other attendees invited and linked to the event.",
            "Event {id} should get a video call. Create it from the event's title, time, duration and attendees "
            "(organizer hosts) and link it to the event.",
        ],
        ["Make calendar event {id} a video meeting: copy its details, organizer as host, attach it to the event."],
        id=ev["id"],
    )  # fmt: skip
    check = {"type": "state", "collection": "video_meetings", "key": new_id, "field": "event_id",
             "value": ev["id"], "op": "create"}  # fmt: skip
    args = {"title": ev["title"], "host_id": ev["organizer_id"], "start": ev["start"], "duration_minutes": mins,
            "participant_ids": others, "event_id": ev["id"]}  # fmt: skip
    return Draft(
        "", "", prompt, ["calendar", SERVER],
        [
            Step("get_event", {"event_id": ev["id"]}, purpose=f"read event {ev['id']}",
                 produces="title, start, organizer and attendees"),
            Step("schedule_video_meeting", args, depends_on=[0],
                 checked_args=["host_id", "start", "duration_minutes", "event_id"], purpose="schedule the meeting"),
        ],
        state_changes=[(f"A new video meeting {new_id} linked to {ev['id']} must exist.", check)],
        reference_answer=f"Scheduled video meeting {new_id} for event {ev['id']} ({ev['title']}) at {ev['start']}.",
        keep=[ev["id"]],
        read_only=False,
    )  # fmt: skip


@template("vm_absentee", "chain", [SERVER, "directory"], calls=(2, 2))
def absentee(ctx: Ctx) -> Draft:
    ctx.need("get_video_meeting_attendance", "get_staff")
    pool = []
    for m in ctx.records("video_meetings", lambda m: m["status"] == "ended"):
        absent = [p for p in m["participant_ids"] if p not in {a["staff_id"] for a in m["attendance"]}]
        if len(absent) == 1:
            pool.append((m, absent[0]))
    if not pool:
        raise Skip("no meeting with exactly one absentee")
    m, who = pool[ctx.rng.randrange(len(pool))]
    person = ctx.world["staff"][who]
    prompt = ctx.say(
        [
            "One invitee never joined video meeting {id}. Who was it, and what team are they in?",
            "Check the attendance of meeting {id}: name the invited person who didn't show up and their team.",
        ],
        ["Who missed video meeting {id} (give name and team)?"],
        id=m["id"],
    )  # fmt: skip

    def recompute(r):
        if field_of(r[0], "absent") != [field_of(r[1], "id")]:
            raise ValueError("absentee differs")
        return {"absentee": field_of(r[1], "name"), "team": field_of(r[1], "team")}

    return Draft(
        "", "", prompt, [SERVER, "directory"],
        [
            Step("get_video_meeting_attendance", {"meeting_id": m["id"]}, purpose="read who joined",
                 produces="absent staff id"),
            Step("get_staff", {"staff_id": who}, depends_on=[0], purpose="read the absentee's profile"),
        ],
        answers=[
            Answer("absentee", person["name"], "name", text=f"{person['name']} did not join {m['id']}"),
            Answer("team", person["team"], "text", text=f"{person['name']} is in the {person['team']} team"),
        ],
        reference_answer=f"{person['name']} ({who}, {person['team']} team) never joined meeting {m['id']}.",
        recompute=recompute,
        keep=[m["id"]],
    )  # fmt: skip


@template("vm_reschedule", "write", [SERVER])
def reschedule(ctx: Ctx) -> Draft:
    ctx.need("reschedule_video_meeting")
    m = ctx.choose(ctx.records("video_meetings", lambda m: m["status"] == "scheduled"))
    day = TODAY + timedelta(days=ctx.rng.randint(1, 20))
    start = f"{day.isoformat()}T{ctx.choose(['09:00', '10:30', '14:00', '16:00'])}"
    if start == m["start"]:
        raise Skip("same time")
    prompt = ctx.say(
        ["Move video meeting {id} to {s}, keeping its length.", "Reschedule meeting {id} ({t}) to start at {s}."],
        ["Push video call {id} to {s}; same duration."],
        id=m["id"], s=start, t=m["title"],
    )  # fmt: skip
    check = {"type": "state", "collection": "video_meetings", "key": m["id"], "field": "start", "value": start,
             "op": "update"}  # fmt: skip
    return Draft(
        "", "", prompt, [SERVER],
        [Step("reschedule_video_meeting", {"meeting_id": m["id"], "start": start}, checked_args=["meeting_id"],
              purpose="move the meeting")],
        state_changes=[(f"Meeting {m['id']} must start at {start} afterwards.", check)],
        reference_answer=f"Meeting {m['id']} now starts at {start}.",
        keep=[m["id"], start],
        read_only=False,
    )  # fmt: skip
