"""Budget templates: a planned amount, a team's spending in a month, overspent budgets, expense
reimbursement, a reviewer found by name (directory), and raising a budget found by its filters."""

from __future__ import annotations

from toolkit.synth.base import Answer, Draft, Step
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import ALL, field_of, fmt_num, items, unique_by

MONTHS = {"2025-09": "September 2025", "2025-10": "October 2025", "2025-11": "November 2025"}


def _spent(ctx: Ctx, team: str, month: str, category: str | None = None) -> float:
    rows = ctx.records("budget_expenses", lambda e: e["team"] == team and e["date"][:7] == month
                       and e["status"] in ("approved", "reimbursed") and category in (None, e["category"]))  # fmt: skip
    return round(sum(e["amount"] for e in rows), 2)


@template("budget_plan_amount", "lookup", ["budget"])
def plan_amount(ctx: Ctx) -> Draft:
    ctx.need("list_budgets")
    b = ctx.choose(ctx.records("budget_plans"))
    prompt = ctx.say(
        ["What is the {t} team's {c} budget for {m}?", "How much is planned for {c} in the {t} team in {m}?",
         "Look up the {m} {c} budget of the {t} team."],
        ["In {m}, what did we budget for {t}'s {c} spending?"],
        t=b["team"], c=b["category"], m=MONTHS.get(b["month"], b["month"]),
    )  # fmt: skip

    def recompute(r):
        rows = items(r[0])
        if len(rows) != 1:
            raise ValueError("the filters should single out one budget")
        return {"amount": rows[0]["amount"]}

    return Draft(
        "", "", prompt, ["budget"],
        [Step("list_budgets", {"team": b["team"], "month": b["month"], "category": b["category"]},
              alternatives=["budget_vs_actual"], checked_args=["team", "month"], purpose="find the budget")],
        answers=[Answer("amount", b["amount"], "number", 0.01, text=f"the budget is {fmt_num(b['amount'])} USD")],
        reference_answer=f"The {b['team']} team's {b['category']} budget for {b['month']} is {fmt_num(b['amount'])} USD ({b['id']}).",
        recompute=recompute,
    )  # fmt: skip


@template("budget_team_month_spent", "aggregate", ["budget"])
def team_month_spent(ctx: Ctx) -> Draft:
    ctx.need("budget_vs_actual")
    team = ctx.choose(sorted({b["team"] for b in ctx.records("budget_plans")}))
    month = ctx.choose(sorted(MONTHS))
    spent = _spent(ctx, team, month)
    planned = round(sum(b["amount"] for b in ctx.records("budget_plans", lambda b: b["team"] == team
                                                         and b["month"] == month)), 2)  # fmt: skip
    prompt = ctx.say(
        ["How much has the {t} team spent in {m} (approved or reimbursed expenses), against what plan?",
         "Give me the {t} team's total spending for {m} and its total planned budget.",
         "In {m}, what did the {t} team spend, and how much had we budgeted for it?"],
        ["Compare the {t} team's {m} spending with its planned budget."],
        t=team, m=MONTHS[month],
    )  # fmt: skip
    return Draft(
        "", "", prompt, ["budget"],
        [Step("budget_vs_actual", {"month": month, "team": team}, alternatives=["budget_spending_by", "list_budgets"],
              purpose=f"compare {team}'s plan and spending in {month}")],
        answers=[Answer("spent", spent, "number", 0.01, text=f"{team} spent {fmt_num(spent)} USD"),
                 Answer("planned", planned, "number", 0.01, text=f"the plan was {fmt_num(planned)} USD")],
        reference_answer=f"In {month} the {team} team spent {fmt_num(spent)} USD against a plan of {fmt_num(planned)} USD.",
        recompute=lambda r: {"spent": field_of(r[0], "spent"), "planned": field_of(r[0], "planned")},
        keep=[team],
    )  # fmt: skip


