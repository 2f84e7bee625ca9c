"""Issue tracker templates: issue lookups, sprint points and bug counts, filing issues, and a chain
from a helpdesk ticket to the engineer working on its linked issue."""

from __future__ import annotations

from toolkit.synth.base import Answer, Draft, Step
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import ALL, field_of

SERVER = "issue_tracker"
ISSUE_FIELDS = {
    "status": "status",
    "priority": "priority",
    "type": "type",
    "story_points": "story-point estimate",
}


@template("it_issue_field", "lookup", [SERVER])
def issue_field(ctx: Ctx) -> Draft:
    ctx.need("get_issue")
    issue = ctx.choose(ctx.records("issues"))
    fld = ctx.choose(sorted(ISSUE_FIELDS))
    norm = "number" if fld == "story_points" else "text"
    prompt = ctx.say(
        ["What is the {w} of issue {id}?", "Look up engineering issue {id} and tell me its {w}."],
        ["Issue {id} in the tracker: what {w} does it have?"],
        w=ISSUE_FIELDS[fld], id=issue["id"],
    )  # fmt: skip
    return Draft(
        "", "", prompt, [SERVER],
        [Step("get_issue", {"issue_id": issue["id"]}, purpose=f"read issue {issue['id']}")],
        answers=[Answer(fld, issue[fld], norm, text=f"the {ISSUE_FIELDS[fld]} of {issue['id']} is {issue[fld]}")],
        reference_answer=f"Issue {issue['id']} ({issue['title']}) has {ISSUE_FIELDS[fld]} {issue[fld]}.",
        recompute=lambda r: {fld: field_of(r[0], fld)},
        keep=[issue["id"]],
    )  # fmt: skip


@template("it_sprint_points", "aggregate", [SERVER])
def sprint_points(ctx: Ctx) -> Draft:
    ctx.need("get_issue_sprint_report")
    sprint = ctx.choose(ctx.records("issue_sprints", lambda s: s["state"] != "future"))
    rows = ctx.records("issues", lambda i: i["sprint_id"] == sprint["id"])
    if not rows:
        raise Skip("empty sprint")
    ask = ctx.choose(["points_remaining", "points_done"])
    value = sum(i["story_points"] for i in rows if (i["status"] == "done") == (ask == "points_done"))
    words = "are still open" if ask == "points_remaining" else "are done"
    prompt = ctx.say(
        ["How many story points {w} in sprint {id}?", "In sprint {id} ({name}), how many story points {w}?"],
        ["Sum the story points that {w} for sprint {id}."],
        w=words, id=sprint["id"], name=sprint["name"],
    )  # fmt: skip
    return Draft(
        "", "", prompt, [SERVER],
        [Step("get_issue_sprint_report", {"sprint_id": sprint["id"]}, alternatives=["search_issues"],
              purpose=f"read sprint {sprint['id']}'s points")],
        answers=[Answer("points", value, "number", text=f"{value} story points {words} in {sprint['id']}")],
        reference_answer=f"{value} story points {words} in sprint {sprint['id']}.",
        recompute=lambda r: {"points": field_of(r[0], ask)},
        keep=[sprint["id"]],
    )  # fmt: skip


@template("it_count_bugs", "aggregate", [SERVER])
def count_bugs(ctx: Ctx) -> Draft:
    ctx.need("search_issues")
    proj = ctx.choose(ctx.records("issue_projects"))
    prio = ctx.choose(["high", "critical", "medium"])
    n = len(ctx.records("issues", lambda i: i["project_id"] == proj["id"] and i["type"] == "bug"
                        and i["priority"] == prio and i["status"] != "done"))  # fmt: skip
    if n == 0:
        raise Skip("nothing to count")
    prompt = ctx.say(
        ["How many {p}-priority bugs are not done yet in project {k}?", "Count the {p} bugs in the {name} project ({k}) that are not done yet."],
        ["In {k}, how many bugs of priority {p} remain unfinished?"],
        p=prio, k=proj["id"], name=proj["name"],
    )  # fmt: skip
    statuses = ["backlog", "todo", "in_progress", "in_review"]
    return Draft(
        "", "", prompt, [SERVER],
        [Step("search_issues", {"project_id": proj["id"], "type": "bug", "priority": prio, "limit": ALL},
              alternatives=["issue_stats"], checked_args=["project_id", "priority"],
              purpose=f"list the {prio} bugs of {proj['id']}")],
        answers=[Answer("count", n, "number", text=f"{proj['id']} has {n} {prio} bugs not done")],
        reference_answer=f"Project {proj['id']} has {n} {prio}-priority bugs that are not done.",
        recompute=lambda r: {"count": sum(i["status"] in statuses for i in field_of(r[0], "items"))},
        keep=[proj["id"]],
    )  # fmt: skip


@template("it_file_issue", "write", [SERVER])
def file_issue(ctx: Ctx) -> Draft:
    ctx.need("create_issue")
    proj = ctx.choose(ctx.records("issue_projects"))
    title = ctx.choose(
        ["Search returns stale results", "Avatar upload fails", "Timezone shown wrong in reports"]
    )
    prio = ctx.choose(["low", "medium", "high", "critical"])
    n = 1 + max(
        int(i["id"].split("-")[1]) for i in ctx.records("issues", lambda i: i["project_id"] == proj["id"])
    )
    new_id = f"{proj['id']}-{n}"
    prompt = ctx.say(
        ['File a bug in project {k} titled "{t}" with {p} priority.', 'Create a {p}-priority bug "{t}" in the {name} project ({k}).'],
        ['Open a new bug "{t}" under {k}, priority {p}.'],
        k=proj["id"], name=proj["name"], t=title, p=prio,
    )  # fmt: skip
    check = {
        "type": "state",
        "collection": "issues",
        "key": new_id,
        "field": "title",
        "value": title,
        "op": "create",
    }
    return Draft(
        "", "", prompt, [SERVER],
        [Step("create_issue", {"project_id": proj["id"], "title": title, "type": "bug", "priority": prio},
              normalize={"title": "text"}, purpose="file the bug")],
        state_changes=[(f"A new issue {new_id} titled \"{title}\" must exist.", check)],
        reference_answer=f"Filed {new_id}: \"{title}\" ({prio} priority).",
        keep=[proj["id"], title],
        read_only=False,
    )  # fmt: skip


