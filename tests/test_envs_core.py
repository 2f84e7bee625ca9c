"""World determinism, copy-on-write isolation, registry, and calls through a real MCP client session."""

from __future__ import annotations

import anyio
import pytest

from toolkit.envs import open_episode
from toolkit.envs.registry import DOMAIN_SERVERS, server_names, tool_specs
from toolkit.envs.state import WorldState
from toolkit.envs.world import diff_states, generate_world, world_hash


def run(fn, *args):
    return anyio.run(fn, *args)


def test_same_seed_same_world_and_different_seed_differs():
    assert world_hash(generate_world(3)) == world_hash(generate_world(3))
    assert world_hash(generate_world(3)) != world_hash(generate_world(4))


def test_world_cross_references_resolve():
    w = generate_world(0)
    for t in w["tickets"].values():
        assert t["requester_id"] in w["customers"]
        assert t["assignee_id"] is None or t["assignee_id"] in w["staff"]
    for d in w["deals"].values():
        assert d["company_id"] in w["companies"] and d["contact_id"] in w["customers"]
    for o in w["orders"].values():
        assert o["customer_id"] in w["customers"]
        assert all(i["product_id"] in w["products"] for i in o["items"])


def test_diff_states_format():
    a = {"c": {"k1": {"x": 1}, "k2": {"x": 2}}}
    b = {"c": {"k1": {"x": 1}, "k2": {"x": 3}, "k3": {"x": 4}}}
    assert diff_states(a, b) == {
        "c/k2": {"before": {"x": 2}, "after": {"x": 3}},
        "c/k3": {"before": None, "after": {"x": 4}},
    }
    assert diff_states(b, a)["c/k3"] == {"before": {"x": 4}, "after": None}


def test_copy_on_write_never_touches_the_base():
    base = generate_world(1)
    h = world_hash(base)
    s = WorldState(base)
    s.edit("tickets", "t-1001")["status"] = "zzz"
    s.delete("customers", "cu-001")
    s.put("calc_memory", "x", {"name": "x", "value": 1})
    assert world_hash(base) == h
    assert set(s.diff()) == {"tickets/t-1001", "customers/cu-001", "calc_memory/x"}
    assert s.snapshot()["tickets"]["t-1001"]["status"] == "zzz"


def test_tool_names_unique_short_snake_case_and_documented():
    names = [t.name for t in tool_specs()]  # BFCL's servers included when bfcl-eval is installed
    assert len(names) == len(set(names)), "tool names must be unique across the library"
    for t in tool_specs(list(DOMAIN_SERVERS)):
        assert t.name.replace("_", "").isalnum() and t.name.islower() and len(t.name) <= 32, t.name
        assert t.description, t.name
        assert "readOnlyHint" in t.annotations, t.name
        for prop, schema in t.input_schema.get("properties", {}).items():
            assert schema.get("description"), (t.name, prop)
    assert {"helpdesk", "crm", "calculator"} <= set(server_names())


def test_calls_through_mcp_client_and_errors_keep_the_server_alive():
    async def main():
        async with open_episode(servers=["helpdesk", "crm", "calculator"], seed=0) as tb:
            tools = {t.name for t in await tb.list_tools()}
            assert {"search_tickets", "get_company", "calculate"} <= tools
            r = await tb.call_tool("search_tickets", {"status": "open", "limit": 2})
            assert r.ok and len(r.structured["items"]) == 2 and r.structured["next_cursor"] == "2"
            bad = await tb.call_tool("view_ticket", {"ticket_id": "t-10010"})
            assert not bad.ok and "not found" in bad.text and "t-1001" in bad.text
            bad = await tb.call_tool("percent_of", {"percent": "abc", "value": 3})
            assert not bad.ok and "percent" in bad.text and "valid number" in bad.text
            assert "errors.pydantic.dev" not in bad.text  # tokens the model does not need
            bad = await tb.call_tool("no_such_tool", {})
            assert not bad.ok and "Unknown tool" in bad.text
            bad = await tb.call_tool("calculate", {"expression": "__import__('os').system('x')"})
            assert not bad.ok and "unsupported" in bad.text
            ok = await tb.call_tool("calculate", {"expression": "(2 + 3) * 4"})
            assert ok.ok and ok.structured["result"] == 20
            assert tb.state_diff() == {}
            r = await tb.call_tool("add_ticket_tags", {"ticket_id": "t-1002", "tags": ["vip"]})
            assert r.ok
            diff = tb.state_diff()
            assert list(diff) == ["tickets/t-1002"] and "vip" in diff["tickets/t-1002"]["after"]["tags"]

    run(main)


