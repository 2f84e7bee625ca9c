"""Staff directory: who works here, in which team, and when they last logged in."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, matches, paginate, tool
from toolkit.envs.world import NOW

Team = Literal["support", "sales", "engineering", "finance"]
StaffId = Annotated[str, Field(description="Staff id, e.g. 'st-001'.")]


class Directory(DomainServer):
    name = "directory"
    description = "Company staff directory: people, teams, roles, cities, active flag and last login times."

    @tool(read_only=True)
    def list_staff(
        self,
        team: Annotated[Team | None, Field(description="Only this team.")] = None,
        active: Annotated[
            bool | None, Field(description="Only active (true) or inactive (false) staff.")
        ] = None,
        limit: Limit = 20,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List staff members, optionally by team or active flag."""
        rows = [
            s
            for s in self.db.values("staff")
            if (team is None or s["team"] == team) and (active is None or s["active"] == active)
        ]
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_staff(self, staff_id: StaffId) -> dict[str, Any]:
        """One staff member's profile."""
        return self.require("staff", staff_id, "Staff member", "Use search_staff or list_staff to find ids.")

    @tool(read_only=True)
    def search_staff(
        self,
        query: Annotated[str, Field(min_length=1, description="Part of a name or email.")],
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Find staff members by name or email."""
        rows = [s for s in self.db.values("staff") if matches(s["name"], query) or matches(s["email"], query)]
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def list_inactive_logins(
        self,
        days: Annotated[int, Field(ge=0, le=365, description="Minimum whole days since the last login.")],
        team: Annotated[Team | None, Field(description="Only this team.")] = None,
    ) -> dict[str, Any]:
        """Staff who have not logged in for at least ``days`` days, longest absent first."""
        cutoff = NOW - timedelta(days=days)
        rows = [
            {
                "id": s["id"],
                "name": s["name"],
                "team": s["team"],
                "last_login": s["last_login"],
                "days_since_login": (NOW - datetime.fromisoformat(s["last_login"])).days,
            }  # fmt: skip
            for s in self.db.values("staff")
            if datetime.fromisoformat(s["last_login"]) <= cutoff and (team is None or s["team"] == team)
        ]
        rows.sort(key=lambda r: r["last_login"])
        return {"days": days, "staff": rows, "count": len(rows)}

    @tool(read_only=True)
    def list_teams(self) -> dict[str, Any]:
        """Teams with their number of (active) members."""
        teams: dict[str, dict[str, int]] = {}
        for s in self.db.values("staff"):
            t = teams.setdefault(s["team"], {"members": 0, "active": 0})
            t["members"] += 1
            t["active"] += int(s["active"])
        return {"teams": dict(sorted(teams.items()))}

    @tool(idempotent=True)
    def update_staff(
        self,
        staff_id: StaffId,
        team: Annotated[Team | None, Field(description="Move to this team.")] = None,
        city: Annotated[str | None, Field(description="New city.")] = None,
        active: Annotated[bool | None, Field(description="Re-activate (true) or deactivate (false).")] = None,
    ) -> dict[str, Any]:
        """Change a staff member's team, city or active flag. Pass only the fields to change."""
        self.get_staff(staff_id)
        if team is None and city is None and active is None:
            raise invalid("nothing to update: pass team, city or active.")
        s = self.db.edit("staff", staff_id)
        if team is not None:
            s["team"] = team
            s["role"] = {"support": "Support Agent", "sales": "Account Executive", "engineering": "Engineer",
                         "finance": "Analyst"}[team]  # fmt: skip
        if city is not None:
            s["city"] = city
        if active is not None:
            s["active"] = active
        return s

    @tool(destructive=True, idempotent=True)
    def offboard_staff(self, staff_id: StaffId) -> dict[str, Any]:
        """Deactivate a staff member and unassign their open or pending helpdesk tickets."""
        s = self.get_staff(staff_id)
        if not s["active"]:
            raise conflict(f"{staff_id} ({s['name']}) is already inactive.")
        self.db.edit("staff", staff_id)["active"] = False
        moved = []
        for t in self.db.values("tickets"):
            if t["assignee_id"] == staff_id and t["status"] in ("open", "pending"):
                moved.append(t["id"])
        for tid in moved:
            t = self.db.edit("tickets", tid)
            t["assignee_id"] = None
        return {"offboarded": staff_id, "unassigned_tickets": moved}
