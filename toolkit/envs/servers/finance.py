"""Finance: daily stock quotes for the companies in the world, a small portfolio, a cash account."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, matches, paginate, tool
from toolkit.envs.world import NOW_ISO, TODAY

Symbol = Annotated[str, Field(description="Ticker symbol, e.g. 'ACMR'.")]


class Finance(DomainServer):
    name = "finance"
    description = "Stock quotes and price history, a portfolio of holdings, buying and selling shares, cash."

    def _quote(self, symbol: str) -> dict[str, Any]:
        return self.require("quotes", symbol.upper(), "Symbol", "Use search_symbols to look up tickers.")

    def _last(self, symbol: str) -> float:
        return self._quote(symbol)["history"][-1]["close"]

    @tool(read_only=True)
    def search_symbols(
        self,
        query: Annotated[str | None, Field(description="Part of a company name, ticker or sector.")] = None,
    ) -> dict[str, Any]:
        """Find ticker symbols by company name, ticker or sector."""
        rows = [
            {"symbol": q["symbol"], "name": q["name"], "sector": q["sector"]}
            for q in self.db.values("quotes")
            if matches(q["name"], query) or matches(q["symbol"], query) or matches(q["sector"], query)
        ]
        return {"symbols": rows}

    @tool(read_only=True)
    def get_stock_quote(self, symbol: Symbol) -> dict[str, Any]:
        """Latest close, previous close and daily change of a stock."""
        q = self._quote(symbol)
        last, prev = q["history"][-1], q["history"][-2]
        return {"symbol": q["symbol"], "name": q["name"], "date": last["date"], "close": last["close"],
                "previous_close": prev["close"], "change": round(last["close"] - prev["close"], 2),
                "change_percent": round((last["close"] / prev["close"] - 1) * 100, 2), "currency": q["currency"]}  # fmt: skip

    @tool(read_only=True)
    def get_price_history(
        self,
        symbol: Symbol,
        start_date: Annotated[str | None, Field(description="First day, YYYY-MM-DD.")] = None,
        end_date: Annotated[str | None, Field(description="Last day, YYYY-MM-DD.")] = None,
        limit: Limit = 31,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Daily closing prices of a stock (the last 31 days are available), oldest first."""
        q = self._quote(symbol)
        rows = [
            h
            for h in q["history"]
            if (start_date is None or h["date"] >= start_date) and (end_date is None or h["date"] <= end_date)
        ]
        return {"symbol": q["symbol"], **paginate(rows, limit, cursor)}

    @tool(read_only=True)
    def price_change(
        self, symbol: Symbol, days: Annotated[int, Field(ge=1, le=30, description="Look-back in days.")] = 7
    ) -> dict[str, Any]:
        """Percent change, high and low of a stock's close over the last N days."""
        hist = self._quote(symbol)["history"][-(days + 1) :]
        closes = [h["close"] for h in hist]
        return {"symbol": symbol.upper(), "days": days, "from": hist[0]["date"], "to": hist[-1]["date"],
                "change_percent": round((closes[-1] / closes[0] - 1) * 100, 2), "high": max(closes),
                "low": min(closes)}  # fmt: skip

    @tool(read_only=True)
    def list_holdings(self) -> dict[str, Any]:
        """The portfolio: shares, cost basis, market value and gain of every holding."""
        rows = []
        for h in sorted(self.db.values("holdings"), key=lambda h: h["symbol"]):
            price = self._last(h["symbol"])
            value = round(h["shares"] * price, 2)
            rows.append({**h, "price": price, "market_value": value,
                         "gain": round(value - h["shares"] * h["cost_basis"], 2)})  # fmt: skip
        return {"holdings": rows, "total_market_value": round(sum(r["market_value"] for r in rows), 2)}

    @tool(read_only=True)
    def get_cash_balance(self) -> dict[str, Any]:
        """Cash available in the brokerage account."""
        return dict(self.db.get("accounts", "cash"))

    @tool(read_only=True)
    def get_portfolio_value(self) -> dict[str, Any]:
        """Total value: cash plus the market value of all holdings."""
        holdings = self.list_holdings()["total_market_value"]
        cash = self.db.get("accounts", "cash")["balance"]
        return {
            "cash": cash,
            "holdings": holdings,
            "total": round(cash + holdings, 2),
            "as_of": TODAY.isoformat(),
        }

    def _trade(self, side: Literal["buy", "sell"], symbol: str, shares: int) -> dict[str, Any]:
        sym = self._quote(symbol)["symbol"]
        price = self._last(sym)
        amount = round(price * shares, 2)
        cash = self.db.get("accounts", "cash")["balance"]
        held = self.db.get("holdings", sym)
        if side == "buy":
            if amount > cash:
                raise conflict(
                    f"insufficient cash: {shares} {sym} at {price} costs {amount}, balance is {cash}."
                )
            if held is None:
                self.db.put("holdings", sym, {"symbol": sym, "shares": shares, "cost_basis": price})
            else:
                h = self.db.edit("holdings", sym)
                h["cost_basis"] = round((h["shares"] * h["cost_basis"] + amount) / (h["shares"] + shares), 4)
                h["shares"] += shares
            self.db.edit("accounts", "cash")["balance"] = round(cash - amount, 2)
        else:
            have = held["shares"] if held else 0
            if shares > have:
                raise conflict(f"cannot sell {shares} {sym}: the portfolio holds {have}.")
            if shares == have:
                self.db.delete("holdings", sym)
            else:
                self.db.edit("holdings", sym)["shares"] = have - shares
            self.db.edit("accounts", "cash")["balance"] = round(cash + amount, 2)
        tid = self.next_id("trades", "tr-")
        trade = {"id": tid, "side": side, "symbol": sym, "shares": shares, "price": price, "amount": amount,
                 "at": NOW_ISO}  # fmt: skip
        self.db.put("trades", tid, trade)
        return {**trade, "cash_after": self.db.get("accounts", "cash")["balance"]}

    @tool(idempotent=False)
    def buy_stock(
        self, symbol: Symbol, shares: Annotated[int, Field(ge=1, le=100000, description="Whole shares.")]
    ) -> dict[str, Any]:
        """Buy shares at the latest close, paid from cash."""
        return self._trade("buy", symbol, shares)

    @tool(idempotent=False)
    def sell_stock(
        self, symbol: Symbol, shares: Annotated[int, Field(ge=1, le=100000, description="Whole shares.")]
    ) -> dict[str, Any]:
        """Sell shares at the latest close; proceeds go to cash."""
        return self._trade("sell", symbol, shares)

    @tool(read_only=True)
    def list_trades(
        self,
        symbol: Annotated[str | None, Field(description="Only trades of this symbol.")] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Trades made in this session, oldest first."""
        rows = [t for t in self.db.values("trades") if symbol is None or t["symbol"] == symbol.upper()]
        return paginate(rows, limit, cursor)

    @tool(idempotent=False)
    def deposit_cash(
        self, amount: Annotated[float, Field(gt=0, le=1_000_000, description="Amount in USD.")]
    ) -> dict[str, Any]:
        """Add cash to the brokerage account."""
        if round(amount, 2) != amount:
            raise invalid("amount has more than 2 decimals.")
        acct = self.db.edit("accounts", "cash")
        acct["balance"] = round(acct["balance"] + amount, 2)
        return dict(acct)

    @tool(read_only=True)
    def get_sector_performance(
        self, days: Annotated[int, Field(ge=1, le=30, description="Look-back in days.")] = 7
    ) -> dict[str, Any]:
        """Average percent change of the stocks in each sector over the last N days, best first."""
        per: dict[str, list[float]] = {}
        for q in self.db.values("quotes"):
            a, b = q["history"][-(days + 1)]["close"], q["history"][-1]["close"]
            per.setdefault(q["sector"], []).append((b / a - 1) * 100)
        rows = [
            {"sector": s, "change_percent": round(sum(v) / len(v), 2), "stocks": len(v)}
            for s, v in per.items()
        ]
        rows.sort(key=lambda r: -r["change_percent"])
        return {"days": days, "sectors": rows}
