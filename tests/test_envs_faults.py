"""Environment faults: an external server that never answers the handshake, dies or speaks broken
JSON-RPC is reported once, then fails fast for the rest of the episode (``Episode.environment_error``),
and the TRL reward adapter leaves such episodes out of the GRPO baseline."""

from __future__ import annotations

import os
import signal
import sys
import time

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, INVALID_PARAMS

from toolkit.envs import open_episode
from toolkit.envs.episode import Episode
from toolkit.envs.external import ExternalServer
from toolkit.envs.registry import tool_specs
from toolkit.paths import REPO_ROOT
from toolkit.rewards import as_trl_reward_func, get_reward
from toolkit.rewards.trl import environment_failed
from toolkit.study.examples import example_gold, helpdesk_task

DATA = REPO_ROOT / "tests" / "data" / "reliability"


class FakeClient:
    """Stands in for an MCP client: raises the queued errors, counts the calls that reached it."""

    def __init__(self, *errors: Exception):
        self.errors, self.calls = list(errors), 0

    async def call_tool(self, name, arguments):
        self.calls += 1
        raise self.errors.pop(0)


def _episode(client: FakeClient, external: bool = True) -> Episode:
    ep = Episode(None, None, timeout=0.5)
    ep._clients["x"], ep._route["get"] = client, "x"
    if external:
        ep._external["x"] = 1.0
    return ep


def test_transport_failure_marks_an_external_server_dead_and_later_calls_fail_fast():
    client = FakeClient(MCPError(code=CONNECTION_CLOSED, message="Connection closed"))
    ep = _episode(client)

    async def main():
        first = await ep.call_tool("get", {})
        assert not first.ok and first.error_kind == "transport" and "Connection closed" in first.text
        later = await ep.call_tool("get", {})
        assert not later.ok and later.error_kind == "unavailable"
        assert later.text.startswith("server 'x' is unavailable: ")
        assert client.calls == 1  # the dead server is not called again
        assert ep.environment_error == later.text and ep.dead_servers == {"x": first.text}

    anyio.run(main)


def test_timeouts_are_marked_and_a_json_rpc_error_answer_keeps_the_server():
    client = FakeClient(MCPError(code=INVALID_PARAMS, message="bad args"), TimeoutError())
    ep = _episode(client)

    async def main():
        r = await ep.call_tool("get", {})
        assert not r.ok and r.error_kind is None and "bad args" in r.text  # the server answered: alive
        assert ep.environment_error is None
        r = await ep.call_tool("get", {})
        assert r.text.startswith("timeout:") and r.error_kind == "timeout"
        assert ep.environment_error is not None and "timeout" in ep.environment_error

    anyio.run(main)


def test_a_kit_server_timeout_is_reported_but_not_fatal():
    ep = _episode(FakeClient(TimeoutError(), TimeoutError()), external=False)

    async def main():
        for _ in range(2):
            r = await ep.call_tool("get", {})
            assert r.error_kind == "timeout"
        assert ep.environment_error is None

    anyio.run(main)


def test_trl_reward_is_none_for_an_episode_the_environment_broke():
    task = helpdesk_task()
    good, broken = example_gold(task), example_gold(task)
    broken.stop_reason = "error"
    broken.metadata["error"] = "ConnectionError: external server 'x': no answer to the handshake within 2 s"
    assert environment_failed(broken) and not environment_failed(good)
    broken.metadata["error_source"] = "environment"  # what the agent loop records for a dead server
    assert environment_failed(broken)
    fn = as_trl_reward_func(get_reward("rubric"))
    out = fn(prompts=["p", "p"], completions=["c", "c"], task=[task.to_dict()] * 2,
             trajectory=[good.to_dict(), broken.to_dict()])  # fmt: skip
    assert isinstance(out[0], float) and out[1] is None


