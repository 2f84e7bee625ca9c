"""IoT templates: device lookups, sensor statistics over a date window, battery counts, thermostat
writes, and a chain from a site's open alerts to its manager in the staff directory."""

from __future__ import annotations

from datetime import timedelta

from toolkit.envs.clock import TODAY
from toolkit.synth.base import Answer, Draft, Step
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import ALL, field_of, total

SERVER = "iot_devices"
DEVICE_FIELDS = {"firmware": "firmware version", "room": "room", "status": "connection status"}


@template("iot_device_field", "lookup", [SERVER])
def device_field(ctx: Ctx) -> Draft:
    ctx.need("get_iot_device")
    dev = ctx.choose(ctx.records("iot_devices"))
    fld = ctx.choose(sorted(DEVICE_FIELDS))
    prompt = ctx.say(
        ["What is the {w} of IoT device {id}?", "Check smart device {id} and tell me its {w}."],
        ["Device {id}: which {w} does it report?"],
        w=DEVICE_FIELDS[fld],
        id=dev["id"],
    )
    return Draft(
        "", "", prompt, [SERVER],
        [Step("get_iot_device", {"device_id": dev["id"]}, purpose=f"read device {dev['id']}")],
        answers=[Answer(fld, dev[fld], "text", text=f"the {DEVICE_FIELDS[fld]} of {dev['id']} is {dev[fld]}")],
        reference_answer=f"Device {dev['id']} ({dev['name']}) has {DEVICE_FIELDS[fld]} {dev[fld]}.",
        recompute=lambda r: {fld: field_of(r[0], fld)},
        keep=[dev["id"]],
    )  # fmt: skip


@template("iot_reading_mean", "aggregate", [SERVER])
def reading_mean(ctx: Ctx) -> Draft:
    ctx.need("iot_reading_stats")
    readings = ctx.records("iot_readings")
    dev = ctx.choose(ctx.records("iot_devices", lambda d: d["type"] in ("sensor", "thermostat", "plug")))
    metric = ctx.choose(sorted({r["metric"] for r in readings if r["device_id"] == dev["id"]}))
    since = (TODAY - timedelta(days=ctx.rng.randint(2, 6))).isoformat()
    until = (TODAY - timedelta(days=ctx.rng.randint(0, 1))).isoformat()
    vals = [r["value"] for r in readings if r["device_id"] == dev["id"] and r["metric"] == metric
            and since <= r["at"][:10] <= until]  # fmt: skip
    if not vals:
        raise Skip("no readings in the window")
    stat = ctx.choose(["mean", "max", "min"])
    value = {"mean": round(sum(vals) / len(vals), 1), "max": max(vals), "min": min(vals)}[stat]
    words = {"mean": "average", "max": "highest", "min": "lowest"}[stat]
    unit = {"temperature_c": "temperature (C)", "humidity_pct": "humidity (%)", "power_w": "power draw (W)"}[
        metric
    ]
    prompt = ctx.say(
        [
            "What was the {w} {u} reported by device {id} between {a} and {b}?",
            "From {a} to {b}, what {w} {u} did IoT device {id} measure?",
        ],
        ["Give me device {id}'s {w} {u} over {a} to {b}."],
        w=words, u=unit, id=dev["id"], a=since, b=until,
    )  # fmt: skip
    return Draft(
        "", "", prompt, [SERVER],
        [Step("iot_reading_stats", {"device_id": dev["id"], "metric": metric, "since": since, "until": until},
              alternatives=["list_iot_readings"], normalize={"since": "date", "until": "date"},
              purpose=f"summarise the {metric} readings in the window")],
        answers=[Answer(stat, value, "number", 0.1, text=f"the {words} {unit} was {value}")],
        reference_answer=f"Between {since} and {until} device {dev['id']} reported {len(vals)} readings; the {words} "
        f"{unit} was {value}.",
        recompute=lambda r: {stat: field_of(r[0], stat)},
        keep=[dev["id"], since, until],
    )  # fmt: skip


@template("iot_low_battery", "aggregate", [SERVER])
def low_battery(ctx: Ctx) -> Draft:
    ctx.need("iot_battery_report")
    site = ctx.choose(ctx.records("iot_sites"))
    below = ctx.choose([20, 30, 50])
    pool = ctx.records("iot_devices", lambda d: d["site_id"] == site["id"] and d["battery_pct"] is not None)
    n = sum(d["battery_pct"] < below for d in pool)
    if n == 0 and ctx.rng.random() < 0.7:
        raise Skip("mostly ask about sites that have low batteries")
    prompt = ctx.say(
        [
            "How many devices at site {s} have a battery below {b}%?",
            "Count the battery-powered devices in the {c} office ({s}) that are under {b}% charge.",
        ],
        ["At {s}, how many devices are running under {b}% battery?"],
        s=site["id"], c=site["city"], b=below,
    )  # fmt: skip
    return Draft(
        "", "", prompt, [SERVER],
        [Step("iot_battery_report", {"below_pct": below, "site_id": site["id"]},
              alternatives=["list_iot_devices"], purpose="list low-battery devices at the site")],
        answers=[Answer("count", n, "number", text=f"{n} devices at {site['id']} are below {below}% battery")],
        reference_answer=f"{n} devices at {site['id']} are below {below}% battery.",
        recompute=lambda r: {"count": len(field_of(r[0], "devices"))},
        keep=[site["id"]],
    )  # fmt: skip


