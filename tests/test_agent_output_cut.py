"""Tool outputs cut to the loop's token budget: ``tail`` keeps the first tokens, ``json`` keeps a shorter
head and names in the marker the top-level fields of a JSON object that the cut hid (the ``count`` /
``total`` that servers put last)."""

from __future__ import annotations

import json
import re
from contextlib import asynccontextmanager

import pytest

from toolkit.agent.loop import RolloutConfig, rollout
from toolkit.agent.output_cut import cut_json, cut_tail, cut_tool_output
from toolkit.agent.testing import FakeToolbox, ScriptedPolicy, check_token_exact, turns
from toolkit.records import Task
from toolkit.toolbox import ToolResult
from toolkit.train.config import RecipeError, recipe_from_dict

MARKER = re.compile(
    r"\n\[\.\.\. truncated: showing (\d+) of (\d+) (tokens|characters)(?:; fields after the cut: (.*))?\]$"
)

# the shape of the kit's find_rainy_days reply, with more days than 128 tokens hold
RAINY = {
    "city": "Madrid",
    "rainy_days": [
        {"date": f"2025-11-{d:02d}", "precipitation_mm": 1.5 + d, "condition": "light rain"}
        for d in range(1, 13)
    ],
    "count": 12,
}


@pytest.fixture(scope="module")
def tok():
    from toolkit.models import load_tokenizer

    return load_tokenizer("smollm2-135m")


def _codec(tok):
    return (lambda s: tok(s, add_special_tokens=False)["input_ids"]), tok.decode


def _ntokens(tok, text: str) -> int:
    return len(tok(text, add_special_tokens=False)["input_ids"])


def test_json_cut_names_the_trailing_count_that_the_tail_cut_loses(tok):
    text = json.dumps(RAINY)
    encode, decode = _codec(tok)
    assert _ntokens(tok, text) > 128
    tail = cut_tail(text, 128, encode, decode)
    assert '"count"' not in tail and "truncated: showing 128 of" in tail

    cut = cut_json(text, 128, encode, decode)
    assert _ntokens(tok, cut) <= 128
    marker = MARKER.search(cut)
    shown, total, unit, fields = marker.groups()
    assert unit == "tokens" and int(total) == _ntokens(tok, text) and int(shown) < 128
    # the head is the tail cut's, shorter; the marker names the fields it hid, in the reply's order
    assert cut[: marker.start()] == decode(encode(text)[: int(shown)])
    assert fields == '"rainy_days": [12 items], "count": 12'  # "city" is in the head, so not repeated


def test_fields_in_the_marker(tok):
    encode, decode = _codec(tok)
    reply = {"items": [{"id": f"t-{i}", "subject": "Webhook deliveries failing"} for i in range(9)]}
    reply |= {"one": [1], "meta": {"a": 1}, "long": "x" * 60, "total": 9, "next_cursor": None}
    fields = MARKER.search(cut_json(json.dumps(reply), 60, encode, decode)).group(4)
    assert fields == '"items": [9 items], "one": [1 item], "meta": {1 field}, "total": 9, "next_cursor": null'


def test_short_replies_and_replies_that_are_not_objects(tok):
    encode, decode = _codec(tok)
    short = json.dumps({"items": [1, 2], "total": 2})
    for how in ("tail", "json"):
        assert cut_tool_output(short, 64, how, encode, decode) == short
    words = " ".join(f"word{i}" for i in range(300))  # not JSON: the json cut is the tail cut
    assert cut_tool_output(words, 40, "json", encode, decode) == cut_tail(words, 40, encode, decode)
    listing = json.dumps([{"id": i} for i in range(100)])  # a JSON list has no fields to name
    assert cut_json(listing, 40, encode, decode) == cut_tail(listing, 40, encode, decode)


def test_a_marker_longer_than_the_budget_falls_back_to_the_tail_cut(tok):
    encode, decode = _codec(tok)
    reply = {"items": list(range(200))} | {f"field_{i}": i for i in range(30)}
    assert cut_json(json.dumps(reply), 30, encode, decode) == cut_tail(json.dumps(reply), 30, encode, decode)


def test_json_cut_without_a_tokenizer_counts_four_characters_a_token():
    cut = cut_json(json.dumps(RAINY), 64, None, None)
    shown, _, unit, fields = MARKER.search(cut).groups()
    assert len(cut) <= 4 * 64 and unit == "characters" and '"count": 12' in fields


def test_the_loop_cuts_with_the_configured_way_and_stays_token_exact(tok):
    class Rainy(FakeToolbox):
        async def call_tool(self, name, arguments):
            return ToolResult(True, json.dumps(RAINY))

    @asynccontextmanager
    async def opener(task):
        yield Rainy()

    task = Task(
        id="t", split="eval", prompt="Rainy days in Madrid?", servers=["notes"], tools=["dump"], seed=0
    )
    script = turns('<tool_call>\n{"name": "dump", "arguments": {"n": 1}}\n</tool_call>', "8")
    for how, has_count in (("tail", False), ("json", True)):
        config = RolloutConfig(max_tool_output_tokens=64, tool_output_cut=how)
        (traj,) = rollout([task], ScriptedPolicy(script, tok), config, open_episode=opener)
        (record,) = traj.calls
        assert record.ok and ('"count": 12' in record.result) is has_count
        assert next(m["content"] for m in traj.messages if m["role"] == "tool") == record.result
        check_token_exact(traj, tok)


def test_an_unknown_cut_is_named():
    with pytest.raises(ValueError, match="tool_output_cut 'head'"):
        RolloutConfig(tool_output_cut="head")
    with pytest.raises(RecipeError, match="rollout.tool_output_cut must be one of tail, json"):
        recipe_from_dict({"model": "m", "reward": ["outcome"], "rollout": {"tool_output_cut": "head"}}, "r")