@pytest.mark.integration
def test_a_server_that_never_answers_the_handshake_is_one_clear_error_within_the_timeout():
    hang = ExternalServer(
        "x", command=[sys.executable, str(DATA / "hang_server.py"), "init"], startup_timeout=1
    )

    async def main():
        start = time.perf_counter()
        with pytest.raises(ConnectionError, match=r"^external server 'x': no answer to the handshake"):
            async with open_episode(servers=[], external=[hang], timeout=1):
                pass
        # the timeout plus the SDK's bounded process shutdown; it took 14 s with timeout=2 before the fix
        assert time.perf_counter() - start < 8

    anyio.run(main)


@pytest.mark.integration
def test_a_killed_server_fails_fast_for_the_rest_of_the_episode():
    crashy = ExternalServer("crashy", command=[sys.executable, str(DATA / "crash_server.py")])

    async def main():
        async with open_episode(servers=["calculator"], external=[crashy], timeout=5) as tb:
            pid = int((await tb.call_tool("pid", {})).text)
            os.kill(pid, signal.SIGKILL)
            first = await tb.call_tool("echo", {"text": "after"})
            assert not first.ok and first.error_kind in ("transport", "timeout")
            start = time.perf_counter()
            later = await tb.call_tool("echo", {"text": "again"})
            assert later.error_kind == "unavailable" and time.perf_counter() - start < 1
            assert tb.environment_error.startswith("server 'crashy' is unavailable")
            assert (await tb.call_tool("calculate", {"expression": "2+2"})).ok

    anyio.run(main)


@pytest.mark.integration
def test_malformed_json_rpc_marks_the_server_dead():
    broken = ExternalServer("m", command=[sys.executable, str(DATA / "malformed_server.py"), "garbage"])

    async def main():
        async with open_episode(servers=[], external=[broken], timeout=1) as tb:
            first = await tb.call_tool("get", {})
            assert not first.ok and first.error_kind in ("transport", "timeout")
            later = await tb.call_tool("get", {})
            assert later.error_kind == "unavailable" and tb.environment_error is not None

    anyio.run(main)


@pytest.mark.integration
def test_a_reused_server_is_bounded_too_and_restarted_after_a_timeout():
    from toolkit.envs.external import close_shared_sessions

    never = ExternalServer(
        "x", command=[sys.executable, str(DATA / "hang_server.py"), "init"], reuse=True, startup_timeout=1
    )
    hangy = ExternalServer("h", command=[sys.executable, str(DATA / "hang_server.py"), "call"], reuse=True)

    async def main():
        start = time.perf_counter()
        with pytest.raises(ConnectionError, match=r"^external server 'x': no answer to the handshake"):
            async with open_episode(servers=[], external=[never], timeout=1):
                pass
        assert time.perf_counter() - start < 8
        async with open_episode(servers=[], external=[hangy], timeout=1) as tb:
            assert (await tb.call_tool("hang", {})).error_kind == "timeout"
            assert (await tb.call_tool("echo", {"text": "x"})).error_kind == "unavailable"
        async with open_episode(servers=[], external=[hangy], timeout=5) as tb:  # a new process answers
            assert (await tb.call_tool("echo", {"text": "back"})).text == "back"

    try:
        anyio.run(main)
    finally:
        close_shared_sessions()


@pytest.mark.integration
def test_a_slow_starting_server_gets_its_startup_limit_not_the_call_timeout():
    """A short per-call timeout must not cut a server's start (seconds for Python on a busy CPU)."""
    slow = ExternalServer(
        "slow",
        command=[
            sys.executable,
            "-c",
            "import runpy, sys, time; time.sleep(2); sys.argv = ['serve', 'calculator'];"
            " runpy.run_module('toolkit.envs.serve', run_name='__main__')",
        ],
        cwd=str(REPO_ROOT),
    )
    assert (
        slow.startup_limit(1) == 20.0
        and ExternalServer("y", url="http://x", startup_timeout=3).startup_limit(1) == 3
    )

    async def main():
        async with open_episode(servers=[], external=[slow], timeout=1) as tb:
            return {t.name for t in await tb.list_tools()}

    assert {t.name for t in tool_specs(["calculator"])} == anyio.run(main)