def test_task_filters_tools():
    from toolkit.records import Task

    task = Task(id="x", split="train", prompt="p", servers=["helpdesk", "calculator"],
                tools=["view_ticket", "calculate"], seed=2)  # fmt: skip

    async def main():
        async with open_episode(task) as tb:
            assert sorted(t.name for t in await tb.list_tools()) == ["calculate", "view_ticket"]
            r = await tb.call_tool("search_tickets", {})
            assert not r.ok

    run(main)


def test_two_episodes_do_not_see_each_others_writes():
    async def main():
        async with open_episode(seed=0) as a, open_episode(seed=0) as b:
            await a.call_tool("delete_ticket", {"ticket_id": "t-1003"})
            r = await b.call_tool("view_ticket", {"ticket_id": "t-1003"})
            assert r.ok
            assert list(a.state_diff()) == ["tickets/t-1003"] and b.state_diff() == {}

    run(main)


@pytest.mark.parametrize("transport", ["jsonrpc"])
def test_jsonrpc_in_memory_transport(transport):
    async def main():
        async with open_episode(servers=["calculator"], transport=transport) as tb:
            r = await tb.call_tool("percent_change", {"old": 50, "new": 75})
            assert r.ok and r.structured["percent_change"] == 50

    run(main)


def test_registry_specs_equal_what_the_protocol_lists():
    from mcp import Client

    from toolkit.envs.registry import build_server, domain_specs

    async def main():
        for name in DOMAIN_SERVERS:
            async with Client(build_server(name, WorldState.from_seed(0)), cache=None) as client:
                listed = (await client.list_tools()).tools
            got = [(t.name, t.description, t.input_schema, t.annotations.model_dump(by_alias=True, exclude_none=True))
                   for t in listed]  # fmt: skip
            want = [(s.name, s.description, s.input_schema, s.annotations) for s in domain_specs(name)]
            assert got == want, name

    run(main)


def test_episode_from_a_snapshot_leaves_the_snapshot_alone():
    snap = generate_world(7)
    h = world_hash(snap)

    async def main():
        async with open_episode(servers=["helpdesk"], state=snap) as tb:
            assert (await tb.call_tool("delete_ticket", {"ticket_id": "t-1001"})).ok
            assert "tickets" in tb.state.snapshot() and "t-1001" not in tb.state.snapshot()["tickets"]

    run(main)
    assert world_hash(snap) == h


def test_conflicts_are_tool_errors_that_change_nothing():
    w = generate_world(0)
    pid, p = next((k, p) for k, p in w["products"].items() if p["stock"])
    half = p["stock"] // 2 + 1

    async def main():
        async with open_episode(servers=["shop", "finance"], seed=0) as tb:
            lines = [{"product_id": pid, "qty": half}, {"product_id": pid, "qty": half}]
            r = await tb.call_tool("create_order", {"customer_id": "cu-001", "items": lines})
            assert not r.ok and "in stock" in r.text
            r = await tb.call_tool("buy_stock", {"symbol": "ACMR", "shares": 99999})
            assert not r.ok and "insufficient cash" in r.text
            assert tb.state_diff() == {}

    run(main)
