"""BFCL classes as MCP servers: schemas, initial config, errors as tool results, call-string parsing."""

from __future__ import annotations

import json
import keyword
import sys
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters

from toolkit.envs import bfcl
from toolkit.synth.bfcl_tasks import load_bfcl_tasks

pytest.importorskip("bfcl_eval")


def _run(fn, *args):
    return anyio.run(fn, *args)


async def _call(server, name, args):
    async with Client(server, cache=None) as client:
        return await client.call_tool(name, args)


def test_eight_servers_list_bfcl_docs_as_json_schema():
    assert len(bfcl.SERVER_NAMES) == 8 == len(set(bfcl.SERVER_NAMES))

    async def listed(name):
        async with Client(bfcl.build_server(name), cache=None) as client:
            return (await client.list_tools()).tools

    total = 0
    for cls, name in bfcl.BFCL_SERVERS.items():
        tools = _run(listed, name)
        docs = bfcl.function_docs(cls)
        assert [t.name for t in tools] == [d["name"] for d in docs]
        for tool, doc in zip(tools, docs, strict=True):
            assert tool.description == doc["description"]
            schema = tool.input_schema
            assert schema["type"] == "object"
            assert sorted(schema["properties"]) == sorted(doc["parameters"]["properties"])
            assert schema.get("required", []) == doc["parameters"].get("required", [])
            assert '"dict"' not in json.dumps(schema) and '"float"' not in json.dumps(schema)
        total += len(tools)
    assert total == 128


def test_every_tool_answers_bad_arguments_with_a_tool_error_and_the_server_survives():
    async def sweep():
        failures = []
        for cls, name in bfcl.BFCL_SERVERS.items():
            server = bfcl.build_server(name)
            async with Client(server, cache=None) as client:
                for tool in bfcl.tool_names(cls):
                    result = await client.call_tool(tool, {"no_such_argument": 1})
                    if not result.is_error or "Error during execution" not in result.content[0].text:
                        failures.append(tool)
                # still serving after 128 bad calls
                ok = await client.call_tool(bfcl.tool_names(cls)[0], {})
                assert ok.content
        return failures

    assert _run(sweep) == []


def test_initial_config_loads_and_error_dicts_come_back_as_tool_errors():
    task = load_bfcl_tasks("base", limit=1)[0]  # GorillaFileSystem + TwitterAPI, workspace/document/...
    server = bfcl.build_server("bfcl_gorilla_file_system", task)
    listing = _run(_call, server, "ls", {})
    assert not listing.is_error
    assert "document" in json.loads(listing.content[0].text)["current_directory_content"]

    missing = _run(_call, server, "cd", {"folder": "no_such_dir"})
    assert missing.is_error
    assert json.loads(missing.content[0].text) == {"error": "cd: 'no_such_dir': No such file or directory"}
    assert missing.structured_content == {"error": "cd: 'no_such_dir': No such file or directory"}


def test_episodes_are_isolated_and_the_task_config_is_never_mutated():
    task = load_bfcl_tasks("base", limit=1)[0]
    # a hand-made task may carry the config as a dict: it must come out untouched
    task.metadata["bfcl"]["initial_config"] = bfcl.initial_config(task.metadata["bfcl"])
    before = json.dumps(task.metadata["bfcl"]["initial_config"])
    a = bfcl.build_server("bfcl_gorilla_file_system", task)
    b = bfcl.build_server("bfcl_gorilla_file_system", task)
    _run(_call, a, "touch", {"file_name": "only_in_a.txt"})
    _run(_call, a, "echo", {"content": "changed", "file_name": "only_in_a.txt"})
    assert "only_in_a.txt" in json.dumps(a.snapshot())
    assert "only_in_a.txt" not in json.dumps(b.snapshot())
    assert json.dumps(task.metadata["bfcl"]["initial_config"]) == before


def test_long_context_flag_reaches_the_instance():
    short = load_bfcl_tasks("base", limit=1)[0]
    long = load_bfcl_tasks("long_context", limit=1)[0]
    assert long.metadata["bfcl"]["long_context"] and not short.metadata["bfcl"]["long_context"]
    s = bfcl.build_server("bfcl_gorilla_file_system", short).instance
    lc = bfcl.build_server("bfcl_gorilla_file_system", long).instance
    assert lc.long_context is True and s.long_context is False
    assert len(json.dumps(bfcl.public_state(lc), default=str)) > len(
        json.dumps(bfcl.public_state(s), default=str)
    )


def test_parse_call_maps_positional_arguments_and_rejects_code():
    assert bfcl.parse_call("sort('final_report.pdf')") == ("sort", {"file_name": "final_report.pdf"})
    assert bfcl.parse_call("ls(a=True)") == ("ls", {"a": True})
    assert bfcl.parse_call_list("[cd(folder='x'), mean(numbers=[1, 2.5, -3])]") == [
        ("cd", {"folder": "x"}),
        ("mean", {"numbers": [1, 2.5, -3]}),
    ]
    for bad in (
        "cd(folder=__import__('os').getcwd())",
        "os.system('ls')",
        "cd(**{'folder': 'x'})",
        "cd(folder=x)",
        "lambda: 0",
        "cd(folder='a'",
        "cd('a', folder='b')",
    ):
        with pytest.raises(bfcl.BFCLCallError):
            bfcl.parse_call(bad)


def test_render_call_accepts_only_names_and_literals():
    assert bfcl.render_call("cd", {"folder": "a'b"}) == 'cd(folder="a\'b")'
    for name, args in (
        ("open(", {}),
        ("cd", {"folder); import os; (": 1}),
        ("cd", {"class": 1}),
        ("cd", {"folder": object()}),
        ("cd", {"folder": {1, 2}}),
    ):
        with pytest.raises(bfcl.BFCLCallError):
            bfcl.render_call(name, args)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True), _json, max_size=4))
def test_render_then_parse_round_trips_json_arguments(args):
    args = {k: v for k, v in args.items() if not keyword.iskeyword(k)}
    assert bfcl.parse_call(bfcl.render_call("echo", args)) == ("echo", args)


def test_arguments_are_copied_so_later_calls_never_mutate_the_callers_values():
    task = load_bfcl_tasks("base", limit=1)[0]
    config = bfcl.initial_config(task.metadata["bfcl"])["TwitterAPI"]
    instance = bfcl.build_server("bfcl_twitter_api", task).instance
    login = {"username": config["username"], "password": config["password"]}
    assert not bfcl.call_method(instance, "authenticate_twitter", login)[1]
    args = {"content": "hello", "tags": ["#a"], "mentions": ["@b"]}
    text, is_error, posted = bfcl.call_method(instance, "post_tweet", args)
    assert not is_error
    bfcl.call_method(instance, "mention", {"tweet_id": posted["id"], "mentioned_usernames": ["@c"]})
    assert args == {"content": "hello", "tags": ["#a"], "mentions": ["@b"]}


@pytest.mark.integration
def test_a_bfcl_server_over_stdio_with_mcp_rl_serve():
    root = Path(__file__).resolve().parents[1]
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolkit.cli", "serve", "bfcl_math_api"], cwd=str(root)
    )

    async def main():
        async with Client(params, read_timeout_seconds=60) as client:
            assert len((await client.list_tools()).tools) == len(bfcl.tool_names("MathAPI"))
            ok = await client.call_tool("add", {"a": 2, "b": 3})
            assert not ok.is_error and json.loads(ok.content[0].text) == {"result": 5}
            bad = await client.call_tool("divide", {"a": 1, "b": 0})
            assert bad.is_error and "divide by zero" in bad.content[0].text

    anyio.run(main)
