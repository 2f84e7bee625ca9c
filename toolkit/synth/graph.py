"""The tool dependency graph: which tool's output feeds which tool's input.

An edge ``producer -> consumer`` labelled with a field (``customer_id``) says the consumer takes an
argument the producer returns. Edges come from four sources, each kept on the edge:
- ``declared``: dependencies written into the task templates' gold steps;
- ``schema``: a property of the producer's output schema has the name of a consumer input;
- ``name``: an input ``<entity>_id`` and a tool that lists, searches, gets or creates ``<entity>``
  records (``search_customers`` produces ``customer_id``);
- ``state``: a foreign key found in the world (tickets' ``requester_id`` values are customer keys),
  so the tool that reads a ticket feeds the tool that takes a ``customer_id``.
PROVE guides its conversation synthesis with such a graph (reference 002); chains are walks on it.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolkit.toolbox import ToolSpec

READ_VERBS = ("list", "search", "get", "view", "find", "query", "lookup", "read", "show", "fetch")
CREATE_VERBS = ("create", "add", "new", "open", "book", "place", "schedule", "send", "post", "write")
EDGE_SOURCES = ("declared", "schema", "name", "state")
SOURCE_CODES = {"declared": "d", "schema": "o", "name": "n", "state": "s"}


@dataclass(frozen=True, order=True)
class Edge:
    producer: str
    consumer: str
    field: str
    source: str  # one of EDGE_SOURCES


def singular(word: str) -> str:
    """Cheap English singular for collection and tool-name tokens (companies -> company)."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


def id_entity(param: str) -> str | None:
    """``customer_id`` / ``customer_ids`` -> ``customer``; other names -> None."""
    m = re.fullmatch(r"([a-z][a-z0-9_]*?)_ids?", param)
    return m.group(1) if m else None


def input_fields(spec: ToolSpec) -> list[str]:
    return sorted((spec.input_schema or {}).get("properties", {}) or {})


