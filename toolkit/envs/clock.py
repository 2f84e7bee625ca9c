"""The world's fixed clock and record helpers, shared by the core world and the per-domain builders.

Dates hang off a fixed ``TODAY`` so a world never depends on the wall clock.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

TODAY = date(2025, 11, 15)
NOW = datetime(2025, 11, 15, 9, 0, 0)
NOW_ISO = NOW.isoformat(timespec="minutes")  # the time stamped on every write

World = dict[str, dict[str, dict[str, Any]]]


def iso(d: date | datetime) -> str:
    """A date as YYYY-MM-DD, a datetime as YYYY-MM-DDTHH:MM."""
    return d.isoformat(timespec="minutes") if isinstance(d, datetime) else d.isoformat()


def slug(name: str) -> str:
    return name.lower().replace(" ", ".")
