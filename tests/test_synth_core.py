"""Synthesis machinery on small hand-made inputs: graph inference, rubric layout, dedup, replay
validation against a fake Toolbox, the datasets loader, paraphrase acceptance, config presets."""

from __future__ import annotations

import asyncio
import json
import random
from contextlib import asynccontextmanager
from types import SimpleNamespace

import pytest

from toolkit.records import RecordError, Task, write_jsonl
from toolkit.synth.base import Answer, Draft, Step, payload
from toolkit.synth.config import make_config
from toolkit.synth.dataset import load_tasks_dataset, task_from_row
from toolkit.synth.dedup import remove_near_duplicates
from toolkit.synth.graph import build_graph, foreign_keys, id_entity, singular
from toolkit.synth.paraphrase import paraphrase
from toolkit.synth.replay import replay_task, state_check_passes, validate_tasks
from toolkit.synth.rubric import build_rubric
from toolkit.toolbox import ToolResult, ToolSpec


def spec(name: str, server: str, *params: str, required: tuple[str, ...] = ()) -> ToolSpec:
    props = {p: {"type": "string"} for p in params}
    return ToolSpec(
        name, name, {"type": "object", "properties": props, "required": list(required)}, server=server
    )


SPECS = [
    spec("search_tickets", "helpdesk", "query", "requester_id"),
    spec("view_ticket", "helpdesk", "ticket_id", required=("ticket_id",)),
    spec("get_contact", "crm", "contact_id", required=("contact_id",)),
    spec("search_companies", "crm", "query"),
    spec("get_company", "crm", "company_id", required=("company_id",)),
    spec("add", "calculator", "a", "b"),
]
WORLD = {
    "tickets": {"t-1": {"id": "t-1", "requester_id": "cu-1", "status": "open"}},
    "customers": {"cu-1": {"id": "cu-1", "company_id": "co-1", "name": "Ann Lee"}},
    "companies": {"co-1": {"id": "co-1", "name": "Acme"}},
}


def test_names_and_foreign_keys():
    assert (
        singular("companies") == "company"
        and singular("tickets") == "ticket"
        and singular("status") == "status"
    )
    assert id_entity("customer_ids") == "customer" and id_entity("query") is None
    fks = foreign_keys(WORLD)
    assert fks[("tickets", "requester_id")] == "customers"
    assert fks[("customers", "company_id")] == "companies"
    assert ("tickets", "status") not in fks


def test_graph_inference_sources():
    graph = build_graph(
        SPECS,
        world=WORLD,
        getters={"customers": ("get_contact", "contact_id")},
        declared=[("search_tickets", "view_ticket", "ticket_id")],
    )
    # declared wins over the name-inferred edge for the same triple
    assert [e.source for e in graph.successors("search_tickets") if e.consumer == "view_ticket"] == [
        "declared"
    ]
    # name: search_companies produces company_id, which get_company takes
    assert graph.has_edge("search_companies", "get_company")
    # state: a ticket's requester_id is a customer key; the explicit getter maps customers to contact_id
    assert any(e.source == "state" and e.field == "contact_id" for e in graph.successors("view_ticket"))
    # state: a customer record's company_id feeds get_company
    assert graph.has_edge("get_contact", "get_company")
    assert not graph.predecessors("add")
    assert "view_ticket" in graph.format_text() and graph.counts()["declared"] == 1
    walk = graph.random_walk(random.Random(3), 3, start="search_tickets")
    assert walk and walk[0].producer == "search_tickets"
    assert walk == graph.random_walk(random.Random(3), 3, start="search_tickets")
    assert len({e.consumer for e in walk}) == len(walk)  # no tool repeats


def _draft(kind: str = "lookup") -> Draft:
    return Draft(
        template="t",
        kind=kind,
        prompt="Who raised ticket t-1 and what company are they with?",
        servers=["helpdesk", "crm"],
        steps=[
            Step(
                "view_ticket", {"ticket_id": "t-1"}, produces="requester_id", alternatives=["search_tickets"]
            ),
            Step("get_contact", {"contact_id": "cu-1"}, depends_on=[0], normalize={"contact_id": "text"}),
        ],
        answers=[
            Answer("requester", "Ann Lee", "name", intermediate=True),
            Answer("company_id", "co-1", "text"),
        ],
    )


