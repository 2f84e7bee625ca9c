"""The social_media, iot_devices, vehicle, issue_tracker and video_meeting servers: every tool called
through a real MCP client session, writes checked in the state diff, error paths, isolation between
episodes, determinism per seed, and cross-references into the core world."""

from __future__ import annotations

import anyio
import pytest

from toolkit.envs import open_episode
from toolkit.envs.registry import DOMAIN_SERVERS
from toolkit.envs.world import generate_world, world_hash

SEED = 0
NEW = ["social_media", "iot_devices", "vehicle", "issue_tracker", "video_meeting"]
MIN_TOOLS = {"social_media": 15, "iot_devices": 25, "vehicle": 20, "issue_tracker": 20, "video_meeting": 10}


def test_servers_registered_with_prove_tool_counts_and_annotations():
    for name in NEW:
        cls = DOMAIN_SERVERS[name]
        assert len(cls.tool_names()) >= MIN_TOOLS[name], name
        for t in cls.templates():
            assert t.description and t.annotations is not None, t.name
            # a list tool that caps its page also lets the model page on
            params = t.parameters.get("properties", {})
            if "limit" in params:
                assert "cursor" in params, t.name
        kinds = {(t.annotations.read_only_hint, t.annotations.destructive_hint) for t in cls.templates()}
        assert (True, None) in kinds and (False, False) in kinds, name  # reads and writes
        assert (False, True) in kinds, name  # and at least one destructive tool


def test_new_worlds_cross_reference_the_core_world_and_are_deterministic():
    w = generate_world(SEED)
    assert world_hash(w) == world_hash(generate_world(SEED))
    assert world_hash(w) != world_hash(generate_world(SEED + 1))
    for p in w["social_profiles"].values():
        ref = {"brand": ("companies", p["company_id"]), "staff": ("staff", p["staff_id"]),
               "customer": ("customers", p["customer_id"])}[p["kind"]]  # fmt: skip
        assert ref[1] in w[ref[0]]
    assert all(d["site_id"] in w["iot_sites"] for d in w["iot_devices"].values())
    assert all(s["manager_id"] in w["staff"] for s in w["iot_sites"].values())
    assert all(v["assigned_to"] in (None, *w["staff"]) for v in w["vehicle_fleet"].values())
    assert all(t["driver_id"] in w["staff"] for t in w["vehicle_trips"].values())
    linked = [t for i in w["issues"].values() for t in i["linked_ticket_ids"]]
    assert linked and all(t in w["tickets"] for t in linked)
    with_event = [m for m in w["video_meetings"].values() if m["event_id"]]
    assert with_event and all(w["events"][m["event_id"]]["organizer_id"] == m["host_id"] for m in with_event)
    # the core world is untouched by the domain builders: same tickets with or without them
    assert len(w["tickets"]) == 40 and len(w["customers"]) == 30


