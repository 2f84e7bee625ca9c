"""IoT world: smart devices in the offices of the staff's cities, their readings, alerts and automations."""

from __future__ import annotations

from datetime import timedelta
from random import Random

from toolkit.envs.clock import NOW, World, iso

DEVICE_TYPES = ["thermostat", "sensor", "light", "lock", "camera", "plug"]
ROOMS = ["lobby", "kitchen", "server room", "meeting room", "open office"]
LATEST_FIRMWARE = {"thermostat": "3.2.0", "sensor": "1.8.4", "light": "2.0.1", "lock": "4.1.0",
                   "camera": "5.0.2", "plug": "1.3.3"}  # fmt: skip
BATTERY_TYPES = {"sensor", "lock"}


def _older(version: str, rng: Random) -> str:
    major, minor, patch = (int(x) for x in version.split("."))
    if rng.random() < 0.5:
        return version
    return (
        f"{major}.{max(0, minor - rng.randint(0, 2))}.{max(0, patch - rng.randint(1, 3)) if minor else patch}"
    )


def add_iot_devices(w: World, rng: Random) -> None:
    cities = sorted({s["city"] for s in w["staff"].values()})
    sites: dict[str, dict] = {}
    for city in cities:
        sid = f"site-{city.lower()}"
        locals_ = sorted(s for s in w["staff"] if w["staff"][s]["city"] == city)
        sites[sid] = {"id": sid, "name": f"{city} office", "city": city, "manager_id": rng.choice(locals_)}
    w["iot_sites"] = sites
    w["iot_firmware"] = {t: {"type": t, "latest": v} for t, v in LATEST_FIRMWARE.items()}

    devices: dict[str, dict] = {}
    site_ids = list(sites)
    for i in range(42):
        did = f"dev-{i + 1:03d}"
        dtype = DEVICE_TYPES[i % len(DEVICE_TYPES)]
        site = rng.choice(site_ids)
        room = rng.choice(ROOMS)
        online = rng.random() > 0.15
        state: dict = {"power": "on" if online else "off"}
        if dtype == "thermostat":
            state["target_c"] = float(rng.choice([19, 20, 21, 22]))
        if dtype == "light":
            state["brightness"] = rng.choice([0, 40, 70, 100])
        if dtype == "lock":
            state["locked"] = rng.random() > 0.2
        devices[did] = {
            "id": did,
            "name": f"{sites[site]['city']} {room} {dtype} {i // len(DEVICE_TYPES) + 1}",
            "type": dtype,
            "site_id": site,
            "room": room,
            "status": "online" if online else "offline",
            "firmware": _older(LATEST_FIRMWARE[dtype], rng),
            "battery_pct": rng.randint(3, 100) if dtype in BATTERY_TYPES else None,
            "state": state,
            "last_seen": iso(
                NOW - timedelta(minutes=rng.randint(1, 30) if online else rng.randint(600, 6000))
            ),
        }
    w["iot_devices"] = devices

    readings: dict[str, dict] = {}
    stamps = [iso(NOW - timedelta(hours=12 * k)) for k in range(14)]  # every 12 hours over the last week
    for d in devices.values():
        metrics = {"thermostat": [("temperature_c", 21, 2)], "sensor": [("temperature_c", 20, 3), ("humidity_pct", 45, 12)],
                   "plug": [("power_w", 60, 40)]}.get(d["type"], [])  # fmt: skip
        for metric, mean, spread in metrics:
            for at in stamps:
                rid = f"rd-{len(readings) + 1:04d}"
                readings[rid] = {"id": rid, "device_id": d["id"], "metric": metric, "at": at,
                                 "value": round(max(0.0, mean + rng.uniform(-spread, spread)), 1)}  # fmt: skip
    w["iot_readings"] = readings

    alerts: dict[str, dict] = {}
    kinds = {"offline": "warning", "low_battery": "warning", "high_temperature": "critical", "tamper": "critical",
             "firmware_outdated": "info"}  # fmt: skip
    for i in range(22):
        d = devices[rng.choice(list(devices))]
        kind = rng.choice(list(kinds))
        aid = f"al-{i + 1:03d}"
        acked = rng.random() < 0.4
        alerts[aid] = {
            "id": aid,
            "device_id": d["id"],
            "site_id": d["site_id"],
            "kind": kind,
            "severity": kinds[kind],
            "message": f"{d['name']}: {kind.replace('_', ' ')}",
            "at": iso(NOW - timedelta(hours=rng.randint(1, 24 * 14))),
            "acknowledged_by": sites[d["site_id"]]["manager_id"] if acked else None,
            "resolved": acked and rng.random() < 0.5,
        }
    w["iot_alerts"] = alerts

    autos: dict[str, dict] = {}
    sensors = [d for d in devices.values() if d["type"] in ("sensor", "thermostat")]
    for _ in range(9):
        trig = rng.choice(sensors)
        targets = [
            d for d in devices.values() if d["site_id"] == trig["site_id"] and d["type"] in ("plug", "light")
        ]
        if not targets:
            continue
        aid = f"auto-{len(autos) + 1:03d}"
        autos[aid] = {
            "id": aid,
            "name": f"{trig['name']} guard",
            "site_id": trig["site_id"],
            "trigger_device_id": trig["id"],
            "metric": "temperature_c",
            "condition": rng.choice(["above", "below"]),
            "threshold": float(rng.choice([16, 18, 24, 26])),
            "action_device_id": rng.choice(targets)["id"],
            "action": rng.choice(["power_on", "power_off"]),
            "enabled": rng.random() > 0.25,
        }
    w["iot_automations"] = autos
