"""docs/DESIGN.md held to the code.

Before (issue 50) the page said train and eval do not import each other (train imports eval), listed a
train/export.py that no longer existed, and its command list lacked rescore, atlas, synth graph,
synth --server and train's modes. Here: every `mcp-rl` subcommand (the parser walked, nested
subcommands and action words included) is named in its command list and every flag there is one the
parser has; every toolkit/ path it names exists and every module is in its module map; and its worked
examples name the files each existing reward, domain and backend is registered in, and run.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import math
import re
import sys
import types
from pathlib import Path

import pytest

from toolkit.paths import PACKAGE_DIR, REPO_ROOT

DESIGN = REPO_ROOT / "docs" / "DESIGN.md"
TEXT = DESIGN.read_text(encoding="utf-8")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# what the issue found missing: train's modes (recipes, publish and ship are commands of their own since,
# named by the subcommand check) and own-server synthesis (synth-own), each on a line of its command
MODES = {
    "train": [
        "--recipe",
        "--resume",
        "--allow-recipe-change",
        "--evaluate",
        "--curve",
        "--test",
        "--backend",
    ],
    "synth-own": ["--server", "--env", "--seed-dir"],
    "synth graph": ["--server"],
}


# ---- the page's parts -------------------------------------------------------------------------------


def section(title: str, text: str = TEXT) -> str:
    """The text under a heading (``## X`` or ``### X``), up to the next heading of the same or a higher level."""
    # headings are looked for outside code blocks (a "# path" comment in one is not a heading)
    masked = re.sub(r"^```.*?^```", lambda b: re.sub(r"[^\n]", " ", b.group()), text, flags=re.M | re.S)
    m = re.search(rf"^(#+) {re.escape(title)}\n", masked, re.M)
    assert m, f"docs/DESIGN.md has no section '{title}'"
    level = len(m.group(1))
    end = re.compile(rf"^#{{1,{level}}} ", re.M).search(masked, m.end())
    return text[m.end() : end.start() if end else len(text)]


def code_blocks(text: str) -> list[str]:
    return re.findall(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S)


def prose(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def command_lines() -> list[str]:
    (block,) = code_blocks(section("Command line"))
    return [line for line in block.splitlines() if line.startswith("mcp-rl ")]


def module_map() -> tuple[set[str], set[str]]:
    """The module map's packages (``toolkit/envs/``) and entries (modules, and folders whose files an
    entry covers), as paths from the repository root."""
    (block,) = code_blocks(section("Module map"))
    packages, entries, package = set(), set(), ""
    for line in block.splitlines():
        if m := re.match(r"(toolkit/\S*)\s", line + " "):
            package = m.group(1)
            packages.add(package)
        elif line.startswith("  ") and not line.startswith("   "):  # deeper: a role's second line
            for token in line.split():
                if not token.endswith((".py", "/")):
                    break
                entries.add(package + token)
    return packages, entries


# ---- the command line -------------------------------------------------------------------------------


def command_parsers() -> dict[str, argparse.ArgumentParser]:
    """'synth graph' -> the parser that reads it, for every subcommand and every action word (a
    positional with choices, as ``synth generate|graph`` and ``atlas run|export``)."""
    from toolkit.cli import build_parser

    found = {}

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found[" ".join((*path, name))] = sub
                    walk(sub, (*path, name))
            elif not action.option_strings and action.choices and path:
                for word in action.choices:
                    found[" ".join((*path, word))] = parser

    walk(build_parser(), ())
    return found


def line_command(line: str, parsers: dict[str, argparse.ArgumentParser]) -> str:
    """The longest subcommand path a command-list line starts with ('mcp-rl synth [generate] ...' ->
    'synth generate')."""
    words = line.replace("[", " ").replace("]", " ").split()[1:]
    path = ""
    for word in words:
        longer = f"{path} {word}".strip()
        if longer not in parsers:
            break
        path = longer
    return path


def test_every_subcommand_is_in_the_command_list():
    parsers = command_parsers()
    named = {line_command(line, parsers) for line in command_lines()}
    assert {"envs list", "synth graph", "atlas export", "notebooks publish", "rescore"} <= set(parsers)
    missing = sorted(set(parsers) - named - {p for p in parsers if any(n.startswith(p + " ") for n in named)})
    assert not missing, f"subcommands missing from docs/DESIGN.md's command list: {missing}"


def test_every_flag_in_the_command_list_is_one_the_parser_has():
    parsers = command_parsers()
    wrong = []
    for line in command_lines():
        path = line_command(line, parsers)
        assert path, f"not an mcp-rl subcommand: {line}"
        options = set(parsers[path]._option_string_actions)
        wrong += [f"{flag} ({line.strip()})" for flag in FLAG.findall(line) if flag not in options]
    assert not wrong, "flags the parser does not have:\n" + "\n".join(wrong)


@pytest.mark.parametrize("command", sorted(MODES))
def test_the_modes_are_in_the_command_list(command):
    parsers = command_parsers()
    options = set(parsers[command]._option_string_actions)
    assert set(MODES[command]) <= options, set(MODES[command]) - options  # renamed: update MODES and the page
    flags = {
        f for line in command_lines() if line_command(line, parsers) == command for f in FLAG.findall(line)
    }
    assert set(MODES[command]) <= flags, f"mcp-rl {command}: {sorted(set(MODES[command]) - flags)} not shown"


def test_the_command_list_check_sees_a_missing_line():
    parsers = command_parsers()
    named = {line_command(line, parsers) for line in command_lines() if " rescore " not in line + " "}
    assert "rescore" not in named and "synth graph" in named and "atlas run" in named


# ---- paths and the module map -----------------------------------------------------------------------


def test_every_toolkit_path_the_page_names_exists():
    named = set(re.findall(r"`(toolkit/[^`\s]*)`", prose(TEXT))) | set.union(*module_map())
    named = {re.sub(r"[,.:;]+$", "", p) for p in named}
    patterns = {p for p in named if "<" in p}
    missing = sorted(p for p in named - patterns if not (REPO_ROOT / p).exists())
    assert not missing, f"docs/DESIGN.md names paths that do not exist: {missing}"
    unmatched = sorted(p for p in patterns if not list(REPO_ROOT.glob(re.sub(r"<[^>]+>", "*", p))))
    assert not unmatched, f"docs/DESIGN.md names path patterns no file matches: {unmatched}"


def test_every_module_is_in_the_module_map():
    packages, entries = module_map()
    folders = [p for p in entries if p.endswith("/")]
    missing = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        name = rel(path)
        if name in entries or any(name.startswith(f) for f in folders):
            continue
        if path.name == "__init__.py" and rel(path.parent) + "/" in packages:  # a package's face
            continue
        missing.append(name)
    assert "toolkit/train/grpo.py" in entries and "toolkit/envs/servers/" in entries
    assert not missing, f"modules missing from docs/DESIGN.md's module map: {missing}"


def test_no_stale_statements():
    assert "train/export.py" not in TEXT  # removed in 9b0f181
    assert "neither imports the other" not in TEXT and "train imports eval" in TEXT


# ---- the worked examples: the files they name against where the code registers each name -----------


def files_to_touch(title: str) -> list[str]:
    """The first path of each top-level bullet of a worked example: the files it says to touch."""
    paths = []
    for line in prose(section(title)).splitlines():
        if m := re.match(r"- `([^`]+)`", line):
            paths.append(m.group(1))
    return paths


def matches(path: str, patterns: list[str], bind: dict[str, str]) -> bool:
    for pattern in patterns:
        regex = re.escape(pattern)
        for key, value in bind.items():
            regex = regex.replace(re.escape(f"<{key}>"), re.escape(value))
        regex = re.sub(r"<[^>]+>", "[a-z0-9][a-z0-9_]*", regex.replace(r"\<", "<").replace(r"\>", ">"))
        if re.fullmatch(regex, path):
            return True
    return False


def rel(path: str | Path) -> str:
    return Path(path).resolve().relative_to(REPO_ROOT).as_posix()


def listings(names: set[str], identifiers: set[str] = frozenset(), files=None) -> dict[str, set[str]]:
    """Files of toolkit/ that list ``names`` again -> the names they list: a literal tuple, list or set
    or a dict's keys holding at least half of them (at least two; with ``identifiers``, a literal of
    such names), or a module docstring naming every one as ``name`` (a documented list). A new name
    would have to join each such list."""
    need = max(2, math.ceil(len(names) / 2))
    found: dict[str, set[str]] = {}
    for path in files or sorted(PACKAGE_DIR.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        documented = set(re.findall(r"``([^`]+)``", ast.get_docstring(tree) or "")) & names
        groups = [documented] if documented == names else []  # prose naming two backends is no list
        for node in ast.walk(tree):
            items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
            if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) and items:
                groups.append({x.value for x in items if isinstance(x, ast.Constant) and x.value in names})
                groups.append({x.id for x in items if isinstance(x, ast.Name) and x.id in identifiers})
        for group in groups:
            if len(group) >= need:
                found.setdefault(rel(path) if files is None else str(path), set()).update(group)
    return found


def registered_in(own: dict[str, set[str]], listed: dict[str, set[str]], by_id=None) -> dict[str, set[str]]:
    """name -> the files of toolkit/ that register it: its own (the registry, its module) and every
    listing that names it (``by_id`` maps an identifier in a listing back to its name)."""
    files = {n: set(found) for n, found in own.items()}
    for path, items in listed.items():
        for item in items:
            files[(by_id or {}).get(item, item)].add(path)
    return files


def check_example(title: str, files: dict[str, set[str]], bind: dict[str, dict[str, str]]) -> None:
    """Every file that registers a name is one the example names, its placeholders bound for that name
    (``bind``: name -> {"module": "prove_kit"}); and every file it names registers some name."""
    touch = [p for p in files_to_touch(title) if p.startswith("toolkit/")]
    assert touch, f"'{title}' names no toolkit/ files"
    outside = {
        name: sorted(f for f in found if not matches(f, touch, bind[name])) for name, found in files.items()
    }
    outside = {n: f for n, f in outside.items() if f}
    assert not outside, f"'{title}': registered in files the page does not name: {outside}"
    # and no file on the list is padding: each is where some existing name is registered
    used = {p for p in touch if any(matches(f, [p], {}) for found in files.values() for f in found)}
    assert used == set(touch), f"'{title}' names files nothing is registered in: {set(touch) - used}"


def module_file(module: str) -> str:
    return rel(importlib.util.find_spec(module).origin)


def test_adding_a_reward_touches_the_files_the_page_names():
    from toolkit.rewards import base

    modules = {n: target.split(":")[0] for n, target in base.REGISTRY.items()}
    own = {n: {rel(base.__file__), module_file(m)} for n, m in modules.items()}
    bind = {n: {"module": m.rsplit(".", 1)[-1]} for n, m in modules.items()}  # rubric-judge: rubric.py
    check_example("Adding a reward", registered_in(own, listings(set(base.REGISTRY))), bind)


def test_adding_a_domain_touches_the_files_the_page_names():
    from toolkit.envs import domains
    from toolkit.envs.registry import DOMAIN_SERVERS
    from toolkit.envs.world import DOMAIN_BUILDERS
    from toolkit.synth.templates import all_drills, all_templates

    templates = [*all_templates().values(), *all_drills().values()]
    builders = {b.__name__.removeprefix("add_"): b for b in DOMAIN_BUILDERS}
    assert list(builders) == list(domains.DOMAINS)  # every domain has a world, in the list's order
    own = {}
    for name, builder in builders.items():
        server = DOMAIN_SERVERS[name]
        own[name] = {rel(inspect.getfile(server)), rel(inspect.getfile(builder))}
        own[name] |= {module_file(f"toolkit.domains.{name}"), rel(domains.__file__)}
        own[name] |= {rel(inspect.getfile(inspect.unwrap(t.build))) for t in templates if name in t.servers}
    by_id = {b.__name__: n for n, b in builders.items()} | {DOMAIN_SERVERS[n].__name__: n for n in builders}
    files = registered_in(own, listings(set(builders), set(by_id)), by_id)
    # the one list: no other file of toolkit/ lists the domains
    assert set(listings(set(builders), set(by_id))) == {"toolkit/envs/domains.py"}
    check_example("Adding a domain (server + world + templates)", files, {n: {"domain": n} for n in builders})


def test_adding_a_backend_touches_the_files_the_page_names():
    from toolkit.train import backends

    own = {n: {rel(backends.__file__), module_file(e.module)} for n, e in backends.BACKENDS.items()}
    listed = listings(set(backends.BACKENDS))
    assert set(listed) == {"toolkit/train/backends.py"}  # the registry's own dict: the one list
    check_example("Adding a generation backend", registered_in(own, listed), backend_bind())


def backend_bind() -> dict[str, dict[str, str]]:
    """cpu -> {"module": "transformers"} (toolkit/train/transformers_backend.py)."""
    from toolkit.train import backends

    return {
        n: {"module": e.module.rsplit(".", 1)[-1].removesuffix("_backend")}
        for n, e in backends.BACKENDS.items()
    }


def test_the_file_check_sees_a_second_list(tmp_path):
    """A module listing the backend names again (as the recipe check and the --backend choices once
    did) is a file a new backend would have to be added to: the listing finds it, the check fails."""
    from toolkit.train import backends

    second = tmp_path / "second_list.py"
    second.write_text(f"CHOICES = {('auto', *backends.BACKENDS)!r}\n")
    own = {n: {rel(backends.__file__), module_file(e.module)} for n, e in backends.BACKENDS.items()}
    listed = listings(set(backends.BACKENDS)) | listings(set(backends.BACKENDS), files=[second])
    with pytest.raises(AssertionError, match="second_list.py"):
        check_example("Adding a generation backend", registered_in(own, listed), backend_bind())


# ---- the worked examples run ------------------------------------------------------------------------


def example_code(title: str) -> tuple[str, str, str]:
    """(module name, module source, registry line) from a worked example's two code blocks."""
    module_block, registry_block = code_blocks(section(title))
    path = re.match(r"# (toolkit/\S+\.py)\n", module_block).group(1)
    assert matches(path, files_to_touch(title), {}), f"{path} is not among the files '{title}' names"
    assert not (REPO_ROOT / path).exists(), f"{path}: the example's module exists (choose another name)"
    (entry,) = [line for line in registry_block.splitlines() if line.strip() and not line.startswith("#")]
    return path.removesuffix(".py").replace("/", "."), module_block, entry


def install(monkeypatch, module_name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(module_name)
    module.__file__ = str(REPO_ROOT / (module_name.replace(".", "/") + ".py"))
    monkeypatch.setitem(sys.modules, module_name, module)
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def registry_entry(line: str) -> tuple[str, ast.expr]:
    """A registry line of the page (``"name": value,``): the name, and the value as written."""
    node = ast.parse("{" + line.strip().rstrip(",") + "}", mode="eval").body
    (key,), (value,) = node.keys, node.values
    return ast.literal_eval(key), value


def test_the_reward_example_runs(monkeypatch):
    from toolkit.cli import build_parser
    from toolkit.records import CallRecord
    from toolkit.rewards import base
    from toolkit.rewards.trl import as_trl_reward_func
    from toolkit.study.examples import example_gold, example_tasks
    from toolkit.train.config import check_rewards, recipe_from_dict

    module_name, source, line = example_code("Adding a reward")
    name, value = registry_entry(line)
    score_args = ["score", "--reward", name, "--tasks", "t.jsonl", "--trajectories", "x.jsonl"]
    with pytest.raises(SystemExit):  # not a reward before its line
        build_parser().parse_args(score_args)
    module = install(monkeypatch, module_name, source)
    monkeypatch.setitem(base.REGISTRY, name, ast.literal_eval(value))

    reward = base.get_reward(name)
    assert (
        reward.name == name and isinstance(reward, base.Reward) and module.__name__ in type(reward).__module__
    )
    assert build_parser().parse_args(score_args).reward == name  # mcp-rl score's choices
    check_rewards(recipe_from_dict({"model": "tiny-random", "reward": name}, "r"))  # a recipe's reward
    tasks = example_tasks()
    golds = [example_gold(t) for t in tasks]
    assert [reward(t, g).score for t, g in zip(tasks, golds, strict=True)] == [1.0] * len(tasks)
    longer = example_gold(tasks[0])
    longer.calls.append(CallRecord(name="get_weather", args={"city": "Lisbon"}, ok=True))
    assert reward(tasks[0], longer).score < 1.0
    scores = as_trl_reward_func(reward)([""] * 2, [""] * 2, task=tasks[:2], trajectory=golds[:2])
    assert scores == [1.0, 1.0]  # what GRPO's reward functions get


def test_the_backend_example_runs(monkeypatch):
    from toolkit.cli import build_parser
    from toolkit.train import backends
    from toolkit.train.config import RecipeError, recipe_from_dict
    from toolkit.train.device import detect_backend
    from toolkit.train.pipeline import choose_backend

    module_name, source, line = example_code("Adding a generation backend")
    name, value = registry_entry(line)
    assert isinstance(value, ast.Call) and value.func.id == "BackendEntry"
    entry = backends.BackendEntry(*[ast.literal_eval(a) for a in value.args])
    assert entry.module == module_name
    recipe_data = {"model": "tiny-random", "reward": "rubric", "backend": name}
    with pytest.raises(RecipeError):  # not a backend before its line
        recipe_from_dict(recipe_data, "r")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["train", "--backend", name])
    module = install(monkeypatch, module_name, source)
    monkeypatch.setitem(backends.BACKENDS, name, entry)

    recipe = recipe_from_dict(recipe_data, "r")  # the recipe check
    assert recipe.backend == name
    assert build_parser().parse_args(["train", "--backend", name]).backend == name  # the --backend choices
    assert detect_backend(name) == name and choose_backend(recipe) == name
    backend = backends.make_backend(name, recipe)
    assert type(backend) is getattr(module, entry.cls) and backend.name == name