@template("budget_overspent_count", "aggregate", ["budget"])
def overspent_count(ctx: Ctx) -> Draft:
    ctx.need("list_overspent_budgets")
    month = ctx.choose(sorted(MONTHS))
    over = [b for b in ctx.records("budget_plans", lambda b: b["month"] == month)
            if _spent(ctx, b["team"], month, b["category"]) > b["amount"]]  # fmt: skip
    prompt = ctx.say(
        ["How many budgets were overspent in {m}?", "Count the {m} budgets whose spending exceeds the plan.",
         "In {m}, how many team budgets went over?"],
        ["Which number of budgets ran over in {m}?"],
        m=MONTHS[month],
    )  # fmt: skip
    return Draft(
        "", "", prompt, ["budget"],
        [Step("list_overspent_budgets", {"month": month}, alternatives=["budget_vs_actual"],
              purpose=f"find the overspent budgets of {month}")],
        answers=[Answer("count", len(over), "number", text=f"{len(over)} budgets are overspent")],
        reference_answer=f"{len(over)} budgets were overspent in {month}"
        + (f": {', '.join(b['id'] for b in over)}." if over else "."),
        recompute=lambda r: {"count": field_of(r[0], "total")},
    )  # fmt: skip


@template("budget_reimburse_expense", "write", ["budget"])
def reimburse_expense(ctx: Ctx) -> Draft:
    ctx.need("reimburse_budget_expense")
    e = ctx.choose(ctx.records("budget_expenses", lambda e: e["status"] == "approved"))
    prompt = ctx.say(
        ["Mark expense {id} as reimbursed.", "Expense claim {id} has been paid back; record the reimbursement.",
         "Please reimburse expense {id}."],
        ["We paid out claim {id}: set it to reimbursed."],
        id=e["id"],
    )  # fmt: skip
    check = {"type": "state", "collection": "budget_expenses", "key": e["id"], "field": "status",
             "value": "reimbursed", "op": "update"}  # fmt: skip
    return Draft(
        "", "", prompt, ["budget"],
        [Step("reimburse_budget_expense", {"expense_id": e["id"]}, purpose="mark it reimbursed")],
        state_changes=[(f"Expense {e['id']} must be reimbursed afterwards.", check)],
        reference_answer=f"Expense {e['id']} ({fmt_num(e['amount'])} USD) is now reimbursed.",
        keep=[e["id"]],
        read_only=False,
    )  # fmt: skip


@template("budget_review_by_name", "write", ["directory", "budget"], calls=(2, 2))
def review_by_name(ctx: Ctx) -> Draft:
    """The reviewer is named, not given by id: their staff id comes from the directory."""
    ctx.need("search_staff", "review_budget_expense")
    reviewers = [s for s in unique_by(ctx, "staff", "name") if s["team"] == "finance"]
    rev = ctx.choose(reviewers)
    e = ctx.choose(
        ctx.records("budget_expenses", lambda e: e["status"] == "submitted" and e["staff_id"] != rev["id"])
    )
    decision = ctx.choose(("approved", "rejected"))
    verb = "approve" if decision == "approved" else "reject"
    prompt = ctx.say(
        ["{r} wants to {v} expense claim {id}. Record the decision with them as reviewer.",
         "Please {v} expense {id}; the reviewer is {r}.", "As {r}, {v} the expense {id}."],
        ["Expense {id} should be {d}, reviewed by {r}."],
        r=rev["name"], v=verb, d=decision, id=e["id"],
    )  # fmt: skip
    check = {"type": "state", "collection": "budget_expenses", "key": e["id"], "field": "status",
             "value": decision, "op": "update"}  # fmt: skip
    check2 = {"type": "state", "collection": "budget_expenses", "key": e["id"], "field": "reviewer_id",
              "value": rev["id"], "op": "update"}  # fmt: skip

    def recompute(r):
        found = items(r[0])
        if len(found) != 1 or found[0]["id"] != rev["id"]:
            raise ValueError("the name search is ambiguous")
        return {}

    return Draft(
        "", "", prompt, ["directory", "budget"],
        [Step("search_staff", {"query": rev["name"]}, normalize={"query": "name"}, purpose=f"find {rev['name']}'s staff id",
              produces="staff id"),
         Step("review_budget_expense", {"expense_id": e["id"], "decision": decision, "reviewer_id": rev["id"]},
              depends_on=[0], checked_args=["expense_id", "decision", "reviewer_id"], purpose=f"{verb} the expense")],
        state_changes=[(f"Expense {e['id']} must be {decision} afterwards.", check),
                       (f"Expense {e['id']} must name {rev['id']} ({rev['name']}) as reviewer.", check2)],
        reference_answer=f"Expense {e['id']} is {decision}, reviewed by {rev['name']} ({rev['id']}).",
        recompute=recompute,
        keep=[rev["name"], e["id"]],
        read_only=False,
    )  # fmt: skip


