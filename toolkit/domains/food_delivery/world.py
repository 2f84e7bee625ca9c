"""Food delivery world: restaurants in the world's cities, their menus, couriers, and orders placed
by CRM ``customers`` (delivered to the customer's city)."""

from __future__ import annotations

from datetime import timedelta
from random import Random

from toolkit.envs.clock import NOW, World, iso

RESTAURANTS = [
    ("Bella Napoli", "italian"), ("Green Bowl", "vegan"), ("Tokyo Ramen Bar", "japanese"), ("Taco Loco", "mexican"),
    ("Curry Corner", "indian"), ("Burger Forge", "american"), ("Pho Station", "vietnamese"), ("Olive Tree", "greek"),
    ("Dragon Wok", "chinese"), ("Le Petit Bistro", "french"), ("Seoul Kitchen", "korean"), ("Mezze House", "lebanese"),
]  # fmt: skip
DISHES = {
    "italian": ["Margherita Pizza", "Lasagna", "Tiramisu"], "vegan": ["Buddha Bowl", "Falafel Wrap", "Green Smoothie"],
    "japanese": ["Tonkotsu Ramen", "Gyoza", "Matcha Ice Cream"], "mexican": ["Beef Tacos", "Veggie Burrito", "Churros"],
    "indian": ["Butter Chicken", "Chana Masala", "Mango Lassi"], "american": ["Cheeseburger", "Fries", "Milkshake"],
    "vietnamese": ["Pho Bo", "Spring Rolls", "Iced Coffee"], "greek": ["Gyros Plate", "Greek Salad", "Baklava"],
    "chinese": ["Kung Pao Chicken", "Fried Rice", "Dumplings"], "french": ["Croque Monsieur", "Onion Soup", "Creme Brulee"],
    "korean": ["Bibimbap", "Fried Chicken", "Kimchi Pancake"], "lebanese": ["Hummus Plate", "Shawarma", "Tabbouleh"],
}  # fmt: skip
VEGETARIAN = {"Margherita Pizza", "Tiramisu", "Buddha Bowl", "Falafel Wrap", "Green Smoothie", "Matcha Ice Cream",
              "Veggie Burrito", "Churros", "Chana Masala", "Mango Lassi", "Fries", "Milkshake", "Spring Rolls",
              "Iced Coffee", "Greek Salad", "Baklava", "Fried Rice", "Onion Soup", "Creme Brulee", "Kimchi Pancake",
              "Hummus Plate", "Tabbouleh"}  # fmt: skip
COURIERS = ["Ari", "Bea", "Cyd", "Dov", "Eli", "Fay", "Gus", "Ida", "Jon", "Kai"]


def add_food_delivery(w: World, rng: Random) -> None:
    cities = sorted({c["city"] for c in w["customers"].values()})
    restaurants, menu = {}, {}
    for i, (name, cuisine) in enumerate(RESTAURANTS):
        rid = f"rest-{i + 1:03d}"
        restaurants[rid] = {
            "id": rid,
            "name": name,
            "cuisine": cuisine,
            "city": rng.choice(cities),
            "rating": round(rng.uniform(3.2, 4.9), 1),
            "delivery_fee": rng.choice([0.0, 1.99, 2.99, 3.49]),
            "open": rng.random() < 0.85,
        }
        for dish in DISHES[cuisine]:
            mid = f"menu-{len(menu) + 1:03d}"
            menu[mid] = {
                "id": mid,
                "restaurant_id": rid,
                "name": dish,
                "price": round(rng.uniform(4, 22), 2),
                "vegetarian": dish in VEGETARIAN,
                "available": rng.random() < 0.9,
            }
    w["food_restaurants"], w["food_menu_items"] = restaurants, menu
    couriers = {}
    for i, name in enumerate(COURIERS):
        cid = f"cour-{i + 1:03d}"
        couriers[cid] = {
            "id": cid,
            "name": name,
            "city": cities[i % len(cities)],
            "vehicle": rng.choice(["bike", "scooter", "car"]),
            "available": rng.random() < 0.7,
            "rating": round(rng.uniform(4.0, 5.0), 2),
        }
    w["food_couriers"] = couriers
    by_rest: dict[str, list[str]] = {}
    for mid, m in menu.items():
        by_rest.setdefault(m["restaurant_id"], []).append(mid)
    orders = {}
    for i in range(40):
        oid = f"fo-{i + 1:04d}"
        rid = rng.choice(sorted(restaurants))
        rest = restaurants[rid]
        lines = [{"menu_item_id": m, "qty": rng.randint(1, 3), "unit_price": menu[m]["price"]}
                 for m in rng.sample(by_rest[rid], rng.randint(1, 2))]  # fmt: skip
        subtotal = round(sum(x["qty"] * x["unit_price"] for x in lines), 2)
        status = rng.choices(["placed", "preparing", "out_for_delivery", "delivered", "cancelled"],
                             weights=[2, 2, 2, 6, 1])[0]  # fmt: skip
        local = [c for c in couriers if couriers[c]["city"] == rest["city"]]
        courier = rng.choice(local) if local and status in ("out_for_delivery", "delivered") else None
        tip = rng.choice([0.0, 1.0, 2.0, 3.5])
        orders[oid] = {
            "id": oid,
            "customer_id": rng.choice(sorted(w["customers"])),
            "restaurant_id": rid,
            "items": lines,
            "subtotal": subtotal,
            "delivery_fee": rest["delivery_fee"],
            "tip": tip,
            "total": round(subtotal + rest["delivery_fee"] + tip, 2),
            "status": status,
            "courier_id": courier,
            "city": rest["city"],
            "placed_at": iso(NOW - timedelta(minutes=rng.randint(20, 60 * 24 * 21))),
            "rating": rng.randint(2, 5) if status == "delivered" and rng.random() < 0.5 else None,
        }
    w["food_orders"] = orders
