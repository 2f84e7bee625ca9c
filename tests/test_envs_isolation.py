"""Isolation under concurrency, and the filesystem sandbox."""

from __future__ import annotations

import random

import anyio
import pytest

from toolkit.envs import open_episode
from toolkit.envs.world import world_hash


def random_writes(rng: random.Random, n: int) -> list[tuple[str, dict]]:
    """A random mix of write calls (some fail on purpose: errors must not leak state either)."""
    pool = [
        lambda: ("set_ticket_status", {"ticket_id": f"t-{rng.randint(1001, 1042)}", "status": rng.choice(["open", "pending", "solved", "closed"])}),
        lambda: ("add_ticket_tags", {"ticket_id": f"t-{rng.randint(1001, 1040)}", "tags": [rng.choice("abcdef")]}),
        lambda: ("add_ticket_comment", {"ticket_id": f"t-{rng.randint(1001, 1040)}", "body": str(rng.random())}),
        lambda: ("delete_ticket", {"ticket_id": f"t-{rng.randint(1001, 1040)}"}),
        lambda: ("update_deal", {"deal_id": f"d-{rng.randint(1, 16):03d}", "amount": rng.randint(1, 9) * 1000}),
        lambda: ("buy_stock", {"symbol": rng.choice(["ACMR", "GRNB", "FJDA"]), "shares": rng.randint(1, 40)}),
        lambda: ("write_file", {"path": f"/shared/f{rng.randint(0, 3)}.txt", "content": str(rng.random()), "overwrite": rng.random() < 0.5}),
        lambda: ("store_value", {"name": rng.choice(["a", "b"]), "value": rng.random()}),
        lambda: ("post_message", {"channel_id": "ch-general", "text": "x", "author_id": f"st-{rng.randint(1, 12):03d}"}),
        lambda: ("create_order", {"customer_id": "cu-001", "items": [{"product_id": "p-007", "qty": rng.randint(1, 3)}]}),
    ]  # fmt: skip
    return [rng.choice(pool)() for _ in range(n)]


async def run_episode(calls: list[tuple[str, dict]], concurrent: bool) -> tuple[str, list[tuple[bool, str]]]:
    async with open_episode(seed=5) as tb:
        results = []
        for name, args in calls:
            r = await tb.call_tool(name, args)
            results.append((r.ok, r.text))
            if concurrent:
                await anyio.sleep(0)  # let the other episodes interleave
        return world_hash(tb.state.snapshot()), results


def test_concurrent_episodes_equal_their_sequential_replay():
    plans = [random_writes(random.Random(i), 25) for i in range(24)]

    async def main():
        concurrent: dict[int, tuple] = {}

        async def one(i):
            concurrent[i] = await run_episode(plans[i], concurrent=True)

        async with anyio.create_task_group() as tg:
            for i in range(len(plans)):
                tg.start_soon(one, i)
        for i, plan in enumerate(plans):
            assert await run_episode(plan, concurrent=False) == concurrent[i], (
                f"episode {i} differs from its replay"
            )
        assert (
            len({h for h, _ in concurrent.values()}) > len(plans) // 2
        )  # the plans really did different things

    anyio.run(main)


ESCAPES = [
    "../etc/passwd",
    "/../../etc/passwd",
    "/docs/../../etc/passwd",
    "docs/policies/../../../secret",
    "/shared/escape/passwd",  # a planted symlink whose target climbs out of the root
    "/shared/escape",
]


@pytest.mark.parametrize("path", ESCAPES)
def test_filesystem_traversal_never_escapes(path):
    async def main():
        async with open_episode(servers=["filesystem"]) as tb:
            for name, args in [
                ("read_file", {"path": path}),
                ("write_file", {"path": path, "content": "pwned", "overwrite": True}),
                ("list_directory", {"path": path}),
                ("delete_path", {"path": path + "/x", "recursive": True}),
                ("create_symlink", {"path": "/docs/evil", "target": path}),
            ]:
                r = await tb.call_tool(name, args)
                assert not r.ok, (name, path, r.text)
            assert tb.state_diff() == {}
            ok = await tb.call_tool("read_file", {"path": "/docs/README.md"})  # the server still works
            assert ok.ok

    anyio.run(main)


def test_filesystem_absolute_paths_stay_virtual_and_symlink_loops_stop():
    async def main():
        async with open_episode(servers=["filesystem"]) as tb:
            r = await tb.call_tool("read_file", {"path": "/etc/passwd"})
            assert not r.ok and "not found" in r.text  # the real /etc does not exist in the sandbox
            r = await tb.call_tool("write_file", {"path": "/etc/passwd", "content": "x"})
            assert not r.ok and "parent directory" in r.text
            assert (await tb.call_tool("create_symlink", {"path": "/docs/a", "target": "/docs"})).ok
            r = await tb.call_tool(
                "read_file", {"path": "/docs/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/README.md"}
            )
            assert not r.ok and "symbolic links" in r.text
            r = await tb.call_tool("read_file", {"path": "/docs/x\x00"})
            assert not r.ok

    anyio.run(main)
