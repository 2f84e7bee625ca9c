"""Vehicle fleet: company cars assigned to staff, with telemetry, trips, service, fuel and reservations."""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.clock import NOW_ISO, TODAY, iso
from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, paginate, tool
from toolkit.envs.servers.dates import Since, Until, Window, parse_day

VehicleId = Annotated[str, Field(description="Vehicle id, e.g. 'veh-001'.")]
StaffId = Annotated[str, Field(description="Staff id, e.g. 'st-001'.")]
FuelType = Literal["petrol", "diesel", "electric", "hybrid"]
VehicleStatus = Literal["available", "in_use", "maintenance"]
ServiceKind = Literal["oil_change", "tire_change", "inspection", "brakes", "battery_check"]


def _summary(v: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "plate", "make", "model", "fuel_type", "city", "assigned_to", "status", "odometer_km")
    return {k: v[k] for k in keys}


class Vehicle(DomainServer):
    name = "vehicle"
    description = (
        "Company vehicle fleet: find and assign cars, read telemetry, lock them, log trips and refuels, "
        "schedule service and reserve vehicles for dates."
    )

    def _vehicle(self, vehicle_id: str) -> dict[str, Any]:
        return self.require("vehicle_fleet", vehicle_id, "Vehicle", "Use list_vehicles to find vehicle ids.")

    def _staff(self, staff_id: str) -> dict[str, Any]:
        s = self.require(
            "staff", staff_id, "Staff member", "Use list_staff or search_staff to find staff ids."
        )
        if not s["active"]:
            raise conflict(f"{staff_id} ({s['name']}) is inactive and cannot use fleet vehicles.")
        return s

    def _reserved(self, vehicle_id: str, start: str, end: str) -> list[dict[str, Any]]:
        return [
            r
            for r in self.db.values("vehicle_reservations")
            if r["vehicle_id"] == vehicle_id and r["start_date"] <= end and start <= r["end_date"]
        ]

    @staticmethod
    def _dates(start_date: str, end_date: str) -> tuple[str, str]:
        start, end = parse_day(start_date, "start_date"), parse_day(end_date, "end_date")
        if end < start:
            raise invalid(f"end_date {end_date} is before start_date {start_date}.")
        if start < TODAY:
            raise invalid(f"start_date {start_date} is in the past (today is {iso(TODAY)}).")
        return iso(start), iso(end)

    # -- vehicles --------------------------------------------------------------------------------
    @tool(read_only=True)
    def list_vehicles(
        self,
        city: Annotated[str | None, Field(description="Only vehicles based in this city.")] = None,
        status: Annotated[VehicleStatus | None, Field(description="Only vehicles with this status.")] = None,
        fuel_type: Annotated[FuelType | None, Field(description="Only this fuel type.")] = None,
        assigned_to: Annotated[
            str | None, Field(description="Only vehicles assigned to this staff id.")
        ] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List fleet vehicles by city, status, fuel type or assignee."""
        rows = [
            _summary(v)
            for v in self.db.values("vehicle_fleet")
            if (city is None or v["city"].lower() == city.lower())
            and (status is None or v["status"] == status)
            and (fuel_type is None or v["fuel_type"] == fuel_type)
            and (assigned_to is None or v["assigned_to"] == assigned_to)
        ]
        return paginate(sorted(rows, key=lambda v: v["id"]), limit, cursor)

    @tool(read_only=True)
    def get_vehicle(self, vehicle_id: VehicleId) -> dict[str, Any]:
        """One vehicle with its assignee's name and its next scheduled service."""
        v = self._vehicle(vehicle_id)
        who = self.db.get("staff", v["assigned_to"]) if v["assigned_to"] else None
        nxt = min(
            (
                s
                for s in self.db.values("vehicle_services")
                if s["vehicle_id"] == vehicle_id and s["status"] == "scheduled"
            ),
            key=lambda s: s["date"],
            default=None,
        )
        return {**v, "assigned_to_name": who["name"] if who else None, "next_service": nxt}

    @tool(read_only=True)
    def get_vehicle_telemetry(self, vehicle_id: VehicleId) -> dict[str, Any]:
        """Live telemetry: fuel or charge level, odometer, lock state, tire pressures and location."""
        v = self._vehicle(vehicle_id)
        keys = ("fuel_pct", "odometer_km", "locked", "tire_pressure_bar", "location")
        return {"vehicle_id": vehicle_id, "at": NOW_ISO, **{k: v[k] for k in keys}}

    @tool(idempotent=True)
    def assign_vehicle(self, vehicle_id: VehicleId, staff_id: StaffId) -> dict[str, Any]:
        """Assign a vehicle to an active staff member (it becomes in_use)."""
        v, s = self._vehicle(vehicle_id), self._staff(staff_id)
        if v["status"] == "maintenance":
            raise conflict(f"{vehicle_id} is in maintenance; set it available first.")
        if v["assigned_to"] not in (None, staff_id):
            raise conflict(f"{vehicle_id} is assigned to {v['assigned_to']}; call unassign_vehicle first.")
        v = self.db.edit("vehicle_fleet", vehicle_id)
        v["assigned_to"], v["status"] = staff_id, "in_use"
        return {**_summary(v), "assigned_to_name": s["name"]}

    @tool(idempotent=True)
    def unassign_vehicle(self, vehicle_id: VehicleId) -> dict[str, Any]:
        """Take a vehicle back from its assignee (an in_use vehicle becomes available)."""
        v = self._vehicle(vehicle_id)
        if v["assigned_to"] is None:
            raise conflict(f"{vehicle_id} is not assigned to anyone.")
        v = self.db.edit("vehicle_fleet", vehicle_id)
        v["assigned_to"] = None
        if v["status"] == "in_use":
            v["status"] = "available"
        return _summary(v)

    @tool(idempotent=True)
    def set_vehicle_status(
        self, vehicle_id: VehicleId, status: Annotated[VehicleStatus, Field(description="The new status.")]
    ) -> dict[str, Any]:
        """Set a vehicle available, in_use (needs an assignee) or in maintenance."""
        v = self._vehicle(vehicle_id)
        if status == "in_use" and v["assigned_to"] is None:
            raise invalid("a vehicle is in_use only when assigned; call assign_vehicle instead.")
        v = self.db.edit("vehicle_fleet", vehicle_id)
        v["status"] = status
        return _summary(v)

    @tool(idempotent=True)
    def set_vehicle_lock(
        self, vehicle_id: VehicleId, locked: Annotated[bool, Field(description="True locks, False unlocks.")]
    ) -> dict[str, Any]:
        """Lock or unlock a vehicle remotely."""
        self._vehicle(vehicle_id)
        v = self.db.edit("vehicle_fleet", vehicle_id)
        v["locked"] = locked
        return {"vehicle_id": vehicle_id, "locked": locked}

    # -- trips -----------------------------------------------------------------------------------
    @tool(read_only=True)
    def list_vehicle_trips(
        self,
        vehicle_id: Annotated[str | None, Field(description="Only trips of this vehicle id.")] = None,
        driver_id: Annotated[str | None, Field(description="Only trips driven by this staff id.")] = None,
        since: Since = None,
        until: Until = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Logged trips, newest first, by vehicle, driver and date window."""
        window = Window(since, until)
        rows = [
            t
            for t in self.db.values("vehicle_trips")
            if (vehicle_id is None or t["vehicle_id"] == vehicle_id)
            and (driver_id is None or t["driver_id"] == driver_id)
            and window(t["date"])
        ]
        return paginate(sorted(rows, key=lambda t: (t["date"], t["id"]), reverse=True), limit, cursor)

    @tool(idempotent=False)
    def log_vehicle_trip(
        self,
        vehicle_id: VehicleId,
        driver_id: StaffId,
        km: Annotated[float, Field(gt=0, le=2000, description="Distance driven in km.")],
        purpose: Annotated[str, Field(min_length=3, description="Why the trip was made.")],
        date: Annotated[str | None, Field(description="Day of the trip, YYYY-MM-DD (default today).")] = None,
        customer_id: Annotated[str | None, Field(description="CRM customer id visited, if any.")] = None,
    ) -> dict[str, Any]:
        """Log a trip; the vehicle's odometer goes up by its distance."""
        self._vehicle(vehicle_id)
        self._staff(driver_id)
        day = parse_day(date, "date") if date else TODAY
        if day > TODAY:
            raise invalid(f"date {date} is in the future; trips are logged after they happen.")
        if customer_id is not None:
            self.require("customers", customer_id, "Customer", "Use search_contacts to find customer ids.")
        tid = self.next_id("vehicle_trips", "trip-")
        trip = {"id": tid, "vehicle_id": vehicle_id, "driver_id": driver_id, "date": iso(day), "km": float(km),
                "purpose": purpose, "customer_id": customer_id}  # fmt: skip
        self.db.put("vehicle_trips", tid, trip)
        v = self.db.edit("vehicle_fleet", vehicle_id)
        v["odometer_km"] = int(v["odometer_km"] + round(km))
        return {**trip, "odometer_km": v["odometer_km"]}

    @tool(read_only=True)
    def vehicle_mileage_report(
        self,
        group_by: Annotated[
            Literal["vehicle_id", "driver_id"], Field(description="Sum km per vehicle or driver.")
        ] = "vehicle_id",
        since: Since = None,
        until: Until = None,
    ) -> dict[str, Any]:
        """Kilometres driven and trip counts in a date window, per vehicle or per driver, most km first."""
        window = Window(since, until)
        km: dict[str, float] = defaultdict(float)
        n: dict[str, int] = defaultdict(int)
        for t in self.db.values("vehicle_trips"):
            if window(t["date"]):
                km[t[group_by]] += t["km"]
                n[t[group_by]] += 1
        rows = [{group_by: k, "km": round(km[k], 1), "trips": n[k]} for k in km]
        rows.sort(key=lambda r: (-r["km"], r[group_by]))
        return {"group_by": group_by, "rows": rows, "total_km": round(sum(km.values()), 1)}

    # -- service ---------------------------------------------------------------------------------
    @tool(read_only=True)
    def list_vehicle_services(
        self,
        vehicle_id: Annotated[str | None, Field(description="Only this vehicle id.")] = None,
        status: Annotated[Literal["scheduled", "done"] | None, Field(description="Only this status.")] = None,
        since: Since = None,
        until: Until = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Service records (done and scheduled), by date, in a window."""
        window = Window(since, until)
        rows = [
            s
            for s in self.db.values("vehicle_services")
            if (vehicle_id is None or s["vehicle_id"] == vehicle_id)
            and (status is None or s["status"] == status)
            and window(s["date"])
        ]
        return paginate(sorted(rows, key=lambda s: (s["date"], s["id"])), limit, cursor)

    @tool(idempotent=False)
    def schedule_vehicle_service(
        self,
        vehicle_id: VehicleId,
        kind: Annotated[ServiceKind, Field(description="The kind of service.")],
        date: Annotated[str, Field(description="Day of the service, YYYY-MM-DD (today or later).")],
        notes: Annotated[str, Field(description="Notes for the workshop.")] = "",
    ) -> dict[str, Any]:
        """Book a service for a vehicle on a future day (one booking per vehicle per day)."""
        self._vehicle(vehicle_id)
        day, _ = self._dates(date, date)
        if any(s["vehicle_id"] == vehicle_id and s["date"] == day and s["status"] == "scheduled"
               for s in self.db.values("vehicle_services")):  # fmt: skip
            raise conflict(f"{vehicle_id} already has a service booked on {day}.")
        sid = self.next_id("vehicle_services", "svc-")
        rec = {"id": sid, "vehicle_id": vehicle_id, "kind": kind, "date": day, "status": "scheduled", "cost": None,
               "notes": notes}  # fmt: skip
        self.db.put("vehicle_services", sid, rec)
        return rec

    @tool(idempotent=True)
    def complete_vehicle_service(
        self,
        service_id: Annotated[str, Field(description="Service id, e.g. 'svc-001'.")],
        cost: Annotated[float, Field(ge=0, description="What the service cost.")],
    ) -> dict[str, Any]:
        """Mark a scheduled service done with its cost."""
        s = self.require("vehicle_services", service_id, "Service", "Use list_vehicle_services to find ids.")
        if s["status"] == "done":
            raise conflict(f"service {service_id} is already done (cost {s['cost']}).")
        s = self.db.edit("vehicle_services", service_id)
        s["status"], s["cost"] = "done", round(float(cost), 2)
        return dict(s)

    @tool(destructive=True, idempotent=True)
    def cancel_vehicle_service(
        self, service_id: Annotated[str, Field(description="Service id, e.g. 'svc-001'.")]
    ) -> dict[str, Any]:
        """Cancel (delete) a scheduled service. Done services are history and cannot be cancelled."""
        s = self.require("vehicle_services", service_id, "Service", "Use list_vehicle_services to find ids.")
        if s["status"] == "done":
            raise conflict(f"service {service_id} is already done and cannot be cancelled.")
        self.db.delete("vehicle_services", service_id)
        return {"cancelled": service_id}

    # -- fuel ------------------------------------------------------------------------------------
    @tool(read_only=True)
    def list_vehicle_fuel_logs(
        self,
        vehicle_id: Annotated[str | None, Field(description="Only this vehicle id.")] = None,
        since: Since = None,
        until: Until = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Refuel and recharge logs (litres or kWh, cost), newest first, in a window."""
        window = Window(since, until)
        rows = [
            f
            for f in self.db.values("vehicle_fuel_logs")
            if (vehicle_id is None or f["vehicle_id"] == vehicle_id) and window(f["date"])
        ]
        return paginate(sorted(rows, key=lambda f: (f["date"], f["id"]), reverse=True), limit, cursor)

    @tool(idempotent=False)
    def log_vehicle_refuel(
        self,
        vehicle_id: VehicleId,
        amount: Annotated[
            float, Field(gt=0, le=200, description="Litres of fuel, or kWh for electric cars.")
        ],
        cost: Annotated[float, Field(ge=0, description="What it cost.")],
        staff_id: StaffId,
    ) -> dict[str, Any]:
        """Log a refuel (or recharge) today; the tank or battery is full afterwards."""
        v = self._vehicle(vehicle_id)
        self._staff(staff_id)
        fid = self.next_id("vehicle_fuel_logs", "fuel-")
        rec = {"id": fid, "vehicle_id": vehicle_id, "date": iso(TODAY), "amount": float(amount),
               "unit": "kWh" if v["fuel_type"] == "electric" else "l", "cost": round(float(cost), 2), "by": staff_id}  # fmt: skip
        self.db.put("vehicle_fuel_logs", fid, rec)
        self.db.edit("vehicle_fleet", vehicle_id)["fuel_pct"] = 100
        return rec

    @tool(read_only=True)
    def vehicle_fuel_cost_report(
        self,
        group_by: Annotated[
            Literal["vehicle_id", "city", "fuel_type"], Field(description="Group costs by this.")
        ] = "vehicle_id",
        since: Since = None,
        until: Until = None,
    ) -> dict[str, Any]:
        """Fuel and charging cost in a date window, grouped by vehicle, city or fuel type, highest first."""
        window = Window(since, until)
        cost: dict[str, float] = defaultdict(float)
        for f in self.db.values("vehicle_fuel_logs"):
            if window(f["date"]):
                v = self.db.get("vehicle_fleet", f["vehicle_id"])
                key = f["vehicle_id"] if group_by == "vehicle_id" else v[group_by]
                cost[key] += f["cost"]
        rows = sorted(
            ({group_by: k, "cost": round(c, 2)} for k, c in cost.items()),
            key=lambda r: (-r["cost"], r[group_by]),
        )
        return {"group_by": group_by, "rows": rows, "total_cost": round(sum(cost.values()), 2)}

    # -- reservations ----------------------------------------------------------------------------
    @tool(read_only=True)
    def list_vehicle_reservations(
        self,
        vehicle_id: Annotated[str | None, Field(description="Only this vehicle id.")] = None,
        staff_id: Annotated[str | None, Field(description="Only reservations by this staff id.")] = None,
        since: Since = None,
        until: Until = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Reservations overlapping a date window, earliest first."""
        window = Window(since, until)
        rows = [
            r
            for r in self.db.values("vehicle_reservations")
            if (vehicle_id is None or r["vehicle_id"] == vehicle_id)
            and (staff_id is None or r["staff_id"] == staff_id)
            and parse_day(r["start_date"]) <= window.hi
            and window.lo <= parse_day(r["end_date"])
        ]
        return paginate(sorted(rows, key=lambda r: (r["start_date"], r["id"])), limit, cursor)

    @tool(read_only=True)
    def find_available_vehicles(
        self,
        city: Annotated[str, Field(description="City the vehicle must be based in.")],
        start_date: Annotated[str, Field(description="First day needed, YYYY-MM-DD.")],
        end_date: Annotated[str, Field(description="Last day needed, YYYY-MM-DD.")],
        fuel_type: Annotated[FuelType | None, Field(description="Only this fuel type.")] = None,
    ) -> dict[str, Any]:
        """Vehicles in a city that are not in maintenance and have no reservation overlapping the dates."""
        start, end = self._dates(start_date, end_date)
        cities = sorted({v["city"] for v in self.db.values("vehicle_fleet")})
        if city.lower() not in {c.lower() for c in cities}:
            raise invalid(f"no vehicles are based in '{city}'; fleet cities: {cities}.")
        rows = [
            _summary(v)
            for v in sorted(self.db.values("vehicle_fleet"), key=lambda v: v["id"])
            if v["city"].lower() == city.lower()
            and v["status"] != "maintenance"
            and (fuel_type is None or v["fuel_type"] == fuel_type)
            and not self._reserved(v["id"], start, end)
        ]
        return {"city": city, "start_date": start, "end_date": end, "vehicles": rows}

    @tool(idempotent=False)
    def reserve_vehicle(
        self,
        vehicle_id: VehicleId,
        staff_id: StaffId,
        start_date: Annotated[str, Field(description="First day, YYYY-MM-DD (today or later).")],
        end_date: Annotated[str, Field(description="Last day, YYYY-MM-DD.")],
        purpose: Annotated[str, Field(min_length=3, description="Why the vehicle is needed.")],
    ) -> dict[str, Any]:
        """Reserve a vehicle for a staff member over a date range (no overlapping reservations)."""
        v = self._vehicle(vehicle_id)
        self._staff(staff_id)
        start, end = self._dates(start_date, end_date)
        if v["status"] == "maintenance":
            raise conflict(f"{vehicle_id} is in maintenance; use find_available_vehicles for another one.")
        if clash := self._reserved(vehicle_id, start, end):
            raise conflict(
                f"{vehicle_id} is already reserved {clash[0]['start_date']}..{clash[0]['end_date']} "
                f"({clash[0]['id']}); use find_available_vehicles for another one."
            )
        rid = self.next_id("vehicle_reservations", "res-")
        rec = {"id": rid, "vehicle_id": vehicle_id, "staff_id": staff_id, "start_date": start, "end_date": end,
               "purpose": purpose, "created": NOW_ISO}  # fmt: skip
        self.db.put("vehicle_reservations", rid, rec)
        return rec

    @tool(destructive=True, idempotent=True)
    def cancel_vehicle_reservation(
        self, reservation_id: Annotated[str, Field(description="Reservation id, e.g. 'res-001'.")]
    ) -> dict[str, Any]:
        """Cancel (delete) a reservation."""
        self.require("vehicle_reservations", reservation_id, "Reservation", "Use list_vehicle_reservations.")
        self.db.delete("vehicle_reservations", reservation_id)
        return {"cancelled": reservation_id}
