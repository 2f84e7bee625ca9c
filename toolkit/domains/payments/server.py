"""Payments (Stripe-like): customers' payment methods, payments for shop orders, refunds and invoices."""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.clock import NOW_ISO, TODAY
from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, paginate, tool
from toolkit.envs.servers.dates import check_day, check_window

PaymentId = Annotated[str, Field(description="Payment id, e.g. 'pay-0004'.")]
MethodId = Annotated[str, Field(description="Payment method id, e.g. 'pm-012'.")]
CustomerId = Annotated[str, Field(description="Customer id, e.g. 'cu-001'.")]
Status = Literal["succeeded", "failed", "refunded", "partially_refunded"]


def _money(amount: float) -> float:
    if round(amount, 2) != amount:
        raise invalid(f"amount {amount} has more than 2 decimals.")
    return amount


class Payments(DomainServer):
    name = "payments"
    description = "Card and bank payments of customers: charges for orders, refunds, saved methods, invoices."

    def _customer(self, customer_id: str) -> dict[str, Any]:
        return self.require("customers", customer_id, "Customer", "Use search_contacts to find customer ids.")

    def _payment(self, payment_id: str) -> dict[str, Any]:
        return self.require("pay_payments", payment_id, "Payment", "Use list_payments to find payment ids.")

    def _method(self, method_id: str) -> dict[str, Any]:
        return self.require("pay_methods", method_id, "Payment method", "Use list_payment_methods.")

    def _charge(self, customer_id: str, amount: float, method_id: str | None, description: str,
                order_id: str | None) -> dict[str, Any]:  # fmt: skip
        """Charge a customer's method (their default when None); an expired card is refused."""
        self._customer(customer_id)
        methods = [m for m in self.db.values("pay_methods") if m["customer_id"] == customer_id]
        if method_id is None:
            default = [m for m in methods if m["default"]]
            if not default:
                raise conflict(f"{customer_id} has no default payment method; pass method_id.")
            method_id = default[0]["id"]
        m = self._method(method_id)
        if m["customer_id"] != customer_id:
            raise invalid(f"method {method_id} belongs to {m['customer_id']}, not {customer_id}; theirs: "
                          f"{[x['id'] for x in methods]}.")  # fmt: skip
        if m["expires"] is not None and m["expires"] < TODAY.strftime("%Y-%m"):
            raise conflict(f"card {method_id} expired in {m['expires']}; use another method.")
        pid = self.next_id("pay_payments", "pay-", 4)
        pay = {"id": pid, "customer_id": customer_id, "order_id": order_id, "amount": _money(amount),
               "currency": "USD", "method_id": method_id, "status": "succeeded", "description": description,
               "created": NOW_ISO, "refunded_amount": 0.0}  # fmt: skip
        self.db.put("pay_payments", pid, pay)
        return pay

    # -- payments ------------------------------------------------------------------------------
    @tool(read_only=True)
    def list_payments(
        self,
        customer_id: Annotated[str | None, Field(description="Only this customer's payments.")] = None,
        status: Annotated[Status | None, Field(description="Only payments with this status.")] = None,
        order_id: Annotated[str | None, Field(description="Only payments for this shop order id.")] = None,
        start_date: Annotated[
            str | None, Field(description="Created on or after this day, YYYY-MM-DD.")
        ] = None,
        end_date: Annotated[
            str | None, Field(description="Created on or before this day, YYYY-MM-DD.")
        ] = None,
        min_amount: Annotated[
            float | None, Field(ge=0, description="Only payments of at least this.")
        ] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Payments, newest first, filtered by customer, status, order, creation day and amount."""
        check_window(start_date, end_date)
        if customer_id is not None:
            self._customer(customer_id)
        rows = [
            p
            for p in self.db.values("pay_payments")
            if (customer_id is None or p["customer_id"] == customer_id)
            and (status is None or p["status"] == status)
            and (order_id is None or p["order_id"] == order_id)
            and (start_date is None or p["created"][:10] >= start_date)
            and (end_date is None or p["created"][:10] <= end_date)
            and (min_amount is None or p["amount"] >= min_amount)
        ]
        rows.sort(key=lambda p: (p["created"], p["id"]), reverse=True)
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_payment(self, payment_id: PaymentId) -> dict[str, Any]:
        """One payment with its refunds and the amount still refundable."""
        p = self._payment(payment_id)
        refunds = [r for r in self.db.values("pay_refunds") if r["payment_id"] == payment_id]
        refundable = round(p["amount"] - p["refunded_amount"], 2) if p["status"] != "failed" else 0.0
        return {**p, "refunds": refunds, "refundable": refundable}

    @tool(idempotent=False)
    def create_payment(
        self,
        customer_id: CustomerId,
        amount: Annotated[float, Field(gt=0, le=1_000_000, description="Amount in USD (2 decimals).")],
        description: Annotated[str, Field(min_length=2, description="What the payment is for.")],
        method_id: Annotated[str | None, Field(description="Method to charge (default: theirs).")] = None,
        order_id: Annotated[str | None, Field(description="Shop order id this pays for.")] = None,
    ) -> dict[str, Any]:
        """Charge a customer. With order_id the amount must equal the order total and the order be unpaid."""
        if order_id is not None:
            order = self.require("orders", order_id, "Order", "Use list_orders to find order ids.")
            if order["customer_id"] != customer_id:
                raise invalid(f"order {order_id} belongs to {order['customer_id']}, not {customer_id}.")
            if round(amount, 2) != order["total"]:
                raise invalid(f"order {order_id} totals {order['total']} USD, not {amount}.")
            paid = [p["id"] for p in self.db.values("pay_payments")
                    if p["order_id"] == order_id and p["status"] == "succeeded"]  # fmt: skip
            if paid:
                raise conflict(f"order {order_id} is already paid by {paid[0]}.")
        return self._charge(customer_id, amount, method_id, description, order_id)

    @tool(idempotent=False)
    def refund_payment(
        self,
        payment_id: PaymentId,
        amount: Annotated[
            float | None, Field(gt=0, description="Amount to refund (default: all that is left).")
        ] = None,
        reason: Annotated[str, Field(description="Why, e.g. 'damaged'.")] = "requested_by_customer",
    ) -> dict[str, Any]:
        """Refund a payment fully or in part (never more than was paid)."""
        p = self._payment(payment_id)
        if p["status"] == "failed":
            raise conflict(f"payment {payment_id} failed; there is nothing to refund.")
        left = round(p["amount"] - p["refunded_amount"], 2)
        amount = left if amount is None else _money(amount)
        if left <= 0:
            raise conflict(f"payment {payment_id} is already fully refunded.")
        if amount > left:
            raise invalid(f"amount {amount} exceeds the refundable {left} USD of {payment_id}.")
        rid = self.next_id("pay_refunds", "rf-")
        refund = {"id": rid, "payment_id": payment_id, "amount": amount, "reason": reason, "created": NOW_ISO}
        self.db.put("pay_refunds", rid, refund)
        pay = self.db.edit("pay_payments", payment_id)
        pay["refunded_amount"] = round(pay["refunded_amount"] + amount, 2)
        pay["status"] = "refunded" if pay["refunded_amount"] >= pay["amount"] else "partially_refunded"
        return {**refund, "payment_status": pay["status"], "refunded_total": pay["refunded_amount"]}

    @tool(read_only=True)
    def list_payment_refunds(
        self,
        payment_id: Annotated[str | None, Field(description="Only refunds of this payment.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Refunds, newest first."""
        rows = [
            r for r in self.db.values("pay_refunds") if payment_id is None or r["payment_id"] == payment_id
        ]
        rows.sort(key=lambda r: (r["created"], r["id"]), reverse=True)
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def payment_volume_report(
        self,
        group_by: Annotated[
            Literal["status", "method_type", "customer_id", "month"], Field(description="How to group.")
        ] = "status",
        start_date: Annotated[
            str | None, Field(description="Created on or after this day, YYYY-MM-DD.")
        ] = None,
        end_date: Annotated[
            str | None, Field(description="Created on or before this day, YYYY-MM-DD.")
        ] = None,
    ) -> dict[str, Any]:
        """Count and amount of payments per group (refunds not subtracted), largest amount first."""
        check_window(start_date, end_date)
        agg: dict[str, dict[str, Any]] = defaultdict(lambda: {"count": 0, "amount": 0.0})
        for p in self.db.values("pay_payments"):
            day = p["created"][:10]
            if (start_date and day < start_date) or (end_date and day > end_date):
                continue
            if group_by == "method_type":
                key = (self.db.get("pay_methods", p["method_id"]) or {}).get("type", "unknown")
            else:
                key = p["created"][:7] if group_by == "month" else p[group_by]
            agg[key]["count"] += 1
            agg[key]["amount"] += p["amount"]
        rows = [{"group": k, "count": v["count"], "amount": round(v["amount"], 2)} for k, v in agg.items()]
        rows.sort(key=lambda r: (-r["amount"], r["group"]))
        return {
            "group_by": group_by,
            "groups": rows,
            "total_amount": round(sum(r["amount"] for r in rows), 2),
        }

    # -- methods -------------------------------------------------------------------------------
    @tool(read_only=True)
    def list_payment_methods(self, customer_id: CustomerId) -> dict[str, Any]:
        """A customer's saved payment methods (type, brand, last four digits, expiry, default)."""
        self._customer(customer_id)
        rows = [m for m in self.db.values("pay_methods") if m["customer_id"] == customer_id]
        return {"customer_id": customer_id, "methods": sorted(rows, key=lambda m: m["id"])}

    @tool(idempotent=False)
    def add_payment_method(
        self,
        customer_id: CustomerId,
        type: Annotated[Literal["card", "bank_transfer", "wallet"], Field(description="Kind of method.")],
        last4: Annotated[str, Field(pattern=r"^\d{4}$", description="Last four digits.")],
        brand: Annotated[str, Field(description="Card brand or provider, e.g. 'visa'.")] = "visa",
        expires: Annotated[str | None, Field(description="Card expiry, YYYY-MM (cards only).")] = None,
        make_default: Annotated[bool, Field(description="Make it the customer's default.")] = False,
    ) -> dict[str, Any]:
        """Save a new payment method for a customer."""
        self._customer(customer_id)
        if type == "card" and expires is None:
            raise invalid("a card needs expires (YYYY-MM).")
        if expires is not None and expires < TODAY.strftime("%Y-%m"):
            raise invalid(f"expires {expires} is in the past.")
        mine = [m for m in self.db.values("pay_methods") if m["customer_id"] == customer_id]
        mid = self.next_id("pay_methods", "pm-")
        method = {"id": mid, "customer_id": customer_id, "type": type, "brand": brand.lower(), "last4": last4,
                  "expires": expires if type == "card" else None, "default": make_default or not mine}  # fmt: skip
        if method["default"]:
            for m in mine:
                if m["default"]:
                    self.db.edit("pay_methods", m["id"])["default"] = False
        self.db.put("pay_methods", mid, method)
        return method

    @tool(destructive=True, idempotent=True)
    def remove_payment_method(self, method_id: MethodId) -> dict[str, Any]:
        """Delete a saved method. A default method can go only when the customer has no other."""
        m = self._method(method_id)
        others = [x["id"] for x in self.db.values("pay_methods") if x["customer_id"] == m["customer_id"]
                  and x["id"] != method_id]  # fmt: skip
        if m["default"] and others:
            raise conflict(f"{method_id} is the default; make one of {others} the default first.")
        self.db.delete("pay_methods", method_id)
        return {"deleted": method_id}

    @tool(idempotent=True)
    def set_default_payment_method(self, method_id: MethodId) -> dict[str, Any]:
        """Make a method its customer's default (the previous default is unset)."""
        m = self._method(method_id)
        for x in self.db.values("pay_methods"):
            if x["customer_id"] == m["customer_id"] and x["default"] and x["id"] != method_id:
                self.db.edit("pay_methods", x["id"])["default"] = False
        self.db.edit("pay_methods", method_id)["default"] = True
        return dict(self.db.get("pay_methods", method_id))

    # -- invoices ------------------------------------------------------------------------------
    @tool(read_only=True)
    def list_payment_invoices(
        self,
        customer_id: Annotated[str | None, Field(description="Only this customer's invoices.")] = None,
        status: Annotated[
            Literal["open", "paid", "void"] | None, Field(description="Only this status.")
        ] = None,
        due_before: Annotated[str | None, Field(description="Due on or before this day, YYYY-MM-DD.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Invoices by due date (oldest first); open ones past due carry overdue=true."""
        check_day(due_before, "due_before")
        if customer_id is not None:
            self._customer(customer_id)
        today = TODAY.isoformat()
        rows = [
            {**i, "overdue": i["status"] == "open" and i["due_date"] < today}
            for i in self.db.values("pay_invoices")
            if (customer_id is None or i["customer_id"] == customer_id)
            and (status is None or i["status"] == status)
            and (due_before is None or i["due_date"] <= due_before)
        ]
        rows.sort(key=lambda i: (i["due_date"], i["id"]))
        return paginate(rows, limit, cursor)

    @tool(idempotent=False)
    def pay_payment_invoice(
        self,
        invoice_id: Annotated[str, Field(description="Invoice id, e.g. 'pinv-007'.")],
        method_id: Annotated[str | None, Field(description="Method to charge (default: theirs).")] = None,
    ) -> dict[str, Any]:
        """Pay an open invoice: charges the customer and marks the invoice paid."""
        inv = self.require("pay_invoices", invoice_id, "Invoice", "Use list_payment_invoices.")
        if inv["status"] != "open":
            raise conflict(f"invoice {invoice_id} is {inv['status']}; only open invoices can be paid.")
        pay = self._charge(inv["customer_id"], inv["amount"], method_id, f"Invoice {invoice_id}", None)
        rec = self.db.edit("pay_invoices", invoice_id)
        rec["status"], rec["payment_id"] = "paid", pay["id"]
        return {"invoice": dict(rec), "payment": pay}

    @tool(destructive=True, idempotent=True)
    def void_payment_invoice(
        self, invoice_id: Annotated[str, Field(description="Invoice id, e.g. 'pinv-007'.")]
    ) -> dict[str, Any]:
        """Void an open invoice (it will never be charged). Paid invoices cannot be voided."""
        inv = self.require("pay_invoices", invoice_id, "Invoice", "Use list_payment_invoices.")
        if inv["status"] == "paid":
            raise conflict(f"invoice {invoice_id} is paid; refund its payment {inv['payment_id']} instead.")
        rec = self.db.edit("pay_invoices", invoice_id)
        rec["status"] = "void"
        return dict(rec)
