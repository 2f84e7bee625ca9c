"""Servers the kit did not write, in the kit's episodes: the one way to start them fresh per episode.

A ``ServerRecipe`` says how to start one server (``NAME=COMMAND`` for stdio, ``NAME=URL`` for streamable
HTTP), with extra environment variables, a working folder and a *seed* folder. The user's own servers,
MCP-Atlas's servers, npm servers (``npm_servers``) and PyPI servers are all recipes. Every episode gives
each of its servers a fresh scratch folder of its own (``scratch_servers``): the seed folder is copied
into it, ``{scratch}`` in the command, the environment and the working folder is replaced by its path,
and the process starts there (default working folder: the scratch folder itself). So an episode's
writes never reach the next one, one server never sees another's files (a filesystem server's root
holds no memory file), and a memory file, a folder or a git repository starts from the same seeded
state every time.

Where a task's servers come from is ``Task.server_recipes`` (``task_recipes``; task files written
before it held them in ``task.metadata["own_server"]["recipes"]``, still read); ``open_episode(task)``
then starts them itself, so ``rollout``, ``train``, ``eval`` and ``atlas run`` need no flags. The
starts go through ``open_episode``'s external path: bounded to one concurrent start per CPU, a start
that missed its limit tried once more.

Tasks synthesised for the user's own server (``toolkit.synth.own_tasks``) may also list *probes* in
``task.metadata["own_server"]``: read calls the episode makes when it opens and again after every call
to a tool that is not read-only. Their outputs are the episode's state for an external server
(``state_diff``: collection ``probe:<tool>``, key ``p<i>``, record ``{"output": canonical text}``; an
error answer counts as no record), so a write can be checked by a read afterwards with the rubric's
ordinary ``state`` check.
"""

from __future__ import annotations

import json
import shlex
import shutil
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkit.toolbox import ToolResult, ToolSpec

if TYPE_CHECKING:
    from toolkit.records import Task

OWN_KEY = "own_server"  # task.metadata key holding {"probes": [...], "read_tools": [...]} (once "recipes")
SCRATCH = "{scratch}"


@dataclass
class ServerRecipe:
    """How to start one MCP server the kit did not write, fresh for every episode."""

    name: str
    command: list[str] | None = None
    url: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None  # default: the episode's scratch folder (stdio servers)
    seed: str | None = None  # a folder copied into each episode's scratch folder
    startup_timeout: float | None = None

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("-", "").replace("_", "").isalnum():
            raise ValueError(f"server name {self.name!r}: use letters, digits, '-' and '_'")
        if (self.command is None) == (self.url is None):
            raise ValueError(f"server '{self.name}': give exactly one of a command or a URL")
        if self.command is not None and not self.command:
            raise ValueError(f"server '{self.name}': the command is empty")
        if self.seed is not None and not Path(self.seed).is_dir():
            raise ValueError(f"server '{self.name}': seed folder {self.seed} does not exist")

    @property
    def fresh(self) -> bool:
        """Whether each episode gets its own server (a process in a scratch folder); a URL server is
        shared by everyone who calls it, so its writes would leak from one episode into the next."""
        return self.command is not None

    def server(self, scratch: Path) -> Any:
        """The ``ExternalServer`` for one episode whose scratch folder is ``scratch`` (already seeded)."""
        from toolkit.envs.external import ExternalServer

        def fill(text: str) -> str:
            return text.replace(SCRATCH, str(scratch))

        if self.url is not None:
            return ExternalServer(self.name, url=self.url, startup_timeout=self.startup_timeout)
        return ExternalServer(
            self.name,
            command=[fill(a) for a in self.command or []],
            env={k: fill(v) for k, v in self.env.items()},
            cwd=fill(self.cwd) if self.cwd else str(scratch),
            startup_timeout=self.startup_timeout,
        )

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, {}, [])}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ServerRecipe:
        return cls(**d)


