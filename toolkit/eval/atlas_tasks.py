"""MCP-Atlas tasks on the servers you can start here: which run, which are skipped and why, how well
the gold replay reproduces the published outputs, and kit tasks written back in the format
(docs/mcp-atlas.md). Reading and writing the records is ``toolkit.eval.atlas_format``.

- ``ServerPool``: the servers started once to list their tools (npm, ``--external``, the kit's own),
  and the ones that failed to start, with the reason.
- ``to_kit_task``: a record as a kit ``Task`` when every server its gold calls use is available;
  ``<server>_<tool>`` names resolve against the started servers' tool lists (a name two servers could
  mean is an error that names both); enabled tools whose server is missing are distractors, dropped and
  listed. Otherwise a ``Skip`` with the reason.
- No silent stand-ins: a kit server never answers for one of MCP-Atlas's servers (its "filesystem",
  "calculator", ...) unless the user maps it (``--map calculator=calculator``), and the run says so.
- ``replay_fidelity``: the gold replay's outputs against the outputs recorded in the published
  trajectory, per call and per server, so missing data shows as a mismatch, not a pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolkit.envs.recipe import ServerRecipe, scratch_servers
from toolkit.eval.atlas_format import AtlasFormatError, AtlasTask, read_atlas_tasks
from toolkit.records import GoldCall, RubricItem, Task, Trajectory

__all__ = ["AtlasFormatError", "AtlasTask", "read_atlas_tasks"]  # re-exported: one import for callers

PASS_THRESHOLD = 0.75
# The servers of MCP-Atlas's environment (scaleapi/mcp-atlas,
# services/agent-environment/src/agent_environment/mcp_server_template.json). A kit server of the same
# name is not the same server, so it answers for one of these only when the user maps it.
ATLAS_SERVERS = (
    "airtable", "alchemy", "arxiv", "brave-search", "calculator", "cli-mcp-server",
    "clinicaltrialsgov-mcp-server", "context7", "ddg-search", "desktop-commander", "e2b-server", "exa",
    "fetch", "filesystem", "git", "github", "google-maps", "google-workspace", "lara-translate",
    "mcp-code-executor", "mcp-server-code-runner", "memory", "met-museum", "mongodb", "national-parks",
    "notion", "open-library", "osm-mcp-server", "oxylabs", "pubmed", "slack", "twelvedata", "weather",
    "weather-data", "whois", "wikipedia",
)  # fmt: skip
_SEPARATORS = ("_", "__", ".", "-")
# The marker the agent loop puts after an output it cut to its tool-output budget (agent/output_cut.py)
CUT_MARKER = re.compile(r"\n\[\.\.\. truncated: showing \d+ of \d+ (tokens|characters)[;\]]")


class AmbiguousTool(ValueError):
    """A record's tool name that two servers could mean."""


@dataclass
class ServerPool:
    """What can run here. ``tools``: server -> its tool names (as the server lists them); ``kit``:
    pool name -> the kit's domain server that serves it; ``recipes``: external server -> how each
    episode starts it; ``failed``: server -> why it did not start; ``stand_ins``: MCP-Atlas server ->
    the kit server the user mapped to it."""

    tools: dict[str, set[str]] = field(default_factory=dict)
    kit: dict[str, str] = field(default_factory=dict)
    recipes: dict[str, ServerRecipe] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    stand_ins: dict[str, str] = field(default_factory=dict)

    def resolve(self, name: str) -> tuple[str, str] | None:
        """(server, tool) a record's name means: ``<server><sep><tool>`` or a bare tool name; None when
        no available server has it; ``AmbiguousTool`` when two do."""
        found = {(s, name) for s, tools in self.tools.items() if name in tools}
        for server, tools in self.tools.items():
            for sep in _SEPARATORS:
                if name.startswith(server + sep) and name[len(server) + len(sep) :] in tools:
                    found.add((server, name[len(server) + len(sep) :]))
        if len(found) > 1:
            raise AmbiguousTool(
                f"'{name}' is ambiguous: " + " or ".join(f"{t} on server '{s}'" for s, t in sorted(found))
            )
        return found.pop() if found else None

    def why_missing(self, name: str, required: Sequence[str] = ()) -> str:
        """Why a name does not resolve: its server failed to start, is not available, or lacks it."""
        known = sorted({*ATLAS_SERVERS, *required, *self.tools, *self.failed}, key=len, reverse=True)
        server = next((s for s in known if any(name.startswith(s + sep) for sep in _SEPARATORS)), None)
        if server in self.failed:
            return f"server '{server}' failed to start: {self.failed[server]}"
        if server in self.tools:
            return f"server '{server}' has no tool '{name[len(server) + 1 :]}'"
        if server is not None:
            return f"needs server '{server}', which is not available here"
        return f"no available server has a tool '{name}'"


