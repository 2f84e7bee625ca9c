"""Helpers the domain templates share: reading replayed results, names, numbers and wording."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolkit.synth.base import payload
from toolkit.synth.templates import Ctx, Skip
from toolkit.toolbox import ToolResult

ALL = 50  # the servers' page-size maximum: gold searches ask for everything on one page


def items(result: ToolResult) -> list[dict[str, Any]]:
    """The records of a (paginated) list result."""
    data = payload(result)
    if isinstance(data, dict) and "items" in data:
        return list(data["items"])
    if isinstance(data, list):
        return data
    raise ValueError(f"not a list result: {str(data)[:120]}")


def total(result: ToolResult) -> int:
    data = payload(result)
    return int(data["total"]) if isinstance(data, dict) and "total" in data else len(items(result))


def field_of(result: ToolResult, name: str) -> Any:
    data = payload(result)
    if not isinstance(data, dict):
        raise ValueError(f"not a record: {str(data)[:120]}")
    return data.get(name)


def pct(part: float, whole: float) -> float:
    """A percentage rounded to one decimal (the rubric accepts +-0.1)."""
    if not whole:
        raise Skip("percentage of nothing")
    return round(100.0 * part / whole, 1)


def fmt_num(x: float) -> str:
    return f"{x:,.2f}".rstrip("0").rstrip(".") if isinstance(x, float) else f"{x:,}"


def unique_by(ctx: Ctx, collection: str, field: str) -> list[dict[str, Any]]:
    """Records whose ``field`` value no other record shares (safe to name in a prompt)."""
    recs = ctx.records(collection)
    counts: dict[Any, int] = {}
    for r in recs:
        counts[r.get(field)] = counts.get(r.get(field), 0) + 1
    return [r for r in recs if r.get(field) is not None and counts[r.get(field)] == 1]


def one_of(ctx: Ctx, options: Sequence[Any], avoid: Any = None) -> Any:
    return ctx.choose([o for o in options if o != avoid])


# How a foreign-key field reads in a prompt, and how an entity is introduced.
RELATION = {
    "requester_id": "requester",
    "company_id": "company",
    "account_manager_id": "account manager",
    "assignee_id": "assignee",
    "contact_id": "main contact",
    "owner_id": "owner",
    "customer_id": "customer",
    "organizer_id": "organizer",
    "deal_id": "deal",
    "author_id": "author",
    "product_id": "product",
    "channel_id": "channel",
}
ENTITY = {
    "tickets": "ticket",
    "customers": "customer",
    "companies": "company",
    "staff": "staff member",
    "deals": "deal",
    "activities": "activity",
    "orders": "order",
    "products": "product",
    "events": "event",
    "emails": "email",
    "messages": "message",
    "channels": "channel",
}
