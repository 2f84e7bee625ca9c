"""Writes published.csv: records in MCP-Atlas's published format (the columns of the paper's
public_split.csv; TRAJECTORY as OpenAI-style messages with the tool outputs; claims as a Python list
literal in some records and JSON in others; `<server>_<tool>` names; distractors from servers that are
not here). The recorded outputs are what the npm filesystem/memory servers and the kit's helpdesk
server return, except fs-2's, which is data MCP-Atlas's environment has and this machine does not.

    python tests/data/atlas/make_published.py
"""

import csv
import json
from pathlib import Path


def call(i, name, args, output):
    cid = f"id-{i}"
    fn = {"name": name, "arguments": json.dumps(args, indent=2)}
    return [
        {
            "role": "assistant",
            "content": f"I will use {name}.",
            "tool_calls": [{"id": cid, "type": "function", "function": fn}],
        },
        {"role": "tool", "tool_call_id": cid, "content": [{"type": "text", "text": output}]},
    ]


def final(text):
    return {"role": "assistant", "content": text}


MEM = [{"name": "Acme Robotics", "entityType": "company", "observations": ["customer since 2023"]}]
PET = "Week,Profit\n1,6000\n2,6500\n3,6446.2\n"
RECORDS = [
    (
        "fs-1",
        [
            "filesystem_write_file",
            "filesystem_read_text_file",
            "brave-search_brave_web_search",
            "calculator_calculate",
        ],
        "Save a file notes.txt with the text hello atlas, then read it back and tell me what it says.",
        call(
            1,
            "filesystem_write_file",
            {"path": "notes.txt", "content": "hello atlas"},
            "Successfully wrote to notes.txt",
        )
        + call(2, "filesystem_read_text_file", {"path": "notes.txt"}, "hello atlas")
        + [final("The file notes.txt says:\nhello atlas")],
        "['The file notes.txt contains \"hello atlas\".']",
    ),
    (
        "fs-2",
        ["filesystem_read_text_file", "filesystem_list_directory", "exa_web_search_exa"],
        "What was the profit in week 3 at the pet store? The file is in /data.",
        call(1, "filesystem_read_text_file", {"path": "/data/Pet Care 2023 Weekly Financials.csv"}, PET)
        + [final("Week 3's profit was $6446.2.")],
        "['The profit in week 3 was 6446.2.']",
    ),
    (
        "mem-1",
        ["memory_create_entities", "memory_search_nodes", "memory_read_graph", "slack_post_message"],
        "Remember that Acme Robotics is a company that has been a customer since 2023, then look it up.",
        call(1, "memory_create_entities", {"entities": MEM}, json.dumps(MEM, indent=2))
        + call(
            2,
            "memory_search_nodes",
            {"query": "Acme"},
            json.dumps({"entities": MEM, "relations": []}, indent=2),
        )
        + [final("Acme Robotics is stored as a company; its observation: 'customer since 2023'.")],
        json.dumps(
            ["'Acme Robotics' is stored as a 'company'.", "Its observation says 'customer since 2023'."]
        ),
    ),
    (
        "kit-1",
        ["helpdesk_view_ticket", "helpdesk_search_tickets", "github_search_repositories"],
        "What are the status and the priority of support ticket t-1001?",
        call(
            1,
            "helpdesk_view_ticket",
            {"ticket_id": "t-1001"},
            '{"id": "t-1001", "subject": "Invoice shows wrong amount", "requester_id": "cu-009", "company_id": "co-001", "assignee_id": "st-002", "status": "closed", "priority": "high", "channel": "web", "tags": ["billing", "invoice"], "comments": [{"author_id": "cu-009", "body": "Invoice shows wrong amount. Please help.", "at": "2025-09-16T15:00", "public": true}, {"author_id": "st-002", "body": "Looking into this now.", "at": "2025-09-17T14:00", "public": true}], "status_history": [{"status": "new", "at": "2025-09-16T15:00", "by": "cu-009"}, {"status": "open", "at": "2025-09-17T14:00", "by": "st-002"}, {"status": "pending", "at": "2025-09-19T13:00", "by": "st-002"}, {"status": "solved", "at": "2025-09-20T20:00", "by": "st-002"}, {"status": "closed", "at": "2025-09-22T09:00", "by": "st-002"}], "satisfaction": null, "created": "2025-09-16T15:00", "updated": "2025-09-22T09:00"}',
        )
        + [final("Ticket t-1001 is 'closed' with priority 'high'.")],
        "[\"Ticket 't-1001' has status 'closed'.\", \"Ticket 't-1001' has priority 'high'.\"]",
    ),
    (
        "gh-1",
        ["github_search_repositories", "filesystem_read_text_file"],
        "Find the repository modelcontextprotocol/servers on GitHub and tell me its star count.",
        call(1, "github_search_repositories", {"query": "modelcontextprotocol/servers"}, '{"total_count": 1}')
        + [final("It has 1 result.")],
        "['The search finds 1 repository.']",
    ),
    (
        "calc-1",
        ["calculator_calculate", "wikipedia_search_wikipedia"],
        "What is 12 times 7?",
        call(1, "calculator_calculate", {"expression": "12*7"}, "84") + [final("12 times 7 is 84.")],
        "['12 times 7 is 84.']",
    ),
    (
        "broken-1",
        ["broken_ping", "memory_read_graph"],
        "Ping the service.",
        call(1, "broken_ping", {}, "pong") + [final("It answered pong.")],
        "['The service answered \"pong\".']",
    ),
]


def main() -> None:
    out = Path(__file__).with_name("published.csv")
    cols = [
        "TASK",
        "PROMPT",
        "ENABLED_TOOLS",
        "TRAJECTORY",
        "GTFA",
        "GTFA_CLAIMS",
        "SPLIT",
        "REQUIRED_TOOLS",
        "REQUIRED_SERVERS",
    ]
    with out.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, cols)
        w.writeheader()
        for task, tools, prompt, traj, claims in RECORDS:
            calls = [tc["function"]["name"] for m in traj for tc in m.get("tool_calls", [])]
            w.writerow({
                "TASK": task, "PROMPT": prompt, "ENABLED_TOOLS": json.dumps(tools), "TRAJECTORY": json.dumps(traj),
                "GTFA": traj[-1]["content"], "GTFA_CLAIMS": claims, "SPLIT": "public",
                "REQUIRED_TOOLS": json.dumps(sorted(set(calls))),
                "REQUIRED_SERVERS": json.dumps(sorted({c.split("_", 1)[0] for c in calls})),
            })  # fmt: skip
    print(out)


if __name__ == "__main__":
    main()
