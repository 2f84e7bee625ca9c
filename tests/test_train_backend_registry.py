"""Backend names come from one registry, ``toolkit.train.backends.BACKENDS``: adding a backend is one class
and one line there (docs/gpu.md, DESIGN.md), so the recipe check, ``mcp-rl train --backend`` and the
device detection must read the names from it, and no other module may spell the list out."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

TOOLKIT = Path(__file__).resolve().parents[1] / "toolkit"


class ToyBackend:
    """A backend added by one line in the registry (constructed only)."""

    name = "toy"

    def __init__(self, recipe, **options):
        self.recipe, self.options = recipe, options


@pytest.fixture
def toy(monkeypatch):
    from toolkit.train import backends

    entry = backends.BackendEntry(__name__, "ToyBackend")
    monkeypatch.setitem(backends.BACKENDS, "toy", entry)
    return entry


def test_a_backend_added_to_the_registry_is_known_everywhere(toy):
    from toolkit.cli.train import register
    from toolkit.train.backends import make_backend
    from toolkit.train.config import recipe_from_dict
    from toolkit.train.device import detect_backend

    recipe = recipe_from_dict({"model": "tiny-random", "reward": "rubric", "backend": "toy"}, "r")
    assert recipe.backend == "toy"  # the recipe check reads the registry
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    assert parser.parse_args(["train", "--backend", "toy"]).backend == "toy"  # so do the CLI choices
    assert detect_backend("toy") == "toy"  # and the device detection
    backend = make_backend("toy", recipe, url="x")
    assert isinstance(backend, ToyBackend) and backend.options == {"url": "x"}


def test_names_outside_the_registry_are_refused():
    from toolkit.cli.train import register
    from toolkit.train.config import RecipeError, recipe_from_dict
    from toolkit.train.device import detect_backend

    with pytest.raises(RecipeError, match="backend must be one of auto, cpu, gpu, vllm"):
        recipe_from_dict({"model": "tiny-random", "reward": "rubric", "backend": "toy"}, "r")
    with pytest.raises(ValueError, match="backend must be one of"):
        detect_backend("toy")
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    with pytest.raises(SystemExit):
        parser.parse_args(["train", "--backend", "toy"])
    # the vllm-server backend needs its URL from the command line: a recipe may not name it
    with pytest.raises(RecipeError):
        recipe_from_dict({"model": "tiny-random", "reward": "rubric", "backend": "vllm-server"}, "r")


def _string_groups(tree: ast.AST):
    """Every literal tuple, list or set of strings, and the string keys of every literal dict."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = node.elts
        elif isinstance(node, ast.Dict):
            items = [k for k in node.keys if k is not None]
        else:
            continue
        yield node, {x.value for x in items if isinstance(x, ast.Constant) and isinstance(x.value, str)}


def test_no_module_but_the_registry_lists_backend_names():
    """A literal holding two or more backend names (a choices list, a name check, a name -> class table)
    outside ``toolkit/train/backends.py`` is a second list that a new backend would have to be added to."""
    from toolkit.train.backends import BACKENDS

    names = set(BACKENDS)
    found = []
    for path in sorted(TOOLKIT.rglob("*.py")):
        if path.name == "backends.py" and path.parent.name == "train":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node, strings in _string_groups(tree):
            if len(strings & names) >= 2:
                found.append(f"{path.relative_to(TOOLKIT.parent)}:{node.lineno}: {sorted(strings & names)}")
    assert not found, "backend names listed outside toolkit/train/backends.py:\n" + "\n".join(found)