@template("budget_raise_plan", "write", ["budget"], calls=(2, 2))
def raise_plan(ctx: Ctx) -> Draft:
    """Find a budget by team, category and month, then change its amount: the id comes from call one."""
    ctx.need("list_budgets", "update_budget_amount")
    b = ctx.choose(ctx.records("budget_plans", lambda b: b["month"] == "2025-11"))
    extra = float(ctx.choose((250, 500, 1000, 1500)))
    new = round(b["amount"] + extra, 2)
    prompt = ctx.say(
        ["Raise the {t} team's {c} budget for {m} by {x} USD.", "Add {x} USD to {t}'s {m} {c} budget.",
         "The {t} team needs {x} USD more for {c} in {m}; increase the budget."],
        ["Increase {t}'s {c} budget of {m} by {x} dollars."],
        t=b["team"], c=b["category"], m=MONTHS[b["month"]], x=fmt_num(extra),
    )  # fmt: skip
    check = {"type": "state", "collection": "budget_plans", "key": b["id"], "field": "amount", "value": new,
             "op": "update"}  # fmt: skip

    def recompute(r):
        rows = items(r[0])
        if len(rows) != 1:
            raise ValueError("the filters should single out one budget")
        return {"old_amount": rows[0]["amount"]}

    return Draft(
        "", "", prompt, ["budget"],
        [Step("list_budgets", {"team": b["team"], "month": b["month"], "category": b["category"], "limit": ALL},
              checked_args=["team", "month", "category"], purpose="find the budget and its amount", produces="budget id"),
         Step("update_budget_amount", {"budget_id": b["id"], "amount": new}, depends_on=[0],
              purpose=f"set it to {fmt_num(new)} USD")],
        answers=[Answer("old_amount", b["amount"], "number", 0.01, text=f"it was {fmt_num(b['amount'])} USD",
                        intermediate=True)],
        state_changes=[(f"Budget {b['id']} must plan {fmt_num(new)} USD afterwards.", check)],
        reference_answer=f"Budget {b['id']} went from {fmt_num(b['amount'])} to {fmt_num(new)} USD.",
        recompute=recompute,
        keep=[b["team"], b["category"], fmt_num(extra)],
        read_only=False,
    )  # fmt: skip


@template("budget_expense_total_paged", "aggregate", ["budget"], calls=(1, 2))
def expense_total_paged(ctx: Ctx) -> Draft:
    """A sum over a date window that may not fit one page: the second call passes the first's cursor."""
    ctx.need("list_budget_expenses")
    start = f"2025-09-{ctx.rng.randint(1, 28):02d}"
    end = f"2025-{ctx.choose(('10', '11'))}-{ctx.rng.randint(1, 15):02d}"
    pool = ctx.records("budget_expenses", lambda e: start <= e["date"] <= end)
    if not pool or len(pool) > 2 * ALL:
        raise Skip("empty or more than two pages")
    value = round(sum(e["amount"] for e in pool), 2)
    prompt = ctx.say(
        ["What is the total amount of all expense claims dated {a} to {b}, whatever their status?",
         "Add up every expense claim (any status) between {a} and {b}.",
         "How much was claimed in expenses from {a} through {b}, counting all statuses?"],
        ["Sum all expense claims made between {a} and {b}, approved or not."],
        a=start, b=end,
    )  # fmt: skip
    args = {"start_date": start, "end_date": end, "limit": ALL}
    steps = [Step("list_budget_expenses", args, checked_args=["start_date", "end_date"],
                  purpose=f"list the expenses from {start} to {end}", produces="next_cursor")]  # fmt: skip
    if len(pool) > ALL:
        steps.append(Step("list_budget_expenses", {**args, "cursor": str(ALL)}, depends_on=[0],
                          checked_args=["start_date", "end_date", "cursor"], purpose="read the second page"))  # fmt: skip

    def recompute(r):
        rows = [e for res in r for e in items(res)]
        if len(rows) != field_of(r[0], "total"):
            raise ValueError("not every page was read")
        return {"total": round(sum(e["amount"] for e in rows), 2), "claims": len(rows)}

    return Draft(
        "", "", prompt, ["budget"], steps,
        answers=[Answer("total", value, "number", 0.01, text=f"the claims total {fmt_num(value)} USD"),
                 Answer("claims", len(pool), "number", text=f"{len(pool)} claims", intermediate=True)],
        reference_answer=f"{len(pool)} expense claims dated {start} to {end} total {fmt_num(value)} USD.",
        recompute=recompute,
        keep=[start, end],
    )  # fmt: skip
