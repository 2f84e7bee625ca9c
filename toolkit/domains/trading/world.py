"""Trading world: orders on the tickers of ``quotes``, watchlists and price alerts.

Orders are placed by finance staff (``staff``); filled ones carry the close of their fill day from the
quote history, so the order book agrees with the finance server's prices.
"""

from __future__ import annotations

from random import Random

from toolkit.envs.clock import World

WATCHLISTS = ["Core holdings", "Healthcare ideas", "Energy watch", "Tech momentum", "Dividend candidates"]


def add_trading(w: World, rng: Random) -> None:
    symbols = sorted(w["quotes"])
    traders = sorted(s for s in w["staff"] if w["staff"][s]["team"] == "finance")
    orders: dict[str, dict] = {}
    for i in range(32):
        sym = rng.choice(symbols)
        hist = w["quotes"][sym]["history"]
        k = rng.randrange(len(hist))
        day, close = hist[k]["date"], hist[k]["close"]
        order_type = rng.choices(["market", "limit", "stop"], weights=[5, 4, 1])[0]
        side = rng.choice(["buy", "sell"])
        if order_type == "market":
            status = "filled"
        else:
            status = rng.choices(["open", "filled", "cancelled", "expired"], weights=[4, 3, 2, 1])[0]
        limit = None if order_type == "market" else round(close * rng.uniform(0.93, 1.07), 2)
        oid = f"tord-{i + 1:03d}"
        orders[oid] = {
            "id": oid,
            "symbol": sym,
            "side": side,
            "order_type": order_type,
            "quantity": rng.randint(1, 40) * 5,
            "limit_price": limit,
            "time_in_force": "day" if status == "expired" else rng.choice(["day", "gtc"]),
            "status": status,
            "placed_by": rng.choice(traders),
            "placed_at": f"{day}T{rng.randint(9, 15):02d}:{rng.choice(['00', '15', '30', '45'])}",
            "filled_price": (close if order_type == "market" else limit) if status == "filled" else None,
            "filled_at": day if status == "filled" else None,
        }
    w["trade_orders"] = dict(sorted(orders.items(), key=lambda kv: (kv[1]["placed_at"], kv[0])))

    lists: dict[str, dict] = {}
    for i, name in enumerate(rng.sample(WATCHLISTS, 4)):
        wid = f"wl-{i + 1:03d}"
        lists[wid] = {"id": wid, "name": name, "owner_id": rng.choice(traders),
                      "symbols": sorted(rng.sample(symbols, rng.randint(2, 4)))}  # fmt: skip
    w["trade_watchlists"] = lists

    alerts: dict[str, dict] = {}
    for i in range(10):
        sym = rng.choice(symbols)
        last = w["quotes"][sym]["history"][-1]["close"]
        cond = rng.choice(["above", "below"])
        alerts[f"palert-{i + 1:03d}"] = {
            "id": f"palert-{i + 1:03d}",
            "symbol": sym,
            "condition": cond,
            "price": round(last * rng.uniform(0.9, 1.1), 2),
            "active": rng.random() > 0.2,
            "created_by": rng.choice(traders),
        }
    w["trade_alerts"] = alerts