def test_rubric_categories_and_checks():
    items = build_rubric(_draft())
    cats = [i.category for i in items]
    assert cats == sorted(
        cats, key=["tool_selection", "query_construction", "multi_step_planning", "answer_correctness"].index
    )
    assert [i.id for i in items] == [f"r{k}" for k in range(1, len(items) + 1)]
    by_type = {}
    for i in items:
        by_type.setdefault(i.check["type"], i)
    assert by_type["tool_called"].check["tools"] == ["view_ticket", "search_tickets"]
    assert "Alternatively" in by_type["tool_called"].text
    order = by_type["order"]
    assert (
        order.category == "multi_step_planning" and order.essential and order.check["then"] == ["get_contact"]
    )
    answers = [i for i in items if i.check["type"] == "answer"]
    assert {(a.check["value"], a.essential, a.category) for a in answers} == {
        ("Ann Lee", False, "multi_step_planning"),
        ("co-1", True, "answer_correctness"),
    }
    assert by_type["no_state_change"].essential is False
    args = [i for i in items if i.check["type"] == "tool_args"]
    assert args[1].check["normalize"] == {"contact_id": "text"}
    clarify = build_rubric(Draft("c", "clarify", "Close my ticket", ["helpdesk"], []))
    assert {i.check["type"] for i in clarify} == {"clarification", "no_state_change"}
    assert all(i.essential for i in clarify)


def _task(prompt: str, gold_args: dict, template: str = "t") -> Task:
    d = _draft()
    d.prompt = prompt
    d.steps[0].arguments = gold_args
    from toolkit.records import GoldCall

    return Task(
        id="x",
        split="train",
        prompt=prompt,
        servers=d.servers,
        tools=["view_ticket", "get_contact"],
        seed=0,
        gold=[GoldCall(s.name, s.arguments, s.depends_on) for s in d.steps],
        answers={"company_id": "co-1"},
        rubric=build_rubric(d),
        metadata={"template": template},
    )


def test_dedup_same_gold_and_near_identical_prompts():
    a = _task("Who raised ticket t-1 and what company are they with?", {"ticket_id": "t-1"})
    b = _task("Tell me who raised ticket t-1, and their company.", {"ticket_id": "t-1"})  # same gold
    c = _task("Who raised ticket t-2 and what company are they with?", {"ticket_id": "t-2"})
    d = _task(
        "Who raised ticket t-1 and what company are they with??", {"ticket_id": "t-9"}
    )  # near-identical
    e = _task("Who raised ticket t-1 and what company are they with?", {"ticket_id": "t-9"}, template="other")
    kept, dropped = remove_near_duplicates([a, b, c, d, e], threshold=0.9)
    assert kept == [a, c, e] and dropped == 2


class FakeToolbox:
    """A Toolbox over a dict world: view_ticket, get_contact, set_status (a write)."""

    def __init__(self, world: dict, fail: str = ""):
        self.world = json.loads(json.dumps(world))
        self.changed: dict = {}
        self.fail = fail

    async def list_tools(self):
        return SPECS

    async def call_tool(self, name, arguments):
        if name == self.fail:
            return ToolResult(False, "boom")
        if name == "view_ticket":
            rec = self.world["tickets"].get(arguments["ticket_id"])
        elif name == "get_contact":
            rec = self.world["customers"].get(arguments["contact_id"])
        elif name == "set_status":
            before = dict(self.world["tickets"]["t-1"])
            self.world["tickets"]["t-1"]["status"] = arguments["status"]
            self.changed["tickets/t-1"] = {"before": before, "after": self.world["tickets"]["t-1"]}
            rec = self.world["tickets"]["t-1"]
        else:
            return ToolResult(False, f"unknown tool {name}")
        if rec is None:
            return ToolResult(False, "not found")
        return ToolResult(True, json.dumps(rec), structured=rec)

    def state_diff(self):
        return self.changed

    async def aclose(self):
        pass


