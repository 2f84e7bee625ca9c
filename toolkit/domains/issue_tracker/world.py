"""Issue tracker world: engineering projects, sprints and issues, some linked to helpdesk tickets."""

from __future__ import annotations

from datetime import timedelta
from random import Random

from toolkit.envs.clock import NOW, TODAY, World, iso

PROJECTS = [("WEB", "Web App"), ("API", "Public API"), ("MOB", "Mobile App")]
ISSUE_TITLES = {
    "bug": ["Login fails after password reset", "CSV export times out", "Webhook retries never stop",
            "2FA code email delayed", "Dashboard chart shows wrong totals", "Crash on startup"],
    "feature": ["Dark mode", "Bulk edit of contacts", "SAML single sign-on", "Rate limit dashboard",
                "Offline mode"],
    "task": ["Upgrade database driver", "Rotate API keys", "Write runbook for on-call", "Remove old feature flags"],
}  # fmt: skip
TICKET_TAG_TO_TITLE = {"login": "Login fails after password reset", "export": "CSV export times out",
                       "webhooks": "Webhook retries never stop", "2fa": "2FA code email delayed"}  # fmt: skip
STATUSES = ["backlog", "todo", "in_progress", "in_review", "done"]
LABELS = ["frontend", "backend", "customer-reported", "security", "performance", "tech-debt"]


def add_issue_tracker(w: World, rng: Random) -> None:
    staff = w["staff"]
    engineers = sorted(s for s in staff if staff[s]["team"] == "engineering")
    everyone = sorted(staff)
    projects: dict[str, dict] = {}
    sprints: dict[str, dict] = {}
    for key, name in PROJECTS:
        projects[key] = {
            "id": key,
            "name": name,
            "lead_id": rng.choice(engineers),
            "description": f"{name} work",
        }
        for k, state in enumerate(["closed", "active", "future"]):
            start = TODAY + timedelta(days=14 * (k - 1) - 7)
            sid = f"{key}-S{k + 1}"
            sprints[sid] = {"id": sid, "project_id": key, "name": f"{name} sprint {k + 1}", "state": state,
                            "start": iso(start), "end": iso(start + timedelta(days=13))}  # fmt: skip
    w["issue_projects"] = projects
    w["issue_sprints"] = sprints

    # Customer tickets whose tags describe a known bug: issues with that title link some of them.
    reports: dict[str, list[str]] = {}
    for t in sorted(w["tickets"].values(), key=lambda t: t["id"]):
        for title in sorted({TICKET_TAG_TO_TITLE[tag] for tag in t["tags"] if tag in TICKET_TAG_TO_TITLE}):
            reports.setdefault(title, []).append(t["id"])
    issues: dict[str, dict] = {}
    counters = dict.fromkeys(projects, 0)
    for i in range(46):
        key = PROJECTS[i % len(PROJECTS)][0]
        counters[key] += 1
        iid = f"{key}-{counters[key]}"
        itype = rng.choices(["bug", "feature", "task"], weights=[5, 3, 2])[0]
        title = rng.choice(ISSUE_TITLES[itype])
        status = rng.choices(STATUSES, weights=[3, 3, 3, 2, 4])[0]
        created = NOW - timedelta(hours=rng.randint(5, 24 * 50))
        linked = [t for t in reports.get(title, []) if rng.random() < 0.5][:3] if itype == "bug" else []
        sprint = None
        if status != "backlog":
            sprint = f"{key}-S1" if status == "done" and rng.random() < 0.6 else f"{key}-S2"
        labels = sorted(
            set(rng.sample(LABELS, rng.randint(0, 2))) | ({"customer-reported"} if linked else set())
        )
        issues[iid] = {
            "id": iid,
            "project_id": key,
            "title": title,
            "type": itype,
            "status": status,
            "priority": rng.choices(["low", "medium", "high", "critical"], weights=[2, 4, 3, 1])[0],
            "assignee_id": rng.choice(engineers) if status != "backlog" else None,
            "reporter_id": rng.choice(everyone),
            "labels": labels,
            "sprint_id": sprint,
            "story_points": rng.choice([1, 2, 3, 5, 8]),
            "linked_ticket_ids": linked,
            "description": f"{title}.",
            "comments": [],
            "created": iso(created),
            "updated": iso(min(NOW, created + timedelta(hours=rng.randint(1, 200)))),
        }
        if rng.random() < 0.5:
            issues[iid]["comments"].append(
                {
                    "author_id": rng.choice(engineers),
                    "body": rng.choice(["Reproduced.", "Needs design review.", "PR is up."]),
                    "at": issues[iid]["updated"],
                }  # fmt: skip
            )
    w["issues"] = issues
