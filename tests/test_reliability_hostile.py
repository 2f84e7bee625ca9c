"""Hostile model output through the tool-call parser and the rollout loop (CI-sized version of
``python -m bench.fault_hostile``, which runs >= 10,000 completions).

Contract: no completion makes the parser or the loop raise; every failed call comes back to the model
as a tool message ``Error (kind): ...`` and is counted in ``metadata["errors"]`` / ``n_parse_errors``.
"""

from __future__ import annotations

import importlib.util
import json

import pytest
from hypothesis import HealthCheck, given, settings

from toolkit.agent.parsing import parse_turn
from toolkit.paths import REPO_ROOT
from toolkit.records import CallRecord, Trajectory


def _load_bench():
    spec = importlib.util.spec_from_file_location("fault_hostile", REPO_ROOT / "bench" / "fault_hostile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fh = _load_bench()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fh.completion_strategy())
def test_parser_never_raises_and_every_call_is_well_formed(text):
    turn = parse_turn(text)
    assert isinstance(turn.content, str)
    for call in turn.calls:
        assert isinstance(call.name, str)
        if call.error is None:
            assert isinstance(call.arguments, dict)
        else:
            assert call.arguments is None and call.error.startswith("bad_json")


def test_corpus_is_real_and_varied():
    corpus = fh.load_corpus()
    assert len(corpus) >= 50
    rows = [json.loads(line) for line in fh.CORPUS.read_text(encoding="utf-8").splitlines()]
    assert len({r["what"] for r in rows}) == len(rows)  # every entry is a distinct failure mode


def test_generated_and_corpus_completions_through_parser_and_loop():
    completions = fh.load_corpus() + fh.generated_completions(800, seed=7) + fh.hypothesis_completions(100)
    parsed = fh.parse_all(completions)
    assert parsed["crashes"] == []
    assert parsed["parse_errors"] > 100  # the generator really produces broken calls

    looped = fh.loop_all(completions)
    assert looped["crash"] is None
    assert looped["violations"] == {}
    kinds = looped["failures_by_kind"]
    assert {"bad_json", "schema", "unknown_tool", "tool_error"} <= set(kinds)
    assert sum(kinds.values()) == looped["failed_calls"] > 0
    assert "error" not in looped["stop_reasons"]  # a hostile model never breaks the environment


@pytest.mark.integration
def test_hostile_calls_against_the_mcp_servers():
    import random

    rng = random.Random(3)
    completions = [fh.retarget(t, rng) for t in fh.load_corpus() + fh.generated_completions(160, seed=11)]
    res = fh.loop_all(
        completions, open_episode=fh.mcp_opener(), tools=fh.MCP_TOOLS, servers=["helpdesk", "filesystem"]
    )
    assert res["crash"] is None
    assert res["violations"] == {}
    assert res["failed_calls"] > 0 and "error" not in res["stop_reasons"]


def test_contract_checker_catches_an_uncounted_failure():
    """The oracle itself can fail: a failed call missing from the counters is reported."""
    call = CallRecord(name="add", args=None, ok=False, error="bad_json: x", result="Error (bad_json): x")
    traj = Trajectory(
        task_id="t",
        messages=[{"role": "tool", "name": "add", "content": "Error (bad_json): x"}],
        calls=[call],
        metadata={"errors": {}},
    )
    problems = fh.contract_violations(traj)
    assert any("metadata counts" in p for p in problems)
    assert any("n_parse_errors" in p for p in problems)
    traj.calls[0].result = "oops"
    assert any("not shown to the model" in p or "differs" in p for p in fh.contract_violations(traj))
