"""One way to start servers that are not the kit's (own, MCP-Atlas, npm, PyPI): a task names them in
`Task.server_recipes`, `open_episode(task)` starts each fresh in a scratch folder of its own, and task
files written before that field (the recipes in `metadata["own_server"]`) still start theirs."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import anyio
import pytest

from toolkit.envs import open_episode
from toolkit.envs.recipe import OWN_KEY, ServerRecipe, npm_servers, scratch_servers, task_recipes
from toolkit.eval.atlas_format import AtlasStep, AtlasTask
from toolkit.eval.atlas_tasks import ServerPool, to_kit_task
from toolkit.eval.suites import check_servers
from toolkit.records import Task

ROOT = Path(__file__).resolve().parents[1]
NPM = ROOT / ".cache" / "npm" / "node_modules"

# A server named by its first argument: it leaves a file named after itself in its working folder at
# start, and its one tool, <name>_where, tells where it runs and what that folder holds.
WHERE_SERVER = """
import json, os, sys
from mcp.server.mcpserver import MCPServer
name = sys.argv[1]
open(name + ".txt", "w").write(name)
server = MCPServer(name)

@server.tool(name=name + "_where")
def where() -> str:
    \"\"\"Where this server runs.\"\"\"
    return json.dumps({"cwd": os.getcwd(), "files": sorted(os.listdir("."))})

server.run("stdio")
"""


def where_recipe(tmp_path: Path, name: str) -> ServerRecipe:
    script = tmp_path / "where_server.py"
    script.write_text(WHERE_SERVER)
    return ServerRecipe(name, command=[sys.executable, str(script), name])


def task_on(recipes: list[ServerRecipe], **fields) -> Task:
    names = [r.name for r in recipes]
    return Task("t", "eval", "Where?", names, [f"{n}_where" for n in names], 0, **fields)


async def where_each(task: Task) -> dict[str, dict]:
    async with open_episode(task, timeout=30) as box:
        return {s: json.loads((await box.call_tool(f"{s}_where", {})).text) for s in task.servers}


@pytest.mark.integration
def test_two_servers_of_one_episode_get_folders_of_their_own(tmp_path):
    recipes = [where_recipe(tmp_path, "alpha"), where_recipe(tmp_path, "beta")]
    task = task_on(recipes, server_recipes=[r.to_dict() for r in recipes])
    seen = anyio.run(where_each, task)
    assert seen["alpha"]["cwd"] != seen["beta"]["cwd"]
    assert seen["alpha"]["files"] == ["alpha.txt"] and seen["beta"]["files"] == ["beta.txt"]
    assert not Path(seen["alpha"]["cwd"]).exists()  # removed when the episode closed


@pytest.mark.integration
def test_a_task_file_with_the_recipes_in_its_metadata_still_starts_them(tmp_path):
    recipe = where_recipe(tmp_path, "alpha")
    old = task_on([recipe]).to_dict() | {"metadata": {OWN_KEY: {"recipes": [recipe.to_dict()]}}}
    task = Task.from_dict(json.loads(json.dumps(old)))
    assert task.server_recipes == [] and task_recipes(task) == [recipe]
    assert anyio.run(where_each, task)["alpha"]["files"] == ["alpha.txt"]


def test_the_field_is_written_only_when_a_task_has_recipes():
    kit = Task("k", "eval", "p", ["helpdesk"], ["view_ticket"], 0)
    assert "server_recipes" not in kit.to_dict()  # task files on the kit's servers stay byte-identical
    own = Task("o", "eval", "p", ["m"], [], 0, server_recipes=[{"name": "m", "command": ["m"]}])
    assert Task.from_dict(json.loads(json.dumps(own.to_dict()))) == own
    check_servers([kit, own])  # a server that comes with its recipe is known
    with pytest.raises(ValueError, match="unknown server 'm'"):
        check_servers([Task("x", "eval", "p", ["m"], [], 0)])


def test_scratch_servers_gives_each_server_its_own_folder(tmp_path):
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "data.txt").write_text("seeded")
    recipes = [
        ServerRecipe("fs", command=["node", "index.js", "{scratch}"], seed=str(seed)),
        ServerRecipe("mem", command=["node", "m.js"], env={"MEMORY_FILE_PATH": "{scratch}/memory.jsonl"}),
    ]

    async def folders() -> list[Path]:
        async with scratch_servers(recipes) as servers:
            fs, mem = servers
            assert fs.command[-1] == fs.cwd and (Path(fs.cwd) / "data.txt").read_text() == "seeded"
            assert mem.env["MEMORY_FILE_PATH"] == f"{mem.cwd}/memory.jsonl"
            assert not (Path(mem.cwd) / "data.txt").exists()
            return [Path(fs.cwd), Path(mem.cwd)]

    fs_dir, mem_dir = anyio.run(folders)
    assert fs_dir != mem_dir and fs_dir.parent == mem_dir.parent


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.skipif(not (NPM / "@modelcontextprotocol").exists(), reason="no npm servers in .cache/npm")
def test_npm_servers_are_recipes_rooted_in_their_own_scratch_folder(tmp_path):
    found = npm_servers(NPM)
    assert set(found) <= {"filesystem", "memory"} and found
    for name, recipe in found.items():
        server = recipe.server(tmp_path / name)
        assert server.cwd == str(tmp_path / name)
        if name == "filesystem":
            assert server.command[-1] == str(tmp_path / name)
        else:
            assert server.env["MEMORY_FILE_PATH"] == str(tmp_path / name / "memory.jsonl")


def test_an_atlas_task_carries_the_recipes_of_its_external_servers():
    mem = ServerRecipe("memory", command=["node", "m.js"], env={"MEMORY_FILE_PATH": "{scratch}/memory.jsonl"})
    pool = ServerPool(
        tools={"memory": {"read_graph"}, "helpdesk": {"view_ticket"}},
        kit={"helpdesk": "helpdesk"},
        recipes={"memory": mem},
    )
    steps = [AtlasStep("memory_read_graph", {}), AtlasStep("helpdesk_view_ticket", {"ticket_id": "t-1"})]
    at = AtlasTask("a1", ["memory_read_graph", "helpdesk_view_ticket"], "p", ["c"], steps, kit_seed=7)
    task = to_kit_task(at, pool)
    assert isinstance(task, Task)
    assert task.servers == ["helpdesk", "memory"] and task.seed == 7
    assert task.server_recipes == [mem.to_dict()]  # the kit's helpdesk needs none
