"""Trading: an order book over the finance server's tickers, watchlists and price alerts.

Market orders fill at once at the latest close and settle against the same portfolio and cash the
finance server shows (``holdings``, ``accounts``); limit and stop orders wait in the book until
cancelled.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.clock import NOW_ISO, TODAY
from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, paginate, tool
from toolkit.envs.servers.dates import check_window

Symbol = Annotated[str, Field(description="Ticker symbol, e.g. 'ACMR'.")]
OrderId = Annotated[str, Field(description="Trade order id, e.g. 'tord-004'.")]
WatchlistId = Annotated[str, Field(description="Watchlist id, e.g. 'wl-002'.")]
Status = Literal["open", "filled", "cancelled", "expired"]


class Trading(DomainServer):
    name = "trading"
    description = (
        "Stock orders (market, limit, stop) on the portfolio's tickers, watchlists and price alerts."
    )

    def _symbol(self, symbol: str) -> str:
        return self.require("quotes", symbol.upper(), "Symbol", "Use search_symbols to look up tickers.")[
            "symbol"
        ]

    def _last(self, symbol: str) -> float:
        return self.db.get("quotes", symbol)["history"][-1]["close"]

    def _order(self, order_id: str) -> dict[str, Any]:
        return self.require("trade_orders", order_id, "Trade order", "Use list_trade_orders to find ids.")

    def _open(self, order_id: str) -> dict[str, Any]:
        o = self._order(order_id)
        if o["status"] != "open":
            raise conflict(f"order {order_id} is {o['status']}; only open orders can change.")
        return o

    def _watchlist(self, watchlist_id: str) -> dict[str, Any]:
        return self.require("trade_watchlists", watchlist_id, "Watchlist", "Use list_trade_watchlists.")

    def _settle(self, side: str, sym: str, qty: int, price: float) -> None:
        """Move cash and shares of a filled market order (the finance server's portfolio)."""
        amount = round(qty * price, 2)
        cash = self.db.get("accounts", "cash")["balance"]
        held = self.db.get("holdings", sym)
        if side == "buy":
            if amount > cash:
                raise conflict(f"insufficient cash: {qty} {sym} at {price} costs {amount}, cash is {cash}.")
            if held is None:
                self.db.put("holdings", sym, {"symbol": sym, "shares": qty, "cost_basis": price})
            else:
                h = self.db.edit("holdings", sym)
                h["cost_basis"] = round((h["shares"] * h["cost_basis"] + amount) / (h["shares"] + qty), 4)
                h["shares"] += qty
            self.db.edit("accounts", "cash")["balance"] = round(cash - amount, 2)
        else:
            have = held["shares"] if held else 0
            if qty > have:
                raise conflict(f"cannot sell {qty} {sym}: the portfolio holds {have}.")
            if qty == have:
                self.db.delete("holdings", sym)
            else:
                self.db.edit("holdings", sym)["shares"] = have - qty
            self.db.edit("accounts", "cash")["balance"] = round(cash + amount, 2)

    # -- orders --------------------------------------------------------------------------------
    @tool(read_only=True)
    def list_trade_orders(
        self,
        status: Annotated[Status | None, Field(description="Only orders with this status.")] = None,
        symbol: Annotated[str | None, Field(description="Only orders for this ticker.")] = None,
        side: Annotated[Literal["buy", "sell"] | None, Field(description="Only buys or only sells.")] = None,
        start_date: Annotated[
            str | None, Field(description="Placed on or after this day, YYYY-MM-DD.")
        ] = None,
        end_date: Annotated[
            str | None, Field(description="Placed on or before this day, YYYY-MM-DD.")
        ] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Orders in the book, newest first, filtered by status, ticker, side and placement day."""
        sym = self._symbol(symbol) if symbol else None
        check_window(start_date, end_date)
        rows = [
            o
            for o in self.db.values("trade_orders")
            if (status is None or o["status"] == status)
            and (sym is None or o["symbol"] == sym)
            and (side is None or o["side"] == side)
            and (start_date is None or o["placed_at"][:10] >= start_date)
            and (end_date is None or o["placed_at"][:10] <= end_date)
        ]
        rows.sort(key=lambda o: (o["placed_at"], o["id"]), reverse=True)
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_trade_order(self, order_id: OrderId) -> dict[str, Any]:
        """One order, with its notional value (quantity times fill or limit price)."""
        o = self._order(order_id)
        price = o["filled_price"] or o["limit_price"] or self._last(o["symbol"])
        return {**o, "notional": round(o["quantity"] * price, 2)}

    @tool(idempotent=False)
    def place_trade_order(
        self,
        symbol: Symbol,
        side: Annotated[Literal["buy", "sell"], Field(description="Buy or sell.")],
        quantity: Annotated[int, Field(ge=1, le=100000, description="Whole shares.")],
        order_type: Annotated[
            Literal["market", "limit", "stop"], Field(description="market fills now at the latest close.")
        ] = "market",
        limit_price: Annotated[
            float | None,
            Field(gt=0, description="Limit or stop price; required unless order_type is market."),
        ] = None,
        time_in_force: Annotated[
            Literal["day", "gtc"], Field(description="day: expires tonight; gtc: good till cancelled.")
        ] = "day",
        placed_by: Annotated[str | None, Field(description="Staff id of the trader placing it.")] = None,
    ) -> dict[str, Any]:
        """Place an order. A market order fills at once (cash and holdings change); others stay open."""
        sym = self._symbol(symbol)
        if order_type == "market" and limit_price is not None:
            raise invalid("a market order takes no limit_price; use order_type 'limit' to set a price.")
        if order_type != "market" and limit_price is None:
            raise invalid(f"a {order_type} order needs limit_price.")
        if placed_by is not None:
            self.require("staff", placed_by, "Staff member", "Use list_staff to find staff ids.")
        price = self._last(sym)
        if order_type == "market":
            self._settle(side, sym, quantity, price)
        oid = self.next_id("trade_orders", "tord-")
        order = {"id": oid, "symbol": sym, "side": side, "order_type": order_type, "quantity": quantity,
                 "limit_price": limit_price, "time_in_force": time_in_force,
                 "status": "filled" if order_type == "market" else "open", "placed_by": placed_by,
                 "placed_at": NOW_ISO, "filled_price": price if order_type == "market" else None,
                 "filled_at": TODAY.isoformat() if order_type == "market" else None}  # fmt: skip
        self.db.put("trade_orders", oid, order)
        return order

    @tool(idempotent=True)
    def cancel_trade_order(self, order_id: OrderId) -> dict[str, Any]:
        """Cancel an open order (filled, expired or cancelled orders cannot be cancelled)."""
        self._open(order_id)
        o = self.db.edit("trade_orders", order_id)
        o["status"] = "cancelled"
        return dict(o)

    @tool(idempotent=True)
    def modify_trade_order(
        self,
        order_id: OrderId,
        quantity: Annotated[int | None, Field(ge=1, le=100000, description="New quantity.")] = None,
        limit_price: Annotated[float | None, Field(gt=0, description="New limit or stop price.")] = None,
    ) -> dict[str, Any]:
        """Change the quantity or limit price of an open limit or stop order."""
        if quantity is None and limit_price is None:
            raise invalid("give quantity, limit_price or both.")
        self._open(order_id)
        o = self.db.edit("trade_orders", order_id)
        if quantity is not None:
            o["quantity"] = quantity
        if limit_price is not None:
            o["limit_price"] = limit_price
        return dict(o)

    @tool(read_only=True)
    def trade_fill_summary(
        self,
        start_date: Annotated[
            str | None, Field(description="Filled on or after this day, YYYY-MM-DD.")
        ] = None,
        end_date: Annotated[
            str | None, Field(description="Filled on or before this day, YYYY-MM-DD.")
        ] = None,
    ) -> dict[str, Any]:
        """Filled orders per ticker: fills, shares bought and sold, and net cash flow (sells minus buys)."""
        check_window(start_date, end_date)
        per: dict[str, dict[str, Any]] = defaultdict(
            lambda: {"fills": 0, "bought": 0, "sold": 0, "net_cash": 0.0}
        )
        for o in self.db.values("trade_orders"):
            if o["status"] != "filled" or (start_date and o["filled_at"] < start_date):
                continue
            if end_date and o["filled_at"] > end_date:
                continue
            row = per[o["symbol"]]
            row["fills"] += 1
            row["bought" if o["side"] == "buy" else "sold"] += o["quantity"]
            row["net_cash"] += (1 if o["side"] == "sell" else -1) * o["quantity"] * o["filled_price"]
        rows = [{"symbol": s, **r, "net_cash": round(r["net_cash"], 2)} for s, r in sorted(per.items())]
        return {"from": start_date, "to": end_date, "symbols": rows, "fills": sum(r["fills"] for r in rows)}

    # -- watchlists ----------------------------------------------------------------------------
    @tool(read_only=True)
    def list_trade_watchlists(self, limit: Limit = 10, cursor: Cursor = None) -> dict[str, Any]:
        """Watchlists (id, name, owner, tickers)."""
        return paginate(sorted(self.db.values("trade_watchlists"), key=lambda x: x["id"]), limit, cursor)

    @tool(read_only=True)
    def get_trade_watchlist(self, watchlist_id: WatchlistId) -> dict[str, Any]:
        """A watchlist with the latest close and daily change of each ticker on it."""
        wl = self._watchlist(watchlist_id)
        rows = []
        for sym in wl["symbols"]:
            h = self.db.get("quotes", sym)["history"]
            rows.append({"symbol": sym, "close": h[-1]["close"],
                         "change_percent": round((h[-1]["close"] / h[-2]["close"] - 1) * 100, 2)})  # fmt: skip
        return {**wl, "quotes": rows}

    @tool(idempotent=False)
    def create_trade_watchlist(
        self,
        name: Annotated[str, Field(min_length=2, description="Watchlist name.")],
        symbols: Annotated[list[str] | None, Field(description="Tickers to put on it.")] = None,
        owner_id: Annotated[str | None, Field(description="Staff id of the owner.")] = None,
    ) -> dict[str, Any]:
        """Create a watchlist (names are unique)."""
        if any(x["name"].lower() == name.lower() for x in self.db.values("trade_watchlists")):
            raise conflict(f"a watchlist named '{name}' already exists.")
        if owner_id is not None:
            self.require("staff", owner_id, "Staff member", "Use list_staff to find staff ids.")
        wid = self.next_id("trade_watchlists", "wl-")
        wl = {
            "id": wid,
            "name": name,
            "owner_id": owner_id,
            "symbols": sorted({self._symbol(s) for s in symbols or []}),
        }
        self.db.put("trade_watchlists", wid, wl)
        return wl

    @tool(idempotent=True)
    def add_to_trade_watchlist(self, watchlist_id: WatchlistId, symbol: Symbol) -> dict[str, Any]:
        """Add a ticker to a watchlist (already there: no change)."""
        self._watchlist(watchlist_id)
        sym = self._symbol(symbol)
        wl = self.db.edit("trade_watchlists", watchlist_id)
        wl["symbols"] = sorted(set(wl["symbols"]) | {sym})
        return dict(wl)

    @tool(idempotent=True)
    def remove_from_trade_watchlist(self, watchlist_id: WatchlistId, symbol: Symbol) -> dict[str, Any]:
        """Take a ticker off a watchlist."""
        wl = self._watchlist(watchlist_id)
        if symbol.upper() not in wl["symbols"]:
            raise invalid(f"{symbol.upper()} is not on {watchlist_id}; it holds {wl['symbols']}.")
        wl = self.db.edit("trade_watchlists", watchlist_id)
        wl["symbols"] = [s for s in wl["symbols"] if s != symbol.upper()]
        return dict(wl)

    @tool(destructive=True, idempotent=True)
    def delete_trade_watchlist(self, watchlist_id: WatchlistId) -> dict[str, Any]:
        """Delete a watchlist."""
        self._watchlist(watchlist_id)
        self.db.delete("trade_watchlists", watchlist_id)
        return {"deleted": watchlist_id}

    # -- alerts --------------------------------------------------------------------------------
    @tool(read_only=True)
    def list_trade_alerts(
        self,
        symbol: Annotated[str | None, Field(description="Only alerts on this ticker.")] = None,
        active: Annotated[bool | None, Field(description="Only active (True) or inactive (False).")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Price alerts (ticker, above/below, price, active)."""
        sym = self._symbol(symbol) if symbol else None
        rows = [a for a in self.db.values("trade_alerts") if (sym is None or a["symbol"] == sym)
                and (active is None or a["active"] == active)]  # fmt: skip
        return paginate(sorted(rows, key=lambda a: a["id"]), limit, cursor)

    @tool(idempotent=False)
    def create_trade_alert(
        self,
        symbol: Symbol,
        condition: Annotated[
            Literal["above", "below"], Field(description="Trigger when the close is above/below.")
        ],
        price: Annotated[float, Field(gt=0, description="Trigger price in USD.")],
        created_by: Annotated[str | None, Field(description="Staff id of the trader.")] = None,
    ) -> dict[str, Any]:
        """Create an active price alert on a ticker."""
        sym = self._symbol(symbol)
        aid = self.next_id("trade_alerts", "palert-")
        alert = {"id": aid, "symbol": sym, "condition": condition, "price": price, "active": True,
                 "created_by": created_by}  # fmt: skip
        self.db.put("trade_alerts", aid, alert)
        return alert

    @tool(destructive=True, idempotent=True)
    def delete_trade_alert(
        self, alert_id: Annotated[str, Field(description="Alert id, e.g. 'palert-003'.")]
    ) -> dict[str, Any]:
        """Delete a price alert."""
        self.require("trade_alerts", alert_id, "Alert", "Use list_trade_alerts to find alert ids.")
        self.db.delete("trade_alerts", alert_id)
        return {"deleted": alert_id}

    @tool(read_only=True)
    def check_trade_alerts(self) -> dict[str, Any]:
        """The active alerts the latest close triggers (close above/below the alert price)."""
        hits = []
        for a in sorted(self.db.values("trade_alerts"), key=lambda a: a["id"]):
            close = self._last(a["symbol"])
            if a["active"] and (close > a["price"] if a["condition"] == "above" else close < a["price"]):
                hits.append({**a, "close": close})
        return {"triggered": hits, "total": len(hits), "as_of": TODAY.isoformat()}