@dataclass
class Skip:
    """A record that cannot run here, and why."""

    task: str
    reason: str


def to_kit_task(at: AtlasTask, pool: ServerPool) -> Task | Skip:
    """A kit Task when the servers of every gold call are available, else a ``Skip``. Enabled tools
    whose server is missing are dropped (``metadata["atlas"]["dropped_tools"]``, with the reason)."""
    gold: list[tuple[str, str]] = []
    for step in at.trajectory:
        try:
            hit = pool.resolve(step.tool)
        except AmbiguousTool as exc:
            return Skip(at.task, f"gold call {exc}")
        if hit is None:
            return Skip(
                at.task, f"gold call '{step.tool}': {pool.why_missing(step.tool, at.required_servers)}"
            )
        gold.append(hit)
    chosen: dict[str, tuple[str, str]] = {}  # bare tool name -> (server, tool): what the model sees
    for server, tool in gold:
        other = chosen.get(tool)
        if other is not None and other[0] != server:
            return Skip(at.task, f"gold calls use '{tool}' of both server '{other[0]}' and server '{server}'")
        chosen[tool] = (server, tool)
    dropped: dict[str, str] = {}
    for name in at.enabled_tools:
        try:
            hit = pool.resolve(name)
        except AmbiguousTool as exc:
            dropped[name] = str(exc)
            continue
        if hit is None:
            dropped[name] = pool.why_missing(name, at.required_servers)
        elif hit[1] in chosen and chosen[hit[1]] != hit:
            dropped[name] = f"its name '{hit[1]}' is taken by server '{chosen[hit[1]][0]}' in this task"
        else:
            chosen.setdefault(hit[1], hit)
    used = sorted({s for s, _ in chosen.values()})
    servers = sorted({pool.kit.get(s, s) for s in used})
    metadata: dict[str, Any] = {
        "kind": "atlas",
        "source": "mcp-atlas",
        "where": at.where,
        "atlas": {
            "dropped_tools": dropped,
            "servers": {s: pool.kit.get(s, s) for s in used},
            # the outputs the published trajectory recorded, one per gold call (None: not recorded)
            "recorded": [[s, t, step.output] for (s, t), step in zip(gold, at.trajectory, strict=True)],
        },
    }
    if at.final_answer:  # the gold policy answers with the recorded final message, not the claims
        metadata["reference_answer"] = at.final_answer
    else:
        metadata["atlas"]["no_recorded_answer"] = True
    return Task(
        id=at.task,
        split="eval",
        prompt=at.prompt,
        servers=servers,
        tools=sorted(chosen),
        seed=at.kit_seed,
        gold=[GoldCall(tool, step.args) for (_, tool), step in zip(gold, at.trajectory, strict=True)],
        answers={},
        rubric=[
            RubricItem(f"claim{i + 1}", c, "answer_correctness", True, {"type": "claim"})
            for i, c in enumerate(at.claims)
        ],
        metadata=metadata,
        # the servers that are not the kit's: each episode starts them fresh (toolkit.envs.recipe)
        server_recipes=[pool.recipes[s].to_dict() for s in used if s in pool.recipes],
    )


# ---- servers --------------------------------------------------------------------------------------


def parse_maps(specs: Sequence[str]) -> dict[str, str]:
    """``ATLAS=KIT`` options: the kit's domain server KIT answers for MCP-Atlas's server ATLAS."""
    from toolkit.envs.registry import DOMAIN_SERVERS

    out: dict[str, str] = {}
    for spec in specs:
        atlas, sep, kit = (p.strip() for p in spec.partition("="))
        if not sep or not atlas or kit not in DOMAIN_SERVERS:
            raise ValueError(
                f"--map {spec!r}: expected ATLAS_SERVER=KIT_SERVER with a kit server of "
                f"{', '.join(sorted(DOMAIN_SERVERS))}"
            )
        out[atlas] = kit
    return out


