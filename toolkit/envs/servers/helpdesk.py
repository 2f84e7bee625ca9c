"""Helpdesk (Zendesk-like): tickets raised by customers, worked by support staff."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.servers.base import (
    Cursor,
    DomainServer,
    Limit,
    conflict,
    invalid,
    matches,
    paginate,
    tool,
)
from toolkit.envs.world import NOW

Status = Literal["new", "open", "pending", "solved", "closed"]
Priority = Literal["low", "normal", "high", "urgent"]
TicketId = Annotated[str, Field(description="Ticket id, e.g. 't-1001'.")]
STAMP = NOW.isoformat(timespec="minutes")


def _summary(t: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "id",
        "subject",
        "status",
        "priority",
        "requester_id",
        "assignee_id",
        "tags",
        "created",
        "updated",
    )
    return {k: t[k] for k in keys}


class Helpdesk(DomainServer):
    name = "helpdesk"
    description = "Customer support tickets: search, read, create, comment, tag, assign and resolve tickets."

    def _ticket(self, ticket_id: str) -> dict[str, Any]:
        return self.require("tickets", ticket_id, "Ticket", "Use search_tickets to find ticket ids.")

    def _edit(self, ticket_id: str) -> dict[str, Any]:
        self._ticket(ticket_id)
        t = self.db.edit("tickets", ticket_id)
        t["updated"] = STAMP
        return t

    @tool(read_only=True)
    def search_tickets(
        self,
        query: Annotated[str | None, Field(description="Text to find in the subject or comments.")] = None,
        status: Annotated[Status | None, Field(description="Only tickets with this status.")] = None,
        priority: Annotated[Priority | None, Field(description="Only tickets with this priority.")] = None,
        tag: Annotated[str | None, Field(description="Only tickets carrying this tag.")] = None,
        requester_id: Annotated[
            str | None, Field(description="Only tickets raised by this customer id.")
        ] = None,
        assignee_id: Annotated[
            str | None, Field(description="Only tickets assigned to this staff id.")
        ] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Search helpdesk tickets by text and filters, newest first. Returns ticket summaries."""
        found = [
            _summary(t)
            for t in self.db.values("tickets")
            if (status is None or t["status"] == status)
            and (priority is None or t["priority"] == priority)
            and (tag is None or tag.lower() in t["tags"])
            and (requester_id is None or t["requester_id"] == requester_id)
            and (assignee_id is None or t["assignee_id"] == assignee_id)
            and (matches(t["subject"], query) or any(matches(c["body"], query) for c in t["comments"]))
        ]
        found.sort(key=lambda t: t["created"], reverse=True)
        return paginate(found, limit, cursor)

    @tool(read_only=True)
    def view_ticket(self, ticket_id: TicketId) -> dict[str, Any]:
        """Get one ticket with its comments, tags, status history and satisfaction rating."""
        return dict(self._ticket(ticket_id))

    @tool(idempotent=False)
    def submit_ticket(
        self,
        requester_id: Annotated[str, Field(description="Customer id of the requester, e.g. 'cu-001'.")],
        subject: Annotated[str, Field(min_length=3, description="Short summary of the problem.")],
        description: Annotated[str, Field(description="Full description; becomes the first comment.")],
        priority: Annotated[Priority, Field(description="Ticket priority.")] = "normal",
        tags: Annotated[list[str] | None, Field(description="Tags to attach, e.g. ['billing'].")] = None,
    ) -> dict[str, Any]:
        """Create a new ticket on behalf of a customer. Returns the new ticket."""
        cust = self.require(
            "customers", requester_id, "Customer", "Use search_contacts to find customer ids."
        )
        tid = self.next_id("tickets", "t-", 4, start=1001)
        ticket = {
            "id": tid,
            "subject": subject,
            "requester_id": requester_id,
            "company_id": cust["company_id"],
            "assignee_id": None,
            "status": "new",
            "priority": priority,
            "channel": "api",
            "tags": sorted({t.lower() for t in tags or []}),
            "comments": [{"author_id": requester_id, "body": description, "at": STAMP, "public": True}],
            "status_history": [{"status": "new", "at": STAMP, "by": requester_id}],
            "satisfaction": None,
            "created": STAMP,
            "updated": STAMP,
        }
        self.db.put("tickets", tid, ticket)
        return ticket

    @tool(idempotent=True)
    def set_ticket_status(
        self,
        ticket_id: TicketId,
        status: Annotated[Status, Field(description="The new status.")],
        by: Annotated[
            str | None, Field(description="Staff id making the change (defaults to the assignee).")
        ] = None,
    ) -> dict[str, Any]:
        """Change a ticket's status (recorded in its status history). Closed tickets cannot be reopened."""
        t = self._ticket(ticket_id)
        if t["status"] == "closed" and status != "closed":
            raise conflict(
                f"ticket {ticket_id} is closed and cannot be reopened; submit a new ticket instead."
            )
        if status == "new" and t["status"] != "new":
            raise invalid("a ticket cannot go back to 'new'; use 'open' to reopen a solved ticket.")
        if by is not None:
            self.require("staff", by, "Staff member", "Use list_staff to find staff ids.")
        t = self._edit(ticket_id)
        if t["status"] != status:
            t["status"] = status
            t["status_history"].append({"status": status, "at": STAMP, "by": by or t["assignee_id"]})
        return _summary(t)

    @tool(idempotent=True)
    def assign_ticket(
        self,
        ticket_id: TicketId,
        assignee_id: Annotated[str, Field(description="Staff id of a support agent, e.g. 'st-002'.")],
    ) -> dict[str, Any]:
        """Assign a ticket to a support agent; a 'new' ticket becomes 'open'."""
        self._ticket(ticket_id)
        agent = self.require("staff", assignee_id, "Staff member", "Use list_staff with team='support'.")
        if agent["team"] != "support":
            raise invalid(f"{assignee_id} ({agent['name']}) is in team '{agent['team']}', not support.")
        if not agent["active"]:
            raise conflict(f"{assignee_id} ({agent['name']}) is inactive; pick an active support agent.")
        t = self._edit(ticket_id)
        t["assignee_id"] = assignee_id
        if t["status"] == "new":
            t["status"] = "open"
            t["status_history"].append({"status": "open", "at": STAMP, "by": assignee_id})
        return _summary(t)

    @tool(idempotent=True)
    def set_ticket_priority(
        self, ticket_id: TicketId, priority: Annotated[Priority, Field(description="The new priority.")]
    ) -> dict[str, Any]:
        """Change a ticket's priority."""
        t = self._edit(ticket_id)
        t["priority"] = priority
        return _summary(t)

    @tool(idempotent=False)
    def add_ticket_comment(
        self,
        ticket_id: TicketId,
        body: Annotated[str, Field(min_length=1, description="The comment text.")],
        public: Annotated[
            bool, Field(description="True: visible to the customer; False: internal note.")
        ] = True,
        author_id: Annotated[
            str | None, Field(description="Staff id of the author (defaults to assignee).")
        ] = None,
    ) -> dict[str, Any]:
        """Add a public reply or an internal note to a ticket."""
        if author_id is not None:
            self.require("staff", author_id, "Staff member", "Use list_staff to find staff ids.")
        t = self._ticket(ticket_id)
        if t["status"] == "closed":
            raise conflict(f"ticket {ticket_id} is closed; comments are no longer accepted.")
        t = self._edit(ticket_id)
        comment = {"author_id": author_id or t["assignee_id"], "body": body, "at": STAMP, "public": public}
        t["comments"].append(comment)
        return {"ticket_id": ticket_id, "comment_index": len(t["comments"]) - 1, **comment}

    @tool(read_only=True)
    def list_ticket_comments(
        self,
        ticket_id: TicketId,
        public_only: Annotated[bool, Field(description="Skip internal notes.")] = False,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List a ticket's comments, oldest first."""
        comments = [c for c in self._ticket(ticket_id)["comments"] if c["public"] or not public_only]
        return paginate(comments, limit, cursor)

    @tool(idempotent=True)
    def add_ticket_tags(
        self, ticket_id: TicketId, tags: Annotated[list[str], Field(min_length=1, description="Tags to add.")]
    ) -> dict[str, Any]:
        """Add tags to a ticket (existing tags are kept)."""
        t = self._edit(ticket_id)
        t["tags"] = sorted(set(t["tags"]) | {x.strip().lower() for x in tags if x.strip()})
        return _summary(t)

    @tool(idempotent=True)
    def remove_ticket_tag(
        self, ticket_id: TicketId, tag: Annotated[str, Field(description="Tag to remove.")]
    ) -> dict:
        """Remove one tag from a ticket."""
        t = self._ticket(ticket_id)
        if tag.lower() not in t["tags"]:
            raise invalid(f"ticket {ticket_id} has no tag '{tag}'; its tags are {t['tags']}.")
        t = self._edit(ticket_id)
        t["tags"] = [x for x in t["tags"] if x != tag.lower()]
        return _summary(t)

    @tool(read_only=True)
    def get_ticket_history(self, ticket_id: TicketId) -> dict[str, Any]:
        """The status changes of a ticket (status, time, by whom), oldest first."""
        t = self._ticket(ticket_id)
        return {"ticket_id": ticket_id, "status": t["status"], "history": t["status_history"]}

    @tool(read_only=True)
    def list_satisfaction_ratings(
        self,
        rating: Annotated[Literal["good", "bad"] | None, Field(description="Only this rating.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Customer satisfaction ratings left on solved or closed tickets."""
        rows = [
            {"ticket_id": t["id"], "assignee_id": t["assignee_id"], **t["satisfaction"]}
            for t in self.db.values("tickets")
            if t["satisfaction"] and (rating is None or t["satisfaction"]["rating"] == rating)
        ]
        return paginate(rows, limit, cursor)

    @tool(destructive=True, idempotent=True)
    def delete_ticket(self, ticket_id: TicketId) -> dict[str, Any]:
        """Permanently delete a ticket (spam or duplicates). Prefer set_ticket_status for normal work."""
        self._ticket(ticket_id)
        self.db.delete("tickets", ticket_id)
        return {"deleted": ticket_id}

    @tool(destructive=True)
    def merge_tickets(
        self,
        source_id: Annotated[str, Field(description="Ticket to merge and close.")],
        target_id: Annotated[str, Field(description="Ticket that receives the comments.")],
    ) -> dict[str, Any]:
        """Merge a duplicate ticket into another: comments are copied over and the source is closed."""
        if source_id == target_id:
            raise invalid("source_id and target_id are the same ticket.")
        src, _ = self._ticket(source_id), self._ticket(target_id)
        if src["status"] == "closed":
            raise conflict(f"ticket {source_id} is already closed.")
        target = self._edit(target_id)
        target["comments"].extend(copy.deepcopy(src["comments"]))
        target["comments"].append(
            {"author_id": None, "body": f"Merged from {source_id}.", "at": STAMP, "public": False}
        )
        src = self._edit(source_id)
        src["status"] = "closed"
        src["status_history"].append({"status": "closed", "at": STAMP, "by": None})
        return {"merged": source_id, "into": target_id, "comments": len(target["comments"])}

    @tool(read_only=True)
    def ticket_stats(
        self,
        group_by: Annotated[
            Literal["status", "priority", "assignee_id", "tag", "channel"],
            Field(description="Field to count by."),
        ] = "status",
        status: Annotated[Status | None, Field(description="Only count tickets with this status.")] = None,
    ) -> dict[str, Any]:
        """Count tickets grouped by status, priority, assignee, tag or channel."""
        counts: Counter[str] = Counter()
        for t in self.db.values("tickets"):
            if status is not None and t["status"] != status:
                continue
            keys = t["tags"] if group_by == "tag" else [t[group_by]]
            counts.update(str(k) for k in keys)
        return {"group_by": group_by, "counts": dict(sorted(counts.items())), "total": sum(counts.values())}

    @tool(read_only=True)
    def agent_workload(self) -> dict[str, Any]:
        """Open and pending tickets per support agent (with names), busiest first."""
        load: dict[str, dict[str, Any]] = {}
        for s in self.db.values("staff"):
            if s["team"] == "support":
                load[s["id"]] = {
                    "staff_id": s["id"],
                    "name": s["name"],
                    "active": s["active"],
                    "open": 0,
                    "pending": 0,
                }
        for t in self.db.values("tickets"):
            if t["assignee_id"] in load and t["status"] in ("open", "pending"):
                load[t["assignee_id"]][t["status"]] += 1
        rows = sorted(load.values(), key=lambda r: (-(r["open"] + r["pending"]), r["staff_id"]))
        return {
            "agents": rows,
            "unassigned": sum(1 for t in self.db.values("tickets") if t["assignee_id"] is None),
        }
