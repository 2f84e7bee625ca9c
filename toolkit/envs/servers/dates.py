"""Date and time arguments of the domain servers, checked with errors that show the expected form.

A malformed date compared as a string would silently filter everything out; these helpers turn it into
an invalid-argument error the model can act on.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Annotated

from pydantic import Field

from toolkit.envs.servers.base import invalid

Since = Annotated[str | None, Field(description="First day to include, YYYY-MM-DD (inclusive).")]
Until = Annotated[str | None, Field(description="Last day to include, YYYY-MM-DD (inclusive).")]


def _not_a_day(value: str, name: str) -> Exception:
    return invalid(f"{name} '{value}' is not a day in YYYY-MM-DD form, e.g. 2025-11-15.")


def parse_day(value: str, name: str = "date") -> date:
    """A YYYY-MM-DD day (a date-time's day part is accepted), else an invalid-argument error."""
    try:
        if len(value) < 10:
            raise ValueError
        return date.fromisoformat(value[:10])
    except ValueError:
        raise _not_a_day(value, name) from None


def check_day(value: str | None, name: str) -> str | None:
    """``value`` when it is exactly a YYYY-MM-DD day (or None), else an invalid-argument error."""
    if value is not None:
        if len(value) != 10:  # a date-time is not a day here
            raise _not_a_day(value, name)
        parse_day(value, name)
    return value


def check_window(start: str | None, end: str | None) -> None:
    """Both ends of a start_date/end_date window well formed and in order."""
    check_day(start, "start_date")
    check_day(end, "end_date")
    if start and end and start > end:
        raise invalid(f"start_date {start} is after end_date {end}.")


def check_month(value: str | None, name: str = "month") -> str | None:
    """``value`` when it is a YYYY-MM month (or None), else an invalid-argument error."""
    if value is None:
        return None
    try:
        if len(value) != 7:
            raise ValueError
        date.fromisoformat(value + "-01")
    except ValueError:
        raise invalid(f"{name} '{value}' is not a month in YYYY-MM form, e.g. 2025-11.") from None
    return value


def parse_time(value: str, name: str = "start") -> datetime:
    """A YYYY-MM-DDTHH:MM date-time, else an invalid-argument error."""
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise invalid(
            f"{name} '{value}' is not a time in YYYY-MM-DDTHH:MM form, e.g. 2025-11-15T14:30."
        ) from None


def check_time(value: str, name: str) -> str:
    """``value`` when it is a YYYY-MM-DDTHH:MM date-time, else an invalid-argument error."""
    parse_time(value, name)
    return value


class Window:
    """An inclusive since/until day window; ``window(stamp)`` says whether a date or date-time falls in it."""

    def __init__(self, since: str | None, until: str | None):
        self.lo = parse_day(since, "since") if since else date.min
        self.hi = parse_day(until, "until") if until else date.max
        if self.lo > self.hi:
            raise invalid(f"since ({since}) is after until ({until}).")

    def __call__(self, stamp: str | None) -> bool:
        return stamp is not None and self.lo <= date.fromisoformat(stamp[:10]) <= self.hi
