"""`mcp-rl synth-own --server`: tasks for an MCP server the kit did not write (docs/own-server.md).

Unit tests for the pieces (read/write classification, output parsing, recipes, probes), then the whole
path on real servers: the kit's helpdesk spoken to over stdio (always here) and npm server-memory (after
`make setup`): synthesis, replay, and the gold policy through `open_episode(task)` getting full marks
from the rubric reward. Then servers that do not start, hang, answer errors or flood.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from toolkit.envs.recipe import ProbedToolbox, ServerRecipe, canonical, parse_server
from toolkit.paths import REPO_ROOT
from toolkit.synth import demo_servers
from toolkit.synth.explore import classify, parse_output
from toolkit.toolbox import ToolResult, ToolSpec

BAD_SERVER = REPO_ROOT / "tests" / "data" / "own_server" / "bad_server.py"
NPM_MEMORY = REPO_ROOT / ".cache" / "npm" / "node_modules" / "@modelcontextprotocol" / "server-memory"


# ---- pieces -------------------------------------------------------------------------------------------


def _spec(name: str, **ann) -> ToolSpec:
    return ToolSpec(name, "", {"type": "object", "properties": {}}, "s", ann)


def test_classify_by_annotations_then_name_then_override():
    assert classify(_spec("delete_everything", readOnlyHint=True))[0] == "read"  # annotations win
    assert classify(_spec("get_thing", destructiveHint=True))[0] == "write"
    assert classify(_spec("get_thing", readOnlyHint=False))[0] == "write"
    assert classify(_spec("list_tables")) == ("read", "name ('list')")
    assert classify(_spec("write_query"))[0] == "write"
    assert classify(_spec("appendInsight"))[0] == "write"  # camelCase verbs count
    assert classify(_spec("frobnicate"))[0] == "write"  # unknown: never called while exploring
    assert classify(_spec("frobnicate"), "read") == ("read", "set by the user")


def test_parse_output_json_python_literal_listing_key_values_lines():
    assert parse_output('{"a": [1, 2]}') == {"a": [1, 2]}
    assert parse_output("[{'name': 'p', 'n': None}]") == [{"name": "p", "n": None}]  # a server printing repr
    assert parse_output("[FILE] a.txt      4 B\n[DIR] docs") == [
        {"type": "FILE", "name": "a.txt", "size": "4 B"},
        {"type": "DIR", "name": "docs"},
    ]
    log = "Commit: 'abc'\nMessage: 'first\\n'\n\nCommit: 'def'\nMessage: 'second'\n"
    assert parse_output(log) == [
        {"Commit": "abc", "Message": "first"},
        {"Commit": "def", "Message": "second"},
    ]
    assert parse_output("buy milk\ncall Sam\n") == ["buy milk", "call Sam"]
    # structured content that only wraps the text is parsed as the text
    assert parse_output("ignored", {"content": "[DIR] x"}) == [{"type": "DIR", "name": "x"}]


def test_parse_server_and_recipe_errors():
    r = parse_server("mem=node index.js --flag 'a b'")
    assert r.command == ["node", "index.js", "--flag", "a b"] and r.fresh
    u = parse_server("api=http://127.0.0.1:8000/mcp")
    assert u.url == "http://127.0.0.1:8000/mcp" and not u.fresh
    for bad in ("no-equals-sign", "=cmd", "name="):
        with pytest.raises(ValueError, match="NAME=COMMAND"):
            parse_server(bad)
    with pytest.raises(ValueError, match="does not exist"):
        ServerRecipe("x", command=["true"], seed="/no/such/folder")
    assert ServerRecipe.from_dict(r.to_dict()) == r


def test_recipe_fills_the_scratch_folder(tmp_path):
    r = ServerRecipe("m", command=["node", "{scratch}/x.js"], env={"F": "{scratch}/m.jsonl"})
    server = r.server(tmp_path)
    assert server.command == ["node", f"{tmp_path}/x.js"]
    assert server.env == {"F": f"{tmp_path}/m.jsonl"} and server.cwd == str(tmp_path)


class _FakeEpisode:
    """A toolbox whose `read` shows a counter that `bump` (a write) increases."""

    def __init__(self):
        self.n = 0
        self.dead_servers: dict[str, str] = {}

    async def call_tool(self, name, args):
        if name == "bump":
            self.n += 1
            return ToolResult(True, "ok")
        return ToolResult(True, json.dumps({"n": self.n}))

    def state_diff(self):
        return {}


def test_probes_turn_a_write_into_a_state_diff():
    async def run(writes: int) -> dict:
        box = ProbedToolbox(_FakeEpisode(), [{"tool": "read", "arguments": {}}], read_tools=["read"])
        await box.start()
        await box.call_tool("read", {})
        for _ in range(writes):
            await box.call_tool("bump", {})
        return box.state_diff()

    assert anyio.run(run, 0) == {}
    diff = anyio.run(run, 2)
    assert diff == {
        "probe:read/p0": {"before": {"output": canonical('{"n": 0}')}, "after": {"output": '{"n": 2}'}}
    }


# ---- the whole path on real servers -----------------------------------------------------------------------


def _gold_scores(tasks):
    from toolkit.agent.loop import RolloutConfig, rollout
    from toolkit.agent.policies import GoldPolicy
    from toolkit.rewards.rubric import RubricReward

    trajs = rollout(tasks, GoldPolicy(), RolloutConfig(max_concurrent_episodes=2))
    return [r.score for r in RubricReward().batch(tasks, trajs)], trajs


@pytest.mark.integration
def test_helpdesk_over_stdio_reads_replay_and_gold_gets_full_marks(helpdesk_own):
    # named unlike the kit's helpdesk, so only the task set's recipe can answer for it (conftest.py:
    # synthesize([recipe], n=14, n_eval=4, seed=3, writes=False, max_seconds=30))
    recipe, result = helpdesk_own
    report = result.summary["servers"]["hd-stdio"]
    tasks = result.train + result.eval
    assert report["kept"] == len(tasks) >= 14
    kinds = {t.metadata["kind"] for t in tasks}
    assert {"lookup", "aggregate", "chain"} <= kinds
    assert report["explored"]["calls"] > 10 and "delete_ticket" in report["explored"]["writes"]
    for t in tasks:  # every task carries the start recipe: open_episode(task) needs nothing else
        assert t.server_recipes == [recipe.to_dict()] and "recipes" not in t.metadata["own_server"]
        assert t.rubric and (t.answers or t.metadata["kind"] == "abstain")
    scores, trajs = _gold_scores(tasks)
    assert scores == [1.0] * len(tasks), [(t.task_id, s) for t, s in zip(trajs, scores, strict=True) if s < 1]


@pytest.fixture(scope="module")
def memory_own(tmp_path_factory):
    """Tasks for npm server-memory started from a seeded memory file (its folder, and ``synthesize``'s
    result), made once for the module: about 20 s."""
    from toolkit.synth.own_server import synthesize

    seed = tmp_path_factory.mktemp("memory") / "seed"
    demo_servers.seed_memory(seed)
    return seed, synthesize([demo_servers.recipe("memory", seed)], n=20, n_eval=0, seed=0, max_seconds=30)


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.skipif(
    not NPM_MEMORY.exists(), reason="npm server-memory missing from .cache/npm: run `make setup`"
)
def test_memory_writes_are_checked_by_a_read_on_a_fresh_server(memory_own):
    seed, result = memory_own  # synthesize([recipe], n=20, n_eval=0, seed=0, max_seconds=30)
    tasks = result.train
    writes = [t for t in tasks if t.metadata["kind"] == "write"]
    assert len(tasks) >= 20 and writes
    for t in writes:
        state = [i.check for i in t.rubric if i.check["type"] == "state"]
        assert state and state[0]["collection"].startswith("probe:") and t.metadata["own_server"]["probes"]
    scores, _ = _gold_scores(tasks)
    assert scores == [1.0] * len(tasks)
    # a policy that answers but skips the write loses the state item: the probe saw no change
    from toolkit.agent.loop import rollout
    from toolkit.agent.policies import GoldPolicy
    from toolkit.rewards.rubric import RubricReward

    lazy = [type(t).from_dict({**t.to_dict(), "gold": []}) for t in writes]
    trajs = rollout(lazy, GoldPolicy())
    assert all(r.score < 1.0 for r in RubricReward().batch(writes, trajs))
    # the seed is copied per episode: the original memory file is untouched
    assert (seed / "memory.jsonl").read_text().count("\n") == 16


# ---- bad servers ---------------------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


def _bad(tmp_path: Path, *args: str, startup: float | None = None) -> ServerRecipe:
    return ServerRecipe("bad", command=[sys.executable, str(BAD_SERVER), *args],
                        env={"BAD_SERVER_PIDS": str(tmp_path / "pids")}, startup_timeout=startup)  # fmt: skip


def _pids(tmp_path: Path) -> list[int]:
    f = tmp_path / "pids"
    return [int(x) for x in f.read_text().split()] if f.exists() else []


@pytest.mark.integration
def test_errors_huge_outputs_and_a_hung_call_are_bounded_and_leave_no_process(tmp_path):
    from toolkit.synth.own_server import synthesize

    t0 = time.perf_counter()
    result = synthesize([_bad(tmp_path)], n=5, n_eval=0, timeout=3, max_seconds=30, writes=False)
    took = time.perf_counter() - t0
    report = result.summary["servers"]["bad"]
    explored = report["explored"]
    assert explored["errors"] >= 2  # get_item's error answers and dump_log's 300 KB output
    assert explored["stopped"].startswith("server failed") and "get_report" in explored["stopped"]
    assert took < 90
    # list_items still gave tasks, and they replayed on fresh servers
    assert report["kept"] >= 1 and all(
        t.metadata["needed_tools"] == ["list_items"] for t in result.train if t.gold
    )
    time.sleep(0.5)
    assert _pids(tmp_path) and not [p for p in _pids(tmp_path) if _alive(p)]


@pytest.mark.integration
def test_a_server_that_never_answers_or_cannot_start_is_reported(tmp_path):
    from toolkit.synth.own_server import synthesize

    t0 = time.perf_counter()
    missing = ServerRecipe("missing", command=["/no/such/mcp-server"])
    result = synthesize([_bad(tmp_path, "init", startup=3), missing], n=4, n_eval=0)
    assert time.perf_counter() - t0 < 60
    servers = result.summary["servers"]
    assert "handshake" in servers["bad"]["failed"] and "bad" in servers["bad"]["failed"]
    assert "not found" in servers["missing"]["failed"]
    assert result.train == [] and result.eval == []
    time.sleep(0.5)
    assert _pids(tmp_path) and not [p for p in _pids(tmp_path) if _alive(p)]


def test_cli_rejects_a_bad_server_option(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", "import sys; from toolkit.cli import main; sys.exit(main())", "synth-own", "--server", "no-equals",
         "--out", str(tmp_path)],
        capture_output=True, text=True, cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )  # fmt: skip
    assert out.returncode == 2 and "NAME=COMMAND or NAME=URL" in out.stderr
    assert not (tmp_path / "train.jsonl").exists()


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.skipif(
    not NPM_MEMORY.exists(), reason="npm server-memory missing from .cache/npm: run `make setup`"
)
def test_grpo_trains_on_tasks_for_an_own_server(tmp_path, monkeypatch, memory_own):
    """One GRPO step of the tiny model on server-memory tasks: the trainer's episodes start the server
    from the task set alone (an episode whose server did not start would end with stop reason error).
    The tasks are the module's (``memory_own``, 20 of them; this test made 4 of its own before)."""
    from toolkit.records import write_jsonl
    from toolkit.train.config import recipe_from_dict
    from toolkit.train.pipeline import run_recipe

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    _, result = memory_own
    write_jsonl(tmp_path / "train.jsonl", result.train)
    recipe = {
        "model": "tiny-random",
        "reward": "rubric",
        "tasks": str(tmp_path / "train.jsonl"),
        "sft": None,
        "lora": {"r": 4, "lora_alpha": 8, "target_modules": "all-linear"},
        "rollout": {"max_turns": 1, "max_new_tokens": 6, "max_context_tokens": 2048, "temperature": 1.0},
        "grpo": {
            "num_generations": 2,
            "per_device_train_batch_size": 2,
            "max_steps": 1,
            "learning_rate": 1e-3,
        },
    }
    summary = run_recipe(recipe_from_dict(recipe, "own"), tmp_path / "run")
    assert summary["grpo_steps"] == 1
    rollouts = [
        json.loads(x) for x in (tmp_path / "run" / "grpo" / "rollouts.jsonl").read_text().splitlines()
    ]
    ids = {t.id for t in result.train}
    assert rollouts and all(r["task_id"] in ids and r["stop_reason"] != "error" for r in rollouts)


