"""A tool call that fails changes nothing: a property test over every domain server.

Calls are generated from each tool's input schema: mostly plausible arguments (real ids of the seeded
world, in-range numbers, today's date) with one argument spoiled (an unknown id, a wrong type, a missing
required field, an empty string, a negative, zero or huge number, three decimals, a past or malformed
date). Each example calls every tool of a server once, in a drawn order, so later calls can act on what
earlier ones created (book, then cancel). Every call that answers an error must leave the episode's
state diff exactly as it was.

Two ways in: through an MCP episode (what a model sees, with the servers' rollback on error), and
straight into the tool methods after the SDK's argument validation (no rollback: the servers themselves
must validate before they write, and refuse with a ToolError, not a crash). Both draw from one fixed
seed, so CI always runs the same calls: 20 per server and way in, about 290 calls per server.
"""

from __future__ import annotations

import copy
import json
import re
from datetime import timedelta
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from toolkit.envs import open_episode
from toolkit.envs.clock import TODAY
from toolkit.envs.registry import DOMAIN_SERVERS
from toolkit.envs.state import WorldState, base_world
from toolkit.envs.world import world_hash

SEED = 0
EXAMPLES = 20  # per server and way in; each example calls every tool of the server once
# One fixed seed for both ways in: the same calls reach the servers through MCP and directly.
SEED_CALLS = 20251115
SETTINGS = settings(
    max_examples=EXAMPLES,
    derandomize=False,
    database=None,
    deadline=None,
    phases=(Phase.explicit, Phase.generate),  # no shrinking: the failure message names the call already
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

DAYS = [TODAY + timedelta(days=k) for k in (-400, -30, -1, 0, 1, 3, 10, 20, 45)]
PAST_DAYS = ["2020-01-01", (TODAY - timedelta(days=1)).isoformat(), (TODAY - timedelta(days=30)).isoformat()]
BAD_STRINGS = ["", " ", "unknown-999", "zz-0000", "x" * 300, "2025-02-30", "not a date", "../../etc/passwd",
               "null", "Atlantis", "💥"]  # fmt: skip
WRONG_TYPES: list[Any] = [None, 0, -1, 1.5, True, "", "12", [], {}, ["x"], {"a": 1}]


def _world_pools() -> dict[str, list[Any]]:
    """Plausible values by field name, harvested from the seeded world (``account_id`` -> real ids)."""
    pools: dict[str, set] = {}
    world = base_world(SEED)
    for records in world.values():
        for rec in records.values():
            for field, value in rec.items():
                if isinstance(value, str | int | float) and not isinstance(value, bool):
                    if isinstance(value, str) and len(value) > 60:
                        continue
                    pools.setdefault(field, set()).add(value)
    return {k: sorted(v, key=str) for k, v in pools.items()}


POOLS = _world_pools()
KEYS = sorted({k for records in base_world(SEED).values() for k in records})


def _examples(description: str) -> list[str]:
    return re.findall(r"'([^']{1,40})'", description or "")


def _plausible_strings(name: str, prop: dict[str, Any]) -> list[str]:
    """Values a careful model might pass for a string argument."""
    out: list[str] = []
    examples = _examples(prop.get("description", ""))
    out += examples
    for ex in examples:  # an id like 'bk-001': every key with that prefix, and a few not yet made
        prefix = re.sub(r"\d+$", "", ex)
        if prefix != ex and len(prefix) >= 2:
            same = [k for k in KEYS if k.startswith(prefix)]
            out += same
            width = len(ex) - len(prefix)
            out += [f"{prefix}{len(same) + i:0{width}d}" for i in (1, 2)]
    out += POOLS.get(name, [])[:400] if all(isinstance(v, str) for v in POOLS.get(name, [])) else []
    if name.endswith("_id") and not examples:
        out += [k for k in KEYS if "-" in k][:200]
    lname = name.lower()
    if any(w in lname for w in ("date", "day", "since", "until", "check_in", "due", "birth")):
        out += [d.isoformat() for d in DAYS]
    if lname in ("start", "end", "at", "when", "time") or lname.endswith(("_at", "_time", "start", "end")):
        out += [f"{d.isoformat()}T{h:02d}:00" for d in DAYS for h in (9, 14)]
    if "month" in lname:
        out += [d.isoformat()[:7] for d in DAYS]
    if any(w in lname for w in ("city", "destination", "origin", "location")):
        out += POOLS.get("city", [])
    if not out:
        out = ["test", "Widget", "hello world", "urgent", "Alice", "note"]
    return [s for s in dict.fromkeys(out) if isinstance(s, str)]


def _resolve(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in prop:
        return defs[prop["$ref"].split("/")[-1]]
    return prop


def plausible(name: str, prop: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy:
    """A value that fits the schema (mostly), drawn from the world where it can be."""
    prop = _resolve(prop, defs)
    if "anyOf" in prop:
        branches = [b for b in prop["anyOf"] if b.get("type") != "null"]
        merged = {**{k: v for k, v in prop.items() if k != "anyOf"}, **branches[0]} if branches else {}
        return plausible(name, merged, defs) if branches else st.none()
    if "enum" in prop:
        return st.sampled_from(prop["enum"])
    kind = prop.get("type")
    if kind == "string":
        values = _plausible_strings(name, prop)
        if "pattern" in prop:
            values = [v for v in values if re.fullmatch(prop["pattern"], v)] or ["a", "b1", "09:30"]
        return st.sampled_from(values)
    if kind in ("integer", "number"):
        lo = prop.get("minimum", prop.get("exclusiveMinimum", 0))
        hi = prop.get("maximum", max(lo, 0) + 1000)
        base = [lo, hi, (lo + hi) // 2, lo + 1, 1, 2, 5, 10, 100]
        if kind == "number":
            base += [2.5, 19.99, 0.001, 33.333]
        return st.sampled_from([v for v in base if lo <= v <= hi] or [lo])
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        item = prop.get("items", {"type": "string"})
        return st.lists(plausible(name.rstrip("s"), item, defs), min_size=prop.get("minItems", 0), max_size=3)
    if kind == "object" or "properties" in prop:
        return arguments(prop, defs)
    return st.sampled_from(WRONG_TYPES)


def edge(name: str, prop: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy:
    """A value that is wrong, or at an edge, for this argument's type: a bad reference, an empty string,
    a past or malformed date, a negative, zero, huge or three-decimal number, or another type."""
    prop = _resolve(prop, defs)
    branches = [b for b in prop.get("anyOf", [prop]) if b.get("type") != "null"] or [prop]
    b = {**prop, **branches[0]}
    kind = b.get("type")
    wrong = [None, "12", True, [], {"a": 1}]
    if kind in ("integer", "number"):
        # Mostly values the schema lets through (the SDK refuses the rest before the tool runs): the edges
        # of the range, zero, and for money three decimals; then out-of-range values and other types.
        lo, hi = b.get("minimum", b.get("exclusiveMinimum")), b.get("maximum", b.get("exclusiveMaximum"))
        inside = [0, 1, 0.001, 12.345, 33.333] if kind == "number" else [0, 1, 2]
        inside += [v for v in (lo, hi) if v is not None] + (
            [lo + 0.001] if lo is not None and kind == "number" else []
        )
        inside = [v for v in inside if _in_schema(v, b)]
        outside = [-1, -0.01, 10**9, 10**12, -(10**6)]
        outside += [lo - 1] if lo is not None else []
        outside += [hi + 1] if hi is not None else []
        return st.sampled_from(inside * 3 + outside + wrong)
    if kind == "boolean":
        return st.sampled_from(["yes", 1, "true", *wrong])
    if kind == "array":
        item = _resolve(b.get("items", {}), defs)
        return st.sampled_from([[], [""], ["unknown-999"], "not-a-list", [None], *wrong]) | st.lists(
            plausible(name.rstrip("s"), item, defs), min_size=2, max_size=2
        )
    if "enum" in b:
        return st.sampled_from(["bogus", "", str(b["enum"][0]).upper(), *wrong])
    unknown = [re.sub(r"\d+$", "", ex) + "999" for ex in _examples(b.get("description", ""))]
    return st.sampled_from(BAD_STRINGS + PAST_DAYS + unknown + [0, 1.5, *wrong])


def _in_schema(v: float, b: dict[str, Any]) -> bool:
    if b.get("type") == "integer" and v != int(v):
        return False
    return (
        ("minimum" not in b or v >= b["minimum"])
        and ("exclusiveMinimum" not in b or v > b["exclusiveMinimum"])
        and ("maximum" not in b or v <= b["maximum"])
        and ("exclusiveMaximum" not in b or v < b["exclusiveMaximum"])
    )


def arguments(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> st.SearchStrategy:
    """Arguments for a tool: required fields plausible, optional ones sometimes, then one spoiled."""
    defs = {**(defs or {}), **schema.get("$defs", {})}
    props = schema.get("properties", {})
    required = set(schema.get("required", []))

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        args = {}
        for name, prop in props.items():
            if name in required or draw(st.booleans()):
                args[name] = draw(plausible(name, prop, defs))
        how = draw(st.sampled_from(["none", "edge", "edge", "edge", "missing", "extra"]))
        if how == "edge" and props:
            name = draw(st.sampled_from(sorted(props)))
            args[name] = draw(edge(name, props[name], defs))
        elif how == "missing" and args:
            del args[draw(st.sampled_from(sorted(args)))]
        elif how == "extra":
            args["unexpected_argument"] = draw(st.sampled_from(WRONG_TYPES))
        return args

    return build()


def _tools(server: str) -> list[Any]:
    return DOMAIN_SERVERS[server].templates()


def _calls(server: str) -> st.SearchStrategy:
    """Every tool of the server once, in a drawn order, each with drawn arguments."""
    tools = {t.name: t for t in _tools(server)}

    @st.composite
    def sequence(draw: st.DrawFn) -> list[tuple[str, dict[str, Any]]]:
        order = draw(st.permutations(sorted(tools)))
        return [(name, draw(arguments(tools[name].parameters))) for name in order]

    return sequence()


def _frozen(diff: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(diff)  # the diff holds live records: a later in-place edit would change it too


def _learn(result: Any, calls: list[tuple[str, dict]]) -> None:
    """Point later calls' id arguments at what an earlier successful call created (book, then cancel)."""
    new_id = result.get("id") if isinstance(result, dict) else None
    if not isinstance(new_id, str):
        return
    prefix = re.sub(r"\d+$", "", new_id)
    for _, args in calls:
        for k, v in args.items():
            if isinstance(v, str) and v != new_id and re.sub(r"\d+$", "", v) == prefix and k.endswith("id"):
                args[k] = new_id
                return


SERVERS = sorted(DOMAIN_SERVERS)


def test_every_domain_server_is_covered():
    assert len(SERVERS) == 25


@pytest.mark.parametrize("server", SERVERS)
def test_failed_call_leaves_world_unchanged_through_mcp(server):
    """Through an MCP episode: an error result never comes with a change to the world."""
    base_hash = world_hash(base_world(SEED))
    seen = {"errors": 0, "calls": 0}

    @SETTINGS
    @seed(SEED_CALLS)
    @given(calls=_calls(server))
    def check(calls):
        async def main():
            async with open_episode(servers=[server], seed=SEED) as ep:
                for i, (name, args) in enumerate(calls):
                    before = _frozen(ep.state_diff())
                    r = await ep.call_tool(name, args)
                    seen["calls"] += 1
                    if r.ok:
                        _learn(r.structured, calls[i + 1 :])
                        continue
                    seen["errors"] += 1
                    after = ep.state_diff()
                    assert after == before, (
                        f"{name}({json.dumps(args, default=str)}) answered an error but changed "
                        f"{sorted(set(after) ^ set(before)) or sorted(after)}: {r.text}"
                    )

        anyio.run(main)

    check()
    assert seen["errors"] >= seen["calls"] // 4  # the generator does reach error paths
    assert world_hash(base_world(SEED)) == base_hash, "a tool mutated the shared base world"


@pytest.mark.parametrize("server", SERVERS)
def test_servers_validate_before_they_write(server):
    """Straight into the tool methods (the SDK's argument validation first, no rollback): a tool that
    refuses a call has written nothing, and refuses with a ToolError, not a crash."""
    templates = {t.name: t for t in _tools(server)}

    @SETTINGS
    @seed(SEED_CALLS)
    @given(calls=_calls(server))
    def check(calls):
        state = WorldState.from_seed(SEED)
        inst = DOMAIN_SERVERS[server](state)
        for i, (name, args) in enumerate(calls):
            try:
                kwargs = templates[name].fn_metadata.validate_arguments(args)
            except ValidationError:
                continue
            before = _frozen(state.diff())
            try:
                result = getattr(inst, name)(**kwargs)
            except ToolError as exc:
                after = state.diff()
                assert after == before, (
                    f"{name}({json.dumps(args, default=str)}) raised '{exc}' after writing "
                    f"{sorted(set(after) ^ set(before)) or sorted(after)}"
                )
                continue
            _learn(result, calls[i + 1 :])

    check()
