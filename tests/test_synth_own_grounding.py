"""Own-server grades that cannot be gamed (docs/own-server.md): facts over a list whose length differed
between the two explored servers are never drafted, whichever server saw more; a teacher's rewrite of
a prompt is kept only with the same ordinal, superlative and comparison words and the same gold."""

from __future__ import annotations

import json
import random
from collections import Counter
from types import SimpleNamespace

import anyio
import pytest

from toolkit.records import GoldCall, RubricItem, Task
from toolkit.synth.explore import explore
from toolkit.synth.own_tasks import read_drafts
from toolkit.synth.own_teacher import REJECTED_WORDS, order_words, phrase
from toolkit.toolbox import ToolResult, ToolSpec

ORDERS = [
    {"name": "ord-a", "amount": 5, "status": "open"},
    {"name": "ord-b", "amount": 7, "status": "open"},
    {"name": "ord-c", "amount": 11, "status": "done"},
]
SHOPS = [{"title": "North", "size": 3}, {"title": "South", "size": 4}]  # the same on both servers


class _Box:
    """A server whose one read tool lists ``n_orders`` orders (and two shops, always)."""

    def __init__(self, n_orders: int):
        self.n = n_orders

    async def list_tools(self):
        return [
            ToolSpec("list_orders", "", {"type": "object", "properties": {}}, "s", {"readOnlyHint": True})
        ]

    async def call_tool(self, name, args):
        return ToolResult(True, json.dumps({"orders": ORDERS[: self.n], "shops": SHOPS}))


def _drafts(n1: int, n2: int):
    exp = anyio.run(lambda: explore("shop", [_Box(n1), _Box(n2)], max_seconds=10))
    drafts = [d for ds in read_drafts(exp, random.Random(0)).values() for d in ds]
    return exp, drafts


@pytest.mark.parametrize("n1,n2", [(3, 2), (2, 3)])
def test_a_list_whose_length_differs_gives_no_fact_either_way(n1, n2):
    exp, drafts = _drafts(n1, n2)
    (obs,) = exp.observations
    assert obs.ok and not obs.stable
    over_orders = [d for d in drafts for spec in d.metadata["answer_from"] if spec.get("list") == ["orders"]]
    assert over_orders == [], [d.prompt for d in over_orders]
    # no count, sum, max, min or item field ("how many order entries", "the order whose name is ord-a")
    assert not any("order entries" in d.prompt or "ord-" in d.prompt for d in drafts)
    assert ("orders",) in obs.volatile  # the list as a whole, whichever server saw more
    # no value of the list is offered as an argument either
    assert not [p for p in exp.pool if p.path[:1] == ("orders",)]
    # the list that matched on both servers still gives its facts
    ops = {spec["op"] for d in drafts for spec in d.metadata["answer_from"] if spec.get("list") == ["shops"]}
    assert {"count", "sum", "max", "min", "field_of"} <= ops


def test_the_same_list_on_both_servers_gives_its_facts():
    _, drafts = _drafts(3, 3)
    got = {
        (s["op"], s.get("field"))
        for d in drafts
        for s in d.metadata["answer_from"]
        if s.get("list") == ["orders"]
    }
    assert {("count", None), ("sum", "amount"), ("max", "amount"), ("min", "amount")} <= got
    assert ("field_of", "amount") in got


# ---- the teacher's rewrites --------------------------------------------------------------------------


class _Rewriter:
    """An OpenAI-compatible stand-in that answers every prompt with ``reply``."""

    def __init__(self, reply: str):
        self.chat = self.completions = self
        self.reply = reply

    def create(self, model, messages, **kw):
        return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=self.reply))])


def _task(prompt: str) -> Task:
    return Task(id="t", split="train", prompt=prompt, servers=["s"], tools=["list_orders"], seed=0,
                gold=[GoldCall("list_orders", {"shop": "North"})], answers={"max": 7},
                rubric=[RubricItem("a1", "the answer is 7", "answer_correctness", check={"type": "answer", "key": "max"})],
                metadata={"answer_from": [{"call": 0, "list": ["orders"], "op": "max", "field": "amount"}]})  # fmt: skip


PROMPT = 'In the results of list orders for shop "North", what is the second largest amount?'


def test_order_words_count_ordinals_as_words_or_numbers():
    assert order_words("The Second-largest, then the 2nd LAST.") == Counter(
        {"#2": 2, "largest": 1, "last": 1}
    )
    assert order_words("In the results of list orders, what is the amount?") == Counter()


def test_a_rewrite_that_swaps_ordinal_or_superlative_words_is_rejected():
    for reply in (
        'For shop "North", list the orders: what is the first smallest amount?',  # both swapped
        'For shop "North", list the orders: what is the 2nd smallest amount?',  # the superlative only
        'For shop "North", list the orders: what is the largest amount?',  # an ordinal dropped
        'For shop "North", list the orders: what is the second largest amount after the first?',  # added
    ):
        task, rejected = _task(PROMPT), Counter()
        before = task.to_dict()
        assert phrase([task], _Rewriter(reply), "m", rejected=rejected) == 0, reply
        assert task.to_dict() == before  # the templated prompt stays, nothing else moves
        assert rejected == Counter({REJECTED_WORDS: 1})


def test_a_rewrite_with_the_same_order_words_is_kept_and_the_gold_is_unchanged():
    for reply in (
        'For shop "North", list the orders: which amount is the Second Largest?',
        'For shop "North", list the orders: what is the 2nd largest amount?',  # "2nd" is "second"
    ):
        task, rejected = _task(PROMPT), Counter()
        before = task.to_dict()
        assert phrase([task], _Rewriter(reply), "m", rejected=rejected) == 1 and not rejected
        assert task.prompt == reply and task.metadata["templated_prompt"] == PROMPT
        after = task.to_dict()
        for key in ("gold", "answers", "rubric"):
            assert after[key] == before[key]
        assert after["metadata"]["answer_from"] == before["metadata"]["answer_from"]


def test_a_rewrite_dropping_a_quoted_value_is_still_rejected():
    task, rejected = _task(PROMPT), Counter()
    assert phrase([task], _Rewriter("What is the second largest amount?"), "m", rejected=rejected) == 0
    assert task.prompt == PROMPT and sum(rejected.values()) == 1
