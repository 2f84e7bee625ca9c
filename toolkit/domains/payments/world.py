"""Payments world (Stripe-like): customers' payment methods, payments for shop orders, refunds, invoices.

Payments belong to CRM ``customers``; most pay one of that customer's shop ``orders`` (same amount),
so "the payment for order o-5003" is a question the shop and payments servers answer together; a
paid invoice names the payment that settled it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from random import Random

from toolkit.envs.clock import NOW, TODAY, World, iso

BRANDS = ["visa", "mastercard", "amex"]


def add_payments(w: World, rng: Random) -> None:
    methods: dict[str, dict] = {}
    for cu in sorted(w["customers"]):
        for j in range(rng.choice([1, 1, 2])):
            mid = f"pm-{len(methods) + 1:03d}"
            kind = rng.choices(["card", "bank_transfer", "wallet"], weights=[6, 2, 1])[0]
            exp = TODAY.replace(day=1) + timedelta(days=31 * rng.randint(-4, 36))
            methods[mid] = {
                "id": mid,
                "customer_id": cu,
                "type": kind,
                "brand": rng.choice(BRANDS)
                if kind == "card"
                else ("sepa" if kind == "bank_transfer" else "paywallet"),
                "last4": f"{rng.randrange(10000):04d}",
                "expires": exp.strftime("%Y-%m") if kind == "card" else None,
                "default": j == 0,
            }
    w["pay_methods"] = methods
    by_customer: dict[str, list[str]] = {}
    for m in methods.values():
        by_customer.setdefault(m["customer_id"], []).append(m["id"])

    payments: dict[str, dict] = {}
    refunds: dict[str, dict] = {}
    for o in sorted(w["orders"].values(), key=lambda o: o["id"]):
        if o["status"] == "pending":
            continue
        created = datetime.fromisoformat(o["created"]) + timedelta(hours=rng.randint(8, 20))
        status = "succeeded" if o["status"] != "cancelled" else "refunded"
        if status == "succeeded" and rng.random() < 0.12:
            status = "failed"
        pid = f"pay-{len(payments) + 1:04d}"
        payments[pid] = {"id": pid, "customer_id": o["customer_id"], "order_id": o["id"], "amount": o["total"],
                         "currency": "USD", "method_id": rng.choice(by_customer[o["customer_id"]]),
                         "status": status, "description": f"Order {o['id']}", "created": iso(min(created, NOW)),
                         "refunded_amount": o["total"] if status == "refunded" else 0.0}  # fmt: skip
        if status == "refunded" or (status == "succeeded" and rng.random() < 0.15):
            amount = (
                o["total"] if status == "refunded" else round(o["total"] * rng.choice([0.1, 0.25, 0.5]), 2)
            )
            rid = f"rf-{len(refunds) + 1:03d}"
            refunds[rid] = {"id": rid, "payment_id": pid, "amount": amount,
                            "reason": "order cancelled" if status == "refunded" else rng.choice(["damaged", "goodwill", "late delivery"]),
                            "created": iso(min(created + timedelta(days=rng.randint(1, 6)), NOW))}  # fmt: skip
            if status == "succeeded":
                payments[pid]["status"] = "partially_refunded"
                payments[pid]["refunded_amount"] = amount
    w["pay_refunds"] = refunds

    invoices: dict[str, dict] = {}
    for i in range(24):
        cu = rng.choice(sorted(w["customers"]))
        issued = TODAY - timedelta(days=rng.randint(0, 75))
        due = issued + timedelta(days=30)
        status = rng.choices(["open", "paid", "void"], weights=[5, 6, 1])[0]
        invoices[f"pinv-{i + 1:03d}"] = {
            "id": f"pinv-{i + 1:03d}",
            "customer_id": cu,
            "amount": round(rng.randrange(10, 400) * 25.0, 2),
            "issued": iso(issued),
            "due_date": iso(due),
            "status": status,
            "payment_id": None,
            "memo": rng.choice(
                ["Support Plus renewal", "Cloud Plan Pro (annual)", "Training Day", "Consulting"]
            ),
        }
        if status == "paid":  # a paid invoice names the payment that settled it
            inv = invoices[f"pinv-{i + 1:03d}"]
            paid_at = datetime.combine(issued, datetime.min.time()) + timedelta(
                days=rng.randint(1, 20), hours=10
            )
            pid = f"pay-{len(payments) + 1:04d}"
            default = next(m for m in by_customer[cu] if methods[m]["default"])
            payments[pid] = {"id": pid, "customer_id": cu, "order_id": None, "amount": inv["amount"], "currency": "USD",
                             "method_id": default, "status": "succeeded", "description": f"Invoice {inv['id']}",
                             "created": iso(min(paid_at, NOW)), "refunded_amount": 0.0}  # fmt: skip
            inv["payment_id"] = pid
    w["pay_invoices"] = invoices
    w["pay_payments"] = payments
