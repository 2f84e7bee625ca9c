"""Marketplace, retail chain, food delivery, travel booking and maps: every tool called through a real MCP
client session, writes checked in the state diff, error paths, isolation and determinism."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from toolkit.envs import open_episode
from toolkit.envs.registry import tool_specs
from toolkit.envs.world import generate_world, world_hash

SEED = 0
ROOT = Path(__file__).resolve().parents[1]
SERVERS = ["marketplace", "retail_chain", "food_delivery", "travel_booking", "maps"]
CALLED: dict[str, set[str]] = {s: set() for s in SERVERS}


@pytest.fixture(scope="module")
def w():
    return generate_world(SEED)


def run_episode(server, body):
    """Open a fresh episode with one server and run ``body(call, tb)``; ``call`` records the tool."""

    async def main():
        async with open_episode(servers=[server], seed=SEED) as tb:

            async def call(name, args, ok=True):
                r = await tb.call_tool(name, args)
                assert r.ok == ok, (name, args, r.text)
                CALLED[server].add(name)
                return r.structured if ok else r.text

            await body(call, tb)

    anyio.run(main)


def test_marketplace_tools(w):
    seller = next(iter(w["market_sellers"]))
    active = next(x for x in w["market_listings"].values() if x["status"] == "active" and x["quantity"] > 1)
    pending = next(o for o in w["market_offers"].values() if o["status"] == "pending")
    pending2 = [o for o in w["market_offers"].values() if o["status"] == "pending"][1]
    buyer = "cu-001"

    async def body(call, tb):
        page = await call("list_market_sellers", {"limit": 5})
        assert page["total"] == len(w["market_sellers"]) and page["next_cursor"] == "5"
        s = await call("get_market_seller", {"seller_id": seller})
        assert s["id"] == seller and s["review_count"] == sum(
            r["seller_id"] == seller for r in w["market_reviews"].values()
        )
        page = await call("search_market_listings", {"status": "active", "limit": 50})
        assert [x["price"] for x in page["items"]] == sorted(x["price"] for x in page["items"])
        got = await call("get_market_listing", {"listing_id": active["id"]})
        assert got["seller_name"] == w["market_sellers"][active["seller_id"]]["name"]
        new = await call("create_market_listing", {"seller_id": seller, "title": "Used Drone", "price": 250,
                                                   "quantity": 1, "condition": "used"})  # fmt: skip
        assert new["id"] == f"lst-{len(w['market_listings']) + 1:03d}" and new["status"] == "active"
        upd = await call("update_market_listing", {"listing_id": new["id"], "price": 199.99})
        assert upd["price"] == 199.99
        offer = await call("make_market_offer", {"listing_id": new["id"], "buyer_id": buyer, "amount": 180})
        assert offer["status"] == "pending"
        err = await call(
            "make_market_offer", {"listing_id": new["id"], "buyer_id": buyer, "amount": 500}, ok=False
        )
        assert "asking price" in err
        acc = await call("respond_market_offer", {"offer_id": offer["id"], "decision": "accept"})
        assert acc["status"] == "accepted"
        assert (await call("get_market_listing", {"listing_id": new["id"]}))["status"] == "sold_out"
        args = {"listing_id": new["id"], "price": 1.0, "status": "active"}
        assert "quantity 0" in await call("update_market_listing", args, ok=False)
        assert (await call("get_market_listing", {"listing_id": new["id"]}))[
            "price"
        ] == 199.99  # nothing written
        review = await call("add_market_review", {"seller_id": seller, "buyer_id": buyer, "rating": 5})
        assert review["rating"] == 5
        err = await call(
            "add_market_review", {"seller_id": seller, "buyer_id": "cu-030", "rating": 1}, ok=False
        )
        assert "only buyers can review" in err
        revs = await call("list_market_reviews", {"seller_id": seller, "min_rating": 5, "limit": 50})
        assert review["id"] in {r["id"] for r in revs["items"]}
        offers = await call("list_market_offers", {"status": "pending", "limit": 50})
        assert [o["amount"] for o in offers["items"]] == sorted(
            (o["amount"] for o in offers["items"]), reverse=True
        )
        o = await call("get_market_offer", {"offer_id": pending["id"]})
        assert o["buyer_name"] == w["customers"][pending["buyer_id"]]["name"]
        assert (await call("withdraw_market_offer", {"offer_id": pending["id"]}))["status"] == "withdrawn"
        err = await call("respond_market_offer", {"offer_id": pending["id"], "decision": "accept"}, ok=False)
        assert "only pending offers" in err
        rep = await call("market_seller_report", {"seller_id": seller, "start_date": "2025-01-01"})
        assert rep["accepted_revenue"] >= 180
        err = await call("market_seller_report", {"seller_id": seller, "start_date": "11/01/2025"}, ok=False)
        assert "YYYY-MM-DD" in err
        gone = await call("delete_market_listing", {"listing_id": pending2["listing_id"]})
        assert pending2["id"] in gone["rejected_offers"]
        err = await call("get_market_listing", {"listing_id": "lst-0001"}, ok=False)
        assert "not found" in err and "lst-001" in err
        diff = tb.state_diff()
        assert diff[f"market_listings/{new['id']}"]["before"] is None
        assert diff[f"market_listings/{pending2['listing_id']}"]["after"] is None
        assert diff[f"market_offers/{pending['id']}"]["after"]["status"] == "withdrawn"

    run_episode("marketplace", body)


def test_retail_chain_tools(w):
    line = max(w["retail_stock"].values(), key=lambda r: (r["quantity"], r["store_id"]))
    src, pid = line["store_id"], line["product_id"]
    dst = next(s for s in w["retail_stores"] if s != src)
    software = next(p for p in w["products"].values() if p["category"] == "software")["id"]

    async def body(call, tb):
        stores = await call("list_retail_stores", {"limit": 3})
        assert stores["total"] == len(w["retail_stores"])
        s = await call("get_retail_store", {"store_id": src})
        assert s["manager_name"] == w["staff"][w["retail_stores"][src]["manager_id"]]["name"]
        stock = await call("get_retail_store_stock", {"store_id": src, "product_id": pid})
        assert stock["items"][0]["quantity"] == line["quantity"]
        found = await call("find_retail_stock", {"product_id": pid})
        assert found["stores"][0]["quantity"] == line["quantity"]
        assert found["chain_total"] == sum(
            r["quantity"] for r in w["retail_stock"].values() if r["product_id"] == pid
        )
        err = await call("find_retail_stock", {"product_id": software}, ok=False)
        assert "hardware only" in err
        t = await call("create_retail_transfer", {"from_store_id": src, "to_store_id": dst, "product_id": pid,
                                                  "quantity": 3, "note": "rebalance"})  # fmt: skip
        assert t["status"] == "requested"
        err = await call("create_retail_transfer", {"from_store_id": src, "to_store_id": dst, "product_id": pid,
                                                    "quantity": 10_000}, ok=False)  # fmt: skip
        assert "holds only" in err
        err = await call("update_retail_transfer", {"transfer_id": t["id"], "status": "received"}, ok=False)
        assert "allowed next statuses: ['cancelled', 'in_transit']" in err
        await call("update_retail_transfer", {"transfer_id": t["id"], "status": "in_transit"})
        await call("update_retail_transfer", {"transfer_id": t["id"], "status": "received"})
        assert (await call("get_retail_transfer", {"transfer_id": t["id"]}))["status"] == "received"
        listed = await call("list_retail_transfers", {"store_id": dst, "start_date": "2025-11-15"})
        assert t["id"] in {x["id"] for x in listed["items"]}
        sale = await call("record_retail_sale", {"store_id": src, "product_id": pid, "quantity": 2})
        assert sale["amount"] == round(2 * w["products"][pid]["price"], 2)
        await call(
            "set_retail_stock", {"store_id": src, "product_id": pid, "quantity": 1, "reorder_level": 4}
        )
        low = await call("list_retail_reorders", {"store_id": src, "limit": 50})
        assert any(r["product_id"] == pid and r["quantity"] == 1 for r in low["items"])
        rep = await call(
            "retail_sales_report",
            {"start_date": "2025-11-15", "end_date": "2025-11-15", "group_by": "product"},
        )
        assert rep["groups"][pid]["units"] >= 2
        diff = tb.state_diff()
        assert diff[f"retail_stock/{src}|{pid}"]["after"]["quantity"] == 1
        before = w["retail_stock"].get(f"{dst}|{pid}", {"quantity": 0})["quantity"]
        assert diff[f"retail_stock/{dst}|{pid}"]["after"]["quantity"] == before + 3
        assert diff[f"retail_sales/{sale['id']}"]["before"] is None

    run_episode("retail_chain", body)


def test_food_delivery_tools(w):
    placed = next(
        o for o in sorted(w["food_orders"].values(), key=lambda o: o["id"])
        if o["status"] == "placed"
        and any(c["city"] == o["city"] and c["available"] for c in w["food_couriers"].values())
    )  # fmt: skip
    courier = next(c for c in w["food_couriers"].values() if c["city"] == placed["city"] and c["available"])
    delivered = next(o for o in w["food_orders"].values() if o["status"] == "delivered")
    cancel_me = next(o for o in w["food_orders"].values() if o["status"] == "preparing")
    rest = next(r for r in w["food_restaurants"].values() if r["open"])
    dish = next(
        m for m in w["food_menu_items"].values() if m["restaurant_id"] == rest["id"] and m["available"]
    )

    async def body(call, tb):
        found = await call("search_food_restaurants", {"city": rest["city"], "limit": 50})
        assert rest["id"] in {r["id"] for r in found["items"]}
        assert (await call("get_food_restaurant", {"restaurant_id": rest["id"]}))["menu_size"] >= 1
        menu = await call("list_food_menu", {"restaurant_id": rest["id"]})
        assert dish["id"] in {m["id"] for m in menu["items"]}
        assert (await call("get_food_menu_item", {"menu_item_id": dish["id"]}))["name"] == dish["name"]
        new_dish = await call("add_food_menu_item", {"restaurant_id": rest["id"], "name": "Soup of the Day", "price": 6.5,
                                                     "vegetarian": True})  # fmt: skip
        await call("update_food_menu_item", {"menu_item_id": new_dish["id"], "price": 7.0})
        order = await call("place_food_order", {"customer_id": "cu-002", "restaurant_id": rest["id"], "tip": 2,
                                                "items": [{"menu_item_id": new_dish["id"], "qty": 2}]})  # fmt: skip
        assert order["subtotal"] == 14.0 and order["total"] == round(14.0 + rest["delivery_fee"] + 2, 2)
        err = await call(
            "update_food_order_status", {"order_id": order["id"], "status": "delivered"}, ok=False
        )
        assert "allowed next statuses: ['preparing']" in err
        await call("set_food_restaurant_open", {"restaurant_id": rest["id"], "open": False})
        err = await call("place_food_order", {"customer_id": "cu-002", "restaurant_id": rest["id"],
                                              "items": [{"menu_item_id": dish["id"], "qty": 1}]}, ok=False)  # fmt: skip
        assert "closed" in err
        cs = await call("list_food_couriers", {"city": placed["city"], "available_only": True})
        assert courier["id"] in {c["id"] for c in cs["items"]}
        await call("assign_food_courier", {"order_id": placed["id"], "courier_id": courier["id"]})
        await call("update_food_order_status", {"order_id": placed["id"], "status": "preparing"})
        await call("update_food_order_status", {"order_id": placed["id"], "status": "out_for_delivery"})
        assert (
            placed["id"] in (await call("get_food_courier", {"courier_id": courier["id"]}))["active_orders"]
        )
        assert (await call("get_food_order", {"order_id": placed["id"]}))["courier_name"] == courier["name"]
        await call("update_food_order_status", {"order_id": placed["id"], "status": "delivered"})
        assert (await call("get_food_courier", {"courier_id": courier["id"]}))["available"] is True
        await call("cancel_food_order", {"order_id": cancel_me["id"], "reason": "customer asked"})
        err = await call("cancel_food_order", {"order_id": delivered["id"], "reason": "late"}, ok=False)
        assert "only placed or preparing" in err
        rated = await call("rate_food_order", {"order_id": delivered["id"], "rating": 4, "tip": 5})
        assert rated["total"] == round(delivered["subtotal"] + delivered["delivery_fee"] + 5, 2)
        orders = await call(
            "list_food_orders", {"status": "delivered", "start_date": "2025-11-01", "limit": 50}
        )
        assert all(o["placed_at"][:10] >= "2025-11-01" for o in orders["items"])
        rev = await call("food_restaurant_revenue", {"start_date": "2025-10-01"})
        now_delivered = [
            o for o in w["food_orders"].values() if o["status"] == "delivered" or o["id"] == placed["id"]
        ]
        assert rev["orders"] == sum(o["placed_at"][:10] >= "2025-10-01" for o in now_delivered)
        diff = tb.state_diff()
        assert diff[f"food_orders/{placed['id']}"]["after"]["courier_id"] == courier["id"]
        assert diff[f"food_orders/{placed['id']}"]["after"]["status"] == "delivered"
        assert diff[f"food_orders/{cancel_me['id']}"]["after"]["status"] == "cancelled"

    run_episode("food_delivery", body)


def test_travel_booking_tools(w):
    booked = {
        (b["trip_id"], b["item_id"]) for b in w["travel_bookings"].values() if b["status"] == "confirmed"
    }

    def bookable(t):  # outbound flights within the trip's dates, not gone, with a seat, not booked yet
        return [f for f in sorted(w["travel_flights"].values(), key=lambda f: f["id"])
                if (f["origin"], f["destination"]) == (t["origin"], t["destination"]) and f["seats_left"] > 0
                and t["start_date"] <= f["depart"][:10] <= t["end_date"] and f["depart"] >= "2025-11-15T09:00"
                and (t["id"], f["id"]) not in booked]  # fmt: skip

    trip = next(
        t
        for t in sorted(w["travel_trips"].values(), key=lambda t: t["id"])
        if t["status"] == "approved" and len(bookable(t)) >= 2
    )
    route = bookable(trip)
    hotel = next(
        h for h in w["travel_hotels"].values() if h["city"] == trip["destination"] and h["rooms_left"] > 0
    )
    traveler = "st-001"
    dest = next(
        c
        for c in sorted({f["destination"] for f in w["travel_flights"].values()})
        if c != w["staff"][traveler]["city"]
    )

    async def body(call, tb):
        cities = await call("list_travel_destinations", {})
        assert trip["destination"] in cities["cities"]
        flights = await call(
            "search_travel_flights", {"origin": trip["origin"].lower(), "destination": trip["destination"]}
        )
        assert [f["price"] for f in flights["items"]] == sorted(f["price"] for f in flights["items"])
        err = await call("search_travel_flights", {"origin": "Atlantis", "destination": "Oslo"}, ok=False)
        assert "known cities" in err
        assert (await call("get_travel_flight", {"flight_id": route[0]["flight_number"]}))["id"] == route[0][
            "id"
        ]
        hotels = await call("search_travel_hotels", {"city": trip["destination"]})
        assert hotel["id"] in {h["id"] for h in hotels["items"]}
        assert (await call("get_travel_hotel", {"hotel_id": hotel["id"]}))["city"] == trip["destination"]
        q = await call("quote_travel_hotel", {"hotel_id": hotel["id"], "check_in": "2025-12-01", "nights": 3})
        assert q["total"] == round(hotel["nightly_rate"] * 3, 2) and q["check_out"] == "2025-12-04"
        new = await call("create_travel_trip", {"traveler_id": traveler, "destination": dest, "start_date": "2025-12-01",
                                                "end_date": "2025-12-03", "purpose": "customer visit", "budget": 2000})  # fmt: skip
        assert new["status"] == "planned" and new["origin"] == w["staff"][traveler]["city"]
        err = await call("create_travel_trip", {"traveler_id": traveler, "destination": dest, "start_date": "2025-01-01",
                                                "end_date": "2025-01-02", "purpose": "late", "budget": 10}, ok=False)  # fmt: skip
        assert "in the past" in err
        await call(
            "update_travel_trip", {"trip_id": new["id"], "status": "approved", "notes": "ok'd by finance"}
        )
        hb = await call("book_travel_hotel", {"trip_id": trip["id"], "hotel_id": hotel["id"]})
        assert hb["nights"] >= 1 and hb["price"] == round(hotel["nightly_rate"] * hb["nights"], 2)
        pts = (await call("get_travel_loyalty", {"traveler_id": trip["traveler_id"]}))["points"]
        fb = await call("book_travel_flight", {"trip_id": trip["id"], "flight_id": route[0]["id"]})
        assert fb["price"] == route[0]["price"]
        assert (await call("get_travel_loyalty", {"traveler_id": trip["traveler_id"]}))["points"] > pts
        ch = await call("change_travel_flight", {"booking_id": fb["id"], "new_flight_id": route[1]["id"]})
        assert ch["item_id"] == route[1]["id"]
        err = await call(
            "change_travel_flight", {"booking_id": fb["id"], "new_flight_id": hb["item_id"]}, ok=False
        )
        assert "not found" in err
        cost = await call("travel_trip_cost", {"trip_id": trip["id"]})
        assert cost["total"] == round(sum(b["price"] for b in (await call("get_travel_trip", {"trip_id": trip["id"]}))[
            "bookings"] if b["status"] == "confirmed"), 2)  # fmt: skip
        got = await call("get_travel_booking", {"booking_id": hb["id"]})
        assert got["item"]["id"] == hotel["id"]
        await call("cancel_travel_booking", {"booking_id": hb["id"]})
        listed = await call("list_travel_bookings", {"trip_id": trip["id"], "status": "cancelled"})
        assert hb["id"] in {b["id"] for b in listed["items"]}
        trips = await call(
            "list_travel_trips", {"status": "approved", "start_date": "2025-11-15", "limit": 50}
        )
        assert new["id"] in {t["id"] for t in trips["items"]}
        spend = await call("travel_spend_report", {"start_date": "2025-11-01"})
        assert spend["total"] >= 0
        await call("set_travel_seat_preference", {"traveler_id": traveler, "seat": "window"})
        diff = tb.state_diff()
        assert diff[f"travel_bookings/{hb['id']}"]["after"]["status"] == "cancelled"
        assert diff[f"travel_trips/{new['id']}"]["after"]["status"] == "approved"
        assert diff[f"travel_loyalty/{traveler}"]["after"]["seat_preference"] == "window"
        assert f"travel_hotels/{hotel['id']}" not in diff  # the room was taken and given back

    run_episode("travel_booking", body)


def test_maps_tools(w):
    hq = next(p for p in w["maps_places"].values() if p["company_id"] == "co-001")
    saved = next(iter(w["maps_saved"].values()))

    async def body(call, tb):
        cities = await call("list_maps_cities", {})
        assert hq["city"] in cities["cities"]
        cafes = await call("search_maps_places", {"city": hq["city"], "category": "cafe"})
        assert all(p["category"] == "cafe" and p["city"] == hq["city"] for p in cafes["items"])
        assert (await call("get_maps_place", {"place_id": hq["id"]}))["company_id"] == "co-001"
        near = await call("find_nearby_maps_places", {"place_id": hq["id"], "radius_km": 50, "limit": 50})
        dists = [p["distance_km"] for p in near["items"]]
        assert dists == sorted(dists) and near["total"] >= 1
        other = near["items"][0]
        d = await call("get_maps_distance", {"from_place_id": hq["id"], "to_place_id": other["id"]})
        assert d["distance_km"] == other["distance_km"]
        walk = await call(
            "get_maps_route", {"from_place_id": hq["id"], "to_place_id": other["id"], "mode": "walking"}
        )
        drive = await call("get_maps_route", {"from_place_id": hq["id"], "to_place_id": other["id"]})
        assert walk["traffic_delay_minutes"] == 0 and drive["distance_km"] == walk["distance_km"]
        far = next(p for p in w["maps_places"].values() if p["city"] != hq["city"])
        err = await call("get_maps_route", {"from_place_id": hq["id"], "to_place_id": far["id"]}, ok=False)
        assert "one city" in err
        inc = await call(
            "report_maps_incident", {"place_id": other["id"], "kind": "accident", "delay_min": 30}
        )
        drive2 = await call("get_maps_route", {"from_place_id": hq["id"], "to_place_id": other["id"]})
        assert drive2["traffic_delay_minutes"] == drive["traffic_delay_minutes"] + 30
        listed = await call("list_maps_incidents", {"city": hq["city"]})
        assert inc["id"] in {i["id"] for i in listed["items"]}
        await call("resolve_maps_incident", {"incident_id": inc["id"]})
        geo = await call("geocode_maps_address", {"address": hq["address"]})
        assert hq["id"] in {m["place_id"] for m in geo["matches"]}
        rev = await call("reverse_geocode_maps", {"lat": hq["lat"], "lon": hq["lon"]})
        assert rev["place"]["id"] == hq["id"] and rev["distance_km"] == 0
        at = await call("check_maps_place_open", {"place_id": hq["id"], "at": "03:00"})
        assert at["open"] == (hq["opens"] <= "03:00")
        err = await call("check_maps_place_open", {"place_id": hq["id"], "at": "3pm"}, ok=False)
        assert "at" in err
        await call("update_maps_place_hours", {"place_id": hq["id"], "opens": "08:00", "closes": "19:00"})
        new = await call("add_maps_place", {"name": "Pop-up Cafe", "category": "cafe", "city": hq["city"].upper(),
                                            "address": "1 Test St", "lat": hq["lat"], "lon": hq["lon"]})  # fmt: skip
        assert new["city"] == hq["city"]
        await call("save_maps_place", {"staff_id": "st-001", "place_id": new["id"], "label": "favourite"})
        mine = await call("list_maps_saved_places", {"staff_id": "st-001"})
        assert new["id"] in {s["place_id"] for s in mine["items"]}
        await call("remove_maps_saved_place", {"staff_id": saved["staff_id"], "place_id": saved["place_id"]})
        err = await call(
            "remove_maps_saved_place",
            {"staff_id": saved["staff_id"], "place_id": saved["place_id"]},
            ok=False,
        )
        assert "not saved" in err
        diff = tb.state_diff()
        assert diff[f"maps_saved/{saved['staff_id']}|{saved['place_id']}"]["after"] is None
        assert diff[f"maps_incidents/{inc['id']}"]["after"]["active"] is False
        assert diff[f"maps_places/{hq['id']}"]["after"]["opens"] == "08:00"

    run_episode("maps", body)


def test_every_tool_of_these_servers_was_called():
    if any(not called for called in CALLED.values()):
        pytest.skip("run with the per-server tests")
    for server in SERVERS:
        names = {t.name for t in tool_specs([server])}
        assert CALLED[server] == names, (server, names - CALLED[server])


def test_writes_stay_in_their_episode():
    before = generate_world(SEED)["travel_loyalty"]["st-002"]["seat_preference"]
    seat = "window" if before == "aisle" else "aisle"

    async def main():
        async with (
            open_episode(servers=SERVERS, seed=SEED) as a,
            open_episode(servers=SERVERS, seed=SEED) as b,
        ):
            assert (
                await a.call_tool("set_travel_seat_preference", {"traveler_id": "st-002", "seat": seat})
            ).ok
            assert (await a.call_tool("resolve_maps_incident", {"incident_id": "inc-001"})).ok
            mine = await a.call_tool("get_travel_loyalty", {"traveler_id": "st-002"})
            theirs = await b.call_tool("get_travel_loyalty", {"traveler_id": "st-002"})
            assert (
                mine.structured["seat_preference"] == seat and theirs.structured["seat_preference"] == before
            )
            assert "travel_loyalty/st-002" in a.state_diff() and b.state_diff() == {}

    anyio.run(main)


def test_failing_calls_write_nothing(w):
    delivered = next(o for o in w["food_orders"].values() if o["status"] == "delivered")["id"]
    sold_out = next(x for x in w["market_listings"].values() if x["quantity"] == 0)["id"]
    completed = next(t for t in w["travel_trips"].values() if t["status"] == "completed")["id"]
    bad = [
        ("update_market_listing", {"listing_id": sold_out, "price": 5.0, "status": "active"}, "quantity 0"),
        (
            "create_retail_transfer",
            {"from_store_id": "rs-001", "to_store_id": "rs-002", "product_id": "p-002", "quantity": 9999},
            "holds only",
        ),  # fmt: skip
        ("cancel_food_order", {"order_id": delivered, "reason": "late"}, "only placed or preparing"),
        (
            "place_food_order",
            {
                "customer_id": "cu-001",
                "restaurant_id": "rest-001",
                "items": [{"menu_item_id": "menu-999", "qty": 1}],
            },
            "not found",
        ),  # fmt: skip
        ("book_travel_flight", {"trip_id": completed, "flight_id": "fl-001"}, "only planned or approved"),
        ("update_travel_trip", {"trip_id": completed, "status": "approved"}, "allowed next statuses"),
        (
            "update_maps_place_hours",
            {"place_id": "pl-001", "opens": "18:00", "closes": "09:00"},
            "must be after",
        ),
        ("list_retail_transfers", {"start_date": "yesterday"}, "YYYY-MM-DD"),
    ]

    async def main():
        async with open_episode(servers=SERVERS, seed=SEED) as tb:
            for name, args, words in bad:
                r = await tb.call_tool(name, args)
                assert not r.ok and words in r.text, (name, r.text)
            assert tb.state_diff() == {}

    anyio.run(main)


def test_domain_worlds_are_deterministic_and_cross_referenced():
    a, b, c = generate_world(3), generate_world(3), generate_world(4)
    assert world_hash(a) == world_hash(b) != world_hash(c)
    for coll in ("market_listings", "retail_stock", "food_orders", "travel_trips", "maps_places"):
        assert a[coll] == b[coll] and a[coll]
    # Cross references point into the core world.
    assert all(o["buyer_id"] in a["customers"] for o in a["market_offers"].values())
    assert all(s["manager_id"] in a["staff"] for s in a["retail_stores"].values())
    assert all(r["product_id"] in a["products"] for r in a["retail_stock"].values())
    assert all(o["customer_id"] in a["customers"] for o in a["food_orders"].values())
    assert all(t["traveler_id"] in a["staff"] for t in a["travel_trips"].values())
    assert {p["company_id"] for p in a["maps_places"].values()} - {None} == set(a["companies"])


FIRST_READ = {
    "marketplace": ("get_market_seller", {"seller_id": "sel-001"}),
    "retail_chain": ("get_retail_store", {"store_id": "rs-001"}),
    "food_delivery": ("get_food_restaurant", {"restaurant_id": "rest-001"}),
    "travel_booking": ("get_travel_trip", {"trip_id": "trip-001"}),
    "maps": ("get_maps_place", {"place_id": "pl-001"}),
}


@pytest.mark.integration
@pytest.mark.parametrize("server", SERVERS)
def test_mcp_rl_serve_runs_each_server_over_stdio(server):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolkit.cli", "serve", server, "--seed", "2"], cwd=str(ROOT)
    )
    name, args = FIRST_READ[server]

    async def main():
        async with Client(params, read_timeout_seconds=60) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            assert listed == {t.name for t in tool_specs([server])}
            r = await client.call_tool(name, args)
            assert not r.is_error and r.structured_content["id"] == next(iter(args.values()))

    anyio.run(main)
