"""Servers the kit did not write, seeded for the own-server walkthrough (docs/own-server.md, notebook 02).

    python -m toolkit.synth.demo_servers memory runs/seed-memory     # writes the seed, prints --server flags

Each ``seed_*`` writes a small, fixed data set into a folder (the *seed* copied into every episode's
scratch folder); ``recipe(name, seed)`` is how the kit starts that server on it. The git and SQLite
servers are PyPI packages built for ``mcp<2``: give the folder of a virtual environment that has them
(``MCP_RL_SERVER_VENV``, default ``/tmp/srv``); ``available(name)`` says whether a server can start here.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from toolkit.envs.recipe import ServerRecipe
from toolkit.paths import REPO_ROOT

NPM_DIR = (
    Path(os.environ.get("MCP_RL_NPM_DIR", REPO_ROOT / ".cache/npm/node_modules")) / "@modelcontextprotocol"
)
SERVER_VENV = Path(os.environ.get("MCP_RL_SERVER_VENV", "/tmp/srv"))
NAMES = ("memory", "filesystem", "git", "sqlite", "helpdesk")

PEOPLE = [
    ("Ada Lovelace", "person", ["mathematician", "wrote the first published algorithm", "born 1815"]),
    ("Alan Turing", "person", ["computer scientist", "proposed the Turing test", "born 1912"]),
    ("Grace Hopper", "person", ["rear admiral", "developed COBOL", "born 1906"]),
    ("Katherine Johnson", "person", ["NASA mathematician", "computed Apollo 11 trajectories"]),
    ("Analytical Engine", "machine", ["designed by Charles Babbage", "never completed"]),
    ("ENIAC", "machine", ["built 1945", "weighed 27 tonnes"]),
    ("COBOL", "language", ["designed 1959", "business oriented"]),
    ("Bletchley Park", "place", ["codebreaking centre", "Buckinghamshire"]),
    ("NASA", "organization", ["founded 1958", "space agency"]),
    ("Apollo 11", "mission", ["landed on the Moon", "July 1969"]),
]
RELATIONS = [
    ("Ada Lovelace", "Analytical Engine", "wrote_notes_on"),
    ("Alan Turing", "Bletchley Park", "worked_at"),
    ("Grace Hopper", "COBOL", "developed"),
    ("Katherine Johnson", "NASA", "worked_at"),
    ("Katherine Johnson", "Apollo 11", "computed_trajectory_for"),
    ("NASA", "Apollo 11", "ran"),
]
FILES = {
    "README.md": "# Project Orion\nA small demo project.\nOwner: Dana Whitfield\n",
    "docs/guide.md": "# Guide\nInstall with make setup.\nRun with make run.\nAsk Dana for access.\n",
    "docs/changelog.md": "## 1.2.0\nAdded export.\n## 1.1.0\nFixed login.\n## 1.0.0\nFirst release.\n",
    "data/cities.csv": "city,country,population\nLisbon,Portugal,545000\nOslo,Norway,709000\nQuito,Ecuador,2011000\n",
    "data/notes.txt": "buy milk\ncall Sam\nrenew passport\n",
    "src/main.py": "def main():\n    print('hello')\n\n\nif __name__ == '__main__':\n    main()\n",
    "src/util.py": "def add(a, b):\n    return a + b\n",
    "config/settings.json": json.dumps({"name": "orion", "version": "1.2.0", "debug": False, "port": 8080}),
}
COMMITS = [
    ("Add readme", {"README.md": "# Orion\n"}),
    ("Add main module", {"src/main.py": "print('hello')\n"}),
    ("Add utility", {"src/util.py": "def add(a, b):\n    return a + b\n"}),
    ("Document setup", {"README.md": "# Orion\nRun make setup.\n"}),
    ("Add settings", {"config/settings.json": '{"port": 8080}\n'}),
    ("Fix greeting", {"src/main.py": "print('hello, world')\n"}),
]
PRODUCTS = [
    (1, "Desk Lamp", "lighting", 24.5, 12),
    (2, "Office Chair", "furniture", 189.0, 4),
    (3, "Standing Desk", "furniture", 420.0, 2),
    (4, "LED Strip", "lighting", 15.0, 40),
    (5, "Notebook", "stationery", 3.5, 150),
    (6, "Fountain Pen", "stationery", 48.0, 9),
    (7, "Monitor Arm", "accessories", 65.0, 7),
]
CUSTOMERS = [(1, "Ines Duarte", "Lisbon"), (2, "Ola Nordmann", "Oslo"), (3, "Mateo Vega", "Quito")]
ORDERS = [(1, 1, 2, 3), (2, 2, 5, 20), (3, 3, 3, 1), (4, 1, 6, 2), (5, 2, 1, 1)]


def seed_memory(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [{"type": "entity", "name": n, "entityType": t, "observations": o} for n, t, o in PEOPLE]
    lines += [{"type": "relation", "from": a, "to": b, "relationType": r} for a, b, r in RELATIONS]
    (folder / "memory.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def seed_filesystem(folder: Path) -> None:
    for rel, text in FILES.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)


def seed_git(folder: Path) -> None:
    """A repository with fixed authors and dates, so its commit ids are the same every time."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "Dana Whitfield", "GIT_AUTHOR_EMAIL": "dana@example.com",
           "GIT_COMMITTER_NAME": "Dana Whitfield", "GIT_COMMITTER_EMAIL": "dana@example.com"}  # fmt: skip

    def git(*args: str, **extra: str) -> None:
        subprocess.run(
            ["git", "-C", str(folder), *args], check=True, capture_output=True, env={**env, **extra}
        )

    git("init", "-q", "-b", "main")
    for i, (message, files) in enumerate(COMMITS):
        for rel, text in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text)
        git("add", ".")
        date = f"2025-03-{i + 1:02d}T10:00:00+00:00"
        git("commit", "-q", "-m", message, GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    git("branch", "release-1.0", "HEAD~2")
    git("branch", "experiment")


def seed_sqlite(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(folder / "shop.db")
    db.executescript(
        "CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, category TEXT, price REAL, stock INTEGER);"
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, city TEXT);"
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, product_id INTEGER, quantity INTEGER);"
    )
    db.executemany("INSERT INTO products VALUES (?, ?, ?, ?, ?)", PRODUCTS)
    db.executemany("INSERT INTO customers VALUES (?, ?, ?)", CUSTOMERS)
    db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)", ORDERS)
    db.commit()
    db.close()