def test_every_new_tool_through_mcp():
    w = generate_world(SEED)
    called: set[str] = set()
    staff_active = sorted(s for s in w["staff"] if w["staff"][s]["active"])
    brand = next(p for p in w["social_profiles"].values() if p["kind"] == "brand")
    customer_prof = next(p for p in w["social_profiles"].values() if p["kind"] == "customer")
    live_post = next(p for p in w["social_posts"].values() if p["status"] == "published")
    draft_post = next(p for p in w["social_posts"].values() if p["status"] == "draft")
    thermostat = next(
        d for d in w["iot_devices"].values() if d["type"] == "thermostat" and d["status"] == "online"
    )
    light = next(d for d in w["iot_devices"].values() if d["type"] == "light" and d["status"] == "online")
    lock = next(d for d in w["iot_devices"].values() if d["type"] == "lock" and d["status"] == "online")
    offline = next(d for d in w["iot_devices"].values() if d["status"] == "offline")
    sensor = next(d for d in w["iot_devices"].values() if d["type"] == "sensor")
    open_alert = next(a for a in w["iot_alerts"].values() if a["acknowledged_by"] is None)
    plug_same_site = next(
        d
        for d in w["iot_devices"].values()
        if d["site_id"] == thermostat["site_id"] and d["id"] != thermostat["id"]
    )
    free_car = next(
        v for v in w["vehicle_fleet"].values() if v["status"] == "available" and not v["assigned_to"]
    )
    driver = next(s for s in staff_active if w["staff"][s]["city"] == free_car["city"]) if any(
        w["staff"][s]["city"] == free_car["city"] for s in staff_active) else staff_active[0]  # fmt: skip
    scheduled_svc = next(s for s in w["vehicle_services"].values() if s["status"] == "scheduled")
    done_svc = next(s for s in w["vehicle_services"].values() if s["status"] == "done")
    backlog = next(i for i in w["issues"].values() if i["status"] == "backlog")
    linked = next(i for i in w["issues"].values() if i["linked_ticket_ids"])
    ticket = next(iter(w["tickets"]))
    ended = next(m for m in w["video_meetings"].values() if m["status"] == "ended" and m["transcript"])
    upcoming = next(m for m in w["video_meetings"].values() if m["status"] == "scheduled")
    ev_meeting = next(m for m in w["video_meetings"].values() if m["event_id"] and m["status"] == "scheduled")

    async def main():
        async with open_episode(seed=SEED, servers=NEW, transport="jsonrpc") as tb:

            async def call(name, args, expect_ok=True):
                r = await tb.call_tool(name, args)
                assert r.ok == expect_ok, (name, args, r.text)
                called.add(name)
                return r.structured if r.ok else r.text

            # social_media
            page = await call("list_social_profiles", {"kind": "brand", "limit": 3})
            assert (
                page["total"] == len(w["companies"])
                and len(page["items"]) == 3
                and page["next_cursor"] == "3"
            )
            prof = await call("get_social_profile", {"profile_id": brand["id"]})
            assert prof["company_id"] == brand["company_id"] and prof["followers"] == len(
                prof["follower_ids"]
            )
            await call("update_social_profile", {"profile_id": brand["id"], "bio": "We build robots."})
            posts = await call(
                "list_social_posts", {"status": "published", "since": "2025-11-01", "limit": 50}
            )
            assert all(p["created"] >= "2025-11-01" and p["status"] == "published" for p in posts["items"])
            got = await call("get_social_post", {"post_id": live_post["id"]})
            assert got["likes"] == len(live_post["liked_by"])
            new = await call(
                "create_social_post", {"profile_id": brand["id"], "text": "Hello", "hashtags": ["#Launch"]}
            )
            assert new["status"] == "published" and new["hashtags"] == ["launch"]
            err = await call("create_social_post", {"profile_id": customer_prof["id"], "text": "x"}, False)
            assert "customer profile" in err
            await call("edit_social_post", {"post_id": new["id"], "text": "Hello world"})
            liker = next(p for p in w["social_profiles"] if p not in live_post["liked_by"])
            assert (await call("like_social_post", {"post_id": live_post["id"], "profile_id": liker}))[
                "likes"
            ] == len(live_post["liked_by"]) + 1
            assert "only published" in await call(
                "like_social_post", {"post_id": draft_post["id"], "profile_id": liker}, False
            )
            c = await call(
                "add_social_comment",
                {"post_id": new["id"], "profile_id": customer_prof["id"], "text": "Nice"},
            )
            assert (await call("list_social_comments", {"post_id": new["id"]}))["total"] == 1
            await call("hide_social_comment", {"comment_id": c["id"]})
            assert (await call("list_social_comments", {"post_id": new["id"]}))["total"] == 0
            target = next(p for p in w["social_profiles"] if p not in brand["following"] and p != brand["id"])
            assert (
                target
                in (await call("follow_social_profile", {"follower_id": brand["id"], "followee_id": target}))[
                    "following"
                ]
            )
            await call("unfollow_social_profile", {"follower_id": brand["id"], "followee_id": target})
            await call("unfollow_social_profile", {"follower_id": brand["id"], "followee_id": target}, False)
            stats = await call("social_engagement_stats", {"since": "2025-10-01", "until": "2025-11-15"})
            assert stats["posts"] >= 1 and stats["likes"] >= 1
            tags = await call("trending_social_hashtags", {"top": 3})
            assert len(tags["hashtags"]) == 3
            assert (await call("delete_social_post", {"post_id": new["id"]}))["comments_deleted"] == 1
            assert "Did you mean" in await call("get_social_post", {"post_id": "post-0001"}, False)

            # iot_devices
            sites = await call("list_iot_sites", {})
            assert sum(s["devices"] for s in sites["sites"]) == len(w["iot_devices"])
            site = await call("get_iot_site", {"site_id": thermostat["site_id"]})
            assert sum(site["devices_by_type"].values()) == sum(
                d["site_id"] == thermostat["site_id"] for d in w["iot_devices"].values()
            )
            devs = await call("list_iot_devices", {"type": "lock", "limit": 50})
            assert devs["total"] == sum(d["type"] == "lock" for d in w["iot_devices"].values())
            assert (await call("get_iot_device", {"device_id": thermostat["id"]}))["state"]["target_c"]
            assert (await call("set_iot_thermostat", {"device_id": thermostat["id"], "target_c": 23}))[
                "state"
            ]["target_c"] == 23.0
            assert "not a thermostat" in await call(
                "set_iot_thermostat", {"device_id": light["id"], "target_c": 20}, False
            )
            assert (await call("set_iot_light_brightness", {"device_id": light["id"], "brightness": 0}))[
                "state"
            ]["power"] == "off"
            assert (await call("set_iot_lock", {"device_id": lock["id"], "locked": False}))["state"][
                "locked"
            ] is False
            assert "offline" in await call(
                "set_iot_device_power", {"device_id": offline["id"], "on": True}, False
            )
            await call("set_iot_device_power", {"device_id": thermostat["id"], "on": False})
            rd = await call(
                "list_iot_readings",
                {"device_id": sensor["id"], "metric": "humidity_pct", "since": "2025-11-12"},
            )
            assert all(r["metric"] == "humidity_pct" and r["at"] >= "2025-11-12" for r in rd["items"])
            st = await call("iot_reading_stats", {"device_id": sensor["id"], "metric": "temperature_c"})
            assert st["count"] == 14 and st["min"] <= st["mean"] <= st["max"]
            assert "has no power_w" in await call(
                "iot_reading_stats", {"device_id": sensor["id"], "metric": "power_w"}, False
            )
            low = await call("iot_battery_report", {"below_pct": 30})
            assert all(r["battery_pct"] < 30 for r in low["devices"])
            counts = await call("iot_device_counts", {"group_by": "status"})
            assert counts["total"] == len(w["iot_devices"])
            alerts = await call("list_iot_alerts", {"resolved": False, "severity": "critical", "limit": 50})
            assert all(a["severity"] == "critical" and not a["resolved"] for a in alerts["items"])
            assert "not acknowledged" in await call(
                "resolve_iot_alert", {"alert_id": open_alert["id"]}, False
            )
            await call("acknowledge_iot_alert", {"alert_id": open_alert["id"], "staff_id": staff_active[0]})
            assert (await call("resolve_iot_alert", {"alert_id": open_alert["id"]}))["resolved"] is True
            autos = await call("list_iot_automations", {"enabled": True, "limit": 50})
            assert all(a["enabled"] for a in autos["items"])
            a0 = next(iter(w["iot_automations"]))
            assert (await call("get_iot_automation", {"automation_id": a0}))["trigger_device_name"]
            rule = await call("create_iot_automation", {"name": "Cool down", "trigger_device_id": thermostat["id"],
                                                        "condition": "above", "threshold": 25,
                                                        "action_device_id": plug_same_site["id"], "action": "power_off"})  # fmt: skip
            assert (
                await call("set_iot_automation_enabled", {"automation_id": rule["id"], "enabled": False})
            )["enabled"] is False
            await call("delete_iot_automation", {"automation_id": rule["id"]})
            fw = await call("check_iot_firmware", {"outdated_only": True, "limit": 50})
            assert all(r["outdated"] for r in fw["items"])
            stale = next(r for r in fw["items"] if w["iot_devices"][r["device_id"]]["status"] == "online")
            assert (await call("update_iot_firmware", {"device_id": stale["device_id"]}))[
                "firmware"
            ] == stale["latest"]
            dev = await call("register_iot_device", {"site_id": thermostat["site_id"], "name": "Test plug", "type": "plug",
                                                     "room": "kitchen"})  # fmt: skip
            assert "not one of" in await call(
                "move_iot_device", {"device_id": dev["id"], "room": "attic"}, False
            )
            await call("move_iot_device", {"device_id": dev["id"], "room": "lobby"})
            await call("rename_iot_device", {"device_id": dev["id"], "name": "Lobby plug"})
            await call("remove_iot_device", {"device_id": dev["id"]})

            # vehicle
            cars = await call("list_vehicles", {"city": free_car["city"], "limit": 50})
            assert free_car["id"] in [v["id"] for v in cars["items"]]
            assert (await call("get_vehicle", {"vehicle_id": free_car["id"]}))["plate"] == free_car["plate"]
            assert (await call("get_vehicle_telemetry", {"vehicle_id": free_car["id"]}))[
                "odometer_km"
            ] == free_car["odometer_km"]
            assert (await call("assign_vehicle", {"vehicle_id": free_car["id"], "staff_id": driver}))[
                "status"
            ] == "in_use"
            assert (await call("unassign_vehicle", {"vehicle_id": free_car["id"]}))["status"] == "available"
            await call("set_vehicle_status", {"vehicle_id": free_car["id"], "status": "in_use"}, False)
            await call("set_vehicle_lock", {"vehicle_id": free_car["id"], "locked": False})
            trips = await call(
                "list_vehicle_trips", {"since": "2025-10-15", "until": "2025-11-15", "limit": 50}
            )
            assert all("2025-10-15" <= t["date"] <= "2025-11-15" for t in trips["items"])
            trip = await call("log_vehicle_trip", {"vehicle_id": free_car["id"], "driver_id": driver, "km": 42.4,
                                                   "purpose": "customer visit"})  # fmt: skip
            assert trip["odometer_km"] == free_car["odometer_km"] + 42
            rep = await call("vehicle_mileage_report", {"group_by": "driver_id"})
            assert rep["total_km"] == pytest.approx(sum(t["km"] for t in w["vehicle_trips"].values()) + 42.4)
            svcs = await call("list_vehicle_services", {"status": "scheduled", "limit": 50})
            assert svcs["total"] == sum(s["status"] == "scheduled" for s in w["vehicle_services"].values())
            new_svc = await call("schedule_vehicle_service", {"vehicle_id": free_car["id"], "kind": "inspection",
                                                              "date": "2025-12-01"})  # fmt: skip
            await call(
                "schedule_vehicle_service",
                {"vehicle_id": free_car["id"], "kind": "brakes", "date": "2025-12-01"},
                False,
            )
            assert "in the past" in await call(
                "schedule_vehicle_service",
                {"vehicle_id": free_car["id"], "kind": "brakes", "date": "2025-01-01"},
                False,
            )
            await call("complete_vehicle_service", {"service_id": scheduled_svc["id"], "cost": 120})
            await call("cancel_vehicle_service", {"service_id": done_svc["id"]}, False)
            await call("cancel_vehicle_service", {"service_id": new_svc["id"]})
            fuel = await call("list_vehicle_fuel_logs", {"since": "2025-11-01", "limit": 50})
            assert all(f["date"] >= "2025-11-01" for f in fuel["items"])
            await call(
                "log_vehicle_refuel",
                {"vehicle_id": free_car["id"], "amount": 30, "cost": 50, "staff_id": driver},
            )
            costs = await call("vehicle_fuel_cost_report", {"group_by": "fuel_type"})
            assert costs["total_cost"] == pytest.approx(
                sum(f["cost"] for f in w["vehicle_fuel_logs"].values()) + 50
            )
            res = await call("list_vehicle_reservations", {"since": "2025-11-15", "limit": 50})
            assert res["total"] == len(w["vehicle_reservations"])
            avail = await call("find_available_vehicles", {"city": free_car["city"], "start_date": "2025-12-20",
                                                           "end_date": "2025-12-21"})  # fmt: skip
            assert free_car["id"] in [v["id"] for v in avail["vehicles"]]
            assert "fleet cities" in await call(
                "find_available_vehicles",
                {"city": "Atlantis", "start_date": "2025-12-20", "end_date": "2025-12-21"},
                False,
            )
            r = await call("reserve_vehicle", {"vehicle_id": free_car["id"], "staff_id": driver, "start_date": "2025-12-20",
                                               "end_date": "2025-12-21", "purpose": "trade fair"})  # fmt: skip
            assert "already reserved" in await call(
                "reserve_vehicle", {"vehicle_id": free_car["id"], "staff_id": driver, "start_date": "2025-12-21",
                                    "end_date": "2025-12-22", "purpose": "again"}, False)  # fmt: skip
            await call("cancel_vehicle_reservation", {"reservation_id": r["id"]})

            # issue_tracker
            projects = await call("list_issue_projects", {})
            assert {p["id"] for p in projects["projects"]} == set(w["issue_projects"])
            proj = await call("get_issue_project", {"project_id": "web"})
            assert proj["issues"] == sum(i["project_id"] == "WEB" for i in w["issues"].values())
            sprints = await call("list_issue_sprints", {"project_id": "WEB", "state": "active"})
            active = sprints["sprints"][0]["id"]
            report = await call("get_issue_sprint_report", {"sprint_id": active})
            assert report["points_total"] == report["points_done"] + report["points_remaining"]
            found = await call("search_issues", {"type": "bug", "status": "backlog", "limit": 50})
            assert all(i["type"] == "bug" and i["status"] == "backlog" for i in found["items"])
            assert (await call("get_issue", {"issue_id": linked["id"]}))["linked_ticket_ids"] == linked[
                "linked_ticket_ids"
            ]
            issue = await call(
                "create_issue", {"project_id": "WEB", "title": "Broken link", "labels": ["Frontend"]}
            )
            assert issue["id"] == f"WEB-{sum(i['project_id'] == 'WEB' for i in w['issues'].values()) + 1}"
            await call("update_issue", {"issue_id": issue["id"], "story_points": 3, "priority": "high"})
            assert "allowed moves" in await call(
                "transition_issue", {"issue_id": issue["id"], "status": "done"}, False
            )
            await call("transition_issue", {"issue_id": issue["id"], "status": "todo"})
            await call("assign_issue", {"issue_id": issue["id"], "assignee_id": staff_active[0]})
            await call("move_issue_to_sprint", {"issue_id": issue["id"], "sprint_id": active})
            await call("move_issue_to_sprint", {"issue_id": issue["id"], "sprint_id": "API-S2"}, False)
            await call(
                "add_issue_comment",
                {"issue_id": issue["id"], "body": "Repro attached", "author_id": staff_active[0]},
            )
            assert (await call("list_issue_comments", {"issue_id": issue["id"]}))["total"] == 1
            assert (
                await call(
                    "set_issue_labels", {"issue_id": issue["id"], "add": ["bug-bash"], "remove": ["frontend"]}
                )
            )["labels"] == ["bug-bash"]
            assert (await call("link_issue_ticket", {"issue_id": issue["id"], "ticket_id": ticket}))[
                "linked_ticket_ids"
            ] == [ticket]
            assert issue["id"] in [
                i["id"] for i in (await call("list_issues_for_ticket", {"ticket_id": ticket}))["issues"]
            ]
            await call("unlink_issue_ticket", {"issue_id": issue["id"], "ticket_id": ticket})
            await call("link_issue_ticket", {"issue_id": issue["id"], "ticket_id": "t-9999"}, False)
            raw = await call("create_issue", {"project_id": "WEB", "title": "Not estimated yet"})
            await call("move_issue_to_sprint", {"issue_id": raw["id"], "sprint_id": active})
            report = await call("get_issue_sprint_report", {"sprint_id": active})
            assert report["unestimated"] == [raw["id"]] and raw["id"] in report["issues"]
            await call("delete_issue", {"issue_id": raw["id"]})
            stats = await call("issue_stats", {"group_by": "type"})
            assert stats["total"] == len(w["issues"]) + 1
            closed = await call("close_issue_sprint", {"sprint_id": active})
            assert issue["id"] in closed["moved_issues"] and closed["moved_to"] == "WEB-S3"
            await call("delete_issue", {"issue_id": backlog["id"]})

            # video_meeting
            mts = await call("list_video_meetings", {"status": "ended", "limit": 50})
            assert all(m["status"] == "ended" for m in mts["items"])
            assert (await call("get_video_meeting", {"event_id": ev_meeting["event_id"]}))[
                "id"
            ] == ev_meeting["id"]
            await call("get_video_meeting", {}, False)
            vm = await call("schedule_video_meeting", {"title": "Kickoff", "host_id": staff_active[0],
                                                       "start": "2025-11-20T10:00", "duration_minutes": 45,
                                                       "participant_ids": [staff_active[1]]})  # fmt: skip
            assert vm["end"] == "2025-11-20T10:45"
            await call("cancel_video_meeting", {"meeting_id": ev_meeting["id"]})
            redo = await call("schedule_video_meeting", {"title": "Redo", "host_id": ev_meeting["host_id"],
                                                         "start": "2025-12-10T10:00", "event_id": ev_meeting["event_id"]})  # fmt: skip
            assert (await call("get_video_meeting", {"event_id": ev_meeting["event_id"]}))["id"] == redo["id"]
            await call("schedule_video_meeting", {"title": "Dup", "host_id": staff_active[0], "start": "2025-11-21T10:00",
                                                  "event_id": ev_meeting["event_id"]}, False)  # fmt: skip
            assert (
                await call("reschedule_video_meeting", {"meeting_id": vm["id"], "start": "2025-11-21T09:00"})
            )["end"] == "2025-11-21T09:45"
            await call("add_video_meeting_participant", {"meeting_id": vm["id"], "staff_id": staff_active[2]})
            await call(
                "remove_video_meeting_participant", {"meeting_id": vm["id"], "staff_id": staff_active[1]}
            )
            await call(
                "remove_video_meeting_participant",
                {"meeting_id": vm["id"], "staff_id": staff_active[0]},
                False,
            )
            att = await call("get_video_meeting_attendance", {"meeting_id": ended["id"]})
            assert {a["staff_id"] for a in att["attended"]} | set(att["absent"]) == set(
                ended["participant_ids"]
            )
            recs = await call("list_video_meeting_recordings", {"limit": 50})
            assert ended["id"] in [r["meeting_id"] for r in recs["items"]]
            assert (
                "Agenda"
                in (await call("get_video_meeting_transcript", {"meeting_id": ended["id"]}))["transcript"]
            )
            await call("get_video_meeting_transcript", {"meeting_id": upcoming["id"]}, False)
            usage = await call("video_meeting_usage_report", {"since": "2025-10-01", "until": "2025-11-15"})
            assert usage["total_meetings"] == sum(
                m["status"] == "ended" for m in w["video_meetings"].values()
            )
            await call("cancel_video_meeting", {"meeting_id": vm["id"]})
            await call("cancel_video_meeting", {"meeting_id": ended["id"]}, False)

            diff = tb.state_diff()
            assert diff[f"social_profiles/{brand['id']}"]["after"]["bio"] == "We build robots."
            assert diff[f"social_posts/{live_post['id']}"]["after"]["liked_by"].count(liker) == 1
            assert diff[f"iot_devices/{thermostat['id']}"]["after"]["state"] == {
                "power": "off",
                "target_c": 23.0,
            }
            assert diff[f"iot_alerts/{open_alert['id']}"]["after"]["resolved"] is True
            assert f"iot_devices/{dev['id']}" not in diff  # registered then removed: no net change
            assert diff[f"vehicle_fleet/{free_car['id']}"]["after"]["fuel_pct"] == 100
            assert diff[f"vehicle_services/{scheduled_svc['id']}"]["after"]["status"] == "done"
            assert diff[f"vehicle_trips/{trip['id']}"]["before"] is None
            assert diff[f"issues/{issue['id']}"]["after"]["sprint_id"] == "WEB-S3"
            assert diff[f"issues/{backlog['id']}"]["after"] is None
            assert diff[f"issue_sprints/{active}"]["after"]["state"] == "closed"
            assert diff[f"video_meetings/{vm['id']}"]["after"]["status"] == "cancelled"

    anyio.run(main)
    expected = {n for s in NEW for n in DOMAIN_SERVERS[s].tool_names()}
    assert called == expected, f"tools never called: {sorted(expected - called)}"


