"""Maps: places with coordinates, search and nearby search, distances and routes by travel mode,
geocoding, opening hours, traffic incidents, and staff members' saved places.

Distances are great-circle kilometres; a route's length adds a road factor and its time follows
the mode's speed, plus, when driving, the delay of active incidents in the cities it touches.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.clock import NOW_ISO
from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, matches, paginate, tool

PlaceId = Annotated[str, Field(description="Place id, e.g. 'pl-001'.")]
StaffId = Annotated[str, Field(description="Staff id, e.g. 'st-001'.")]
Category = Literal["office", "cafe", "restaurant", "hotel", "parking", "fuel", "pharmacy", "airport"]
Mode = Literal["driving", "transit", "cycling", "walking"]
SPEED_KPH = {"driving": 35.0, "transit": 25.0, "cycling": 15.0, "walking": 5.0}
ROAD_FACTOR = 1.3  # roads are longer than the straight line
HHMM = Annotated[str, Field(pattern=r"^([01]\d|2[0-4]):[0-5]\d$", description="Time of day, HH:MM (24h).")]


def km_between(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Great-circle distance in km between two records with ``lat``/``lon``."""
    p1, p2 = math.radians(a["lat"]), math.radians(b["lat"])
    dp, dl = p2 - p1, math.radians(b["lon"] - a["lon"])
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return round(2 * 6371.0 * math.asin(math.sqrt(h)), 2)


