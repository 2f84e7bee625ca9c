"""Date-window filters the newer domain servers share: ``since``/``until`` days, checked with clear errors."""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated

from pydantic import Field

from toolkit.envs.servers.base import invalid

Since = Annotated[str | None, Field(description="First day to include, YYYY-MM-DD (inclusive).")]
Until = Annotated[str | None, Field(description="Last day to include, YYYY-MM-DD (inclusive).")]


def parse_day(value: str, what: str = "date") -> date:
    try:
        return date.fromisoformat(value[:10]) if len(value) >= 10 else date.fromisoformat(value)
    except ValueError:
        raise invalid(f"{what} '{value}' is not a date like 2025-11-17.") from None


def parse_time(value: str, what: str = "start") -> datetime:
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise invalid(f"{what} '{value}' is not an ISO date-time like 2025-11-17T14:00.") from None


class Window:
    """An inclusive day window; ``window(stamp)`` says whether a date or date-time string falls in it."""

    def __init__(self, since: str | None, until: str | None):
        self.lo = parse_day(since, "since") if since else date.min
        self.hi = parse_day(until, "until") if until else date.max
        if self.lo > self.hi:
            raise invalid(f"since ({since}) is after until ({until}).")

    def __call__(self, stamp: str | None) -> bool:
        return stamp is not None and self.lo <= date.fromisoformat(stamp[:10]) <= self.hi
