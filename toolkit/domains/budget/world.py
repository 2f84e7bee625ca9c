"""Budget world: monthly budgets per team and category, and the expenses staff submit against them.

Teams are the ``staff`` teams; every expense is submitted by a staff member and counts against that
member's team. Months run from September to the current month (``TODAY``).
"""

from __future__ import annotations

from datetime import date, timedelta
from random import Random

from toolkit.envs.clock import TODAY, World, iso

CATEGORIES = ["travel", "software", "hardware", "events", "training"]
MONTHS = ["2025-09", "2025-10", "2025-11"]
MERCHANTS = {
    "travel": ["SkyJet Airlines", "Harbor Hotel", "CityCab"],
    "software": ["CloudSuite", "DevTools Inc", "DesignPro"],
    "hardware": ["Gadget Hub", "Monitor World"],
    "events": ["ExpoCenter", "Bistro Nine"],
    "training": ["LearnFast", "Cert Academy"],
}


def add_budget(w: World, rng: Random) -> None:
    teams = sorted({s["team"] for s in w["staff"].values()})
    plans: dict[str, dict] = {}
    for month in MONTHS:
        for team in teams:
            for cat in CATEGORIES:
                bid = f"bud-{len(plans) + 1:03d}"
                plans[bid] = {"id": bid, "team": team, "category": cat, "month": month,
                              "amount": float(rng.randrange(4, 40) * 250)}  # fmt: skip
    w["budget_plans"] = plans

    expenses: dict[str, dict] = {}
    start = date(2025, 9, 1)
    span = (TODAY - start).days
    staff = sorted(w["staff"])
    reviewers = sorted(s for s in staff if w["staff"][s]["team"] == "finance")
    for i in range(90):
        sid = rng.choice(staff)
        cat = rng.choice(CATEGORIES)
        day = start + timedelta(days=rng.randint(0, span))
        status = rng.choices(["submitted", "approved", "rejected", "reimbursed"], weights=[3, 4, 1, 4])[0]
        if day > TODAY - timedelta(days=3):
            status = "submitted"
        eid = f"exp-{i + 1:04d}"
        expenses[eid] = {
            "id": eid,
            "staff_id": sid,
            "team": w["staff"][sid]["team"],
            "category": cat,
            "amount": round(rng.uniform(20, 1800 if cat in ("travel", "hardware") else 700), 2),
            "merchant": rng.choice(MERCHANTS[cat]),
            "date": iso(day),
            "status": status,
            "reviewer_id": None if status == "submitted" else rng.choice(reviewers),
            "note": "",
        }
    w["budget_expenses"] = dict(sorted(expenses.items(), key=lambda kv: (kv[1]["date"], kv[0])))
