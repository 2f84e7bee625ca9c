"""Nothing silent (issue 51): a dead policy or judge endpoint fails the command with the count and the
reason instead of a table of zeros, endpoint failures are never filed as the environment's, a task
naming an unknown server is refused before any episode, and eval / atlas run show progress on stderr.

No model: the endpoints are a closed localhost port (nothing listens) and stdlib HTTP servers."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from toolkit.cli import main
from toolkit.records import Task, read_jsonl, write_jsonl

ROOT = Path(__file__).resolve().parents[1]
KIT_RECORD = ROOT / "tests" / "data" / "atlas" / "sample.jsonl"  # its atlas-kit-1 runs on the kit's helpdesk


def dead_url() -> str:
    """An OpenAI root on a localhost port that nothing listens on: every connection is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def kit_tasks(n: int) -> list[Task]:
    return read_jsonl(ROOT / "data" / "tasks" / "eval.jsonl", Task)[:n]


def kit_record(tmp_path: Path) -> Path:
    line = next(x for x in KIT_RECORD.read_text().splitlines() if '"atlas-kit-1"' in x)
    path = tmp_path / "kit.jsonl"
    path.write_text(line + "\n")
    return path


def test_eval_on_a_dead_policy_endpoint_is_an_error_with_the_count_and_the_reason(tmp_path, capsys):
    url = dead_url()
    out = tmp_path / "o"
    args = ["eval", "--policy", f"openai:m@{url}", "--suite", "kit-eval", "--limit", "2", "--out", str(out)]
    assert main(args) != 0
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if "endpoint" in x]
    assert "2 of 2 episodes failed on the policy endpoint" in line and url in line
    assert "Connection error" in line
    assert not (out / "results.json").exists()  # no table of zeros


def test_a_minority_of_endpoint_failures_is_reported_a_majority_is_an_error(capsys):
    from toolkit.eval.watch import EndpointDown, check_endpoint

    check_endpoint(["APIConnectionError: x"], 3, "policy endpoint openai:m", "eval")
    assert "1 of 3 episodes failed on the policy endpoint openai:m" in capsys.readouterr().err
    with pytest.raises(EndpointDown, match=r"2 of 3 episodes failed on the policy endpoint .*: y"):
        check_endpoint(["y", "z"], 3, "policy endpoint openai:m", "eval")
    check_endpoint([], 3, "policy endpoint openai:m", "eval")
    assert capsys.readouterr().err == ""


def test_a_task_naming_an_unknown_server_is_refused_before_any_episode(tmp_path, capsys):
    tasks = kit_tasks(2)
    tasks[1].servers = [*tasks[1].servers, "nosuch"]
    write_jsonl(tmp_path / "t.jsonl", tasks)
    out = tmp_path / "o"
    args = ["eval", "--policy", "gold", "--suite", "kit-eval", "--tasks", str(tmp_path / "t.jsonl")]
    assert main([*args, "--out", str(out)]) != 0
    err = capsys.readouterr().err
    assert "unknown server 'nosuch'" in err and tasks[1].id in err and "helpdesk" in err  # a known one
    assert not (out / "trajectories.jsonl").exists()


def test_eval_shows_progress_on_stderr(tmp_path, capsys):
    write_jsonl(tmp_path / "t.jsonl", kit_tasks(3))
    args = ["eval", "--policy", "gold", "--suite", "kit-eval", "--tasks", str(tmp_path / "t.jsonl")]
    assert main([*args, "--out", str(tmp_path / "o")]) == 0
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("[eval]")]
    assert lines[-1].startswith("[eval] 3/3 episodes, ") and "s/episode" in lines[-1]
    assert lines[-1].endswith("pass so far 1.00")  # the gold policy passes every task


