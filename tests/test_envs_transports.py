"""Standalone transports: stdio round trip against `python -m toolkit.envs.serve`, streamable HTTP,
external servers (our own over stdio, a hung one, a dying one, and the real npm server-memory)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from toolkit.envs import open_episode
from toolkit.envs.external import ExternalServer

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[1]
NPM = ROOT / ".cache" / "npm" / "node_modules" / "@modelcontextprotocol"
SERVE = [sys.executable, "-m", "toolkit.envs.serve"]

FLAKY_SERVER = '''
import asyncio, os
from mcp.server.mcpserver import MCPServer
server = MCPServer("flaky")

@server.tool()
async def echo(text: str) -> str:
    """Echo."""
    return text

@server.tool()
async def hang() -> str:
    """Never answers."""
    await asyncio.sleep(3600)
    return "late"

@server.tool()
async def pid() -> str:
    """The server's process id."""
    return str(os.getpid())

@server.tool()
async def crash() -> str:
    """Kills its own process."""
    os._exit(3)

server.run("stdio")
'''


def test_stdio_round_trip_with_the_sdk_stdio_client():
    params = StdioServerParameters(
        command=SERVE[0], args=[*SERVE[1:], "helpdesk,calculator", "--seed", "4"], cwd=str(ROOT)
    )

    async def main():
        async with Client(params, read_timeout_seconds=30) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"search_tickets", "calculate"} <= names
            r = await client.call_tool("calculate", {"expression": "6*7"})
            assert not r.is_error and r.structured_content["result"] == 42
            bad = await client.call_tool("view_ticket", {"ticket_id": "nope"})
            assert bad.is_error and "not found" in bad.content[0].text
            r = await client.call_tool("add_ticket_tags", {"ticket_id": "t-1001", "tags": ["stdio"]})
            assert not r.is_error
            diff = json.loads((await client.read_resource("world://diff")).contents[0].text)
            assert list(diff) == ["tickets/t-1001"]

    anyio.run(main)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_streamable_http_serve():
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "toolkit.cli", "serve", "calculator", "--transport", "http",
                             "--port", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"

        async def main():
            async with open_episode(
                servers=[], external=[ExternalServer("calc-http", url=url)], timeout=20
            ) as tb:
                r = await tb.call_tool("percent_of", {"percent": 10, "value": 50})
                assert r.ok and r.structured["result"] == 5

        anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_external_stdio_server_in_an_episode_with_timeouts_and_restarts(tmp_path):
    script = tmp_path / "flaky.py"
    script.write_text(FLAKY_SERVER)
    flaky = ExternalServer("flaky", command=[sys.executable, str(script)])

    async def main():
        async with open_episode(servers=["calculator"], external=[flaky], timeout=1) as tb:
            assert {"echo", "hang", "crash", "calculate"} <= {t.name for t in await tb.list_tools()}
            assert (await tb.call_tool("echo", {"text": "hi"})).text == "hi"
            r = await tb.call_tool("hang", {})
            assert not r.ok and r.text.startswith("timeout") and r.error_kind == "timeout"
            r = await tb.call_tool("echo", {"text": "hung server"})  # marked dead: fails fast from now on
            assert not r.ok and r.error_kind == "unavailable" and "server 'flaky' is unavailable" in r.text
            assert tb.environment_error is not None and "flaky" in tb.environment_error
            assert (await tb.call_tool("calculate", {"expression": "1+1"})).ok  # the other servers go on
        async with open_episode(servers=[], external=[flaky], timeout=5) as tb:  # a fresh process
            assert (await tb.call_tool("echo", {"text": "still here"})).ok
            r = await tb.call_tool("crash", {})
            assert not r.ok and r.error_kind == "transport"
            r = await tb.call_tool("echo", {"text": "after crash"})
            assert not r.ok and r.error_kind == "unavailable"  # the process is gone: no exception, no wait
        async with open_episode(servers=[], external=[flaky], timeout=5) as tb:  # next episode: restarted
            assert (await tb.call_tool("echo", {"text": "back"})).text == "back"

    anyio.run(main)


def test_external_command_missing_is_a_clear_error():
    async def main():
        with pytest.raises(ConnectionError, match="external server 'x'.*not found on PATH"):
            async with open_episode(
                servers=[], external=[ExternalServer("x", command=["no-such-binary-xyz"])]
            ):
                pass

    anyio.run(main)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.skipif(not (NPM / "server-memory").exists(),
                    reason="npm server-memory missing from .cache/npm: run `make setup` with node/npm available")  # fmt: skip
def test_npm_server_memory_through_the_external_path(tmp_path):
    memory = ExternalServer(
        "memory",
        command=["node", str(NPM / "server-memory" / "dist" / "index.js")],
        env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")},
    )

    async def main():
        async with open_episode(servers=["crm"], external=[memory], timeout=20) as tb:
            names = {t.name for t in await tb.list_tools()}
            assert {"create_entities", "read_graph", "search_companies"} <= names
            r = await tb.call_tool("create_entities", {"entities": [
                {"name": "Acme Robotics", "entityType": "company", "observations": ["customer since 2023"]}]})  # fmt: skip
            assert r.ok, r.text
            r = await tb.call_tool("search_nodes", {"query": "Acme"})
            assert r.ok and "customer since 2023" in r.text
            bad = await tb.call_tool("create_entities", {"entities": "not a list"})
            assert not bad.ok
            assert (await tb.call_tool("read_graph", {})).ok

    anyio.run(main)


def test_tool_name_collisions_raise():
    twin = ExternalServer("calculator-twin", command=[*SERVE, "calculator"], cwd=str(ROOT))

    async def main():
        with pytest.raises(ValueError, match="collision: 'calculate'"):
            async with open_episode(servers=["calculator"], external=[twin], timeout=30):
                pass

    anyio.run(main)


def test_reused_external_process_is_shared_and_restarted_after_a_crash(tmp_path):
    from toolkit.envs.external import close_shared_sessions

    script = tmp_path / "flaky.py"
    script.write_text(FLAKY_SERVER)
    flaky = ExternalServer("flaky", command=[sys.executable, str(script)], reuse=True)

    async def pid_of_episode(crash: bool = False) -> str:
        async with open_episode(servers=[], external=[flaky], timeout=10) as tb:
            pid = (await tb.call_tool("pid", {})).text
            if crash:
                assert not (await tb.call_tool("crash", {})).ok
            return pid

    async def main():
        first = await pid_of_episode()
        assert await pid_of_episode(crash=True) == first  # the same process served both episodes
        restarted = await pid_of_episode()
        assert restarted != first and restarted.isdigit()

    try:
        anyio.run(main)
    finally:
        close_shared_sessions()
