"""The import graph points down the stack: envs <- synth <- rewards <- agent <- eval <- train <- cli/notebooks,
with the base modules (records, paths, models, aio, toolbox, colab, argtypes, reaper) below all, and no module imports itself back
through a circle. Every import counts, also the ones inside functions (they are how the kit keeps
`mcp-rl --help` fast, not a way around the layers). Every `mcp-rl` subcommand lives on the top floor
(toolkit/cli/, and toolkit/notebooks.py for `notebooks`): a command calls into several areas, so on an
area's floor it pulled that floor up (eval's `eval --recipe` imported train)."""

from __future__ import annotations

import ast

from toolkit.paths import PACKAGE_DIR

BASE = {
    "__init__",
    "records",
    "paths",
    "models",
    "aio",
    "toolbox",
    "colab",
    "checks",
    "argtypes",
    "reaper",
    "runs",
}
BASE |= {"endpoint"}  # the one endpoint type and chat call, for every layer's chat clients
# train sits above eval: a run evaluates its adapters (toolkit.eval.suites) and draws its figures; eval never
# needs training (`eval --recipe` reads a recipe's loop settings on the cli floor)
LAYER = {"envs": 1, "synth": 2, "rewards": 3, "agent": 4, "eval": 5, "train": 6, "cli": 7, "notebooks": 7}
LAYER |= {"study": 5}  # study examines rewards as eval examines policies; only cli and notebooks read it
# No circle is allowed (the last one, train/pipeline.py <-> unsloth_backend.py, went with the one pipeline).
KNOWN_CIRCLES: set[frozenset[str]] = set()


def module_name(path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else ""
    if top == "domains":
        # A domain package (toolkit/domains/<d>/) spans two floors: its server and world are the envs
        # floor, its templates the synth floor. toolkit.domains itself (the list of names) and each
        # package's docstring import nothing, so they sit on the envs floor, where the servers load them.
        return LAYER["synth"] if parts[-1] == "templates" else LAYER["envs"]
    return 0 if top in BASE or not top else LAYER[top]


def kit_imports() -> dict[str, set[str]]:
    """module -> the kit modules it imports (``from toolkit.x import y`` counts as toolkit.x, or as
    toolkit.x.y when that is a module)."""
    files = {module_name(p): p for p in PACKAGE_DIR.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names if a.name.startswith("toolkit")}
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("toolkit"):
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    targets.add(sub if sub in files else node.module)
        graph[name] = {t for t in targets if t != name}
    return graph


def test_every_import_points_down_the_stack():
    upward = [
        f"{src} (layer {layer(src)}) imports {dst} (layer {layer(dst)})"
        for src, targets in kit_imports().items()
        for dst in sorted(targets)
        if layer(dst) > layer(src)
    ]
    assert not upward, "\n".join(upward)


def test_no_import_circles():
    # A package importing its own submodules (a registry loading its members) is how packages work, not a
    # circle between parts of the kit: those edges are left out.
    graph = {
        src: {t for t in targets if not t.startswith(src + ".")} for src, targets in kit_imports().items()
    }

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(graph.get(node, ()))
        return False

    circles = {frozenset({a, b}) for a, targets in graph.items() for b in targets if reaches(b, a)}
    assert circles <= KNOWN_CIRCLES, sorted(sorted(c) for c in circles - KNOWN_CIRCLES)


def test_the_check_sees_real_imports():
    graph = kit_imports()
    assert "toolkit.models" in graph["toolkit.agent.policies"]  # a lazy import inside a function
    assert "toolkit.rewards.grading" in graph["toolkit.rewards.judge"]
    assert layer("toolkit.train.pipeline") > layer("toolkit.agent.loop") > layer("toolkit.envs.registry")
    # a domain's templates stand on the synth floor, its server and world on the envs floor
    assert "toolkit.synth.templates" in graph["toolkit.domains.maps.templates"]
    assert layer("toolkit.domains.maps.templates") == layer("toolkit.synth.generate")
    assert (
        layer("toolkit.domains.maps.server") == layer("toolkit.domains.maps.world") == layer("toolkit.envs")
    )


def subcommand_handlers(parser=None, path=()) -> list[tuple[str, str]]:
    """("envs list", the module of its handler) for every `mcp-rl` subcommand, nested ones included."""
    import argparse

    from toolkit.cli import build_parser

    parser = parser or build_parser()
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                func = sub.get_default("func")
                if func is not None:
                    found.append((" ".join((*path, name)), func.__module__))
                found += subcommand_handlers(sub, (*path, name))
    return found


def test_every_command_sits_on_the_cli_floor():
    from toolkit.cli import COMMAND_MODULES

    assert {layer(m) for m in COMMAND_MODULES} == {LAYER["cli"]}
    handlers = subcommand_handlers()
    assert {"envs list", "synth", "train", "eval", "atlas", "notebooks run"} <= {p for p, _ in handlers}
    below = [f"mcp-rl {p}: {m}" for p, m in handlers if layer(m) != LAYER["cli"]]
    assert not below, below
    # nor does a module below the top register subcommands ("python -m" scripts keep their own parser)
    registering = [
        module_name(p)
        for p in PACKAGE_DIR.rglob("*.py")
        if layer(module_name(p)) < LAYER["cli"] and ".add_parser(" in p.read_text(encoding="utf-8")
    ]
    assert not registering, registering