def discover_servers(
    externals: Mapping[str, ServerRecipe], maps: Mapping[str, str] | None = None, timeout: float = 30
) -> ServerPool:
    """Start each external server once to list its tools (one that fails is recorded, not fatal) and
    add the kit's domain servers, except those named like one of MCP-Atlas's servers (unless mapped)."""
    import anyio

    from toolkit.envs import open_episode
    from toolkit.envs.registry import DOMAIN_SERVERS, tool_specs

    pool = ServerPool()
    maps = dict(maps or {})
    for name in DOMAIN_SERVERS:
        if name in externals or name in ATLAS_SERVERS:
            continue  # an external server of that name is the real one; an MCP-Atlas name is not ours
        pool.tools[name] = {s.name for s in tool_specs([name])}
        pool.kit[name] = name
    for atlas, kit in maps.items():
        if atlas in externals:
            raise ValueError(f"--map {atlas}={kit}: an external server named '{atlas}' is given too")
        pool.tools[atlas] = {s.name for s in tool_specs([kit])}
        pool.kit[atlas] = kit
        pool.stand_ins[atlas] = f"the kit's '{kit}' server (--map {atlas}={kit})"

    async def listing(recipe: ServerRecipe) -> set[str]:
        with anyio.fail_after(2 * (timeout + 5)):  # two tries of the start (open_episode retries once)
            async with scratch_servers([recipe]) as servers:
                async with open_episode(servers=[], external=servers, timeout=timeout) as tb:
                    return {t.name for t in await tb.list_tools()}

    for name, recipe in externals.items():
        try:
            pool.tools[name] = anyio.run(listing, recipe)
            pool.recipes[name] = recipe
        except Exception as exc:  # noqa: BLE001 (any start failure skips its tasks, never the run)
            pool.failed[name] = f"{type(exc).__name__}: {exc}"[:300]
    return pool


# ---- replay fidelity ------------------------------------------------------------------------------


def _normal(text: str | None) -> Any:
    """Output text compared as JSON when it is JSON, else with whitespace collapsed."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return re.sub(r"\s+", " ", text).strip()


def was_cut(text: str | None) -> bool:
    """Whether a call's output carries the loop's cut marker (``toolkit.agent.output_cut``)."""
    return text is not None and CUT_MARKER.search(text) is not None


def replay_fidelity(tasks: Sequence[Task], trajs: Sequence[Trajectory]) -> dict[str, Any]:
    """Per server and per task: how many of the gold replay's outputs equal the published ones
    (``match_rate``), and the first mismatch. Calls without a recorded output are not compared; nor
    are outputs the loop cut to its budget (``cut``): part of an output is not what was recorded, and
    the cut is the loop's, not the server's."""
    servers: dict[str, dict[str, Any]] = {}
    per_task: dict[str, dict[str, int]] = {}
    for task, traj in zip(tasks, trajs, strict=True):
        recorded = task.metadata.get("atlas", {}).get("recorded", [])
        made = [c for c in traj.calls if c.name != "finish"]
        row = per_task.setdefault(task.id, {"compared": 0, "matched": 0})
        for i, (server, tool, expected) in enumerate(recorded):
            if expected is None:
                continue
            got = made[i].result if i < len(made) and made[i].name == tool else None
            entry = servers.setdefault(
                server, {"compared": 0, "matched": 0, "cut": 0, "first_mismatch": None}
            )
            if was_cut(got):
                entry["cut"] += 1
                continue
            entry["compared"] += 1
            row["compared"] += 1
            if got is not None and _normal(got) == _normal(expected):
                entry["matched"] += 1
                row["matched"] += 1
            elif entry["first_mismatch"] is None:
                entry["first_mismatch"] = {
                    "task": task.id,
                    "call": i,
                    "tool": tool,
                    "recorded": expected[:300],
                    "replayed": (
                        got or f"<no output: {made[i].error if i < len(made) else 'call not made'}>"
                    )[:300],
                }
    for entry in servers.values():
        entry["match_rate"] = entry["matched"] / entry["compared"] if entry["compared"] else None
    return {"servers": servers, "tasks": per_task}


def summarize(
    results: Sequence[Any],
    skipped: Sequence[Skip],
    tasks: Sequence[Task] = (),
    errors: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Coverage (mean over scored tasks of the mean claim score), pass rate (coverage >= 0.75), and
    every record accounted for: run (with its dropped distractors) or skipped (with the reason)."""
    n = len(results)
    out: dict[str, Any] = {
        "tasks_run": n,
        "tasks_skipped": len(skipped) + len(errors or {}),
        "skipped": {s.task: s.reason for s in skipped} | dict(errors or {}),
        "run": {
            t.id: {
                "dropped_tools": t.metadata.get("atlas", {}).get("dropped_tools", {}),
                # without one the gold policy has no answer to give: its coverage is 0 by construction
                "recorded_answer": "reference_answer" in t.metadata,
            }
            for t in tasks
        },
    }
    if n:
        out["coverage"] = sum(r.score for r in results) / n
        out["pass_rate"] = sum(r.score >= PASS_THRESHOLD for r in results) / n
        out["ungraded_claims"] = sum(r.details.get("ungraded", 0) for r in results)
    return out


