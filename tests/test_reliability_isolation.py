"""Isolation under load: concurrent episodes doing random writes through the real loop (the CI-sized
run; ``python -m bench.fault_isolation`` runs 256+ episodes with more calls each).

Contract: each episode's final state diff and call results equal those of its own sequential
replay, and the shared base world is never written to.
"""

from __future__ import annotations

import importlib.util

import pytest

from toolkit.paths import REPO_ROOT


def _load_bench():
    spec = importlib.util.spec_from_file_location(
        "fault_isolation", REPO_ROOT / "bench" / "fault_isolation.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fi = _load_bench()


@pytest.mark.integration
def test_256_concurrent_episodes_equal_their_sequential_replays():
    r = fi.run(n_episodes=256, calls=4, per_turn=4, seed=1)
    assert r["leaks"] == []
    assert r["base_world_intact"]
    assert r["stop_reasons"] == ["finish"]
    assert r["ok_writes"] > 256  # the plans really wrote (not only failed calls)
    assert r["distinct_final_states"] > 200  # and did different things


def test_the_check_detects_a_tool_that_writes_to_the_shared_base(monkeypatch):
    """With copy-on-write broken (records edited in place), the same check reports the damage."""
    from toolkit.envs.state import WorldState, base_world

    def edit_in_place(self, name, key):  # the bug a careless tool or state layer would have
        return self._writable(name)[key]

    monkeypatch.setattr(WorldState, "edit", edit_in_place)
    try:
        r = fi.run(n_episodes=8, calls=6, per_turn=3, seed=2)
    finally:
        monkeypatch.undo()
        base_world.cache_clear()  # drop the damaged shared world; later tests regenerate it
    assert r["leaks"] or not r["base_world_intact"]
    assert not r["base_world_intact"]