def output_fields(schema: Mapping[str, Any] | None) -> set[str]:
    """Every property name anywhere in an output JSON schema (records nested in lists included)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            for name, sub in (node.get("properties") or {}).items():
                found.add(name)
                walk(sub)
            for key in ("items", "additionalProperties"):
                walk(node.get(key))
            for key in ("anyOf", "oneOf", "allOf"):
                for sub in node.get(key) or []:
                    walk(sub)
            for sub in (node.get("$defs") or node.get("definitions") or {}).values():
                walk(sub)

    walk(schema)
    return found


def _name_tokens(tool: str) -> list[str]:
    return [t for t in re.split(r"[_\-.]+", tool.lower()) if t]


def name_produces(spec: ToolSpec) -> set[str]:
    """Id fields a tool returns, judged by its name: a read or create verb and an entity noun."""
    tokens = _name_tokens(spec.name)
    verbs = set(READ_VERBS) | set(CREATE_VERBS)
    if not tokens or not any(t in verbs for t in tokens):
        return set()
    return {f"{singular(t)}_id" for t in tokens if t not in verbs and len(t) > 2}


def collection_getters(specs: Iterable[ToolSpec], collections: Iterable[str]) -> dict[str, str]:
    """For each world collection, the tool that reads one record by id (``get_customer``), if any."""
    by_name = {s.name: s for s in specs}
    getters: dict[str, str] = {}
    for coll in sorted(collections):
        ent = singular(coll)
        for name in sorted(by_name):
            tokens = _name_tokens(name)
            required = (by_name[name].input_schema or {}).get("required", [])
            if (
                tokens
                and tokens[0] in ("get", "view", "read", "show", "fetch")
                and singular(tokens[-1]) == ent
            ):
                if f"{ent}_id" in required or (len(required) == 1 and id_entity(required[0]) is not None):
                    getters[coll] = name
                    break
    return getters


def foreign_keys(world: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> dict[tuple[str, str], str]:
    """(collection, field) -> target collection, for fields whose values are all keys of one other
    collection (``tickets.requester_id`` -> ``customers``). Scalar fields only; lists are skipped."""
    key_owner: dict[str, str] = {}
    for coll in sorted(world):
        for key in world[coll]:
            key_owner.setdefault(str(key), coll)
    fks: dict[tuple[str, str], str] = {}
    for coll in sorted(world):
        records = list(world[coll].values())
        if not records or not isinstance(records[0], Mapping):
            continue
        names = sorted({f for r in records for f in r if isinstance(f, str)})
        for name in names:
            values = [r.get(name) for r in records if r.get(name) is not None]
            if not values or not all(isinstance(v, str) for v in values):
                continue
            owners = {key_owner.get(v) for v in values}
            if len(owners) == 1 and None not in owners:
                (target,) = owners
                if target != coll or name != "id":
                    fks[(coll, name)] = target
    return fks


@dataclass
class ToolGraph:
    tools: dict[str, ToolSpec]
    edges: list[Edge] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.edges = sorted(set(self.edges))
        self._out: dict[str, list[Edge]] = defaultdict(list)
        self._in: dict[str, list[Edge]] = defaultdict(list)
        for e in self.edges:
            self._out[e.producer].append(e)
            self._in[e.consumer].append(e)

    def successors(self, tool: str) -> list[Edge]:
        return list(self._out.get(tool, []))

    def predecessors(self, tool: str) -> list[Edge]:
        return list(self._in.get(tool, []))

    def has_edge(self, producer: str, consumer: str) -> bool:
        return any(e.consumer == consumer for e in self._out.get(producer, []))

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in EDGE_SOURCES}
        for e in self.edges:
            out[e.source] += 1
        return out

    def random_walk(self, rng: random.Random, length: int, start: str | None = None) -> list[Edge]:
        """A path of ``length`` edges (length + 1 tools) without repeating a tool; shorter if stuck."""
        starts = sorted(self._out) if start is None else [start]
        if not starts:
            return []
        node = starts[rng.randrange(len(starts))]
        path: list[Edge] = []
        visited = {node}
        while len(path) < length:
            options = sorted(
                {
                    (e.consumer, e.field): e for e in self._out.get(node, []) if e.consumer not in visited
                }.values()
            )
            if not options:
                break
            edge = options[rng.randrange(len(options))]
            path.append(edge)
            visited.add(edge.consumer)
            node = edge.consumer
        return path

    def to_networkx(self) -> Any:
        import networkx as nx

        g = nx.MultiDiGraph()
        for name, spec in sorted(self.tools.items()):
            g.add_node(name, server=spec.server)
        for e in self.edges:
            g.add_edge(e.producer, e.consumer, field=e.field, source=e.source)
        return g

    def to_dict(self) -> dict[str, Any]:
        return {
            "tools": {
                n: {"server": s.server, "inputs": input_fields(s)} for n, s in sorted(self.tools.items())
            },
            "edges": [
                {"producer": e.producer, "consumer": e.consumer, "field": e.field, "source": e.source}
                for e in self.edges
            ],
        }

    def format_text(self, server: str | None = None) -> str:
        """Human-readable listing: per consumer tool, the fields it takes and which tools supply them."""
        lines = []
        counts = self.counts()
        lines.append(
            f"{len(self.tools)} tools, {len(self.edges)} edges ("
            + ", ".join(f"{k} {v}" for k, v in counts.items())
            + ")"
        )
        by_server: dict[str, list[str]] = defaultdict(list)
        for name, spec in self.tools.items():
            by_server[spec.server or "?"].append(name)
        for srv in sorted(by_server):
            if server and srv != server:
                continue
            lines.append(f"\n[{srv}]")
            for name in sorted(by_server[srv]):
                incoming = self.predecessors(name)
                if not incoming:
                    continue
                per_field: dict[str, set[str]] = defaultdict(set)
                for e in incoming:
                    per_field[e.field].add(f"{e.producer}({SOURCE_CODES[e.source]})")
                parts = [
                    f"{f} <- {', '.join(sorted(p)[:6])}{' ...' if len(p) > 6 else ''}"
                    for f, p in sorted(per_field.items())
                ]
                lines.append(f"  {name}: " + "; ".join(parts))
        lines.append(
            "\nsources: (d) declared in templates, (o) output schema, (n) tool names, (s) state foreign keys"
        )
        return "\n".join(lines)


def build_graph(
    specs: Iterable[ToolSpec],
    *,
    output_schemas: Mapping[str, Mapping[str, Any]] | None = None,
    world: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
    declared: Iterable[tuple[str, str, str]] = (),
    getters: Mapping[str, tuple[str, str]] | None = None,
    scope: Callable[[ToolSpec], str] | None = None,
    readers: Mapping[str, Iterable[str]] | None = None,
) -> ToolGraph:
    """Infer the graph from tool schemas (and the world's foreign keys when a world is given), plus
    ``declared`` (producer, consumer, field) triples. ``getters`` maps a collection to the tool and
    argument that read one of its records (``customers -> (get_contact, contact_id)``) where the
    names alone do not tell (guessed from names otherwise); ``readers`` adds tools that return whole
    records of a collection (``customers -> [search_contacts]``). ``scope`` names the state a tool acts on
    (servers over one shared world share a scope); inferred edges never cross scopes."""
    tools = {s.name: s for s in specs}
    consumers: dict[str, list[str]] = defaultdict(list)  # input field -> tools taking it
    for name, spec in tools.items():
        for f in input_fields(spec):
            if id_entity(f) is not None:
                consumers[f].append(name)
                if f.endswith("_ids"):
                    consumers[f[:-1]].append(name)  # a list of ids takes what a single id gives

    def same_scope(a: str, b: str) -> bool:
        return scope is None or scope(tools[a]) == scope(tools[b])

    def link(producer: str, fld: str, source: str) -> list[Edge]:
        return [
            Edge(producer, c, fld, source)
            for c in consumers.get(fld, [])
            if c != producer and same_scope(producer, c)
        ]

    edges: list[Edge] = []
    for p, c, f in declared:
        if p in tools and c in tools and p != c:
            edges.append(Edge(p, c, f, "declared"))
    schemas = output_schemas or {}
    for name, spec in tools.items():
        schema = schemas.get(name) or getattr(spec, "output_schema", None)
        for fld in sorted(output_fields(schema)):
            edges.extend(link(name, fld, "schema"))
        for fld in sorted(name_produces(spec)):
            edges.extend(link(name, fld, "name"))
    if world is not None:
        found = {c: (t, f"{singular(c)}_id") for c, t in collection_getters(tools.values(), world).items()}
        found.update({c: g for c, g in (getters or {}).items() if g[0] in tools})
        coll_readers: dict[str, list[str]] = defaultdict(list)  # collection -> tools returning its records
        for coll, names in (readers or {}).items():
            coll_readers[coll].extend(n for n in names if n in tools)
        for coll in world:
            ent = singular(coll)
            for name in tools:  # list_deals, search_tickets: reads whose object is the collection
                tokens = _name_tokens(name)
                if len(tokens) > 1 and tokens[0] in READ_VERBS and singular(tokens[-1]) == ent:
                    coll_readers[coll].append(name)
            if coll in found and found[coll][0] not in coll_readers[coll]:
                coll_readers[coll].append(found[coll][0])
        for (coll, _fld), target in sorted(foreign_keys(world).items()):
            target_fields = {f"{singular(target)}_id"} | ({found[target][1]} if target in found else set())
            for producer in sorted(set(coll_readers.get(coll, []))):
                for target_field in sorted(target_fields):
                    edges.extend(link(producer, target_field, "state"))
    # Keep the strongest source per (producer, consumer, field): declared > schema > name > state.
    best: dict[tuple[str, str, str], Edge] = {}
    for e in edges:
        k = (e.producer, e.consumer, e.field)
        if k not in best or EDGE_SOURCES.index(e.source) < EDGE_SOURCES.index(best[k].source):
            best[k] = e
    return ToolGraph(tools=tools, edges=list(best.values()))
