"""Shop: the product catalogue, stock, customer orders, refunds and sales figures."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, matches, paginate, tool
from toolkit.envs.world import TODAY

OrderStatus = Literal["pending", "paid", "shipped", "delivered", "cancelled", "refunded"]
ProductId = Annotated[str, Field(description="Product id, e.g. 'p-001'.")]
OrderId = Annotated[str, Field(description="Order id, e.g. 'o-5001'.")]
# Allowed forward moves of an order; anything else is a conflict.
NEXT = {"pending": {"paid", "cancelled"}, "paid": {"shipped", "cancelled"}, "shipped": {"delivered"}}


class OrderLine(BaseModel):
    product_id: str = Field(description="Product id, e.g. 'p-001'.")
    qty: int = Field(ge=1, le=1000, description="Quantity.")


class Shop(DomainServer):
    name = "shop"
    description = (
        "Online shop: products, stock and prices, customer orders, order status, refunds, sales report."
    )

    def _product(self, product_id: str) -> dict[str, Any]:
        return self.require("products", product_id, "Product", "Use search_products to find product ids.")

    def _order(self, order_id: str) -> dict[str, Any]:
        return self.require("orders", order_id, "Order", "Use list_orders to find order ids.")

    @tool(read_only=True)
    def search_products(
        self,
        query: Annotated[str | None, Field(description="Text to find in the product name or SKU.")] = None,
        category: Annotated[
            Literal["hardware", "software", "service"] | None, Field(description="Category.")
        ] = None,
        max_price: Annotated[float | None, Field(ge=0, description="Only products up to this price.")] = None,
        in_stock: Annotated[bool, Field(description="Only products that can ship now.")] = False,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Search the catalogue, cheapest first."""
        rows = [
            p
            for p in self.db.values("products")
            if (matches(p["name"], query) or matches(p["sku"], query))
            and (category is None or p["category"] == category)
            and (max_price is None or p["price"] <= max_price)
            and (not in_stock or p["stock"] is None or p["stock"] > 0)
        ]
        rows.sort(key=lambda p: (p["price"], p["id"]))
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_product(self, product_id: ProductId) -> dict[str, Any]:
        """One product (stock is null for software and services, which never run out)."""
        return self._product(product_id)

    @tool(idempotent=True)
    def update_stock(
        self,
        product_id: ProductId,
        stock: Annotated[int, Field(ge=0, le=100000, description="New units on hand.")],
    ) -> dict[str, Any]:
        """Set the units on hand of a hardware product."""
        if self._product(product_id)["stock"] is None:
            raise invalid(f"{product_id} is not a physical product; it has no stock.")
        p = self.db.edit("products", product_id)
        p["stock"] = stock
        return p

    @tool(idempotent=True)
    def update_price(
        self,
        product_id: ProductId,
        price: Annotated[float, Field(gt=0, le=1_000_000, description="New price.")],
    ) -> dict[str, Any]:
        """Change a product's price (existing orders keep their price)."""
        self._product(product_id)
        p = self.db.edit("products", product_id)
        p["price"] = round(price, 2)
        return p

    @tool(read_only=True)
    def list_orders(
        self,
        customer_id: Annotated[str | None, Field(description="Only orders of this customer id.")] = None,
        status: Annotated[OrderStatus | None, Field(description="Only orders with this status.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List orders, newest first."""
        rows = [
            o
            for o in self.db.values("orders")
            if (customer_id is None or o["customer_id"] == customer_id)
            and (status is None or o["status"] == status)
        ]
        rows.sort(key=lambda o: (o["created"], o["id"]), reverse=True)
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_order(self, order_id: OrderId) -> dict[str, Any]:
        """One order with product names and the customer's name."""
        o = self._order(order_id)
        items = [
            {**it, "name": (self.db.get("products", it["product_id"]) or {}).get("name")} for it in o["items"]
        ]
        cust = self.db.get("customers", o["customer_id"])
        return {**o, "items": items, "customer_name": cust["name"] if cust else None}

    @tool(idempotent=False)
    def create_order(
        self,
        customer_id: Annotated[str, Field(description="Customer id, e.g. 'cu-001'.")],
        items: Annotated[list[OrderLine], Field(min_length=1, description="Products and quantities.")],
    ) -> dict[str, Any]:
        """Place an order for a customer at current prices; hardware stock is reserved. Status 'pending'."""
        cust = self.require("customers", customer_id, "Customer", "Use search_contacts to find customer ids.")
        lines: list[dict[str, Any]] = []
        wanted: dict[str, int] = {}  # per product, over all lines
        for line in items:
            p = self._product(line.product_id)
            wanted[p["id"]] = wanted.get(p["id"], 0) + line.qty
            if p["stock"] is not None and p["stock"] < wanted[p["id"]]:
                raise conflict(
                    f"only {p['stock']} of {p['id']} ({p['name']}) in stock, {wanted[p['id']]} requested."
                )
            lines.append({"product_id": p["id"], "qty": line.qty, "unit_price": p["price"]})
        for line in lines:
            if self.db.get("products", line["product_id"])["stock"] is not None:
                self.db.edit("products", line["product_id"])["stock"] -= line["qty"]
        oid = self.next_id("orders", "o-", 4, start=5001)
        rec = {"id": oid, "customer_id": customer_id, "items": lines,
               "total": round(sum(x["qty"] * x["unit_price"] for x in lines), 2), "status": "pending",
               "created": TODAY.isoformat(), "ship_city": cust["city"]}  # fmt: skip
        self.db.put("orders", oid, rec)
        return rec

    @tool(idempotent=True)
    def update_order_status(
        self,
        order_id: OrderId,
        status: Annotated[
            Literal["paid", "shipped", "delivered", "cancelled"], Field(description="New status.")
        ],
    ) -> dict[str, Any]:
        """Move an order forward: pending -> paid -> shipped -> delivered; pending/paid -> cancelled."""
        o = self._order(order_id)
        if o["status"] == status:
            return o
        if status not in NEXT.get(o["status"], set()):
            allowed = sorted(NEXT.get(o["status"], set())) or "none (final)"
            raise conflict(f"order {order_id} is '{o['status']}'; allowed next statuses: {allowed}.")
        if status == "cancelled":  # release reserved stock
            for it in o["items"]:
                p = self.db.get("products", it["product_id"])
                if p is not None and p["stock"] is not None:
                    self.db.edit("products", it["product_id"])["stock"] += it["qty"]
        o = self.db.edit("orders", order_id)
        o["status"] = status
        return o

    @tool(destructive=True, idempotent=True)
    def refund_order(
        self,
        order_id: OrderId,
        reason: Annotated[str, Field(min_length=3, description="Why it is refunded.")],
    ) -> dict[str, Any]:
        """Refund a delivered or shipped order in full."""
        o = self._order(order_id)
        if o["status"] == "refunded":
            raise conflict(f"order {order_id} was already refunded.")
        if o["status"] not in ("shipped", "delivered"):
            raise conflict(f"order {order_id} is '{o['status']}'; only shipped or delivered orders can be refunded "
                           "(cancel pending or paid ones with update_order_status).")  # fmt: skip
        o = self.db.edit("orders", order_id)
        o["status"], o["refund"] = "refunded", {"amount": o["total"], "reason": reason}
        return o

    @tool(read_only=True)
    def sales_report(
        self,
        start_date: Annotated[str | None, Field(description="First order day, YYYY-MM-DD.")] = None,
        end_date: Annotated[str | None, Field(description="Last order day, YYYY-MM-DD.")] = None,
    ) -> dict[str, Any]:
        """Revenue, order count and units per product over a date range (cancelled/refunded excluded)."""
        per: dict[str, dict[str, float]] = {}
        revenue, n = 0.0, 0
        for o in self.db.values("orders"):
            if o["status"] in ("cancelled", "refunded"):
                continue
            if (start_date and o["created"] < start_date) or (end_date and o["created"] > end_date):
                continue
            n += 1
            revenue += o["total"]
            for it in o["items"]:
                row = per.setdefault(it["product_id"], {"units": 0, "revenue": 0.0})
                row["units"] += it["qty"]
                row["revenue"] = round(row["revenue"] + it["qty"] * it["unit_price"], 2)
        return {"orders": n, "revenue": round(revenue, 2), "per_product": dict(sorted(per.items()))}

    @tool(read_only=True)
    def list_low_stock(
        self,
        threshold: Annotated[
            int, Field(ge=0, le=1000, description="Report products with stock below this.")
        ] = 10,
    ) -> dict[str, Any]:
        """Hardware products whose stock is below a threshold, lowest first."""
        rows = [p for p in self.db.values("products") if p["stock"] is not None and p["stock"] < threshold]
        rows.sort(key=lambda p: (p["stock"], p["id"]))
        return {"threshold": threshold, "products": rows, "count": len(rows)}