@template("iot_set_thermostat", "write", [SERVER])
def set_thermostat(ctx: Ctx) -> Draft:
    ctx.need("set_iot_thermostat")
    dev = ctx.choose(
        ctx.records("iot_devices", lambda d: d["type"] == "thermostat" and d["status"] == "online")
    )
    target = float(ctx.choose([x for x in (18, 19, 20, 21, 22, 23) if x != dev["state"]["target_c"]]))
    prompt = ctx.say(
        ["Set thermostat {id} to {t} degrees.", "Change the target temperature of {name} ({id}) to {t} C."],
        ["Please have thermostat {id} aim for {t} degrees Celsius."],
        id=dev["id"], name=dev["name"], t=int(target),
    )  # fmt: skip
    check = {"type": "state", "collection": "iot_devices", "key": dev["id"], "field": "state",
             "value": {**dev["state"], "target_c": target}, "op": "update"}  # fmt: skip
    return Draft(
        "", "", prompt, [SERVER],
        [Step("set_iot_thermostat", {"device_id": dev["id"], "target_c": target}, normalize={"target_c": "number"},
              purpose="set the target temperature")],
        state_changes=[(f"Thermostat {dev['id']} must target {target} C afterwards.", check)],
        reference_answer=f"Thermostat {dev['id']} now targets {int(target)} C.",
        keep=[dev["id"]],
        read_only=False,
    )  # fmt: skip


@template("iot_site_alerts_manager", "chain", [SERVER, "directory"], calls=(3, 3))
def site_alerts_manager(ctx: Ctx) -> Draft:
    ctx.need("list_iot_sites", "list_iot_alerts", "get_staff")
    site = ctx.choose(ctx.records("iot_sites"))
    sev = ctx.choose(["critical", "warning"])
    n = len(
        ctx.records(
            "iot_alerts", lambda a: a["site_id"] == site["id"] and a["severity"] == sev and not a["resolved"]
        )
    )
    mgr = ctx.world["staff"][site["manager_id"]]
    prompt = ctx.say(
        [
            "How many unresolved {sev} IoT alerts does the {c} office have, and who manages that site? Give the manager's email too.",
            "For our {c} site: count the open {sev} device alerts and tell me the site manager's name and email.",
        ],
        ["I need the number of {sev} alerts still open at the {c} office plus the name and email of its manager."],
        sev=sev, c=site["city"],
    )  # fmt: skip

    def recompute(r):
        sites = [s for s in field_of(r[0], "sites") if s["city"] == site["city"]]
        if len(sites) != 1 or sites[0]["manager_id"] != field_of(r[2], "id"):
            raise ValueError("wrong site or manager")
        return {"count": total(r[1]), "manager": field_of(r[2], "name"), "email": field_of(r[2], "email")}

    return Draft(
        "", "", prompt, [SERVER, "directory"],
        [
            Step("list_iot_sites", {}, purpose="find the site and its manager", produces="site id and manager id"),
            Step("list_iot_alerts", {"site_id": site["id"], "severity": sev, "resolved": False, "limit": ALL},
                 depends_on=[0], checked_args=["site_id", "severity", "resolved"], purpose="list the open alerts"),
            Step("get_staff", {"staff_id": mgr["id"]}, depends_on=[0], purpose="read the manager's profile"),
        ],
        answers=[
            Answer("count", n, "number", text=f"{site['city']} has {n} unresolved {sev} alerts"),
            Answer("manager", mgr["name"], "name", text=f"the site manager is {mgr['name']}"),
            Answer("email", mgr["email"], "text", text=f"the manager's email is {mgr['email']}"),
        ],
        reference_answer=f"The {site['city']} office ({site['id']}) has {n} unresolved {sev} alerts; its manager is "
        f"{mgr['name']} ({mgr['email']}).",
        recompute=recompute,
        keep=[site["city"]],
    )  # fmt: skip


@template("iot_close_alert", "write", [SERVER], calls=(2, 2))
def close_alert(ctx: Ctx) -> Draft:
    ctx.need("acknowledge_iot_alert", "resolve_iot_alert")
    alert = ctx.choose(
        ctx.records("iot_alerts", lambda a: a["acknowledged_by"] is None and not a["resolved"])
    )
    person = ctx.choose(ctx.records("staff", lambda s: s["active"]))
    prompt = ctx.say(
        [
            "Acknowledge IoT alert {id} on behalf of {sid}, then mark it resolved.",
            "Alert {id} has been dealt with by {sid}: record their acknowledgement and resolve the alert.",
        ],
        ["Close out device alert {id}: {sid} acknowledges it, then resolve it."],
        id=alert["id"], sid=person["id"],
    )  # fmt: skip
    checks = [
        (f"Alert {alert['id']} must be acknowledged by {person['id']}.",
         {"type": "state", "collection": "iot_alerts", "key": alert["id"], "field": "acknowledged_by",
          "value": person["id"], "op": "update"}),
        (f"Alert {alert['id']} must be resolved afterwards.",
         {"type": "state", "collection": "iot_alerts", "key": alert["id"], "field": "resolved", "value": True,
          "op": "update"}),
    ]  # fmt: skip
    return Draft(
        "", "", prompt, [SERVER],
        [
            Step("acknowledge_iot_alert", {"alert_id": alert["id"], "staff_id": person["id"]},
                 purpose="acknowledge the alert"),
            Step("resolve_iot_alert", {"alert_id": alert["id"]}, depends_on=[0], purpose="resolve it"),
        ],
        state_changes=checks,
        reference_answer=f"Alert {alert['id']} was acknowledged by {person['id']} and is now resolved.",
        keep=[alert["id"], person["id"]],
        read_only=False,
    )  # fmt: skip