def test_writes_are_isolated_between_episodes():
    w = generate_world(SEED)
    car = next(iter(w["vehicle_fleet"]))

    async def main():
        async with open_episode(seed=SEED, servers=["vehicle", "issue_tracker"]) as a:
            async with open_episode(seed=SEED, servers=["vehicle", "issue_tracker"]) as b:
                r = await a.call_tool("set_vehicle_lock", {"vehicle_id": car, "locked": False})
                assert r.ok
                await a.call_tool("create_issue", {"project_id": "API", "title": "Only in A"})
                tel = await b.call_tool("get_vehicle_telemetry", {"vehicle_id": car})
                assert tel.structured["locked"] == w["vehicle_fleet"][car]["locked"]
                found = await b.call_tool("search_issues", {"query": "Only in A"})
                assert found.structured["total"] == 0 and not b.state_diff()
                assert f"vehicle_fleet/{car}" in a.state_diff()

    anyio.run(main)


def test_malformed_calls_come_back_as_tool_errors():
    async def main():
        async with open_episode(seed=SEED, servers=NEW) as tb:
            bad = [
                ("list_vehicles", {"limit": 500}),
                ("list_social_posts", {"since": "last week"}),
                ("list_social_posts", {"since": "2025-11-10", "until": "2025-11-01"}),
                ("set_iot_thermostat", {"device_id": "dev-001", "target_c": 99}),
                ("list_iot_devices", {"cursor": "abc"}),
                ("get_iot_device", {"device_id": "dev-1"}),
                ("search_issues", {"status": "closed"}),
            ]
            for name, args in bad:
                r = await tb.call_tool(name, args)
                assert not r.ok and r.text, (name, args)
            r = await tb.call_tool("get_iot_device", {"device_id": "dev-01"})
            assert "Did you mean" in r.text
            assert not tb.state_diff()

    anyio.run(main)