class _FakeTeacher:
    """An OpenAI-compatible client stand-in: proposes one good and one bad call, rewrites prompts."""

    def __init__(self):
        self.chat = self
        self.completions = self
        self.asked: list[str] = []

    def create(self, model, messages, **kw):
        from types import SimpleNamespace

        system, user = messages[0]["content"], messages[1]["content"]
        self.asked.append(system)
        if system.startswith("You help test"):
            tools = {t["name"] for t in json.loads(user)}
            assert "view_ticket" in tools and "delete_ticket" not in tools  # reads only
            text = json.dumps([{"tool": "view_ticket", "arguments": {"ticket_id": "t-1005"}},
                               {"tool": "delete_ticket", "arguments": {"ticket_id": "t-1001"}}])  # fmt: skip
        else:
            text = user.replace("In the results of", "Looking at")
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=text))])


@pytest.mark.integration
def test_a_teacher_proposes_calls_to_explore_and_phrases_prompts_without_changing_answers():
    from toolkit.synth.own_server import synthesize

    teacher = _FakeTeacher()
    recipe = dataclasses.replace(demo_servers.recipe("helpdesk"), name="hd-stdio")
    result = synthesize([recipe], n=8, n_eval=0, seed=1, writes=False,
                        max_calls=40, max_seconds=20, teacher=(teacher, "fake"))  # fmt: skip
    note = result.summary["servers"]["hd-stdio"]["teacher"]
    assert note["proposals"] == "1 proposed calls, 1 rejected (not a read tool)"
    phrased = [t for t in result.train if "templated_prompt" in t.metadata]
    assert note["phrased"] == len(phrased) > 0
    for t in phrased:
        assert t.prompt == t.metadata["templated_prompt"].replace("In the results of", "Looking at")
    scores, _ = _gold_scores(result.train)
    assert scores == [1.0] * len(result.train)