def test_replay_checks_calls_answers_and_state():
    task = _task("q", {"ticket_id": "t-1"})

    def recompute(results):
        return {"company_id": payload(results[1])["company_id"]}

    ok = asyncio.run(replay_task(task, FakeToolbox(WORLD), recompute))
    assert ok.ok, ok.detail
    failed = asyncio.run(replay_task(task, FakeToolbox(WORLD, fail="get_contact"), recompute))
    assert not failed.ok and failed.reason == "call_failed"
    wrong = asyncio.run(replay_task(task, FakeToolbox(WORLD), lambda r: {"company_id": "co-2"}))
    assert wrong.reason == "answer_mismatch"
    # a write task: the state item must show up in the diff
    from toolkit.records import GoldCall, RubricItem

    check = {
        "type": "state",
        "collection": "tickets",
        "key": "t-1",
        "field": "status",
        "value": "solved",
        "op": "update",
    }
    write = Task(
        "w",
        "train",
        "solve t-1",
        ["helpdesk"],
        ["set_status"],
        0,
        gold=[GoldCall("set_status", {"status": "solved"})],
    )
    write.rubric = [RubricItem("r1", "solved", "answer_correctness", True, check)]
    assert asyncio.run(replay_task(write, FakeToolbox(WORLD))).ok
    write.gold[0].arguments = {"status": "pending"}
    assert asyncio.run(replay_task(write, FakeToolbox(WORLD))).reason == "state_mismatch"
    # a read-only task whose gold writes is dropped
    task.gold[0] = GoldCall("set_status", {"status": "open"})
    assert asyncio.run(replay_task(task, FakeToolbox(WORLD))).reason == "unexpected_write"


def test_state_check_ops():
    diff = {
        "tickets/t-9": {"before": None, "after": {"status": "new"}},
        "tickets/t-1": {"before": {"a": 1}, "after": None},
    }
    assert state_check_passes(
        {
            "type": "state",
            "collection": "tickets",
            "key": "t-9",
            "op": "create",
            "field": "status",
            "value": "new",
        },
        diff,
    )
    assert not state_check_passes(
        {"type": "state", "collection": "tickets", "key": "t-9", "op": "update"}, diff
    )
    assert state_check_passes({"type": "state", "collection": "tickets", "key": "t-1", "op": "delete"}, diff)
    assert not state_check_passes({"type": "no_state_change"}, diff) and state_check_passes(
        {"type": "no_state_change"}, {}
    )


def test_validate_tasks_keeps_order_and_counts_drops():
    tasks = [
        _task("a", {"ticket_id": "t-1"}),
        _task("b", {"ticket_id": "t-404"}),
        _task("c", {"ticket_id": "t-1"}),
    ]

    @asynccontextmanager
    async def open_episode(task):
        yield FakeToolbox(WORLD)

    ok, drops, details = asyncio.run(validate_tasks(tasks, open_episode, concurrency=2))
    assert ok == [True, False, True] and drops == {"call_failed": 1} and "not found" in details[1]


def test_dataset_loader_round_trip(tmp_path):
    tasks = [_task("first prompt", {"ticket_id": "t-1"}), _task("second", {"ticket_id": "t-2"})]
    tasks[0].metadata["kind"] = "lookup"
    write_jsonl(tmp_path / "train.jsonl", tasks)
    ds = load_tasks_dataset(tmp_path)
    assert ds.column_names == ["prompt", "task", "id", "kind", "split"] and len(ds) == 2
    assert ds[0]["prompt"] == [{"role": "user", "content": "first prompt"}]
    assert task_from_row(ds[1]) == tasks[1]
    assert len(load_tasks_dataset(tmp_path / "train.jsonl", kinds=["lookup"])) == 1
    (tmp_path / "bad.jsonl").write_text('{"id": "x"}\n')
    with pytest.raises(RecordError, match="bad.jsonl:1"):
        load_tasks_dataset(tmp_path / "bad.jsonl")


def test_paraphrase_keeps_grounded_strings():
    def client(reply: str | Exception):
        def create(**kw):
            if isinstance(reply, Exception):
                raise reply
            return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=reply))])

        return SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))

    prompt = "How many open tickets does Ann Lee have?"
    assert paraphrase(prompt, ["Ann Lee"], client("Count Ann Lee's open tickets."), "m") == (
        "Count Ann Lee's open tickets.",
        True,
    )
    assert paraphrase(prompt, ["Ann Lee"], client("Count her open tickets."), "m") == (prompt, False)
    assert paraphrase(prompt, ["Ann Lee"], client(RuntimeError("down")), "m") == (prompt, False)


def test_config_presets():
    cpu = make_config("cpu", n_train=5)
    assert cpu.max_calls == 2 and cpu.max_distractors <= 3 and cpu.n_train == 5
    assert make_config("default", max_calls=None).max_calls == make_config().max_calls
    with pytest.raises(ValueError, match="preset"):
        make_config("nope")
    with pytest.raises(ValueError, match="min_calls"):
        make_config(min_calls=3, max_calls=2)