SEEDERS = {"memory": seed_memory, "filesystem": seed_filesystem, "git": seed_git, "sqlite": seed_sqlite}


def recipe(name: str, seed: Path | None = None) -> ServerRecipe:
    """How the kit starts demo server ``name`` on a seed folder (relative paths: the scratch folder is
    the working folder, so arguments such as ``repo_path="."`` are the same in every episode)."""
    npm = NPM_DIR.resolve()
    seed_s = str(seed) if seed is not None else None
    if name == "memory":
        return ServerRecipe(name, command=["node", str(npm / "server-memory/dist/index.js")],
                            env={"MEMORY_FILE_PATH": "{scratch}/memory.jsonl"}, seed=seed_s)  # fmt: skip
    if name == "filesystem":
        return ServerRecipe(
            name, command=["node", str(npm / "server-filesystem/dist/index.js"), "."], seed=seed_s
        )
    if name == "git":
        return ServerRecipe(
            name, command=[str(SERVER_VENV / "bin/mcp-server-git"), "--repository", "."], seed=seed_s
        )
    if name == "sqlite":
        return ServerRecipe(name, command=[str(SERVER_VENV / "bin/mcp-server-sqlite"), "--db-path", "shop.db"],
                            seed=seed_s)  # fmt: skip
    if name == "helpdesk":  # the kit's own server, spoken to over stdio as if it were someone else's
        return ServerRecipe(name, command=[sys.executable, "-m", "toolkit.envs.serve", "helpdesk"],
                            env={"PYTHONPATH": str(Path(__file__).resolve().parents[2])})  # fmt: skip
    raise KeyError(f"unknown demo server {name!r}; one of {', '.join(NAMES)}")


def available(name: str) -> str:
    """'' when demo server ``name`` can start here, else why not."""
    r = recipe(name)
    exe = (r.command or [""])[0]
    if exe == "node" and shutil.which("node") is None:
        return "node is not installed"
    path = Path(r.command[1]) if exe == "node" and r.command else Path(exe)
    if not path.exists():
        return (
            f"{path} not found (npm servers: make setup; PyPI servers: a venv with mcp<2, MCP_RL_SERVER_VENV)"
        )
    return ""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] not in SEEDERS:
        print(f"usage: python -m toolkit.synth.demo_servers {{{','.join(SEEDERS)}}} FOLDER", file=sys.stderr)
        return 2
    folder = Path(argv[1])
    if folder.exists() and any(folder.iterdir()):
        print(f"{folder} is not empty", file=sys.stderr)
        return 1
    SEEDERS[argv[0]](folder)
    print(f"seeded {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