@pytest.mark.integration
def test_a_url_server_gets_read_tasks_only_and_they_replay(tmp_path):
    """NAME=URL: the server is shared, not fresh per episode, so no writes; reads replay as usual."""
    import socket

    from toolkit.synth.own_server import synthesize

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "toolkit.envs.serve", "helpdesk", "--transport", "http",
                             "--port", str(port)], cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})  # fmt: skip
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        recipe = parse_server(f"hd=http://127.0.0.1:{port}/mcp")
        result = synthesize([recipe], n=8, n_eval=0, seed=2, max_calls=40, max_seconds=20)
        report = result.summary["servers"]["hd"]
        assert "no write tasks" in report["writes_skipped"] and report["made"]["write"] == 0
        assert len(result.train) == 8 and all(t.metadata["kind"] != "write" for t in result.train)
        scores, _ = _gold_scores(result.train)
        assert scores == [1.0] * 8
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_cli_options_reach_the_right_server(tmp_path):
    import argparse

    from toolkit.cli.synth_own import build_recipes

    seed = tmp_path / "seed"
    seed.mkdir()

    def ns(**kw):
        base = dict(server=[], env=[], cwd=[], seed_dir=[])
        return argparse.Namespace(**{**base, **kw})

    a, b = build_recipes(ns(server=["a=srv-a --x", "b=srv-b"], env=["K=1", "b:ONLY=2", "U=http://h:1"],
                            seed_dir=[f"a:{seed}"], cwd=["b:/work"]))  # fmt: skip
    assert a.env == {"K": "1", "U": "http://h:1"} and b.env == {"K": "1", "ONLY": "2", "U": "http://h:1"}
    assert a.seed == str(seed.resolve()) and b.seed is None and a.cwd is None and b.cwd == "/work"
    with pytest.raises(ValueError, match="same"):
        build_recipes(ns(server=["a=x", "a=y"]))
    with pytest.raises(ValueError, match="not a folder"):
        build_recipes(ns(server=["a=x"], seed_dir=[str(tmp_path / "missing")]))
    with pytest.raises(ValueError, match="URL"):
        build_recipes(ns(server=["a=http://127.0.0.1:1/mcp"], env=["K=1"]))


SQLITE = demo_servers.SERVER_VENV / "bin" / "mcp-server-sqlite"


@pytest.mark.integration
@pytest.mark.skipif(not SQLITE.exists(), reason=f"{SQLITE} missing: mcp-server-sqlite needs a venv with mcp<2 "
                    "(docs/own-server.md; set MCP_RL_SERVER_VENV)")  # fmt: skip
def test_sqlite_reads_through_select_and_writes_from_examples(tmp_path):
    from toolkit.synth.own_server import synthesize

    demo_servers.seed_sqlite(tmp_path / "seed")
    examples = {"write_query": [{"query": "UPDATE products SET stock = 0 WHERE id = 3"}]}
    result = synthesize([demo_servers.recipe("sqlite", tmp_path / "seed")], n=12, n_eval=0, examples=examples,
                        max_seconds=30)  # fmt: skip
    report = result.summary["servers"]["sqlite"]
    assert report["explored"]["why"]["write_query"] == "name ('write')"  # no annotations: names decide
    assert any(t.gold and "SELECT * FROM" in str(t.gold[0].arguments) for t in result.train)
    assert any(t.metadata["kind"] == "write" for t in result.train)
    scores, _ = _gold_scores(result.train)
    assert scores == [1.0] * len(result.train)
