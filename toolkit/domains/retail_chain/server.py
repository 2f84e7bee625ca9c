"""Retail chain: the company's stores, stock of catalogue hardware per store, transfers between
stores, and store sales.

Stock is per (store, product); a transfer takes units off the sending store when it ships and adds
them to the receiving store when it is received, so stock is never counted twice.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.clock import NOW_ISO, TODAY
from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, matches, paginate, tool
from toolkit.envs.servers.dates import check_day

StoreId = Annotated[str, Field(description="Store id, e.g. 'rs-001'.")]
ProductId = Annotated[str, Field(description="Catalogue product id, e.g. 'p-001' (hardware only).")]
TransferId = Annotated[str, Field(description="Stock transfer id, e.g. 'rt-001'.")]
TransferStatus = Literal["requested", "in_transit", "received", "cancelled"]
# Allowed moves of a transfer; anything else is a conflict.
NEXT = {"requested": {"in_transit", "cancelled"}, "in_transit": {"received"}}


class RetailChain(DomainServer):
    name = "retail_chain"
    description = (
        "Retail chain: physical stores, stock per store and product, reorder levels, stock transfers "
        "between stores, and store sales reports."
    )

    def _store(self, store_id: str) -> dict[str, Any]:
        return self.require("retail_stores", store_id, "Store", "Use list_retail_stores to find store ids.")

    def _product(self, product_id: str) -> dict[str, Any]:
        p = self.require("products", product_id, "Product", "Use search_products to find product ids.")
        if p["category"] != "hardware":
            raise invalid(f"{product_id} ({p['name']}) is {p['category']}; stores stock hardware only.")
        return p

    def _transfer(self, transfer_id: str) -> dict[str, Any]:
        return self.require(
            "retail_transfers", transfer_id, "Transfer", "Use list_retail_transfers to find ids."
        )

    def _qty(self, store_id: str, product_id: str) -> int:
        rec = self.db.get("retail_stock", f"{store_id}|{product_id}")
        return rec["quantity"] if rec else 0

    def _add_stock(self, store_id: str, product_id: str, delta: int) -> None:
        key = f"{store_id}|{product_id}"
        if self.db.get("retail_stock", key) is None:
            self.db.put("retail_stock", key, {"store_id": store_id, "product_id": product_id,
                                              "quantity": 0, "reorder_level": 5})  # fmt: skip
        self.db.edit("retail_stock", key)["quantity"] += delta

    @tool(read_only=True)
    def list_retail_stores(
        self,
        city: Annotated[str | None, Field(description="Only stores in this city.")] = None,
        query: Annotated[str | None, Field(description="Text to find in the store name.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List the chain's stores by id."""
        rows = [
            s
            for s in sorted(self.db.values("retail_stores"), key=lambda s: s["id"])
            if (city is None or s["city"].lower() == city.lower()) and matches(s["name"], query)
        ]
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_retail_store(self, store_id: StoreId) -> dict[str, Any]:
        """One store with its manager's name and its total units on hand."""
        s = self._store(store_id)
        mgr = self.db.get("staff", s["manager_id"]) or {}
        units = sum(r["quantity"] for r in self.db.values("retail_stock") if r["store_id"] == store_id)
        return {**s, "manager_name": mgr.get("name"), "units_on_hand": units}

    @tool(read_only=True)
    def get_retail_store_stock(
        self,
        store_id: StoreId,
        product_id: Annotated[str | None, Field(description="Only this product id.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """The stock lines of one store (product, quantity, reorder level), by product id."""
        self._store(store_id)
        if product_id is not None:
            self._product(product_id)
        rows = [
            {**r, "product_name": (self.db.get("products", r["product_id"]) or {}).get("name")}
            for r in self.db.values("retail_stock")
            if r["store_id"] == store_id and (product_id is None or r["product_id"] == product_id)
        ]
        rows.sort(key=lambda r: r["product_id"])
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def find_retail_stock(
        self,
        product_id: ProductId,
        min_quantity: Annotated[
            int, Field(ge=0, le=100000, description="Only stores with at least this many.")
        ] = 1,
    ) -> dict[str, Any]:
        """Which stores hold a product, most units first, and the chain-wide total."""
        self._product(product_id)
        rows = [
            {
                "store_id": r["store_id"],
                "city": self.db.get("retail_stores", r["store_id"])["city"],
                "quantity": r["quantity"],
            }  # fmt: skip
            for r in self.db.values("retail_stock")
            if r["product_id"] == product_id and r["quantity"] >= min_quantity
        ]
        rows.sort(key=lambda r: (-r["quantity"], r["store_id"]))
        total = sum(r["quantity"] for r in self.db.values("retail_stock") if r["product_id"] == product_id)
        return {"product_id": product_id, "stores": rows, "chain_total": total}

    @tool(idempotent=True)
    def set_retail_stock(
        self,
        store_id: StoreId,
        product_id: ProductId,
        quantity: Annotated[int, Field(ge=0, le=100000, description="Units on hand after a count.")],
        reorder_level: Annotated[
            int | None, Field(ge=0, le=10000, description="New reorder level (unchanged if omitted).")
        ] = None,
    ) -> dict[str, Any]:
        """Set a store's counted units of a product (and optionally its reorder level)."""
        self._store(store_id)
        self._product(product_id)
        self._add_stock(store_id, product_id, 0)
        rec = self.db.edit("retail_stock", f"{store_id}|{product_id}")
        rec["quantity"] = quantity
        if reorder_level is not None:
            rec["reorder_level"] = reorder_level
        return rec

    @tool(read_only=True)
    def list_retail_reorders(
        self,
        store_id: Annotated[str | None, Field(description="Only this store id.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Stock lines at or below their reorder level, lowest quantity first."""
        if store_id is not None:
            self._store(store_id)
        rows = [
            r
            for r in self.db.values("retail_stock")
            if r["quantity"] <= r["reorder_level"] and (store_id is None or r["store_id"] == store_id)
        ]
        rows.sort(key=lambda r: (r["quantity"], r["store_id"], r["product_id"]))
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def list_retail_transfers(
        self,
        store_id: Annotated[str | None, Field(description="Only transfers from or to this store id.")] = None,
        status: Annotated[TransferStatus | None, Field(description="Transfer status.")] = None,
        start_date: Annotated[str | None, Field(description="Created on or after, YYYY-MM-DD.")] = None,
        end_date: Annotated[str | None, Field(description="Created on or before, YYYY-MM-DD.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List stock transfers, newest first."""
        check_day(start_date, "start_date"), check_day(end_date, "end_date")
        rows = [
            t
            for t in self.db.values("retail_transfers")
            if (store_id is None or store_id in (t["from_store_id"], t["to_store_id"]))
            and (status is None or t["status"] == status)
            and (start_date is None or t["created"] >= start_date)
            and (end_date is None or t["created"] <= end_date)
        ]
        rows.sort(key=lambda t: (t["created"], t["id"]), reverse=True)
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_retail_transfer(self, transfer_id: TransferId) -> dict[str, Any]:
        """One stock transfer."""
        return self._transfer(transfer_id)

    @tool(idempotent=False)
    def create_retail_transfer(
        self,
        from_store_id: Annotated[str, Field(description="Sending store id.")],
        to_store_id: Annotated[str, Field(description="Receiving store id.")],
        product_id: ProductId,
        quantity: Annotated[int, Field(ge=1, le=10000, description="Units to move.")],
        note: Annotated[str, Field(max_length=500, description="Why the stock moves.")] = "",
    ) -> dict[str, Any]:
        """Request a transfer of units between two stores (status 'requested'; stock moves when it ships)."""
        self._store(from_store_id)
        self._store(to_store_id)
        self._product(product_id)
        if from_store_id == to_store_id:
            raise invalid("from_store_id and to_store_id are the same store.")
        have = self._qty(from_store_id, product_id)
        if have < quantity:
            raise conflict(f"store {from_store_id} holds only {have} of {product_id}; use find_retail_stock "
                           "to find a store with enough.")  # fmt: skip
        tid = self.next_id("retail_transfers", "rt-")
        rec = {"id": tid, "from_store_id": from_store_id, "to_store_id": to_store_id, "product_id": product_id,
               "quantity": quantity, "status": "requested", "created": TODAY.isoformat(), "note": note}  # fmt: skip
        self.db.put("retail_transfers", tid, rec)
        return rec

    @tool(idempotent=True)
    def update_retail_transfer(
        self,
        transfer_id: TransferId,
        status: Annotated[Literal["in_transit", "received", "cancelled"], Field(description="New status.")],
    ) -> dict[str, Any]:
        """Move a transfer on: requested -> in_transit (units leave the sender) -> received (units
        arrive); a requested transfer can be cancelled."""
        t = self._transfer(transfer_id)
        if t["status"] == status:
            return t
        if status not in NEXT.get(t["status"], set()):
            allowed = sorted(NEXT.get(t["status"], set())) or "none (final)"
            raise conflict(f"transfer {transfer_id} is '{t['status']}'; allowed next statuses: {allowed}.")
        if status == "in_transit":
            have = self._qty(t["from_store_id"], t["product_id"])
            if have < t["quantity"]:
                raise conflict(f"store {t['from_store_id']} now holds only {have} of {t['product_id']}.")
            self._add_stock(t["from_store_id"], t["product_id"], -t["quantity"])
        if status == "received":
            self._add_stock(t["to_store_id"], t["product_id"], t["quantity"])
        t = self.db.edit("retail_transfers", transfer_id)
        t["status"], t["updated"] = status, NOW_ISO
        return t

    @tool(idempotent=False)
    def record_retail_sale(
        self,
        store_id: StoreId,
        product_id: ProductId,
        quantity: Annotated[int, Field(ge=1, le=1000, description="Units sold.")],
    ) -> dict[str, Any]:
        """Record a sale at a store at the catalogue price today; takes the units off the store's stock."""
        self._store(store_id)
        p = self._product(product_id)
        have = self._qty(store_id, product_id)
        if have < quantity:
            raise conflict(f"store {store_id} holds only {have} of {product_id}.")
        self._add_stock(store_id, product_id, -quantity)
        sid = self.next_id("retail_sales", "sale-", 4)
        rec = {"id": sid, "store_id": store_id, "product_id": product_id, "quantity": quantity,
               "amount": round(quantity * p["price"], 2), "date": TODAY.isoformat()}  # fmt: skip
        self.db.put("retail_sales", sid, rec)
        return rec

    @tool(read_only=True)
    def retail_sales_report(
        self,
        start_date: Annotated[str | None, Field(description="First sale day, YYYY-MM-DD.")] = None,
        end_date: Annotated[str | None, Field(description="Last sale day, YYYY-MM-DD.")] = None,
        store_id: Annotated[str | None, Field(description="Only this store id.")] = None,
        group_by: Annotated[
            Literal["store", "product"], Field(description="Group totals by store or product.")
        ] = "store",
    ) -> dict[str, Any]:
        """Units and revenue of store sales over a date range, grouped by store or product."""
        check_day(start_date, "start_date"), check_day(end_date, "end_date")
        if store_id is not None:
            self._store(store_id)
        groups: dict[str, dict[str, float]] = {}
        units, revenue = 0, 0.0
        for s in self.db.values("retail_sales"):
            if (start_date and s["date"] < start_date) or (end_date and s["date"] > end_date):
                continue
            if store_id is not None and s["store_id"] != store_id:
                continue
            g = groups.setdefault(s[f"{group_by}_id"], {"units": 0, "revenue": 0.0, "sales": 0})
            g["units"] += s["quantity"]
            g["sales"] += 1
            g["revenue"] = round(g["revenue"] + s["amount"], 2)
            units, revenue = units + s["quantity"], revenue + s["amount"]
        return {
            "units": units,
            "revenue": round(revenue, 2),
            "group_by": group_by,
            "groups": dict(sorted(groups.items())),
        }
