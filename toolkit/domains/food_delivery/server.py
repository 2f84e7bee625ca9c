"""Food delivery: restaurants and their menus, customers' delivery orders, couriers and ratings.

Orders belong to CRM customers and are delivered in the restaurant's city by a courier of that city.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from toolkit.envs.clock import NOW_ISO
from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, matches, paginate, tool
from toolkit.envs.servers.dates import check_day

RestaurantId = Annotated[str, Field(description="Restaurant id, e.g. 'rest-001'.")]
MenuItemId = Annotated[str, Field(description="Menu item id, e.g. 'menu-001'.")]
FoodOrderId = Annotated[str, Field(description="Food order id, e.g. 'fo-0001'.")]
CourierId = Annotated[str, Field(description="Courier id, e.g. 'cour-001'.")]
OrderStatus = Literal["placed", "preparing", "out_for_delivery", "delivered", "cancelled"]
# Allowed forward moves of an order; cancelling has its own tool.
NEXT = {"placed": {"preparing"}, "preparing": {"out_for_delivery"}, "out_for_delivery": {"delivered"}}


class FoodLine(BaseModel):
    menu_item_id: str = Field(description="Menu item id, e.g. 'menu-001'.")
    qty: int = Field(ge=1, le=50, description="Quantity.")


class FoodDelivery(DomainServer):
    name = "food_delivery"
    description = (
        "Food delivery: restaurants, menus and prices, customers' delivery orders (place, track, cancel), "
        "couriers, tips, ratings and restaurant revenue."
    )

    def _restaurant(self, restaurant_id: str) -> dict[str, Any]:
        return self.require(
            "food_restaurants", restaurant_id, "Restaurant", "Use search_food_restaurants to find ids."
        )

    def _item(self, menu_item_id: str) -> dict[str, Any]:
        return self.require(
            "food_menu_items", menu_item_id, "Menu item", "Use list_food_menu to find menu item ids."
        )

    def _order(self, order_id: str) -> dict[str, Any]:
        return self.require("food_orders", order_id, "Food order", "Use list_food_orders to find order ids.")

    def _courier(self, courier_id: str) -> dict[str, Any]:
        return self.require(
            "food_couriers", courier_id, "Courier", "Use list_food_couriers to find courier ids."
        )

    @tool(read_only=True)
    def search_food_restaurants(
        self,
        query: Annotated[str | None, Field(description="Text to find in the restaurant name.")] = None,
        city: Annotated[str | None, Field(description="Only restaurants in this city.")] = None,
        cuisine: Annotated[str | None, Field(description="Cuisine, e.g. 'italian', 'vegan'.")] = None,
        open_only: Annotated[bool, Field(description="Only restaurants open now.")] = False,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Search restaurants, best rated first."""
        rows = [
            r
            for r in self.db.values("food_restaurants")
            if matches(r["name"], query)
            and (city is None or r["city"].lower() == city.lower())
            and (cuisine is None or r["cuisine"] == cuisine.lower())
            and (r["open"] or not open_only)
        ]
        rows.sort(key=lambda r: (-r["rating"], r["id"]))
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_food_restaurant(self, restaurant_id: RestaurantId) -> dict[str, Any]:
        """One restaurant with the number of dishes on its menu."""
        r = self._restaurant(restaurant_id)
        n = sum(1 for m in self.db.values("food_menu_items") if m["restaurant_id"] == restaurant_id)
        return {**r, "menu_size": n}

    @tool(idempotent=True)
    def set_food_restaurant_open(
        self,
        restaurant_id: RestaurantId,
        open: Annotated[
            bool, Field(description="True to open the restaurant for orders, False to close it.")
        ],
    ) -> dict[str, Any]:
        """Open or close a restaurant for new orders."""
        self._restaurant(restaurant_id)
        r = self.db.edit("food_restaurants", restaurant_id)
        r["open"] = open
        return r

    @tool(read_only=True)
    def list_food_menu(
        self,
        restaurant_id: RestaurantId,
        vegetarian_only: Annotated[bool, Field(description="Only vegetarian dishes.")] = False,
        max_price: Annotated[float | None, Field(ge=0, description="Only dishes up to this price.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """A restaurant's menu, cheapest first."""
        self._restaurant(restaurant_id)
        rows = [
            m
            for m in self.db.values("food_menu_items")
            if m["restaurant_id"] == restaurant_id
            and (m["vegetarian"] or not vegetarian_only)
            and (max_price is None or m["price"] <= max_price)
        ]
        rows.sort(key=lambda m: (m["price"], m["id"]))
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_food_menu_item(self, menu_item_id: MenuItemId) -> dict[str, Any]:
        """One dish."""
        return self._item(menu_item_id)

    @tool(idempotent=True)
    def update_food_menu_item(
        self,
        menu_item_id: MenuItemId,
        price: Annotated[float | None, Field(gt=0, le=1000, description="New price.")] = None,
        available: Annotated[bool | None, Field(description="Whether the dish can be ordered.")] = None,
    ) -> dict[str, Any]:
        """Change a dish's price or availability (existing orders keep their price)."""
        self._item(menu_item_id)
        if price is None and available is None:
            raise invalid("give price, available or both.")
        m = self.db.edit("food_menu_items", menu_item_id)
        if price is not None:
            m["price"] = round(price, 2)
        if available is not None:
            m["available"] = available
        return m

    @tool(idempotent=False)
    def add_food_menu_item(
        self,
        restaurant_id: RestaurantId,
        name: Annotated[str, Field(min_length=2, max_length=80, description="Dish name.")],
        price: Annotated[float, Field(gt=0, le=1000, description="Price.")],
        vegetarian: Annotated[bool, Field(description="Whether the dish is vegetarian.")] = False,
    ) -> dict[str, Any]:
        """Add a dish to a restaurant's menu (available at once)."""
        self._restaurant(restaurant_id)
        if any(m["restaurant_id"] == restaurant_id and m["name"].lower() == name.lower()
               for m in self.db.values("food_menu_items")):  # fmt: skip
            raise conflict(f"{restaurant_id} already has a dish named '{name}'; use update_food_menu_item.")
        mid = self.next_id("food_menu_items", "menu-")
        rec = {"id": mid, "restaurant_id": restaurant_id, "name": name, "price": round(price, 2),
               "vegetarian": vegetarian, "available": True}  # fmt: skip
        self.db.put("food_menu_items", mid, rec)
        return rec

    @tool(read_only=True)
    def list_food_orders(
        self,
        customer_id: Annotated[str | None, Field(description="Only orders of this customer id.")] = None,
        restaurant_id: Annotated[
            str | None, Field(description="Only orders from this restaurant id.")
        ] = None,
        status: Annotated[OrderStatus | None, Field(description="Only orders with this status.")] = None,
        start_date: Annotated[
            str | None, Field(description="Placed on or after this day, YYYY-MM-DD.")
        ] = None,
        end_date: Annotated[
            str | None, Field(description="Placed on or before this day, YYYY-MM-DD.")
        ] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List food orders, newest first."""
        check_day(start_date, "start_date"), check_day(end_date, "end_date")
        rows = [
            o
            for o in self.db.values("food_orders")
            if (customer_id is None or o["customer_id"] == customer_id)
            and (restaurant_id is None or o["restaurant_id"] == restaurant_id)
            and (status is None or o["status"] == status)
            and (start_date is None or o["placed_at"][:10] >= start_date)
            and (end_date is None or o["placed_at"][:10] <= end_date)
        ]
        rows.sort(key=lambda o: (o["placed_at"], o["id"]), reverse=True)
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_food_order(self, order_id: FoodOrderId) -> dict[str, Any]:
        """One food order with dish names, the restaurant's name and the courier's name."""
        o = self._order(order_id)
        items = [
            {**x, "name": (self.db.get("food_menu_items", x["menu_item_id"]) or {}).get("name")}
            for x in o["items"]
        ]
        rest = self.db.get("food_restaurants", o["restaurant_id"]) or {}
        courier = self.db.get("food_couriers", o["courier_id"] or "") or {}
        return {**o, "items": items, "restaurant_name": rest.get("name"), "courier_name": courier.get("name")}

    @tool(idempotent=False)
    def place_food_order(
        self,
        customer_id: Annotated[str, Field(description="Customer id, e.g. 'cu-001'.")],
        restaurant_id: RestaurantId,
        items: Annotated[list[FoodLine], Field(min_length=1, description="Dishes and quantities.")],
        tip: Annotated[float, Field(ge=0, le=200, description="Tip for the courier.")] = 0.0,
    ) -> dict[str, Any]:
        """Order dishes from one open restaurant for a customer (status 'placed')."""
        self.require("customers", customer_id, "Customer", "Use search_contacts to find customer ids.")
        rest = self._restaurant(restaurant_id)
        if not rest["open"]:
            raise conflict(f"{rest['name']} ({restaurant_id}) is closed; pick an open restaurant.")
        lines = []
        for line in items:
            m = self._item(line.menu_item_id)
            if m["restaurant_id"] != restaurant_id:
                raise invalid(f"{m['id']} is on the menu of {m['restaurant_id']}, not {restaurant_id}.")
            if not m["available"]:
                raise conflict(f"{m['id']} ({m['name']}) is not available now.")
            lines.append({"menu_item_id": m["id"], "qty": line.qty, "unit_price": m["price"]})
        subtotal = round(sum(x["qty"] * x["unit_price"] for x in lines), 2)
        oid = self.next_id("food_orders", "fo-", 4)
        rec = {"id": oid, "customer_id": customer_id, "restaurant_id": restaurant_id, "items": lines,
               "subtotal": subtotal, "delivery_fee": rest["delivery_fee"], "tip": round(tip, 2),
               "total": round(subtotal + rest["delivery_fee"] + tip, 2), "status": "placed", "courier_id": None,
               "city": rest["city"], "placed_at": NOW_ISO, "rating": None}  # fmt: skip
        self.db.put("food_orders", oid, rec)
        return rec

    @tool(idempotent=True)
    def update_food_order_status(
        self,
        order_id: FoodOrderId,
        status: Annotated[
            Literal["preparing", "out_for_delivery", "delivered"], Field(description="New status.")
        ],
    ) -> dict[str, Any]:
        """Move an order forward: placed -> preparing -> out_for_delivery (needs a courier) -> delivered (frees the courier)."""
        o = self._order(order_id)
        if o["status"] == status:
            return o
        if status not in NEXT.get(o["status"], set()):
            allowed = sorted(NEXT.get(o["status"], set())) or "none (final)"
            raise conflict(f"food order {order_id} is '{o['status']}'; allowed next statuses: {allowed}.")
        if status == "out_for_delivery" and not o["courier_id"]:
            raise conflict(
                f"food order {order_id} has no courier; assign one with assign_food_courier first."
            )
        if status == "delivered" and self.db.get("food_couriers", o["courier_id"] or "") is not None:
            self.db.edit("food_couriers", o["courier_id"])["available"] = True  # back on the road
        o = self.db.edit("food_orders", order_id)
        o["status"] = status
        return o

    @tool(destructive=True, idempotent=True)
    def cancel_food_order(
        self,
        order_id: FoodOrderId,
        reason: Annotated[str, Field(min_length=3, description="Why it is cancelled.")],
    ) -> dict[str, Any]:
        """Cancel an order that has not left the restaurant (placed or preparing); its courier is freed."""
        o = self._order(order_id)
        if o["status"] == "cancelled":
            return o
        if o["status"] not in ("placed", "preparing"):
            raise conflict(
                f"food order {order_id} is '{o['status']}'; only placed or preparing orders can be cancelled."
            )
        courier = o["courier_id"]
        busy_elsewhere = any(x["courier_id"] == courier and x["id"] != order_id
                             and x["status"] not in ("delivered", "cancelled")
                             for x in self.db.values("food_orders"))  # fmt: skip
        if courier and not busy_elsewhere and self.db.get("food_couriers", courier) is not None:
            self.db.edit("food_couriers", courier)["available"] = True  # the courier is free again
        o = self.db.edit("food_orders", order_id)
        o["status"], o["cancel_reason"] = "cancelled", reason
        return o

    @tool(read_only=True)
    def list_food_couriers(
        self,
        city: Annotated[str | None, Field(description="Only couriers in this city.")] = None,
        available_only: Annotated[bool, Field(description="Only couriers free now.")] = False,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List couriers, best rated first."""
        rows = [
            c
            for c in self.db.values("food_couriers")
            if (city is None or c["city"].lower() == city.lower()) and (c["available"] or not available_only)
        ]
        rows.sort(key=lambda c: (-c["rating"], c["id"]))
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_food_courier(self, courier_id: CourierId) -> dict[str, Any]:
        """One courier with the ids of the orders they are delivering now."""
        c = self._courier(courier_id)
        active = sorted(o["id"] for o in self.db.values("food_orders")
                        if o["courier_id"] == courier_id and o["status"] == "out_for_delivery")  # fmt: skip
        return {**c, "active_orders": active}

    @tool(idempotent=True)
    def assign_food_courier(self, order_id: FoodOrderId, courier_id: CourierId) -> dict[str, Any]:
        """Give an undelivered order a free courier of the restaurant's city (busy until delivery; a previous courier is freed)."""
        o = self._order(order_id)
        c = self._courier(courier_id)
        if o["courier_id"] == courier_id:
            return o
        if o["status"] in ("delivered", "cancelled"):
            raise conflict(f"food order {order_id} is '{o['status']}'; it needs no courier.")
        if c["city"] != o["city"]:
            raise invalid(f"courier {courier_id} works in {c['city']}, the order is in {o['city']}.")
        if not c["available"]:
            raise conflict(f"courier {courier_id} is busy; use list_food_couriers with available_only=true.")
        if o["courier_id"] and self.db.get("food_couriers", o["courier_id"]) is not None:
            self.db.edit("food_couriers", o["courier_id"])["available"] = (
                True  # the old courier is free again
            )
        self.db.edit("food_couriers", courier_id)["available"] = False
        o = self.db.edit("food_orders", order_id)
        o["courier_id"] = courier_id
        return o

    @tool(idempotent=True)
    def rate_food_order(
        self,
        order_id: FoodOrderId,
        rating: Annotated[int, Field(ge=1, le=5, description="Stars, 1 (bad) to 5 (great).")],
        tip: Annotated[float | None, Field(ge=0, le=200, description="New tip amount, if changed.")] = None,
    ) -> dict[str, Any]:
        """Rate a delivered order and optionally change its tip (the total follows)."""
        o = self._order(order_id)
        if o["status"] != "delivered":
            raise conflict(f"food order {order_id} is '{o['status']}'; only delivered orders can be rated.")
        o = self.db.edit("food_orders", order_id)
        o["rating"] = rating
        if tip is not None:
            o["tip"] = round(tip, 2)
            o["total"] = round(o["subtotal"] + o["delivery_fee"] + o["tip"], 2)
        return o

    @tool(read_only=True)
    def food_restaurant_revenue(
        self,
        start_date: Annotated[str | None, Field(description="First order day, YYYY-MM-DD.")] = None,
        end_date: Annotated[str | None, Field(description="Last order day, YYYY-MM-DD.")] = None,
        city: Annotated[str | None, Field(description="Only restaurants in this city.")] = None,
    ) -> dict[str, Any]:
        """Delivered orders, food revenue (subtotals) and average rating per restaurant over a date range."""
        check_day(start_date, "start_date"), check_day(end_date, "end_date")
        per: dict[str, dict[str, Any]] = {}
        for o in self.db.values("food_orders"):
            day = o["placed_at"][:10]
            if (
                o["status"] != "delivered"
                or (start_date and day < start_date)
                or (end_date and day > end_date)
            ):
                continue
            if city is not None and o["city"].lower() != city.lower():
                continue
            row = per.setdefault(o["restaurant_id"], {"orders": 0, "revenue": 0.0, "ratings": []})
            row["orders"] += 1
            row["revenue"] = round(row["revenue"] + o["subtotal"], 2)
            if o["rating"] is not None:
                row["ratings"].append(o["rating"])
        out = {
            rid: {"orders": r["orders"], "revenue": r["revenue"],
                  "avg_rating": round(sum(r["ratings"]) / len(r["ratings"]), 2) if r["ratings"] else None}
            for rid, r in sorted(per.items())
        }  # fmt: skip
        return {"restaurants": out, "orders": sum(r["orders"] for r in out.values()),
                "revenue": round(sum(r["revenue"] for r in out.values()), 2)}  # fmt: skip
