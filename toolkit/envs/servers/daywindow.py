"""Day and month arguments of the banking, trading, payments and budget servers, checked with errors
that show the expected form (a malformed date would otherwise just filter everything out)."""

from __future__ import annotations

from datetime import date

from toolkit.envs.servers.base import invalid


def check_day(value: str | None, name: str) -> str | None:
    """``value`` when it is a day like 2025-11-15 (or None), else an invalid-argument error."""
    if value is None:
        return None
    try:
        if len(value) != 10:
            raise ValueError
        date.fromisoformat(value)
    except ValueError:
        raise invalid(f"{name} '{value}' is not a day in YYYY-MM-DD form, e.g. 2025-11-15.") from None
    return value


def check_window(start: str | None, end: str | None) -> None:
    """Both ends well formed and in order."""
    check_day(start, "start_date")
    check_day(end, "end_date")
    if start and end and start > end:
        raise invalid(f"start_date {start} is after end_date {end}.")


def check_month(value: str | None, name: str = "month") -> str | None:
    if value is None:
        return None
    try:
        if len(value) != 7:
            raise ValueError
        date.fromisoformat(value + "-01")
    except ValueError:
        raise invalid(f"{name} '{value}' is not a month in YYYY-MM form, e.g. 2025-11.") from None
    return value
