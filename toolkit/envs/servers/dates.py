"""Date arguments: a clear error naming the expected format instead of a silent string comparison."""

from __future__ import annotations

from datetime import date, datetime

from toolkit.envs.servers.base import invalid


def check_day(value: str | None, arg: str) -> str | None:
    """``value`` when it is a YYYY-MM-DD day (or None), else an invalid-argument error naming ``arg``."""
    if value is not None:
        try:
            date.fromisoformat(value)
        except ValueError:
            raise invalid(f"{arg} '{value}' is not a day; use YYYY-MM-DD, e.g. '2025-11-15'.") from None
    return value


def check_time(value: str, arg: str) -> str:
    """``value`` when it is YYYY-MM-DDTHH:MM, else an invalid-argument error naming ``arg``."""
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise invalid(
            f"{arg} '{value}' is not a time; use YYYY-MM-DDTHH:MM, e.g. '2025-11-15T14:30'."
        ) from None
    return value