# ---- kit tasks written in the format --------------------------------------------------------------


def answer_claims(task: Task) -> list[str]:
    """Claims a final answer can be judged on: one per expected answer value (MCP-Atlas's judge sees the
    answer only, so process rules such as "the model must use X" cannot be claims)."""
    from toolkit.rewards.gold import value_text

    reference = str(task.metadata.get("reference_answer") or "")

    def written(value: Any) -> str:
        # a number as the reference answer writes it (177000.0 -> "177,000"), so the claim's value is
        # one the final answer states verbatim
        if isinstance(value, int | float) and not isinstance(value, bool):
            for form in (f"{value:,.2f}".rstrip("0").rstrip("."), f"{value:g}", str(value)):
                if form in reference:
                    return form
        return value_text(value)

    return [f'The {key.replace("_", " ")} is "{written(value)}".' for key, value in task.answers.items()]


def to_atlas_record(task: Task, traj: Trajectory, tool_server: Mapping[str, str]) -> dict[str, Any] | Skip:
    """A kit task and its gold replay as a published-format record: ``<server>_<tool>`` names, the
    trajectory as messages with the tool outputs, the replay's final answer as ``GTFA``, claims about
    the answer. A task with no answer values (a write) has nothing the answer-only judge can check."""
    claims = answer_claims(task)
    if not claims:
        return Skip(task.id, "no answer values: MCP-Atlas judges the final answer only")
    if traj.stop_reason == "error" or not all(c.ok for c in traj.calls):
        return Skip(task.id, f"the gold replay failed ({traj.stop_reason})")
    cut = next((i for i, c in enumerate(traj.calls) if was_cut(c.result)), None)
    if cut is not None:  # a record holds what the server answered, never less
        return Skip(task.id, f"call {cut + 1}'s output was cut to the loop's tool-output budget")

    def prefixed(tool: str) -> str:
        return f"{tool_server[tool]}_{tool}"

    messages: list[dict[str, Any]] = []
    for i, call in enumerate(c for c in traj.calls if c.name != "finish"):
        call_id = f"call-{i + 1}"
        function = {"name": prefixed(call.name), "arguments": json.dumps(call.args, ensure_ascii=False)}
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            }
        )
        messages.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "content": [{"type": "text", "text": call.result or ""}],
            }
        )
    messages.append({"role": "assistant", "content": traj.final_answer or ""})
    required = sorted({c.name for c in traj.calls if c.name != "finish"})
    return {
        "TASK": task.id,
        "PROMPT": task.prompt,
        "ENABLED_TOOLS": json.dumps([prefixed(t) for t in task.tools if t in tool_server]),
        "TRAJECTORY": json.dumps(messages, ensure_ascii=False),
        "GTFA": traj.final_answer or "",
        "GTFA_CLAIMS": json.dumps(claims, ensure_ascii=False),
        "REQUIRED_TOOLS": json.dumps([prefixed(t) for t in required]),
        "REQUIRED_SERVERS": json.dumps(sorted({tool_server[t] for t in required})),
        # the kit's world seed, so that running the record back replays the same data (not MCP-Atlas's)
        "KIT_SEED": task.seed,
    }
