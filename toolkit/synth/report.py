"""Views of synthesised data for notebooks: a task printed like Scale's appendix, the dependency graph
drawn with matplotlib, and the generation statistics as bar charts."""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from typing import Any

from toolkit.records import Task
from toolkit.synth.graph import ToolGraph

CATEGORY_TITLES = {
    "tool_selection": "Tool Selection",
    "query_construction": "Query Construction",
    "multi_step_planning": "Multi-Step Planning",
    "answer_correctness": "Answer Correctness",
}
SOURCE_COLOURS = {"declared": "tab:red", "state": "tab:blue", "name": "tab:gray", "schema": "tab:green"}


def sample_task(template_id: str, seed: int = 0, world_seed: int = 0, split: str = "train") -> Task:
    """One task from one template (not replayed: use ``generate`` for validated data)."""
    from toolkit.synth.config import make_config
    from toolkit.synth.generate import default_env, draft_to_task
    from toolkit.synth.templates import Ctx, Skip, all_templates

    world_fn, specs, _ = default_env()
    tpl = all_templates()[template_id]
    for attempt in range(50):
        rng = random.Random(f"sample/{template_id}/{seed}/{attempt}")
        ctx = Ctx(
            world=world_fn(world_seed), rng=rng, split=split, world_seed=world_seed, tools=frozenset(specs)
        )
        try:
            draft = tpl.build(ctx)
        except Skip:
            continue
        draft.template, draft.kind, draft.world_seed = tpl.id, tpl.kind, world_seed
        draft.phrasing = draft.phrasing or ctx.phrasing
        task = draft_to_task(draft, split, rng, specs, make_config(), short=False)
        task.id = f"sample-{template_id}-{seed}"
        return task
    raise ValueError(f"template {template_id} found nothing to ask in world {world_seed}")


def format_task_markdown(task: Task) -> str:
    """Prompt, gold trajectory, expected answers and the rubric table, in the layout of the sample task
    in Scale's write-up (reference 000)."""
    lines = [
        f"**Task {task.id}** ({task.metadata.get('kind')}, template `{task.metadata.get('template')}`)",
        "",
    ]
    lines += ["> " + line for line in task.prompt.splitlines()] + [""]
    lines.append(f"Enabled tools ({len(task.tools)}): " + ", ".join(f"`{t}`" for t in task.tools))
    lines.append("")
    lines.append(f"**Gold trajectory ({len(task.gold)} tool calls):**")
    lines.append("")
    for i, call in enumerate(task.gold):
        after = f" (uses step {', '.join(map(str, call.depends_on))})" if call.depends_on else ""
        lines.append(f"- Step {i}: `{call.name}({json.dumps(call.arguments, ensure_ascii=False)})`{after}")
    if not task.gold:
        lines.append("- (no tool call: the right move is to ask or to decline)")
    lines += ["", f"**Expected answers:** `{json.dumps(task.answers, ensure_ascii=False)}`", ""]
    lines += [
        "| Requirement ID | Requirement Description | Rubric Category | Essential | Check |",
        "|---|---|---|---|---|",
    ]
    for item in task.rubric:
        check = json.dumps(item.check, ensure_ascii=False).replace("|", "\\|")
        lines.append(
            f"| {item.id} | {item.text.replace('|', '/')} | {CATEGORY_TITLES[item.category]} | "
            f"{'yes' if item.essential else 'optional'} | `{check}` |"
        )
    return "\n".join(lines)


def server_edge_counts(graph: ToolGraph) -> Counter[tuple[str, str]]:
    """(producer server, consumer server) -> number of tool edges."""
    return Counter((graph.tools[e.producer].server, graph.tools[e.consumer].server) for e in graph.edges)


