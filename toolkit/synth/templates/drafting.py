"""Small builders the marketplace, retail, food delivery, travel and maps templates share: a draft
without the blanks the registry fills, a state check, and the id a server gives its next record."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolkit.synth.base import Draft, Step
from toolkit.synth.templates import Ctx, Skip


def draft(prompt: str, servers: Sequence[str], steps: list[Step], **kw: Any) -> Draft:
    """A Draft for ``servers``; the generator fills in the template id and kind."""
    return Draft("", "", prompt, list(servers), steps, **kw)


def changed(
    collection: str, key: str, field: str | None = None, value: Any = None, op: str = "update"
) -> dict[str, Any]:
    """A ``state`` rubric check: ``collection/key`` was created, updated or deleted (with ``field`` = ``value``)."""
    return {"type": "state", "collection": collection, "key": key, "field": field, "value": value, "op": op}


def next_key(ctx: Ctx, collection: str, prefix: str, width: int = 3, start: int = 1) -> str:
    """The id the servers give the next record of a collection (``DomainServer.next_id``)."""
    coll = ctx.world.get(collection, {})
    n = start + len(coll)
    while f"{prefix}{n:0{width}d}" in coll:
        n += 1
    return f"{prefix}{n:0{width}d}"


def sole_best(rows: Sequence[dict[str, Any]], key: str, highest: bool = True) -> dict[str, Any]:
    """The row with the highest (or lowest) ``key``; Skip when there is none or a tie."""
    if not rows:
        raise Skip("nothing to rank")
    vals = sorted((r[key] for r in rows), reverse=highest)
    if len(vals) > 1 and vals[0] == vals[1]:
        raise Skip(f"tie on {key}")
    return next(r for r in rows if r[key] == vals[0])