class Maps(DomainServer):
    name = "maps"
    description = (
        "Maps: places (offices, cafes, hotels, airports...) with addresses and coordinates, nearby search, "
        "distances, routes and travel times by mode, geocoding, opening hours, traffic incidents, saved places."
    )

    def _place(self, place_id: str) -> dict[str, Any]:
        return self.require("maps_places", place_id, "Place", "Use search_maps_places to find place ids.")

    def _staff(self, staff_id: str) -> dict[str, Any]:
        return self.require("staff", staff_id, "Staff member", "Use search_staff to find staff ids.")

    def _city(self, city: str) -> str:
        known = sorted({p["city"] for p in self.db.values("maps_places")})
        for c in known:
            if c.lower() == city.lower():
                return c
        raise invalid(f"city '{city}' is not on the map; known cities: {', '.join(known)}.")

    @tool(read_only=True)
    def list_maps_cities(self) -> dict[str, Any]:
        """The cities on the map with their number of places and of active traffic incidents."""
        out: dict[str, dict[str, int]] = {}
        for p in self.db.values("maps_places"):
            out.setdefault(p["city"], {"places": 0, "active_incidents": 0})["places"] += 1
        for i in self.db.values("maps_incidents"):
            if i["active"] and i["city"] in out:
                out[i["city"]]["active_incidents"] += 1
        return {"cities": dict(sorted(out.items()))}

    @tool(read_only=True)
    def search_maps_places(
        self,
        query: Annotated[str | None, Field(description="Text to find in the place name or address.")] = None,
        city: Annotated[str | None, Field(description="Only places in this city.")] = None,
        category: Annotated[Category | None, Field(description="Kind of place.")] = None,
        min_rating: Annotated[float, Field(ge=0, le=5, description="Only places rated at least this.")] = 0,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Search places, best rated first."""
        c = self._city(city) if city is not None else None
        rows = [
            p
            for p in self.db.values("maps_places")
            if (matches(p["name"], query) or matches(p["address"], query))
            and (c is None or p["city"] == c)
            and (category is None or p["category"] == category)
            and p["rating"] >= min_rating
        ]
        rows.sort(key=lambda p: (-p["rating"], p["id"]))
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_maps_place(self, place_id: PlaceId) -> dict[str, Any]:
        """One place: address, coordinates, rating, opening hours (and company_id for a company's HQ)."""
        return self._place(place_id)

    @tool(idempotent=False)
    def add_maps_place(
        self,
        name: Annotated[str, Field(min_length=2, max_length=120, description="Place name.")],
        category: Annotated[Category, Field(description="Kind of place.")],
        city: Annotated[str, Field(description="City the place is in.")],
        address: Annotated[str, Field(min_length=3, max_length=200, description="Street address.")],
        lat: Annotated[float, Field(ge=-90, le=90, description="Latitude in degrees.")],
        lon: Annotated[float, Field(ge=-180, le=180, description="Longitude in degrees.")],
    ) -> dict[str, Any]:
        """Add a place to the map (open 09:00-18:00 until its hours are set)."""
        c = self._city(city)
        if any(p["name"].lower() == name.lower() and p["city"] == c for p in self.db.values("maps_places")):
            raise conflict(f"'{name}' already exists in {c}; use search_maps_places to find it.")
        pid = self.next_id("maps_places", "pl-")
        rec = {"id": pid, "name": name, "category": category, "city": c, "address": address, "lat": lat,
               "lon": lon, "rating": 0.0, "opens": "09:00", "closes": "18:00", "company_id": None}  # fmt: skip
        self.db.put("maps_places", pid, rec)
        return rec

    @tool(idempotent=True)
    def update_maps_place_hours(self, place_id: PlaceId, opens: HHMM, closes: HHMM) -> dict[str, Any]:
        """Set a place's daily opening hours ('00:00'-'24:00' is always open)."""
        self._place(place_id)
        if closes <= opens:
            raise invalid(f"closes {closes} must be after opens {opens} (same day).")
        p = self.db.edit("maps_places", place_id)
        p["opens"], p["closes"] = opens, closes
        return p

    @tool(read_only=True)
    def check_maps_place_open(self, place_id: PlaceId, at: HHMM) -> dict[str, Any]:
        """Whether a place is open at a time of day."""
        p = self._place(place_id)
        return {"place_id": place_id, "at": at, "open": p["opens"] <= at < p["closes"],
                "opens": p["opens"], "closes": p["closes"]}  # fmt: skip

    @tool(read_only=True)
    def find_nearby_maps_places(
        self,
        place_id: Annotated[str, Field(description="The place id to search around, e.g. 'pl-001'.")],
        category: Annotated[Category | None, Field(description="Kind of place to find.")] = None,
        radius_km: Annotated[float, Field(gt=0, le=100, description="Search radius in km.")] = 5.0,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Places within a radius of a place, nearest first, with their distance in km."""
        origin = self._place(place_id)
        rows = []
        for p in self.db.values("maps_places"):
            if p["id"] == place_id or (category is not None and p["category"] != category):
                continue
            d = km_between(origin, p)
            if d <= radius_km:
                rows.append({**p, "distance_km": d})
        rows.sort(key=lambda p: (p["distance_km"], p["id"]))
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_maps_distance(
        self,
        from_place_id: Annotated[str, Field(description="Start place id.")],
        to_place_id: Annotated[str, Field(description="End place id.")],
    ) -> dict[str, Any]:
        """Straight-line (great-circle) distance between two places in km."""
        a, b = self._place(from_place_id), self._place(to_place_id)
        return {"from": a["id"], "to": b["id"], "distance_km": km_between(a, b)}

    @tool(read_only=True)
    def get_maps_route(
        self,
        from_place_id: Annotated[str, Field(description="Start place id.")],
        to_place_id: Annotated[str, Field(description="End place id.")],
        mode: Annotated[Mode, Field(description="How to travel.")] = "driving",
    ) -> dict[str, Any]:
        """Road distance and travel time between two places in one city; driving adds active incident delays."""
        a, b = self._place(from_place_id), self._place(to_place_id)
        if a["city"] != b["city"]:
            raise invalid(f"{a['id']} is in {a['city']} and {b['id']} in {b['city']}; routes stay within one "
                          "city (use travel_booking for flights).")  # fmt: skip
        km = round(km_between(a, b) * ROAD_FACTOR, 2)
        minutes = round(km / SPEED_KPH[mode] * 60)
        delay = 0
        if mode == "driving":
            delay = sum(
                i["delay_min"]
                for i in self.db.values("maps_incidents")
                if i["active"] and i["city"] == a["city"]
            )
        return {"from": a["id"], "to": b["id"], "mode": mode, "distance_km": km, "base_minutes": minutes,
                "traffic_delay_minutes": delay, "duration_minutes": minutes + delay}  # fmt: skip

    @tool(read_only=True)
    def geocode_maps_address(
        self,
        address: Annotated[
            str, Field(min_length=3, description="Street address or part of it, e.g. '12 Main St'.")
        ],
        city: Annotated[str | None, Field(description="Only in this city.")] = None,
    ) -> dict[str, Any]:
        """Coordinates of the places whose address contains the text."""
        c = self._city(city) if city is not None else None
        hits = [{"place_id": p["id"], "name": p["name"], "address": p["address"], "lat": p["lat"], "lon": p["lon"]}
                for p in sorted(self.db.values("maps_places"), key=lambda p: p["id"])
                if matches(p["address"], address) and (c is None or p["city"] == c)]  # fmt: skip
        return {"query": address, "matches": hits, "count": len(hits)}

    @tool(read_only=True)
    def reverse_geocode_maps(
        self,
        lat: Annotated[float, Field(ge=-90, le=90, description="Latitude in degrees.")],
        lon: Annotated[float, Field(ge=-180, le=180, description="Longitude in degrees.")],
    ) -> dict[str, Any]:
        """The place nearest to a coordinate, and how far it is."""
        here = {"lat": lat, "lon": lon}
        best = min(self.db.values("maps_places"), key=lambda p: (km_between(here, p), p["id"]))
        return {"place": best, "distance_km": km_between(here, best)}

    @tool(read_only=True)
    def list_maps_incidents(
        self,
        city: Annotated[str | None, Field(description="Only incidents in this city.")] = None,
        active_only: Annotated[bool, Field(description="Only incidents not yet resolved.")] = True,
        kind: Annotated[
            Literal["accident", "roadwork", "congestion", "closure"] | None,
            Field(description="Kind of incident."),
        ] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Traffic incidents, newest first."""
        c = self._city(city) if city is not None else None
        rows = [
            i
            for i in self.db.values("maps_incidents")
            if (c is None or i["city"] == c)
            and (i["active"] or not active_only)
            and (kind is None or i["kind"] == kind)
        ]
        rows.sort(key=lambda i: (i["reported"], i["id"]), reverse=True)
        return paginate(rows, limit, cursor)

    @tool(idempotent=False)
    def report_maps_incident(
        self,
        place_id: Annotated[str, Field(description="The place id the incident is near.")],
        kind: Annotated[
            Literal["accident", "roadwork", "congestion", "closure"], Field(description="Kind of incident.")
        ],
        delay_min: Annotated[int, Field(ge=0, le=600, description="Expected delay for drivers, in minutes.")],
    ) -> dict[str, Any]:
        """Report an active traffic incident near a place."""
        p = self._place(place_id)
        iid = self.next_id("maps_incidents", "inc-")
        rec = {"id": iid, "city": p["city"], "near_place_id": place_id, "kind": kind, "delay_min": delay_min,
               "reported": NOW_ISO, "active": True}  # fmt: skip
        self.db.put("maps_incidents", iid, rec)
        return rec

    @tool(idempotent=True)
    def resolve_maps_incident(
        self, incident_id: Annotated[str, Field(description="Incident id, e.g. 'inc-001'.")]
    ) -> dict[str, Any]:
        """Mark a traffic incident resolved (no longer delays routes)."""
        self.require(
            "maps_incidents", incident_id, "Incident", "Use list_maps_incidents to find incident ids."
        )
        i = self.db.edit("maps_incidents", incident_id)
        i["active"] = False
        return i

    @tool(read_only=True)
    def list_maps_saved_places(
        self, staff_id: StaffId, limit: Limit = 10, cursor: Cursor = None
    ) -> dict[str, Any]:
        """The places a staff member saved, by place id."""
        self._staff(staff_id)
        rows = [
            {**s, "name": (self.db.get("maps_places", s["place_id"]) or {}).get("name")}
            for s in self.db.values("maps_saved")
            if s["staff_id"] == staff_id
        ]
        rows.sort(key=lambda s: s["place_id"])
        return paginate(rows, limit, cursor)

    @tool(idempotent=True)
    def save_maps_place(
        self,
        staff_id: StaffId,
        place_id: PlaceId,
        label: Annotated[str, Field(max_length=60, description="Optional label, e.g. 'favourite'.")] = "",
    ) -> dict[str, Any]:
        """Save a place to a staff member's list (saving again updates the label)."""
        self._staff(staff_id)
        self._place(place_id)
        key = f"{staff_id}|{place_id}"
        rec = {"staff_id": staff_id, "place_id": place_id, "label": label}
        if self.db.get("maps_saved", key) != rec:
            self.db.put("maps_saved", key, rec)
        return rec

    @tool(destructive=True, idempotent=True)
    def remove_maps_saved_place(self, staff_id: StaffId, place_id: PlaceId) -> dict[str, Any]:
        """Remove a place from a staff member's saved list."""
        self._staff(staff_id)
        key = f"{staff_id}|{place_id}"
        if self.db.get("maps_saved", key) is None:
            saved = [s["place_id"] for s in self.db.values("maps_saved") if s["staff_id"] == staff_id]
            raise conflict(
                f"{place_id} is not saved by {staff_id}; saved: {', '.join(sorted(saved)) or 'none'}."
            )
        self.db.delete("maps_saved", key)
        return {"removed": place_id, "staff_id": staff_id}
