"""Three small hand-written tasks with rubrics and gold state diffs, used by the rewards tests, the
benchmark and notebook 03 when no synthesized tasks are available (``data/tasks/``)."""

from __future__ import annotations

from toolkit.records import GoldCall, RubricItem, Task, Trajectory
from toolkit.rewards.gold import gold_trajectory

HELPDESK_TOOLS = ["search_tickets", "get_ticket", "get_user", "update_ticket", "get_weather"]

# Schemas for PROVE's validity check (what `envs list` would report for these tools).
TOOL_SCHEMAS = {
    "search_tickets": {"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"]},
    "get_ticket": {
        "type": "object",
        "properties": {"ticket_id": {"type": "integer"}},
        "required": ["ticket_id"],
    },
    "get_user": {"type": "object", "properties": {"user_id": {"type": "integer"}}, "required": ["user_id"]},
    "update_ticket": {
        "type": "object",
        "properties": {"ticket_id": {"type": "integer"}, "status": {"type": "string"}},
        "required": ["ticket_id", "status"],
    },
    "get_weather": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "count_tickets": {
        "type": "object",
        "properties": {"tag": {"type": "string"}, "month": {"type": "string"}},
        "required": ["tag", "month"],
    },
}


def helpdesk_task() -> Task:
    """Four dependent calls, a write, two answer values; one optional ordering item."""
    return Task(
        id="ex-helpdesk",
        split="eval",
        prompt="Find the earliest-resolved billing ticket (48), tell me when its requester last logged in, "
        "and close the ticket.",
        servers=["helpdesk", "weather"],
        tools=list(HELPDESK_TOOLS),
        seed=0,
        gold=[
            GoldCall("search_tickets", {"tag": "billing"}),
            GoldCall("get_ticket", {"ticket_id": 48}, depends_on=[0]),
            GoldCall("get_user", {"user_id": 7}, depends_on=[1]),
            GoldCall("update_ticket", {"ticket_id": 48, "status": "closed"}, depends_on=[1]),
        ],
        answers={"requester": "Mei Tan", "last_login": "2025-10-15"},
        rubric=[
            RubricItem("r1", "The model must use the search_tickets tool.", "tool_selection", True,
                       {"type": "tool_called", "tools": ["search_tickets"]}),
            RubricItem("r2", "The model must call get_ticket with ticket_id 48.", "query_construction", True,
                       {"type": "tool_args", "tools": ["get_ticket"], "args": {"ticket_id": 48}}),
            RubricItem("r3", "The model must identify that the requester is 'Mei Tan'.", "multi_step_planning", True,
                       {"type": "answer", "value": "Mei Tan", "normalize": "name"}),
            RubricItem("r4", "The model must state the last login date 2025-10-15.", "answer_correctness", True,
                       {"type": "answer", "value": "2025-10-15", "normalize": "date"}),
            RubricItem("r5", "The model must set ticket 48 to 'closed'.", "multi_step_planning", True,
                       {"type": "state", "collection": "tickets", "key": "48", "field": "status",
                        "value": "closed", "op": "update"}),
            RubricItem("r6", "The model should read the ticket (get_ticket) before update_ticket.",
                       "multi_step_planning", False,
                       {"type": "order", "first": ["get_ticket"], "then": ["update_ticket"]}),
        ],
        metadata={"kind": "example", "chain_length": 4},
    )  # fmt: skip


HELPDESK_DIFF = {
    "tickets/48": {"before": {"id": 48, "status": "open"}, "after": {"id": 48, "status": "closed"}}
}


def count_task() -> Task:
    """Two calls to one tool and a numeric answer (a percentage change)."""
    return Task(
        id="ex-count",
        split="eval",
        prompt="How did the number of billing tickets change from October to November 2025, in percent?",
        servers=["helpdesk"],
        tools=["count_tickets", "search_tickets", "get_weather"],
        seed=0,
        gold=[
            GoldCall("count_tickets", {"tag": "billing", "month": "2025-10"}),
            GoldCall("count_tickets", {"tag": "billing", "month": "2025-11"}),
        ],
        answers={"change_percent": "-25%"},
        rubric=[
            RubricItem("c1", "The model must call count_tickets twice.", "tool_selection", True,
                       {"type": "tool_called", "tools": ["count_tickets"], "min_times": 2}),
            RubricItem("c2", "The model must count billing tickets for month '2025-11'.", "query_construction",
                       True, {"type": "tool_args", "tools": ["count_tickets"],
                              "args": {"tag": "billing", "month": "2025-11"}}),
            RubricItem("c3", "The model's answer must state a change of -25%.", "answer_correctness", True,
                       {"type": "answer", "value": -25, "normalize": "number", "tolerance": 0.5}),
        ],
        metadata={"kind": "example", "chain_length": 2},
    )  # fmt: skip


def abstain_task() -> Task:
    """Nothing to call: the right move is to answer without tools."""
    return Task(
        id="ex-abstain",
        split="eval",
        prompt="Write me a haiku about autumn.",
        servers=["helpdesk"],
        tools=["search_tickets", "get_weather"],
        seed=0,
        gold=[],
        answers={},
        rubric=[
            RubricItem("a1", "The model must not call any tool.", "tool_selection", True, {"type": "no_tool_calls"}),
            RubricItem("a2", "The model must not change any record.", "multi_step_planning", True,
                       {"type": "no_state_change"}),
        ],
        metadata={"kind": "abstain"},
    )  # fmt: skip


def example_tasks() -> list[Task]:
    return [helpdesk_task(), count_task(), abstain_task()]


def example_gold(task: Task) -> Trajectory:
    """The gold trajectory for one of the example tasks, with its state diff."""
    return gold_trajectory(task, HELPDESK_DIFF if task.id == "ex-helpdesk" else {})
