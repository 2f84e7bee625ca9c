"""Weather: daily observations and forecasts by city, one week either side of the world's today."""

from __future__ import annotations

import statistics
from datetime import date, timedelta
from typing import Annotated, Any

from pydantic import Field

from toolkit.envs.servers.base import DomainServer, invalid, not_found, tool
from toolkit.envs.world import TODAY

City = Annotated[str, Field(description="City name, e.g. 'Lisbon'.")]
DateArg = Annotated[str | None, Field(description="Day, YYYY-MM-DD (default: today).")]


class Weather(DomainServer):
    name = "weather"
    description = f"Daily weather by city from {TODAY - timedelta(days=7)} to {TODAY + timedelta(days=7)} (today is {TODAY})."

    def _cities(self) -> list[str]:
        return sorted({w["city"] for w in self.db.values("weather")})

    def _city(self, city: str) -> str:
        for c in self._cities():
            if c.lower() == city.strip().lower():
                return c
        raise not_found("City", city, self._cities(), "Use list_weather_cities to see the covered cities.")

    def _date(self, value: str | None) -> str:
        if value is None:
            return TODAY.isoformat()
        try:
            d = date.fromisoformat(value)
        except ValueError:
            raise invalid(f"date '{value}' is not YYYY-MM-DD.") from None
        if abs((d - TODAY).days) > 7:
            raise invalid(
                f"no data for {value}: covered days are {TODAY - timedelta(days=7)} to {TODAY + timedelta(days=7)}."
            )
        return d.isoformat()

    def _day(self, city: str, day: str | None) -> dict[str, Any]:
        return self.db.get("weather", f"{self._city(city)}|{self._date(day)}")

    def _range(self, city: str, start: str | None, end: str | None) -> list[dict[str, Any]]:
        c = self._city(city)
        lo, hi = self._date(start) if start else "0000", self._date(end) if end else "9999"
        if lo > hi:
            raise invalid("start_date is after end_date.")
        return sorted((w for w in self.db.values("weather") if w["city"] == c and lo <= w["date"] <= hi),
                      key=lambda w: w["date"])  # fmt: skip

    @tool(read_only=True)
    def list_weather_cities(self) -> dict[str, Any]:
        """Cities with weather data."""
        return {"cities": self._cities(), "today": TODAY.isoformat()}

    @tool(read_only=True)
    def get_weather(self, city: City, day: DateArg = None) -> dict[str, Any]:
        """Weather of a city on one day (observed before today, forecast from today on)."""
        w = self._day(city, day)
        return {**w, "kind": "observed" if w["date"] < TODAY.isoformat() else "forecast"}

    @tool(read_only=True)
    def get_forecast(
        self, city: City, days: Annotated[int, Field(ge=1, le=7, description="Days ahead, from today.")] = 3
    ) -> dict[str, Any]:
        """Forecast for the next N days starting today."""
        end = (TODAY + timedelta(days=days - 1)).isoformat()
        return {"city": self._city(city), "forecast": self._range(city, TODAY.isoformat(), end)}

    @tool(read_only=True)
    def weather_history(
        self,
        city: City,
        start_date: Annotated[str, Field(description="First day, YYYY-MM-DD.")],
        end_date: Annotated[str, Field(description="Last day, YYYY-MM-DD.")],
    ) -> dict[str, Any]:
        """Daily weather of a city over a date range."""
        return {"city": self._city(city), "days": self._range(city, start_date, end_date)}

    @tool(read_only=True)
    def compare_weather(
        self,
        cities: Annotated[list[str], Field(min_length=2, max_length=10, description="Cities to compare.")],
        day: DateArg = None,
    ) -> dict[str, Any]:
        """The same day's weather in several cities, warmest first."""
        rows = [self._day(c, day) for c in cities]
        rows.sort(key=lambda w: -w["high_c"])
        return {
            "date": self._date(day),
            "cities": rows,
            "warmest": rows[0]["city"],
            "coldest": rows[-1]["city"],
        }

    @tool(read_only=True)
    def find_rainy_days(
        self,
        city: City,
        min_mm: Annotated[float, Field(ge=0, description="Minimum precipitation in mm.")] = 0.1,
    ) -> dict[str, Any]:
        """Days (in the covered window) with at least min_mm of precipitation."""
        days = [{"date": w["date"], "precipitation_mm": w["precipitation_mm"], "condition": w["condition"]}
                for w in self._range(city, None, None) if w["precipitation_mm"] >= min_mm]  # fmt: skip
        return {"city": self._city(city), "rainy_days": days, "count": len(days)}

    @tool(read_only=True)
    def temperature_stats(
        self,
        city: City,
        start_date: Annotated[str | None, Field(description="First day, YYYY-MM-DD.")] = None,
        end_date: Annotated[str | None, Field(description="Last day, YYYY-MM-DD.")] = None,
    ) -> dict[str, Any]:
        """Mean, max and min of daily highs and lows over a date range."""
        rows = self._range(city, start_date, end_date)
        if not rows:
            raise invalid("no days in that range.")
        highs, lows = [w["high_c"] for w in rows], [w["low_c"] for w in rows]
        return {"city": self._city(city), "days": len(rows), "mean_high_c": round(statistics.fmean(highs), 2),
                "mean_low_c": round(statistics.fmean(lows), 2), "max_high_c": max(highs), "min_low_c": min(lows)}  # fmt: skip

    @tool(read_only=True)
    def get_weather_alerts(self, city: City) -> dict[str, Any]:
        """Forecast days from today with strong wind (>= 40 km/h) or heavy rain (>= 10 mm)."""
        alerts = []
        for w in self._range(city, TODAY.isoformat(), None):
            if w["wind_kph"] >= 40:
                alerts.append({"date": w["date"], "alert": "strong wind", "wind_kph": w["wind_kph"]})
            if w["precipitation_mm"] >= 10:
                alerts.append(
                    {"date": w["date"], "alert": "heavy rain", "precipitation_mm": w["precipitation_mm"]}
                )
        return {"city": self._city(city), "alerts": alerts}
