"""The dependency graph of the kit's own environment library (what `mcp-rl synth graph` prints)."""

from __future__ import annotations

import random
from collections.abc import Mapping

from toolkit.synth.graph import ToolGraph, build_graph
from toolkit.synth.templates import Ctx, Skip, Template, all_templates
from toolkit.toolbox import ToolSpec


def declared_edges(
    templates: Mapping[str, Template], world: dict, tools: frozenset[str], samples: int = 4
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
                    if producer.name != step.name:
                        edges.add((producer.name, step.name, producer.produces or "result"))
    return edges


def library_graph(world_seed: int = 0, specs: Mapping[str, ToolSpec] | None = None) -> ToolGraph:
    """The graph over every tool of the environment library: declared + inferred edges."""
    from toolkit.envs.state import base_world

    if specs is None:
        from toolkit.envs.registry import server_names, tool_specs

        specs = {s.name: s for s in tool_specs(server_names())}
    world = base_world(world_seed)
    declared = declared_edges(all_templates(), world, frozenset(specs))
    return build_graph(specs.values(), world=world, declared=sorted(declared))