@pytest.mark.integration
def test_mcp_rl_serve_runs_each_new_server_over_stdio():
    import json
    import sys
    from pathlib import Path

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    root = Path(__file__).resolve().parents[1]
    probe = {
        "social_media": ("list_social_profiles", {"kind": "brand"}),
        "iot_devices": ("list_iot_sites", {}),
        "vehicle": ("set_vehicle_lock", {"vehicle_id": "veh-001", "locked": False}),
        "issue_tracker": ("get_issue", {"issue_id": "WEB-1"}),
        "video_meeting": ("list_video_meetings", {"status": "ended"}),
    }

    async def one(name: str) -> None:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "toolkit.cli", "serve", name, "--seed", "3"], cwd=str(root)
        )
        async with Client(params, read_timeout_seconds=30) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == set(DOMAIN_SERVERS[name].tool_names())
            tool, args = probe[name]
            r = await client.call_tool(tool, args)
            assert not r.is_error, r.content
            diff = json.loads((await client.read_resource("world://diff")).contents[0].text)
            assert list(diff) == (["vehicle_fleet/veh-001"] if name == "vehicle" else [])

    async def main():
        for name in NEW:
            await one(name)

    anyio.run(main)


def test_new_worlds_do_not_depend_on_the_hash_seed():
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[1])
    code = (
        "from toolkit.envs.world import generate_world, world_hash;"
        "w = generate_world(5);"
        "mine = {k: v for k, v in w.items() if k.startswith(('social_', 'iot_', 'vehicle_', 'issue', 'video_'))};"
        "print(len(mine), world_hash(mine))"
    )

    def run(hash_seed: str) -> list[str]:
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": root}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, check=True
        )
        return out.stdout.split()

    first, second = run("1"), run("2")
    assert first == second and first[0] == "18"  # all 18 collections of the five domains, same bytes
