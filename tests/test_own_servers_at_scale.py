"""Own servers at scale (issue 51): stdio server starts wait for a slot per CPU, a start that missed its
limit is tried again (once), and a run whose episodes failed on their servers is an error with the count
and the reason, never a score. Also: a callback or a policy that raises ends a rollout promptly, with
every episode closed (it used to spin forever in contextlib while closing the others)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from toolkit.cli import main
from toolkit.envs import episode as episode_module
from toolkit.envs import open_episode
from toolkit.envs.external import ExternalServer
from toolkit.envs.recipe import OWN_KEY, ServerRecipe
from toolkit.paths import REPO_ROOT
from toolkit.records import Task, read_jsonl, write_jsonl

SLOW_START = REPO_ROOT / "tests" / "data" / "own_server" / "slow_start.py"
KIT_TASKS = REPO_ROOT / "data" / "tasks" / "eval.jsonl"


def slow_server(log: Path, startup_timeout: float = 30, **env: str) -> ExternalServer:
    return ExternalServer("slow", command=[sys.executable, str(SLOW_START)],
                          env={"SLOW_START_LOG": str(log), **env}, startup_timeout=startup_timeout)  # fmt: skip


def events(log: Path, kind: str) -> list[float]:
    return sorted(
        float(t) for k, _, t in (line.split() for line in log.read_text().splitlines()) if k == kind
    )


async def ping(server: ExternalServer) -> None:
    async with open_episode(servers=[], external=[server]) as episode:
        assert (await episode.call_tool("ping", {})).text == "pong"


def test_stdio_server_starts_wait_for_a_free_slot(tmp_path, monkeypatch):
    monkeypatch.setattr(episode_module, "MAX_STARTS", 2, raising=False)
    log = tmp_path / "log"

    async def three() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(ping, slow_server(log))

    anyio.run(three)
    starts, ready = events(log, "start"), events(log, "ready")
    assert len(starts) == len(ready) == 3
    assert starts[2] >= ready[0], "the third server started before either of the first two was ready"


def test_a_start_that_missed_its_limit_is_tried_again(tmp_path):
    log = tmp_path / "log"
    anyio.run(ping, slow_server(log, startup_timeout=8, SLOW_START_HANG_FIRST="1", SLOW_START_S="0"))
    assert len(events(log, "start")) == 2 and len(events(log, "ready")) == 1


def own_task(task_id: str, recipe: ServerRecipe) -> Task:
    return Task(task_id, "eval", "List the items.", [recipe.name], [], 0,
                metadata={OWN_KEY: {"recipes": [recipe.to_dict()]}})  # fmt: skip


@pytest.mark.parametrize("command", ["rollout", "eval"])
def test_a_run_with_an_episode_failed_on_its_server_is_an_error_not_a_score(tmp_path, capsys, command):
    log = tmp_path / "log"  # a server that logs its start at once, then never answers the handshake
    never = ServerRecipe("bad", command=[sys.executable, str(SLOW_START)],
                         env={"SLOW_START_LOG": str(log), "SLOW_START_S": "3600"}, startup_timeout=3)  # fmt: skip
    tasks = tmp_path / "tasks.jsonl"
    write_jsonl(tasks, [*read_jsonl(KIT_TASKS, Task)[:1], own_task("own-0", never)])
    out = tmp_path / "out"
    if command == "rollout":
        args = ["rollout", "--policy", "gold", "--tasks", str(tasks), "--out", str(out), "--no-progress"]
    else:
        args = ["eval", "--policy", "gold", "--suite", "kit-eval", "--tasks", str(tasks), "--out", str(out)]
    assert main(args) != 0
    (line,) = [x for x in capsys.readouterr().err.splitlines() if "failed on their servers" in x]
    assert "1 of 2 episodes failed on their servers: " in line
    assert "external server 'bad': no answer to the handshake within 3 s (2 tries)" in line
    assert len(events(log, "start")) == 2  # one retry, no more
    assert not out.exists() or not (out / "results.json").exists()  # no trajectories file, no results


# ---- a raising callback or policy ends the run promptly, every episode closed -----------------------------

HANG_SCRIPT = """
import json, sys, time
from contextlib import asynccontextmanager
from toolkit.agent.loop import rollout
from toolkit.agent.policies import GoldPolicy
from toolkit.envs import open_episode
from toolkit.records import Task, read_jsonl

tasks = read_jsonl(sys.argv[1], Task)[:12]
count = {"opened": 0, "closed": 0, "done": 0, "generate": 0}

@asynccontextmanager
async def counted(task):
    count["opened"] += 1
    try:
        async with open_episode(task) as toolbox:
            yield toolbox
    finally:
        count["closed"] += 1

def on_done(traj):
    count["done"] += 1
    if sys.argv[2] == "on_done" and count["done"] == 3:
        raise RuntimeError("callback broke")

class Broken(GoldPolicy):
    async def generate(self, requests):
        count["generate"] += 1
        if sys.argv[2] == "policy" and count["generate"] == 2:
            raise RuntimeError("backend broke")
        return await super().generate(requests)

start = time.monotonic()
try:
    rollout(tasks, Broken(), on_done=on_done, open_episode=counted)
    error = None
except RuntimeError as exc:
    error = str(exc)
print(json.dumps({"error": error, "seconds": time.monotonic() - start, **count}))
"""


@pytest.mark.parametrize(("where", "message"), [("on_done", "callback broke"), ("policy", "backend broke")])
def test_a_raising_callback_or_policy_ends_the_rollout_with_every_episode_closed(where, message):
    try:
        run = subprocess.run([sys.executable, "-c", HANG_SCRIPT, str(KIT_TASKS), where],
                             capture_output=True, text=True, timeout=180, cwd=REPO_ROOT)  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"the rollout did not end within 180 s after the {where} error (it hangs)")
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["error"] == message
    assert got["opened"] == got["closed"] >= 2  # every episode that opened was closed


# ---- the run: 60 own-server tasks, each episode starting its own helpdesk ------------------------


@pytest.mark.integration
def test_gold_gets_full_marks_over_60_own_server_tasks(helpdesk_own):
    from toolkit.agent.loop import RolloutConfig, rollout
    from toolkit.agent.policies import GoldPolicy
    from toolkit.rewards.rubric import RubricReward

    # the 18 helpdesk-over-stdio tasks test_synth_own_server.py checks too (conftest.py: made once)
    _, result = helpdesk_own
    made = result.train + result.eval
    # 60 episodes, each with its own server process: the tasks repeat, the starts are what is tested
    tasks = [dataclasses.replace(made[i % len(made)], id=f"own-{i}") for i in range(60)]
    start = time.monotonic()
    trajs = rollout(tasks, GoldPolicy(), RolloutConfig())  # the default: 64 episodes at once
    seconds = time.monotonic() - start
    errors = [t.metadata.get("error") for t in trajs if t.stop_reason == "error"]
    assert not errors, f"{len(errors)} of 60 episodes failed: {errors[0]}"
    scores = [r.score for r in RubricReward().batch(tasks, trajs)]
    assert scores == [1.0] * 60, f"mean {sum(scores) / 60:.3f} in {seconds:.0f} s"
