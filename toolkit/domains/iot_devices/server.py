"""IoT devices: smart thermostats, sensors, lights, locks, cameras and plugs in the company's offices."""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.clock import NOW_ISO
from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, matches, paginate, tool
from toolkit.envs.servers.dates import Since, Until, Window

DeviceId = Annotated[str, Field(description="Device id, e.g. 'dev-001'.")]
SiteId = Annotated[str, Field(description="Site id, e.g. 'site-berlin'.")]
DeviceType = Literal["thermostat", "sensor", "light", "lock", "camera", "plug"]
Metric = Literal["temperature_c", "humidity_pct", "power_w"]
Severity = Literal["info", "warning", "critical"]
ROOMS = ("lobby", "kitchen", "server room", "meeting room", "open office")


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def _device_summary(d: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "name", "type", "site_id", "room", "status", "battery_pct", "firmware")
    return {k: d[k] for k in keys}


class IotDevices(DomainServer):
    name = "iot_devices"
    description = (
        "Smart office devices per site: list and control thermostats, lights, locks and plugs, read sensor "
        "history, handle alerts, automations and firmware updates."
    )

    def _device(self, device_id: str) -> dict[str, Any]:
        return self.require("iot_devices", device_id, "Device", "Use list_iot_devices to find device ids.")

    def _site(self, site_id: str) -> dict[str, Any]:
        return self.require("iot_sites", site_id, "Site", "Use list_iot_sites to find site ids.")

    def _typed(self, device_id: str, kind: str) -> dict[str, Any]:
        d = self._device(device_id)
        if d["type"] != kind:
            raise invalid(f"{device_id} is a {d['type']}, not a {kind}.")
        if d["status"] != "online":
            raise conflict(
                f"{device_id} ({d['name']}) is offline; it cannot take commands until it reconnects."
            )
        return d

    def _set_state(self, device_id: str, **changes: Any) -> dict[str, Any]:
        d = self.db.edit("iot_devices", device_id)
        d["state"].update(changes)
        return {"device_id": device_id, "name": d["name"], "state": dict(d["state"])}

    # -- sites and devices ----------------------------------------------------------------------
    @tool(read_only=True)
    def list_iot_sites(self) -> dict[str, Any]:
        """All office sites with their city, manager and number of devices."""
        counts = Counter(d["site_id"] for d in self.db.values("iot_devices"))
        return {
            "sites": [
                {**s, "devices": counts[s["id"]]}
                for s in sorted(self.db.values("iot_sites"), key=lambda s: s["id"])
            ]
        }

    @tool(read_only=True)
    def get_iot_site(self, site_id: SiteId) -> dict[str, Any]:
        """One site with device counts by type and status, and its open (unresolved) alerts."""
        site = self._site(site_id)
        devs = [d for d in self.db.values("iot_devices") if d["site_id"] == site_id]
        open_alerts = sum(
            1 for a in self.db.values("iot_alerts") if a["site_id"] == site_id and not a["resolved"]
        )
        return {
            **site,
            "devices_by_type": dict(sorted(Counter(d["type"] for d in devs).items())),
            "devices_by_status": dict(sorted(Counter(d["status"] for d in devs).items())),
            "open_alerts": open_alerts,
        }

    @tool(read_only=True)
    def list_iot_devices(
        self,
        site_id: Annotated[str | None, Field(description="Only devices at this site id.")] = None,
        type: Annotated[DeviceType | None, Field(description="Only devices of this type.")] = None,
        status: Annotated[Literal["online", "offline"] | None, Field(description="Only this status.")] = None,
        room: Annotated[str | None, Field(description="Only devices in this room.")] = None,
        query: Annotated[str | None, Field(description="Text to find in the device name.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List devices, filtered by site, type, status, room or name."""
        if site_id is not None:
            self._site(site_id)
        rows = [
            _device_summary(d)
            for d in self.db.values("iot_devices")
            if (site_id is None or d["site_id"] == site_id)
            and (type is None or d["type"] == type)
            and (status is None or d["status"] == status)
            and (room is None or d["room"] == room.lower())
            and matches(d["name"], query)
        ]
        return paginate(sorted(rows, key=lambda d: d["id"]), limit, cursor)

    @tool(read_only=True)
    def get_iot_device(self, device_id: DeviceId) -> dict[str, Any]:
        """One device with its full state (power, target temperature, brightness, lock), battery and last contact."""
        return dict(self._device(device_id))

    @tool(idempotent=False)
    def register_iot_device(
        self,
        site_id: SiteId,
        name: Annotated[str, Field(min_length=3, description="A name for the device.")],
        type: Annotated[DeviceType, Field(description="Device type.")],
        room: Annotated[str, Field(description=f"Room: one of {', '.join(ROOMS)}.")],
    ) -> dict[str, Any]:
        """Add a new device to a site; it starts online, powered on, with the latest firmware."""
        self._site(site_id)
        if room.lower() not in ROOMS:
            raise invalid(f"room '{room}' is not one of {list(ROOMS)}.")
        if any(d["name"].lower() == name.lower() for d in self.db.values("iot_devices")):
            raise conflict(f"a device named '{name}' already exists; pick another name.")
        did = self.next_id("iot_devices", "dev-")
        state: dict[str, Any] = {"power": "on"}
        state.update(
            {"thermostat": {"target_c": 21.0}, "light": {"brightness": 100}, "lock": {"locked": True}}.get(
                type, {}
            )
        )
        dev = {
            "id": did,
            "name": name,
            "type": type,
            "site_id": site_id,
            "room": room.lower(),
            "status": "online",
            "firmware": self.db.get("iot_firmware", type)["latest"],
            "battery_pct": 100 if type in ("sensor", "lock") else None,
            "state": state,
            "last_seen": NOW_ISO,
        }
        self.db.put("iot_devices", did, dev)
        return dev

    @tool(idempotent=True)
    def rename_iot_device(
        self, device_id: DeviceId, name: Annotated[str, Field(min_length=3, description="The new name.")]
    ) -> dict[str, Any]:
        """Rename a device."""
        self._device(device_id)
        if any(
            d["name"].lower() == name.lower() and d["id"] != device_id for d in self.db.values("iot_devices")
        ):
            raise conflict(f"another device is already named '{name}'.")
        d = self.db.edit("iot_devices", device_id)
        d["name"] = name
        return _device_summary(d)

    @tool(idempotent=True)
    def move_iot_device(
        self,
        device_id: DeviceId,
        room: Annotated[str, Field(description=f"Room: one of {', '.join(ROOMS)}.")],
    ) -> dict[str, Any]:
        """Move a device to another room of its site."""
        self._device(device_id)
        if room.lower() not in ROOMS:
            raise invalid(f"room '{room}' is not one of {list(ROOMS)}.")
        d = self.db.edit("iot_devices", device_id)
        d["room"] = room.lower()
        return _device_summary(d)

    @tool(destructive=True, idempotent=True)
    def remove_iot_device(self, device_id: DeviceId) -> dict[str, Any]:
        """Remove a device from its site, with the automations that use it."""
        self._device(device_id)
        autos = [
            a["id"]
            for a in self.db.values("iot_automations")
            if device_id in (a["trigger_device_id"], a["action_device_id"])
        ]
        for aid in autos:
            self.db.delete("iot_automations", aid)
        self.db.delete("iot_devices", device_id)
        return {"removed": device_id, "automations_removed": autos}

    # -- control ---------------------------------------------------------------------------------
    @tool(idempotent=True)
    def set_iot_device_power(
        self, device_id: DeviceId, on: Annotated[bool, Field(description="True: power on; False: power off.")]
    ) -> dict[str, Any]:
        """Switch an online device on or off."""
        d = self._device(device_id)
        if d["status"] != "online":
            raise conflict(
                f"{device_id} ({d['name']}) is offline; it cannot take commands until it reconnects."
            )
        return self._set_state(device_id, power="on" if on else "off")

    @tool(idempotent=True)
    def set_iot_thermostat(
        self,
        device_id: DeviceId,
        target_c: Annotated[float, Field(ge=10, le=30, description="Target temperature in Celsius (10-30).")],
    ) -> dict[str, Any]:
        """Set a thermostat's target temperature."""
        self._typed(device_id, "thermostat")
        return self._set_state(device_id, target_c=float(target_c))

    @tool(idempotent=True)
    def set_iot_light_brightness(
        self,
        device_id: DeviceId,
        brightness: Annotated[int, Field(ge=0, le=100, description="Brightness in percent (0-100).")],
    ) -> dict[str, Any]:
        """Dim or brighten a light (0 turns it off)."""
        self._typed(device_id, "light")
        return self._set_state(device_id, brightness=brightness, power="on" if brightness else "off")

    @tool(idempotent=True)
    def set_iot_lock(
        self, device_id: DeviceId, locked: Annotated[bool, Field(description="True locks, False unlocks.")]
    ) -> dict[str, Any]:
        """Lock or unlock a smart door lock."""
        self._typed(device_id, "lock")
        return self._set_state(device_id, locked=locked)

    # -- readings --------------------------------------------------------------------------------
    @tool(read_only=True)
    def list_iot_readings(
        self,
        device_id: DeviceId,
        metric: Annotated[Metric | None, Field(description="Only this metric.")] = None,
        since: Since = None,
        until: Until = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Sensor readings of a device (every 12 hours), newest first, in a date window."""
        self._device(device_id)
        window = Window(since, until)
        rows = [
            {k: r[k] for k in ("at", "metric", "value")}
            for r in self.db.values("iot_readings")
            if r["device_id"] == device_id and (metric is None or r["metric"] == metric) and window(r["at"])
        ]
        return paginate(sorted(rows, key=lambda r: (r["at"], r["metric"]), reverse=True), limit, cursor)

    @tool(read_only=True)
    def iot_reading_stats(
        self,
        device_id: DeviceId,
        metric: Annotated[Metric, Field(description="The metric to summarise.")],
        since: Since = None,
        until: Until = None,
    ) -> dict[str, Any]:
        """Count, min, max and mean (1 decimal) of one metric of a device in a date window."""
        d = self._device(device_id)
        window = Window(since, until)
        vals = [
            r["value"]
            for r in self.db.values("iot_readings")
            if r["device_id"] == device_id and r["metric"] == metric and window(r["at"])
        ]
        if not vals:
            have = sorted(
                {r["metric"] for r in self.db.values("iot_readings") if r["device_id"] == device_id}
            )
            raise invalid(
                f"{device_id} ({d['type']}) has no {metric} readings in that window; its metrics: {have}."
            )
        return {"device_id": device_id, "metric": metric, "count": len(vals), "min": min(vals), "max": max(vals),
                "mean": round(sum(vals) / len(vals), 1)}  # fmt: skip

    @tool(read_only=True)
    def iot_battery_report(
        self,
        below_pct: Annotated[
            int, Field(ge=1, le=100, description="Report devices with battery under this percent.")
        ] = 20,
        site_id: Annotated[str | None, Field(description="Only devices at this site id.")] = None,
    ) -> dict[str, Any]:
        """Battery-powered devices whose battery is below a threshold, lowest first."""
        rows = [
            {
                "device_id": d["id"],
                "name": d["name"],
                "site_id": d["site_id"],
                "battery_pct": d["battery_pct"],
            }
            for d in self.db.values("iot_devices")
            if d["battery_pct"] is not None
            and d["battery_pct"] < below_pct
            and (site_id is None or d["site_id"] == site_id)
        ]
        return {
            "below_pct": below_pct,
            "devices": sorted(rows, key=lambda r: (r["battery_pct"], r["device_id"])),
        }

    @tool(read_only=True)
    def iot_device_counts(
        self,
        group_by: Annotated[
            Literal["site_id", "type", "status", "room"], Field(description="Field to count by.")
        ] = "type",
        site_id: Annotated[str | None, Field(description="Only devices at this site id.")] = None,
    ) -> dict[str, Any]:
        """Count devices grouped by site, type, status or room."""
        counts = Counter(
            d[group_by] for d in self.db.values("iot_devices") if site_id is None or d["site_id"] == site_id
        )
        return {"group_by": group_by, "counts": dict(sorted(counts.items())), "total": sum(counts.values())}

    # -- alerts ----------------------------------------------------------------------------------
    @tool(read_only=True)
    def list_iot_alerts(
        self,
        site_id: Annotated[str | None, Field(description="Only alerts at this site id.")] = None,
        severity: Annotated[Severity | None, Field(description="Only alerts of this severity.")] = None,
        resolved: Annotated[bool | None, Field(description="True: only resolved; False: only open.")] = None,
        since: Since = None,
        until: Until = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Device alerts, newest first, by site, severity, resolution and date window."""
        window = Window(since, until)
        rows = [
            a
            for a in self.db.values("iot_alerts")
            if (site_id is None or a["site_id"] == site_id)
            and (severity is None or a["severity"] == severity)
            and (resolved is None or a["resolved"] == resolved)
            and window(a["at"])
        ]
        return paginate(sorted(rows, key=lambda a: (a["at"], a["id"]), reverse=True), limit, cursor)

    @tool(idempotent=True)
    def acknowledge_iot_alert(
        self,
        alert_id: Annotated[str, Field(description="Alert id, e.g. 'al-001'.")],
        staff_id: Annotated[str, Field(description="Staff id acknowledging the alert.")],
    ) -> dict[str, Any]:
        """Acknowledge an alert on behalf of a staff member."""
        a = self.require("iot_alerts", alert_id, "Alert", "Use list_iot_alerts to find alert ids.")
        self.require("staff", staff_id, "Staff member", "Use list_staff to find staff ids.")
        if a["resolved"]:
            raise conflict(f"alert {alert_id} is already resolved.")
        a = self.db.edit("iot_alerts", alert_id)
        a["acknowledged_by"] = staff_id
        return dict(a)

    @tool(idempotent=True)
    def resolve_iot_alert(
        self, alert_id: Annotated[str, Field(description="Alert id, e.g. 'al-001'.")]
    ) -> dict[str, Any]:
        """Mark an acknowledged alert resolved."""
        a = self.require("iot_alerts", alert_id, "Alert", "Use list_iot_alerts to find alert ids.")
        if a["acknowledged_by"] is None:
            raise conflict(f"alert {alert_id} is not acknowledged yet; call acknowledge_iot_alert first.")
        a = self.db.edit("iot_alerts", alert_id)
        a["resolved"] = True
        return dict(a)

    # -- automations -----------------------------------------------------------------------------
    @tool(read_only=True)
    def list_iot_automations(
        self,
        site_id: Annotated[str | None, Field(description="Only automations at this site id.")] = None,
        enabled: Annotated[
            bool | None, Field(description="Only enabled (True) or disabled (False) ones.")
        ] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Automation rules (when a device's reading crosses a threshold, act on another device)."""
        rows = [
            a
            for a in self.db.values("iot_automations")
            if (site_id is None or a["site_id"] == site_id) and (enabled is None or a["enabled"] == enabled)
        ]
        return paginate(sorted(rows, key=lambda a: a["id"]), limit, cursor)

    @tool(read_only=True)
    def get_iot_automation(
        self, automation_id: Annotated[str, Field(description="Automation id, e.g. 'auto-001'.")]
    ) -> dict[str, Any]:
        """One automation rule with the names of the devices it uses."""
        a = self.require("iot_automations", automation_id, "Automation", "Use list_iot_automations.")
        return {
            **a,
            "trigger_device_name": self._device(a["trigger_device_id"])["name"],
            "action_device_name": self._device(a["action_device_id"])["name"],
        }

    @tool(idempotent=False)
    def create_iot_automation(
        self,
        name: Annotated[str, Field(min_length=3, description="A name for the rule.")],
        trigger_device_id: Annotated[
            str, Field(description="Thermostat or sensor whose temperature triggers it.")
        ],
        condition: Annotated[
            Literal["above", "below"], Field(description="Trigger when the reading is above/below.")
        ],
        threshold: Annotated[float, Field(description="Temperature threshold in Celsius.")],
        action_device_id: Annotated[str, Field(description="Device to act on (same site).")],
        action: Annotated[Literal["power_on", "power_off"], Field(description="What to do to it.")],
    ) -> dict[str, Any]:
        """Create an enabled automation rule on temperature at one site."""
        trig, act = self._device(trigger_device_id), self._device(action_device_id)
        if trig["type"] not in ("thermostat", "sensor"):
            raise invalid(
                f"{trigger_device_id} is a {trig['type']}; triggers must be thermostats or sensors."
            )
        if trig["site_id"] != act["site_id"]:
            raise invalid(f"devices are at different sites ({trig['site_id']} vs {act['site_id']}).")
        aid = self.next_id("iot_automations", "auto-")
        rule = {
            "id": aid,
            "name": name,
            "site_id": trig["site_id"],
            "trigger_device_id": trigger_device_id,
            "metric": "temperature_c",
            "condition": condition,
            "threshold": float(threshold),
            "action_device_id": action_device_id,
            "action": action,
            "enabled": True,
        }
        self.db.put("iot_automations", aid, rule)
        return rule

    @tool(idempotent=True)
    def set_iot_automation_enabled(
        self,
        automation_id: Annotated[str, Field(description="Automation id, e.g. 'auto-001'.")],
        enabled: Annotated[bool, Field(description="True enables, False disables.")],
    ) -> dict[str, Any]:
        """Enable or disable an automation rule."""
        self.require("iot_automations", automation_id, "Automation", "Use list_iot_automations.")
        a = self.db.edit("iot_automations", automation_id)
        a["enabled"] = enabled
        return dict(a)

    @tool(destructive=True, idempotent=True)
    def delete_iot_automation(
        self, automation_id: Annotated[str, Field(description="Automation id, e.g. 'auto-001'.")]
    ) -> dict[str, Any]:
        """Delete an automation rule."""
        self.require("iot_automations", automation_id, "Automation", "Use list_iot_automations.")
        self.db.delete("iot_automations", automation_id)
        return {"deleted": automation_id}

    # -- firmware --------------------------------------------------------------------------------
    @tool(read_only=True)
    def check_iot_firmware(
        self,
        site_id: Annotated[str | None, Field(description="Only devices at this site id.")] = None,
        outdated_only: Annotated[
            bool, Field(description="List only devices behind the latest version.")
        ] = True,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Devices' firmware against the latest version for their type."""
        rows = []
        for d in sorted(self.db.values("iot_devices"), key=lambda d: d["id"]):
            latest = self.db.get("iot_firmware", d["type"])["latest"]
            behind = _version(d["firmware"]) < _version(latest)
            if (site_id is None or d["site_id"] == site_id) and (behind or not outdated_only):
                rows.append({"device_id": d["id"], "name": d["name"], "firmware": d["firmware"], "latest": latest,
                             "outdated": behind})  # fmt: skip
        return paginate(rows, limit, cursor)

    @tool(idempotent=True)
    def update_iot_firmware(self, device_id: DeviceId) -> dict[str, Any]:
        """Install the latest firmware on an online device."""
        d = self._device(device_id)
        if d["status"] != "online":
            raise conflict(f"{device_id} ({d['name']}) is offline; firmware can only be installed online.")
        latest = self.db.get("iot_firmware", d["type"])["latest"]
        if d["firmware"] != latest:
            d = self.db.edit("iot_devices", device_id)
            d["firmware"] = latest
        return {"device_id": device_id, "firmware": latest}
