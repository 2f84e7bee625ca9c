"""Issue tracker (Jira-like): engineering projects, sprints and issues; issues may link helpdesk tickets."""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.clock import NOW_ISO
from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, matches, paginate, tool
from toolkit.envs.servers.dates import Since, Until, Window

IssueId = Annotated[str, Field(description="Issue key, e.g. 'WEB-3'.")]
IssueStatus = Literal["backlog", "todo", "in_progress", "in_review", "done"]
IssueType = Literal["bug", "feature", "task"]
IssuePriority = Literal["low", "medium", "high", "critical"]
# Allowed workflow moves: an issue goes forward one step, back to an earlier step, or straight to done from review.
FLOW = {
    "backlog": {"todo"},
    "todo": {"backlog", "in_progress"},
    "in_progress": {"todo", "in_review"},
    "in_review": {"in_progress", "done"},
    "done": {"in_progress"},
}


def _summary(i: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "project_id", "title", "type", "status", "priority", "assignee_id", "sprint_id", "story_points",
            "labels", "linked_ticket_ids", "created", "updated")  # fmt: skip
    return {k: i[k] for k in keys}


class IssueTracker(DomainServer):
    name = "issue_tracker"
    description = (
        "Engineering issue tracker: projects, sprints and issues (bugs, features, tasks); create, assign, "
        "transition and comment on issues, plan sprints, link issues to helpdesk tickets."
    )

    def _issue(self, issue_id: str) -> dict[str, Any]:
        return self.require("issues", issue_id.upper(), "Issue", "Use search_issues to find issue keys.")

    def _edit(self, issue_id: str) -> dict[str, Any]:
        self._issue(issue_id)
        i = self.db.edit("issues", issue_id.upper())
        i["updated"] = NOW_ISO
        return i

    def _project(self, project_id: str) -> dict[str, Any]:
        return self.require("issue_projects", project_id.upper(), "Project", "Use list_issue_projects.")

    def _sprint(self, sprint_id: str) -> dict[str, Any]:
        return self.require("issue_sprints", sprint_id.upper(), "Sprint", "Use list_issue_sprints.")

    def _assignee(self, staff_id: str) -> dict[str, Any]:
        s = self.require("staff", staff_id, "Staff member", "Use list_staff to find staff ids.")
        if not s["active"]:
            raise conflict(f"{staff_id} ({s['name']}) is inactive; assign an active staff member.")
        return s

    # -- projects and sprints --------------------------------------------------------------------
    @tool(read_only=True)
    def list_issue_projects(self) -> dict[str, Any]:
        """All projects with their lead and number of open (not done) issues."""
        open_ = Counter(i["project_id"] for i in self.db.values("issues") if i["status"] != "done")
        rows = [
            {**p, "open_issues": open_[p["id"]]}
            for p in sorted(self.db.values("issue_projects"), key=lambda p: p["id"])
        ]
        return {"projects": rows}

    @tool(read_only=True)
    def get_issue_project(
        self, project_id: Annotated[str, Field(description="Project key, e.g. 'WEB'.")]
    ) -> dict[str, Any]:
        """One project with its lead, its sprints and issue counts by status."""
        p = self._project(project_id)
        rows = [i for i in self.db.values("issues") if i["project_id"] == p["id"]]
        sprints = sorted(s["id"] for s in self.db.values("issue_sprints") if s["project_id"] == p["id"])
        return {**p, "sprints": sprints, "issues": len(rows),
                "by_status": dict(sorted(Counter(i["status"] for i in rows).items()))}  # fmt: skip

    @tool(read_only=True)
    def list_issue_sprints(
        self,
        project_id: Annotated[
            str | None, Field(description="Only sprints of this project key, e.g. 'WEB'.")
        ] = None,
        state: Annotated[
            Literal["closed", "active", "future"] | None, Field(description="Only this state.")
        ] = None,
    ) -> dict[str, Any]:
        """Sprints with dates and state."""
        if project_id is not None:
            self._project(project_id)
        rows = [
            s
            for s in self.db.values("issue_sprints")
            if (project_id is None or s["project_id"] == project_id.upper())
            and (state is None or s["state"] == state)
        ]
        return {"sprints": sorted(rows, key=lambda s: s["id"])}

    @tool(read_only=True)
    def get_issue_sprint_report(
        self, sprint_id: Annotated[str, Field(description="Sprint id, e.g. 'WEB-S2'.")]
    ) -> dict[str, Any]:
        """A sprint's issues with story points: total, done and remaining, and counts by status."""
        s = self._sprint(sprint_id)
        rows = [i for i in self.db.values("issues") if i["sprint_id"] == s["id"]]
        done = sum(i["story_points"] or 0 for i in rows if i["status"] == "done")  # unestimated: 0
        total = sum(i["story_points"] or 0 for i in rows)
        return {
            **s,
            "issues": sorted(i["id"] for i in rows),
            "points_total": total,
            "points_done": done,
            "points_remaining": total - done,
            "unestimated": sorted(i["id"] for i in rows if i["story_points"] is None),
            "by_status": dict(sorted(Counter(i["status"] for i in rows).items())),
        }

    @tool(idempotent=False)
    def close_issue_sprint(
        self, sprint_id: Annotated[str, Field(description="The active sprint id to close, e.g. 'WEB-S2'.")]
    ) -> dict[str, Any]:
        """Close the active sprint: unfinished issues move to the project's next future sprint (or the
        backlog when there is none) and that future sprint becomes active."""
        s = self._sprint(sprint_id)
        if s["state"] != "active":
            raise conflict(f"sprint {s['id']} is {s['state']}; only the active sprint can be closed.")
        nxt = min(
            (
                x
                for x in self.db.values("issue_sprints")
                if x["project_id"] == s["project_id"] and x["state"] == "future"
            ),
            key=lambda x: x["start"],
            default=None,
        )
        moved = sorted(
            i["id"] for i in self.db.values("issues") if i["sprint_id"] == s["id"] and i["status"] != "done"
        )
        for iid in moved:
            self._edit(iid)["sprint_id"] = nxt["id"] if nxt else None
        self.db.edit("issue_sprints", s["id"])["state"] = "closed"
        if nxt:
            self.db.edit("issue_sprints", nxt["id"])["state"] = "active"
        return {"closed": s["id"], "moved_issues": moved, "moved_to": nxt["id"] if nxt else None}

    # -- issues ----------------------------------------------------------------------------------
    @tool(read_only=True)
    def search_issues(
        self,
        query: Annotated[str | None, Field(description="Text to find in the title or description.")] = None,
        project_id: Annotated[str | None, Field(description="Only this project key, e.g. 'WEB'.")] = None,
        status: Annotated[IssueStatus | None, Field(description="Only this status.")] = None,
        type: Annotated[IssueType | None, Field(description="Only this issue type.")] = None,
        priority: Annotated[IssuePriority | None, Field(description="Only this priority.")] = None,
        assignee_id: Annotated[
            str | None, Field(description="Only issues assigned to this staff id.")
        ] = None,
        label: Annotated[str | None, Field(description="Only issues with this label.")] = None,
        sprint_id: Annotated[str | None, Field(description="Only issues in this sprint id.")] = None,
        since: Since = None,
        until: Until = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Search issues by text and filters (creation date window included), newest first."""
        window = Window(since, until)
        rows = [
            _summary(i)
            for i in self.db.values("issues")
            if (matches(i["title"], query) or matches(i["description"], query))
            and (project_id is None or i["project_id"] == project_id.upper())
            and (status is None or i["status"] == status)
            and (type is None or i["type"] == type)
            and (priority is None or i["priority"] == priority)
            and (assignee_id is None or i["assignee_id"] == assignee_id)
            and (label is None or label.lower() in i["labels"])
            and (sprint_id is None or i["sprint_id"] == sprint_id.upper())
            and window(i["created"])
        ]
        return paginate(sorted(rows, key=lambda i: (i["created"], i["id"]), reverse=True), limit, cursor)

    @tool(read_only=True)
    def get_issue(self, issue_id: IssueId) -> dict[str, Any]:
        """One issue with its description, comments, labels and linked helpdesk tickets."""
        return dict(self._issue(issue_id))

    @tool(idempotent=False)
    def create_issue(
        self,
        project_id: Annotated[str, Field(description="Project key, e.g. 'WEB'.")],
        title: Annotated[str, Field(min_length=3, description="Short summary.")],
        type: Annotated[IssueType, Field(description="Issue type.")] = "bug",
        priority: Annotated[IssuePriority, Field(description="Priority.")] = "medium",
        description: Annotated[str, Field(description="Details.")] = "",
        reporter_id: Annotated[str | None, Field(description="Staff id of the reporter.")] = None,
        labels: Annotated[list[str] | None, Field(description="Labels, e.g. ['backend'].")] = None,
    ) -> dict[str, Any]:
        """Create an issue in a project's backlog. Its key is the project key and the next number."""
        proj = self._project(project_id)
        if reporter_id is not None:
            self.require("staff", reporter_id, "Staff member", "Use list_staff to find staff ids.")
        n = 1 + max(
            (int(i["id"].split("-")[1]) for i in self.db.values("issues") if i["project_id"] == proj["id"]),
            default=0,
        )
        iid = f"{proj['id']}-{n}"
        issue = {
            "id": iid,
            "project_id": proj["id"],
            "title": title,
            "type": type,
            "status": "backlog",
            "priority": priority,
            "assignee_id": None,
            "reporter_id": reporter_id,
            "labels": sorted({x.strip().lower() for x in labels or [] if x.strip()}),
            "sprint_id": None,
            "story_points": None,
            "linked_ticket_ids": [],
            "description": description,
            "comments": [],
            "created": NOW_ISO,
            "updated": NOW_ISO,
        }
        self.db.put("issues", iid, issue)
        return issue

    @tool(idempotent=True)
    def update_issue(
        self,
        issue_id: IssueId,
        title: Annotated[str | None, Field(min_length=3, description="New title.")] = None,
        priority: Annotated[IssuePriority | None, Field(description="New priority.")] = None,
        story_points: Annotated[
            int | None, Field(ge=0, le=40, description="New estimate in story points.")
        ] = None,
        description: Annotated[str | None, Field(description="New description.")] = None,
    ) -> dict[str, Any]:
        """Change an issue's title, priority, estimate or description."""
        self._issue(issue_id)
        changes = {
            "title": title,
            "priority": priority,
            "story_points": story_points,
            "description": description,
        }
        changes = {k: v for k, v in changes.items() if v is not None}
        if not changes:
            raise invalid("give at least one of title, priority, story_points, description.")
        i = self._edit(issue_id)
        i.update(changes)
        return _summary(i)

    @tool(idempotent=True)
    def transition_issue(
        self, issue_id: IssueId, status: Annotated[IssueStatus, Field(description="The new status.")]
    ) -> dict[str, Any]:
        """Move an issue through the workflow backlog -> todo -> in_progress -> in_review -> done."""
        cur = self._issue(issue_id)["status"]
        if status != cur and status not in FLOW[cur]:
            raise invalid(
                f"cannot go from {cur} to {status}; from {cur} the allowed moves are {sorted(FLOW[cur])}."
            )
        i = self._edit(issue_id)
        i["status"] = status
        return _summary(i)

    @tool(idempotent=True)
    def assign_issue(
        self,
        issue_id: IssueId,
        assignee_id: Annotated[str | None, Field(description="Staff id to assign; null to unassign.")],
    ) -> dict[str, Any]:
        """Assign an issue to an active staff member, or unassign it."""
        self._issue(issue_id)
        if assignee_id is not None:
            self._assignee(assignee_id)
        i = self._edit(issue_id)
        i["assignee_id"] = assignee_id
        return _summary(i)

    @tool(idempotent=True)
    def move_issue_to_sprint(
        self,
        issue_id: IssueId,
        sprint_id: Annotated[
            str | None,
            Field(description="Active or future sprint id of the same project; null: back to backlog."),
        ],
    ) -> dict[str, Any]:
        """Plan an issue into an active or future sprint of its project, or take it out of sprints."""
        issue = self._issue(issue_id)
        sid = None
        if sprint_id is not None:
            s = self._sprint(sprint_id)
            if s["project_id"] != issue["project_id"]:
                raise invalid(
                    f"sprint {s['id']} belongs to project {s['project_id']}, the issue to {issue['project_id']}."
                )
            if s["state"] == "closed":
                raise conflict(f"sprint {s['id']} is closed; pick the active or a future sprint.")
            sid = s["id"]
        i = self._edit(issue_id)
        i["sprint_id"] = sid
        return _summary(i)

    @tool(idempotent=False)
    def add_issue_comment(
        self,
        issue_id: IssueId,
        body: Annotated[str, Field(min_length=1, description="The comment text.")],
        author_id: Annotated[str, Field(description="Staff id of the author.")],
    ) -> dict[str, Any]:
        """Comment on an issue."""
        self._issue(issue_id)
        self.require("staff", author_id, "Staff member", "Use list_staff to find staff ids.")
        i = self._edit(issue_id)
        c = {"author_id": author_id, "body": body, "at": NOW_ISO}
        i["comments"].append(c)
        return {"issue_id": i["id"], "comment_index": len(i["comments"]) - 1, **c}

    @tool(read_only=True)
    def list_issue_comments(
        self, issue_id: IssueId, limit: Limit = 10, cursor: Cursor = None
    ) -> dict[str, Any]:
        """An issue's comments, oldest first."""
        return paginate(self._issue(issue_id)["comments"], limit, cursor)

    @tool(idempotent=True)
    def set_issue_labels(
        self,
        issue_id: IssueId,
        add: Annotated[list[str] | None, Field(description="Labels to add.")] = None,
        remove: Annotated[list[str] | None, Field(description="Labels to remove.")] = None,
    ) -> dict[str, Any]:
        """Add and/or remove labels on an issue."""
        cur = set(self._issue(issue_id)["labels"])
        drop = {x.lower() for x in remove or []}
        if missing := sorted(drop - cur):
            raise invalid(f"issue has no label(s) {missing}; its labels are {sorted(cur)}.")
        if not add and not remove:
            raise invalid("give labels to add and/or remove.")
        i = self._edit(issue_id)
        i["labels"] = sorted((cur | {x.strip().lower() for x in add or [] if x.strip()}) - drop)
        return _summary(i)

    @tool(idempotent=True)
    def link_issue_ticket(
        self,
        issue_id: IssueId,
        ticket_id: Annotated[str, Field(description="Helpdesk ticket id, e.g. 't-1001'.")],
    ) -> dict[str, Any]:
        """Link a helpdesk ticket to an issue (a customer report of the same problem)."""
        self._issue(issue_id)
        self.require("tickets", ticket_id, "Ticket", "Use search_tickets to find ticket ids.")
        i = self._edit(issue_id)
        i["linked_ticket_ids"] = sorted({*i["linked_ticket_ids"], ticket_id})
        return _summary(i)

    @tool(destructive=True, idempotent=True)
    def unlink_issue_ticket(
        self,
        issue_id: IssueId,
        ticket_id: Annotated[str, Field(description="Helpdesk ticket id to unlink.")],
    ) -> dict[str, Any]:
        """Remove a helpdesk ticket link from an issue."""
        issue = self._issue(issue_id)
        if ticket_id not in issue["linked_ticket_ids"]:
            raise conflict(
                f"{issue['id']} is not linked to {ticket_id}; its links: {issue['linked_ticket_ids']}."
            )
        i = self._edit(issue_id)
        i["linked_ticket_ids"] = [t for t in i["linked_ticket_ids"] if t != ticket_id]
        return _summary(i)

    @tool(read_only=True)
    def list_issues_for_ticket(
        self, ticket_id: Annotated[str, Field(description="Helpdesk ticket id, e.g. 't-1001'.")]
    ) -> dict[str, Any]:
        """The issues a helpdesk ticket is linked to."""
        self.require("tickets", ticket_id, "Ticket", "Use search_tickets to find ticket ids.")
        rows = [_summary(i) for i in self.db.values("issues") if ticket_id in i["linked_ticket_ids"]]
        return {"ticket_id": ticket_id, "issues": sorted(rows, key=lambda i: i["id"])}

    @tool(read_only=True)
    def issue_stats(
        self,
        group_by: Annotated[
            Literal["status", "priority", "type", "assignee_id", "label", "project_id"],
            Field(description="Field to count by."),
        ] = "status",
        project_id: Annotated[str | None, Field(description="Only this project key.")] = None,
        status: Annotated[IssueStatus | None, Field(description="Only issues with this status.")] = None,
    ) -> dict[str, Any]:
        """Count issues grouped by status, priority, type, assignee, label or project."""
        counts: Counter[str] = Counter()
        for i in self.db.values("issues"):
            if (project_id is None or i["project_id"] == project_id.upper()) and (
                status is None or i["status"] == status
            ):
                counts.update(str(k) for k in (i["labels"] if group_by == "label" else [i[group_by]]))
        return {"group_by": group_by, "counts": dict(sorted(counts.items())), "total": sum(counts.values())}

    @tool(destructive=True, idempotent=True)
    def delete_issue(self, issue_id: IssueId) -> dict[str, Any]:
        """Permanently delete an issue (duplicates, spam). Prefer transition_issue for normal work."""
        iid = self._issue(issue_id)["id"]
        self.db.delete("issues", iid)
        return {"deleted": iid}
