"""Small stand-ins for tests and benchmarks: an in-memory Toolbox and a scripted policy.

They exercise the real loop (parsing, validation, truncation, token bookkeeping, batching) without
MCP servers or a model.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from toolkit.agent.chat import ChatFormat
from toolkit.agent.policies import Generation, GenerationRequest
from toolkit.records import Task, Trajectory
from toolkit.toolbox import ToolResult, ToolSpec

NOTES_TOOLS = [
    ToolSpec(
        "add",
        "Add two integers.",
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
        server="calc",
    ),
    ToolSpec(
        "save_note",
        "Save a note under a key.",
        {
            "type": "object",
            "properties": {"key": {"type": "string"}, "text": {"type": "string"}},
            "required": ["key", "text"],
        },
        server="notes",
    ),
    ToolSpec(
        "dump",
        "Return a long text of n words.",
        {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        server="notes",
    ),
    ToolSpec("fail", "Always fails.", {"type": "object", "properties": {}}, server="notes"),
    ToolSpec(
        "slow",
        "Sleeps for s seconds.",
        {"type": "object", "properties": {"s": {"type": "number"}}},
        server="notes",
    ),
]
# Two more ways a call fails, offered only where a test passes them: a tool that raises (a crashing
# client) and one whose episode answers its own timeout (``ToolResult.error_kind``), as an MCP episode does.
FAILING_TOOLS = [
    ToolSpec("crash", "Raises.", {"type": "object", "properties": {}}, server="notes"),
    ToolSpec("stall", "Never answers in time.", {"type": "object", "properties": {}}, server="notes"),
]


class FakeToolbox:
    """An in-memory Toolbox over a dict world ``{"notes": {key: {"text": ...}}}`` with the tools above."""

    def __init__(self, tools: list[ToolSpec] | None = None, allowed: set[str] | None = None):
        specs = tools if tools is not None else NOTES_TOOLS
        self.tools = [t for t in specs if allowed is None or t.name in allowed]
        self.state: dict[str, dict[str, Any]] = {"notes": {}}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.closed = False

    async def list_tools(self) -> list[ToolSpec]:
        return list(self.tools)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append((name, copy.deepcopy(arguments)))
        if name == "add":
            return ToolResult(True, str(arguments["a"] + arguments["b"]))
        if name == "save_note":
            self.state["notes"][arguments["key"]] = {"text": arguments["text"]}
            return ToolResult(True, json.dumps({"saved": arguments["key"]}))
        if name == "dump":
            return ToolResult(True, " ".join(f"word{i}" for i in range(int(arguments["n"]))))
        if name == "fail":
            return ToolResult(False, "Error executing tool fail: it always fails")
        if name == "slow":
            await asyncio.sleep(float(arguments.get("s", 1.0)))
            return ToolResult(True, "slept")
        if name == "crash":
            raise RuntimeError("the connection dropped")
        if name == "stall":
            return ToolResult(False, "timeout: 'stall' did not answer within 30 s", error_kind="timeout")
        return ToolResult(False, f"unknown tool {name}")

    def state_diff(self) -> dict[str, Any]:
        return {f"notes/{k}": {"before": None, "after": v} for k, v in self.state["notes"].items()}

    async def aclose(self) -> None:
        self.closed = True


def fake_opener(tools: list[ToolSpec] | None = None) -> Callable[[Task], Any]:
    """An ``open_episode`` replacement yielding a fresh FakeToolbox per episode (restricted to task.tools)."""

    @asynccontextmanager
    async def open_episode(task: Task) -> AsyncIterator[FakeToolbox]:
        box = FakeToolbox(tools, set(task.tools) if task.tools else None)
        try:
            yield box
        finally:
            await box.aclose()

    return open_episode


class ScriptedPolicy:
    """Plays scripted model turns. ``script(request) -> str`` gives the text of each turn; with a
    ``tokenizer`` the text is tokenized and returned as sampled ids (ending with eos unless the text
    is longer than ``max_new_tokens``), so the loop's token bookkeeping runs for real."""

    def __init__(
        self, script: Callable[[GenerationRequest], str], tokenizer: Any = None, name: str = "scripted"
    ):
        self.script = script
        self.tokenizer = tokenizer
        self.name = name
        self.batch_sizes: list[int] = []

    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        self.batch_sizes.append(len(requests))
        out = []
        for req in requests:
            text = self.script(req)
            if self.tokenizer is None:
                out.append(Generation(text=text))
                continue
            ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
            if len(ids) >= req.max_new_tokens:
                ids = ids[: req.max_new_tokens]
                out.append(Generation(token_ids=ids, logprobs=[-1.0] * len(ids), finish_reason="length"))
            else:
                ids.append(self.tokenizer.eos_token_id)
                out.append(Generation(token_ids=ids, logprobs=[-1.0] * len(ids)))
        return out


def turns(*texts: str) -> Callable[[GenerationRequest], str]:
    """A script that plays ``texts`` in order per episode (by step), then repeats the last one."""

    def script(req: GenerationRequest) -> str:
        return texts[min(req.step, len(texts) - 1)]

    return script


def check_token_exact(traj: Trajectory, tokenizer: Any) -> None:
    """Assert a token-level trajectory is exact: prompt_ids + completion_ids decode to the rendered
    conversation, and the mask-1 runs are exactly the model's turns (raw text + end-of-turn token)."""
    fmt = ChatFormat(tokenizer)
    eos = tokenizer.eos_token
    decoded = fmt.decode(traj.prompt_ids + traj.completion_ids)
    rendered = fmt.transcript(traj.messages, traj.metadata["tools"])
    assert fmt.decode(traj.prompt_ids) == fmt.prompt_text(traj.messages[:2], traj.metadata["tools"]), "prompt"
    assert rendered.startswith(decoded), "ids do not decode to the rendered conversation"
    cut = bool(traj.completion_ids) and traj.completion_ids[-1] != tokenizer.eos_token_id
    if traj.messages[-1]["role"] != "assistant":
        expected_tail = ""  # closed after the environment's last message, no dangling generation prompt
    else:
        expected_tail = eos + "\n" if cut else "\n"  # the template closes the final model turn
    assert rendered[len(decoded) :] == expected_tail, f"tail {rendered[len(decoded) :]!r}"
    runs, current = [], []
    for token, mask in zip(traj.completion_ids, traj.completion_mask, strict=True):
        if mask:
            current.append(token)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    raws = [m["raw"] for m in traj.messages if m["role"] == "assistant"]
    expected = [raw + eos for raw in raws]
    if cut and traj.messages[-1]["role"] == "assistant":
        expected[-1] = raws[-1]
    assert [fmt.decode(r) for r in runs] == expected, "mask-1 runs are not the model's turns"
    assert len(traj.logprobs) == len(traj.completion_ids) == len(traj.completion_mask)
    assert all(lp == 0.0 for lp, m in zip(traj.logprobs, traj.completion_mask, strict=True) if not m)