def draw_server_graph(graph: ToolGraph, ax: Any = None) -> Any:
    """Servers on a circle; an arrow per server pair, as wide as the number of tool edges behind it."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(7, 7))[1]
    counts = server_edge_counts(graph)
    servers = sorted({s.server for s in graph.tools.values()})
    pos = {
        s: (math.cos(2 * math.pi * i / len(servers)), math.sin(2 * math.pi * i / len(servers)))
        for i, s in enumerate(servers)
    }
    inner = Counter({a: n for (a, b), n in counts.items() if a == b})
    top = max(counts.values(), default=1)
    for (a, b), n in sorted(counts.items()):
        if a != b:
            ax.annotate(
                "",
                xy=pos[b],
                xytext=pos[a],
                arrowprops={
                    "arrowstyle": "->",
                    "lw": 0.5 + 4 * n / top,
                    "alpha": 0.5,
                    "shrinkA": 18,
                    "shrinkB": 18,
                },
            )
    for s, (x, y) in pos.items():
        ax.scatter([x], [y], s=300 + 40 * inner[s], color="tab:orange", zorder=3)
        ax.text(
            x * 1.18,
            y * 1.18,
            f"{s}\n({sum(1 for t in graph.tools.values() if t.server == s)} tools)",
            ha="center",
            va="center",
            fontsize=9,
        )
    ax.set_xlim(-1.5, 1.5)
    ax.set_ylim(-1.5, 1.5)
    ax.set_axis_off()
    ax.set_title("Tool dependency graph by server (arrow width = tool edges)")
    return ax


def draw_tool_graph(
    graph: ToolGraph, servers: list[str], ax: Any = None, sources: tuple[str, ...] = ("declared", "state")
) -> Any:
    """The tools of a few servers in columns, with the edges of the chosen sources between them."""
    import matplotlib.pyplot as plt

    names = {s: sorted(n for n, t in graph.tools.items() if t.server == s) for s in servers}
    height = max(len(v) for v in names.values())
    ax = ax or plt.subplots(figsize=(4 * len(servers), 0.35 * height + 1))[1]
    pos = {n: (col * 3.0, -row) for col, s in enumerate(servers) for row, n in enumerate(names[s])}
    for e in graph.edges:
        if e.source in sources and e.producer in pos and e.consumer in pos:
            ax.annotate(
                "",
                xy=pos[e.consumer],
                xytext=pos[e.producer],
                arrowprops={
                    "arrowstyle": "->",
                    "color": SOURCE_COLOURS[e.source],
                    "alpha": 0.6,
                    "connectionstyle": "arc3,rad=0.2",
                },
            )
    for n, (x, y) in pos.items():
        ax.text(
            x,
            y,
            n,
            ha="center",
            va="center",
            fontsize=8,
            bbox={"boxstyle": "round", "fc": "white", "ec": "0.7"},
        )
    for col, s in enumerate(servers):
        ax.text(col * 3.0, 1.2, s, ha="center", fontsize=11, weight="bold")
    for src in sources:
        ax.plot([], [], color=SOURCE_COLOURS[src], label=src)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_xlim(-1.5, 3.0 * (len(servers) - 1) + 1.5)
    ax.set_ylim(-height, 2)
    ax.set_axis_off()
    return ax


def plot_summary(summary: dict[str, Any], split: str = "train") -> Any:
    """Bar charts of one split: tasks by kind, by chain length, by server, rubric items by category."""
    import matplotlib.pyplot as plt

    s = summary["splits"][split]
    keys = [
        ("by_kind", "tasks by kind"),
        ("by_chain_length", "tasks by gold chain length"),
        ("by_server", "tasks by needed server"),
        ("rubric_items_by_category", "rubric items by category"),
    ]
    fig, axes = plt.subplots(1, 4, figsize=(18, 3.5))
    for ax, (key, title) in zip(axes, keys, strict=True):
        data = s.get(key, {})
        ax.bar([str(k) for k in data], list(data.values()), color="tab:blue")
        ax.set_title(f"{split}: {title}")
        ax.tick_params(axis="x", rotation=45)
    fig.tight_layout()
    return fig
