"""Budget: monthly budgets per team and category, staff expenses against them, and their review."""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.clock import TODAY
from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, paginate, tool
from toolkit.envs.servers.dates import check_day, check_month, check_window

Team = Literal["support", "sales", "engineering", "finance"]
Category = Literal["travel", "software", "hardware", "events", "training"]
ExpenseStatus = Literal["submitted", "approved", "rejected", "reimbursed"]
BudgetId = Annotated[str, Field(description="Budget id, e.g. 'bud-014'.")]
ExpenseId = Annotated[str, Field(description="Expense id, e.g. 'exp-0042'.")]
Month = Annotated[str, Field(description="Month, YYYY-MM.")]
SPENT = ("approved", "reimbursed")  # what counts against a budget


class Budget(DomainServer):
    name = "budget"
    description = (
        "Team budgets by month and category, expense claims, approvals, and budget-vs-actual reports."
    )

    def _budget(self, budget_id: str) -> dict[str, Any]:
        return self.require("budget_plans", budget_id, "Budget", "Use list_budgets to find budget ids.")

    def _expense(self, expense_id: str) -> dict[str, Any]:
        return self.require("budget_expenses", expense_id, "Expense", "Use list_budget_expenses.")

    def _spent(self, team: str, category: str, month: str) -> float:
        return round(sum(e["amount"] for e in self.db.values("budget_expenses") if e["team"] == team
                         and e["category"] == category and e["date"][:7] == month and e["status"] in SPENT), 2)  # fmt: skip

    # -- budgets -------------------------------------------------------------------------------
    @tool(read_only=True)
    def list_budgets(
        self,
        team: Annotated[Team | None, Field(description="Only this team's budgets.")] = None,
        month: Annotated[str | None, Field(description="Only this month, YYYY-MM.")] = None,
        category: Annotated[Category | None, Field(description="Only this category.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Budgets (team, category, month, planned amount), by month, team and category."""
        check_month(month)
        rows = [b for b in self.db.values("budget_plans") if (team is None or b["team"] == team)
                and (month is None or b["month"] == month) and (category is None or b["category"] == category)]  # fmt: skip
        rows.sort(key=lambda b: (b["month"], b["team"], b["category"], b["id"]))
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_budget(self, budget_id: BudgetId) -> dict[str, Any]:
        """One budget with what has been spent against it (approved and reimbursed expenses)."""
        b = self._budget(budget_id)
        spent = self._spent(b["team"], b["category"], b["month"])
        return {**b, "spent": spent, "remaining": round(b["amount"] - spent, 2)}

    @tool(idempotent=False)
    def create_budget(
        self,
        team: Annotated[Team, Field(description="The team.")],
        category: Annotated[Category, Field(description="The spending category.")],
        month: Month,
        amount: Annotated[float, Field(gt=0, le=10_000_000, description="Planned amount in USD.")],
    ) -> dict[str, Any]:
        """Create a budget for a team, category and month (one per combination)."""
        check_month(month)
        for b in self.db.values("budget_plans"):
            if (b["team"], b["category"], b["month"]) == (team, category, month):
                raise conflict(f"{team} already has a {category} budget for {month}: {b['id']}; update it.")
        bid = self.next_id("budget_plans", "bud-")
        rec = {"id": bid, "team": team, "category": category, "month": month, "amount": round(amount, 2)}
        self.db.put("budget_plans", bid, rec)
        return rec

    @tool(idempotent=True)
    def update_budget_amount(
        self,
        budget_id: BudgetId,
        amount: Annotated[float, Field(gt=0, le=10_000_000, description="New planned amount in USD.")],
    ) -> dict[str, Any]:
        """Set a budget's planned amount."""
        self._budget(budget_id)
        b = self.db.edit("budget_plans", budget_id)
        b["amount"] = round(amount, 2)
        return dict(b)

    @tool(idempotent=False)
    def transfer_budget_amount(
        self,
        from_budget_id: Annotated[str, Field(description="Budget to take the amount from.")],
        to_budget_id: Annotated[str, Field(description="Budget to add it to (same month).")],
        amount: Annotated[float, Field(gt=0, description="Amount in USD to move.")],
    ) -> dict[str, Any]:
        """Move planned money from one budget to another of the same month."""
        src, dst = self._budget(from_budget_id), self._budget(to_budget_id)
        if from_budget_id == to_budget_id:
            raise invalid("from_budget_id and to_budget_id are the same budget.")
        if src["month"] != dst["month"]:
            raise invalid(f"{from_budget_id} is for {src['month']} and {to_budget_id} for {dst['month']}.")
        if amount > src["amount"]:
            raise conflict(f"{from_budget_id} plans only {src['amount']} USD.")
        a = self.db.edit("budget_plans", from_budget_id)
        a["amount"] = round(a["amount"] - amount, 2)
        b = self.db.edit("budget_plans", to_budget_id)
        b["amount"] = round(b["amount"] + amount, 2)
        return {"from": dict(a), "to": dict(b)}

    @tool(destructive=True, idempotent=True)
    def delete_budget(self, budget_id: BudgetId) -> dict[str, Any]:
        """Delete a budget (its expenses stay)."""
        self._budget(budget_id)
        self.db.delete("budget_plans", budget_id)
        return {"deleted": budget_id}

    # -- expenses ------------------------------------------------------------------------------
    @tool(read_only=True)
    def list_budget_expenses(
        self,
        team: Annotated[Team | None, Field(description="Only this team's expenses.")] = None,
        category: Annotated[Category | None, Field(description="Only this category.")] = None,
        staff_id: Annotated[str | None, Field(description="Only expenses of this staff id.")] = None,
        status: Annotated[ExpenseStatus | None, Field(description="Only this status.")] = None,
        start_date: Annotated[str | None, Field(description="On or after this day, YYYY-MM-DD.")] = None,
        end_date: Annotated[str | None, Field(description="On or before this day, YYYY-MM-DD.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Expense claims, newest first, filtered by team, category, staff member, status and day."""
        check_window(start_date, end_date)
        if staff_id is not None:
            self.require("staff", staff_id, "Staff member", "Use list_staff to find staff ids.")
        rows = [
            e
            for e in self.db.values("budget_expenses")
            if (team is None or e["team"] == team)
            and (category is None or e["category"] == category)
            and (staff_id is None or e["staff_id"] == staff_id)
            and (status is None or e["status"] == status)
            and (start_date is None or e["date"] >= start_date)
            and (end_date is None or e["date"] <= end_date)
        ]
        rows.sort(key=lambda e: (e["date"], e["id"]), reverse=True)
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_budget_expense(self, expense_id: ExpenseId) -> dict[str, Any]:
        """One expense claim."""
        return dict(self._expense(expense_id))

    @tool(idempotent=False)
    def submit_budget_expense(
        self,
        staff_id: Annotated[str, Field(description="Staff id of the spender, e.g. 'st-004'.")],
        category: Annotated[Category, Field(description="Spending category.")],
        amount: Annotated[float, Field(gt=0, le=100_000, description="Amount in USD.")],
        merchant: Annotated[str, Field(min_length=2, description="Where the money was spent.")],
        date: Annotated[
            str | None, Field(description="Day of the expense, YYYY-MM-DD (default today).")
        ] = None,
        note: Annotated[str, Field(description="Optional note.")] = "",
    ) -> dict[str, Any]:
        """Submit an expense claim; it counts against the spender's team once approved."""
        person = self.require("staff", staff_id, "Staff member", "Use list_staff to find staff ids.")
        day = check_day(date, "date") or TODAY.isoformat()
        if day > TODAY.isoformat():
            raise invalid(f"date {day} is in the future (today is {TODAY.isoformat()}).")
        eid = self.next_id("budget_expenses", "exp-", 4)
        rec = {"id": eid, "staff_id": staff_id, "team": person["team"], "category": category,
               "amount": round(amount, 2), "merchant": merchant, "date": day, "status": "submitted",
               "reviewer_id": None, "note": note}  # fmt: skip
        self.db.put("budget_expenses", eid, rec)
        return rec

    @tool(idempotent=True)
    def review_budget_expense(
        self,
        expense_id: ExpenseId,
        decision: Annotated[Literal["approved", "rejected"], Field(description="The decision.")],
        reviewer_id: Annotated[str, Field(description="Staff id of a finance reviewer.")],
        note: Annotated[str, Field(description="Reason, shown to the spender.")] = "",
    ) -> dict[str, Any]:
        """Approve or reject a submitted expense. Reviewers are finance staff, never the spender."""
        e = self._expense(expense_id)
        rev = self.require("staff", reviewer_id, "Staff member", "Use list_staff with team='finance'.")
        if rev["team"] != "finance":
            raise invalid(
                f"{reviewer_id} ({rev['name']}) is in team '{rev['team']}'; reviewers are in finance."
            )
        if reviewer_id == e["staff_id"]:
            raise invalid("nobody may review their own expense.")
        if e["status"] != "submitted":
            raise conflict(f"expense {expense_id} is already {e['status']}.")
        rec = self.db.edit("budget_expenses", expense_id)
        rec["status"], rec["reviewer_id"] = decision, reviewer_id
        if note:
            rec["note"] = note
        return dict(rec)

    @tool(idempotent=True)
    def reimburse_budget_expense(self, expense_id: ExpenseId) -> dict[str, Any]:
        """Mark an approved expense as reimbursed to the spender."""
        e = self._expense(expense_id)
        if e["status"] != "approved":
            raise conflict(f"expense {expense_id} is {e['status']}; only approved expenses are reimbursed.")
        rec = self.db.edit("budget_expenses", expense_id)
        rec["status"] = "reimbursed"
        return dict(rec)

    # -- reports -------------------------------------------------------------------------------
    @tool(read_only=True)
    def budget_vs_actual(
        self,
        month: Month,
        team: Annotated[Team | None, Field(description="Only this team.")] = None,
    ) -> dict[str, Any]:
        """Planned against spent (approved + reimbursed) per budget of a month, with what remains."""
        check_month(month)
        rows = []
        for b in sorted(self.db.values("budget_plans"), key=lambda b: (b["team"], b["category"])):
            if b["month"] != month or (team is not None and b["team"] != team):
                continue
            spent = self._spent(b["team"], b["category"], month)
            rows.append({"budget_id": b["id"], "team": b["team"], "category": b["category"], "planned": b["amount"],
                         "spent": spent, "remaining": round(b["amount"] - spent, 2),
                         "over_budget": spent > b["amount"]})  # fmt: skip
        return {"month": month, "team": team, "budgets": rows,
                "planned": round(sum(r["planned"] for r in rows), 2),
                "spent": round(sum(r["spent"] for r in rows), 2)}  # fmt: skip

    @tool(read_only=True)
    def budget_spending_by(
        self,
        group_by: Annotated[
            Literal["team", "category", "staff_id", "merchant", "status"], Field(description="How to group.")
        ] = "category",
        month: Annotated[str | None, Field(description="Only this month, YYYY-MM.")] = None,
        status: Annotated[
            ExpenseStatus | None, Field(description="Only this status (default: approved and reimbursed).")
        ] = None,
    ) -> dict[str, Any]:
        """Total expense amount and count per group, largest first."""
        check_month(month)
        agg: dict[str, dict[str, Any]] = defaultdict(lambda: {"count": 0, "amount": 0.0})
        for e in self.db.values("budget_expenses"):
            if (month and e["date"][:7] != month) or (
                e["status"] != status if status else e["status"] not in SPENT
            ):
                continue
            agg[e[group_by]]["count"] += 1
            agg[e[group_by]]["amount"] += e["amount"]
        rows = [{"group": k, "count": v["count"], "amount": round(v["amount"], 2)} for k, v in agg.items()]
        rows.sort(key=lambda r: (-r["amount"], r["group"]))
        return {"group_by": group_by, "month": month, "groups": rows}

    @tool(read_only=True)
    def list_overspent_budgets(self, month: Month) -> dict[str, Any]:
        """The budgets of a month whose spending exceeds the plan, most over first."""
        rows = [r for r in self.budget_vs_actual(month)["budgets"] if r["over_budget"]]
        rows.sort(key=lambda r: (r["remaining"], r["budget_id"]))
        return {"month": month, "budgets": rows, "total": len(rows)}