def test_an_eval_with_its_own_rollout_shows_progress_too(tmp_path, capsys):
    """``train --evaluate`` hands run_eval its own rollout through the agent loop: progress still shows."""
    from toolkit.agent.loop import RolloutConfig, rollout
    from toolkit.agent.policies import GoldPolicy
    from toolkit.eval.suites import run_eval

    config = RolloutConfig(temperature=0.0)
    run_eval(
        "after",
        "kit-eval",
        tmp_path,
        tasks=kit_tasks(2),
        rollout=lambda ts: rollout(ts, GoldPolicy(), config),
    )
    assert "[eval] 2/2 episodes" in capsys.readouterr().err


def test_episodes_are_watched_from_inside_a_running_event_loop_too():
    """Jupyter runs the rollout on a worker thread (toolkit.aio.run_sync): the watcher goes with it."""
    import asyncio

    from toolkit.agent.loop import RolloutConfig, rollout, watch_episodes
    from toolkit.agent.policies import GoldPolicy

    seen = []

    async def notebook_cell():
        with watch_episodes(seen.append):
            rollout(kit_tasks(1), GoldPolicy(), RolloutConfig(temperature=0.0))

    asyncio.run(notebook_cell())
    assert len(seen) == 1


def test_progress_beats_while_no_episode_finishes(capsys):
    from toolkit.eval.watch import Progress

    with Progress(2, "eval", interval=0.05):
        time.sleep(0.3)  # a batch of long generations: nothing finishes for a while
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(x.startswith("[eval] 0/2 episodes, ") and x.endswith(" s") for x in lines)


def test_progress_never_stops_a_run_whose_stderr_is_gone(monkeypatch):
    import io

    from toolkit.eval.watch import Progress

    gone = io.StringIO()
    gone.close()  # as a pipe whose reader exited (`mcp-rl eval ... 2>&1 | head`)
    monkeypatch.setattr("sys.stderr", gone)
    progress = Progress(1, "eval")
    progress.episode(passed=True)
    assert progress.done == 1


def test_atlas_run_with_a_dead_judge_fails_before_the_rollout(tmp_path, capsys):
    url = dead_url()
    out = tmp_path / "o"
    args = ["atlas", "run", "--tasks", str(kit_record(tmp_path)), "--out", str(out)]
    assert main([*args, "--judge-base-url", url, "--judge-model", "m"]) == 1
    err = capsys.readouterr().err
    assert f"the judge endpoint {url} does not answer" in err and "APIConnectionError" in err
    assert not (out / "trajectories.jsonl").exists()  # no episode was run for nothing


class _ListsModelsDropsChats(BaseHTTPRequestHandler):
    """A judge that is up for the probe (GET /models) and then fails every chat request."""

    def do_GET(self):  # noqa: N802 (http.server's naming)
        data = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_atlas_run_whose_judge_fails_mid_run_is_the_judges_error_not_a_zero(tmp_path, capsys):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ListsModelsDropsChats)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/v1"
    args = ["atlas", "run", "--tasks", str(kit_record(tmp_path)), "--out", str(tmp_path / "o")]
    try:
        rc = main([*args, "--judge-base-url", url, "--judge-model", "m"])
    finally:
        server.shutdown()
    err = capsys.readouterr().err
    assert rc == 1 and "1 of 1 tasks failed on the judge endpoint" in err and "HTTP 503" in err
    assert "coverage 0.000" not in err


def test_atlas_run_files_a_dead_policy_endpoint_as_the_endpoints(tmp_path, capsys):
    args = ["atlas", "run", "--tasks", str(kit_record(tmp_path)), "--standin-judge"]
    assert main([*args, "--policy", f"openai:m@{dead_url()}", "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "1 of 1 episodes failed on the policy endpoint" in err and "environment" not in err


def test_atlas_run_shows_progress(tmp_path, capsys):
    args = ["atlas", "run", "--tasks", str(kit_record(tmp_path)), "--standin-judge"]
    assert main([*args, "--out", str(tmp_path / "o")]) == 0
    assert "[atlas] 1/1 episodes, " in capsys.readouterr().err