@template("it_ticket_engineer", "chain", ["helpdesk", SERVER, "directory"], calls=(3, 3))
def ticket_engineer(ctx: Ctx) -> Draft:
    ctx.need("view_ticket", "list_issues_for_ticket", "get_staff")
    links: dict[str, list[dict]] = {}
    for i in ctx.records("issues"):
        for t in i["linked_ticket_ids"]:
            links.setdefault(t, []).append(i)
    ticket_id = ctx.choose(
        sorted(t for t, rows in links.items() if len(rows) == 1 and rows[0]["assignee_id"])
    )
    ticket, issue = ctx.world["tickets"][ticket_id], links[ticket_id][0]
    eng = ctx.world["staff"][issue["assignee_id"]]
    prompt = ctx.say(
        [
            "Customer ticket {t} is about a bug. What is the ticket's subject, which engineering issue is it linked to, "
            "and who is working on that issue (name and email)?",
            "For helpdesk ticket {t}: give its subject, the linked tracker issue and the assignee's name and email.",
        ],
        ["Ticket {t}: subject, linked engineering issue, and the engineer on it with their email."],
        t=ticket_id,
    )  # fmt: skip

    def recompute(r):
        found = field_of(r[1], "issues")
        if [i["id"] for i in found] != [issue["id"]] or found[0]["assignee_id"] != field_of(r[2], "id"):
            raise ValueError("link or assignee differs")
        return {"subject": field_of(r[0], "subject"), "issue": found[0]["id"], "engineer": field_of(r[2], "name"),
                "email": field_of(r[2], "email")}  # fmt: skip

    return Draft(
        "", "", prompt, ["helpdesk", SERVER, "directory"],
        [
            Step("view_ticket", {"ticket_id": ticket_id}, purpose=f"read ticket {ticket_id}"),
            Step("list_issues_for_ticket", {"ticket_id": ticket_id}, purpose="find the linked issue",
                 produces="assignee id"),
            Step("get_staff", {"staff_id": eng["id"]}, depends_on=[1], purpose="read the engineer's profile"),
        ],
        answers=[
            Answer("subject", ticket["subject"], "text", text=f"the ticket's subject is {ticket['subject']}"),
            Answer("issue", issue["id"], "text", text=f"it is linked to {issue['id']}"),
            Answer("engineer", eng["name"], "name", text=f"{issue['id']} is assigned to {eng['name']}"),
            Answer("email", eng["email"], "text", text=f"their email is {eng['email']}"),
        ],
        reference_answer=f"Ticket {ticket_id} (\"{ticket['subject']}\") is linked to {issue['id']} ({issue['title']}), "
        f"assigned to {eng['name']} ({eng['email']}).",
        recompute=recompute,
        keep=[ticket_id],
    )  # fmt: skip


@template("it_start_issue", "chain", ["directory", SERVER], calls=(3, 3))
def start_issue(ctx: Ctx) -> Draft:
    ctx.need("search_staff", "assign_issue", "transition_issue")
    issue = ctx.choose(ctx.records("issues", lambda i: i["status"] == "todo"))
    names = [s["name"] for s in ctx.records("staff")]
    person = ctx.choose(ctx.records("staff", lambda s: s["active"] and names.count(s["name"]) == 1
                                    and s["id"] != issue["assignee_id"]))  # fmt: skip
    prompt = ctx.say(
        [
            "Give issue {id} to {name} and move it to in progress.",
            "{name} is picking up {id}: assign it to them and set the issue to in_progress.",
        ],
        ["Hand tracker issue {id} over to {name} and mark work as started."],
        id=issue["id"], name=person["name"],
    )  # fmt: skip
    checks = [
        (f"Issue {issue['id']} must be assigned to {person['id']} ({person['name']}).",
         {"type": "state", "collection": "issues", "key": issue["id"], "field": "assignee_id", "value": person["id"],
          "op": "update"}),
        (f"Issue {issue['id']} must be in_progress afterwards.",
         {"type": "state", "collection": "issues", "key": issue["id"], "field": "status", "value": "in_progress",
          "op": "update"}),
    ]  # fmt: skip
    return Draft(
        "", "", prompt, ["directory", SERVER],
        [
            Step("search_staff", {"query": person["name"]}, normalize={"query": "name"},
                 purpose=f"find {person['name']}", produces="staff id"),
            Step("assign_issue", {"issue_id": issue["id"], "assignee_id": person["id"]}, depends_on=[0],
                 purpose="assign the issue"),
            Step("transition_issue", {"issue_id": issue["id"], "status": "in_progress"}, purpose="start work"),
        ],
        state_changes=checks,
        reference_answer=f"{issue['id']} is assigned to {person['name']} ({person['id']}) and in progress.",
        keep=[issue["id"], person["name"]],
        read_only=False,
    )  # fmt: skip
