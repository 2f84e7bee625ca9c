"""The dependency graph of the kit's own environment library (what `mcp-rl synth graph` prints)."""

from __future__ import annotations

import random
from collections.abc import Mapping

from toolkit.synth.graph import ToolGraph, build_graph
from toolkit.synth.templates import Ctx, Skip, Template, all_templates
from toolkit.toolbox import ToolSpec


def declared_edges(
    templates: Mapping[str, Template], world: dict, tools: frozenset[str], samples: int = 12
) -> set[tuple[str, str, str]]:
    """(producer, consumer, field) triples from the templates' gold dependencies, found by building
    each template a few times on ``world``."""
    edges: set[tuple[str, str, str]] = set()
    for tid in sorted(templates):
        for k in range(samples):
            ctx = Ctx(world=world, rng=random.Random(f"graph/{tid}/{k}"), tools=tools)
            try:
                draft = templates[tid].build(ctx)
            except Skip:
                continue
            for step in draft.steps:
                for j in step.depends_on:
                    producer = draft.steps[j]
                    if producer.name != step.name and step.arguments:
                        edges.add((producer.name, step.name, _carrier(step.arguments)))
    return edges


def _carrier(arguments: Mapping[str, object]) -> str:
    """The argument that carries a dependency: the first id-like one, else the first."""
    for name in arguments:
        if name.endswith("_id") or name.endswith("_ids") or name == "symbol":
            return name
    return next(iter(arguments))


def library_graph(
    world_seed: int = 0, specs: Mapping[str, ToolSpec] | None = None, include_bfcl: bool = False
) -> ToolGraph:
    """The graph over the environment library: declared + inferred edges. The domain servers share
    one world, so edges cross them; each BFCL server has its own state (``include_bfcl``)."""
    from toolkit.envs.state import base_world
    from toolkit.synth.templates.chains import GETTERS, SEARCHERS

    if specs is None:
        from toolkit.envs.registry import server_names, tool_specs

        names = [n for n in server_names() if include_bfcl or not n.startswith("bfcl")]
        specs = {s.name: s for s in tool_specs(names)}
    world = base_world(world_seed)
    declared = declared_edges(all_templates(), world, frozenset(specs))
    getters = {coll: (tool, arg) for coll, (tool, arg, _) in GETTERS.items()}
    return build_graph(
        specs.values(),
        world=world,
        declared=sorted(declared),
        getters=getters,
        scope=lambda s: s.server if s.server.startswith("bfcl") else "world",
        readers={coll: [tool] for coll, (tool, _, _) in SEARCHERS.items()},
    )