def parse_server(spec: str, option: str = "--server") -> ServerRecipe:
    """``NAME=COMMAND`` (split like a shell line) or ``NAME=URL`` (http:// or https://)."""
    raw, sep, rest = spec.partition("=")
    name, rest = raw.strip(), rest.strip()
    if not sep or not name or not rest:
        raise ValueError(
            f"{option} {spec!r}: expected NAME=COMMAND or NAME=URL, e.g. memory='npx @modelcontextprotocol/server-memory'"
        )
    if rest.startswith(("http://", "https://")):
        return ServerRecipe(name, url=rest)
    argv = shlex.split(rest)
    return ServerRecipe(name, command=argv)


def npm_servers(npm_dir: str | Path) -> dict[str, ServerRecipe]:
    """The npm servers found under ``npm_dir`` (``.../node_modules``) as recipes, name -> recipe: the
    filesystem server rooted at its scratch folder, the memory server keeping its file there."""
    base = Path(npm_dir).resolve() / "@modelcontextprotocol"
    out: dict[str, ServerRecipe] = {}
    if shutil.which("node") is None:
        return out
    fs, mem = base / "server-filesystem" / "dist" / "index.js", base / "server-memory" / "dist" / "index.js"
    if fs.exists():
        out["filesystem"] = ServerRecipe("filesystem", command=["node", str(fs), SCRATCH])
    if mem.exists():
        out["memory"] = ServerRecipe(
            "memory", command=["node", str(mem)], env={"MEMORY_FILE_PATH": f"{SCRATCH}/memory.jsonl"}
        )
    return out


def task_recipes(task: Task) -> list[ServerRecipe]:
    """How to start the task's servers that are not the kit's: ``Task.server_recipes``, or where task
    files written before that field kept them (``metadata["own_server"]["recipes"]``)."""
    raw = task.server_recipes or (task.metadata.get(OWN_KEY) or {}).get("recipes", [])
    return [ServerRecipe.from_dict(r) for r in raw]


@asynccontextmanager
async def scratch_servers(recipes: Sequence[ServerRecipe]) -> AsyncIterator[list[Any]]:
    """Fresh ``ExternalServer``s, each in a seeded scratch folder of its own, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="mcp-rl-own-") as tmp:
        servers = []
        for recipe in recipes:
            scratch = Path(tmp) / recipe.name
            if recipe.seed is not None:
                shutil.copytree(recipe.seed, scratch, symlinks=True)
            else:
                scratch.mkdir()
            servers.append(recipe.server(scratch))
        yield servers


def canonical(text: str) -> str:
    """A tool output in one canonical form (JSON re-dumped with sorted keys, else stripped text), so
    the same content compares equal however the server spaced it."""
    try:
        return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return text.strip()


class ProbedToolbox:
    """An episode's Toolbox plus the task's probes: ``state_diff`` compares their outputs when the
    episode opened with their outputs after the last non-read call."""

    def __init__(self, episode: Any, probes: Sequence[dict[str, Any]], read_tools: Sequence[str]):
        self.episode = episode
        self.probes = list(probes)
        self.read_tools = set(read_tools)
        self.before: dict[str, dict[str, Any] | None] = {}
        self.after: dict[str, dict[str, Any] | None] = {}

    def __getattr__(self, name: str) -> Any:  # environment_error, dead_servers, state, ...
        return getattr(self.episode, name)

    async def snapshot(self) -> dict[str, dict[str, Any] | None]:
        out: dict[str, dict[str, Any] | None] = {}
        for i, probe in enumerate(self.probes):
            res = await self.episode.call_tool(probe["tool"], dict(probe.get("arguments", {})))
            out[f"probe:{probe['tool']}/p{i}"] = {"output": canonical(res.text)} if res.ok else None
        return out

    async def start(self) -> None:
        self.before = await self.snapshot()
        self.after = dict(self.before)

    async def list_tools(self) -> list[ToolSpec]:
        return await self.episode.list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        result = await self.episode.call_tool(name, arguments)
        if self.probes and name not in self.read_tools and not self.episode.dead_servers:
            self.after = await self.snapshot()
        return result

    def state_diff(self) -> dict[str, Any]:
        diff = dict(self.episode.state_diff())
        for key, before in self.before.items():
            after = self.after.get(key)
            if before != after:
                diff[key] = {"before": before, "after": after}
        return diff
