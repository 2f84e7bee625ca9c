"""Executing one tool call in an episode: the one place a call is checked, made and classified.

The agent loop runs every call a model makes through :func:`execute_call`, and so does every replay
that runs a script instead of a model: synthesis validating a task's gold (``toolkit.synth.replay``),
the rewards' gold and perturbation replays (``toolkit.rewards.replay``) and BFCL's gold replay
(``toolkit.synth.bfcl_tasks``). A call therefore fails the same way, with the same error kind and
message, whoever made it. The kinds (``ERROR_KINDS``):

- ``bad_json``: the arguments could not be parsed; no call is made.
- ``unknown_tool``: the name is not one of the tools the caller may call; no call is made.
- ``schema``: the arguments break the tool's JSON schema (after relaxed coercion); no call is made.
- ``timeout``: the tool did not answer in time (this executor's limit, or the episode's own).
- ``tool_error``: the tool answered an error, or raised.

A ``CallRecord`` keeps ``error = "<kind>: <message>"`` (``error_kind`` reads the kind back) and, as its
``result``, the text the model reads: the tool's output, or ``"Error (<kind>): <message>"``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from toolkit.envs.schema import check_arguments
from toolkit.records import CallRecord, Task
from toolkit.toolbox import Toolbox, ToolResult, ToolSpec, strip_enums

ERROR_KINDS = ("unknown_tool", "bad_json", "schema", "tool_error", "timeout")
TOOL_TIMEOUT_S = 30.0  # a call running longer is abandoned and reported as a timeout


@dataclass
class ExecutedCall:
    """One executed (or refused) call: its record, and what the toolbox answered."""

    record: CallRecord
    kind: str | None = None  # one of ERROR_KINDS; None when the call succeeded
    message: str = ""  # the tool's output on success, else why the call failed
    result: ToolResult | None = None  # the toolbox's answer; None when no answer came (refused, raised)

    @property
    def ok(self) -> bool:
        return self.kind is None


def error_kind(record: CallRecord) -> str | None:
    """The error kind of an executed call (one of ``ERROR_KINDS``), None when it succeeded."""
    return record.error.split(":", 1)[0] if record.error else None


def task_tools(task: Task | None, listed: Iterable[ToolSpec]) -> dict[str, ToolSpec]:
    """The tools a caller in ``task``'s episode may call, by name in the task's order: the task's
    ``tools`` that the toolbox lists (every listed tool when the task names none, or for no task),
    with their enum lists stripped for PROVE's schema variants (``metadata["strip_enums"]``): the
    tools the agent loop offers the model and checks its arguments against."""
    specs = {s.name: s for s in listed}
    names = [n for n in task.tools if n in specs] if task is not None and task.tools else list(specs)
    if task is not None and task.metadata.get("strip_enums"):
        return {n: replace(specs[n], input_schema=strip_enums(specs[n].input_schema)) for n in names}
    return {n: specs[n] for n in names}


async def execute_call(
    toolbox: Toolbox,
    name: str,
    arguments: dict[str, Any] | None,
    *,
    tools: Mapping[str, ToolSpec] | None,
    parse_error: str | None = None,
    relaxed: bool = True,
    timeout_s: float = TOOL_TIMEOUT_S,
    turn: int = 0,
    step: int = 0,
) -> ExecutedCall:
    """Check one call, make it through ``toolbox`` and classify the outcome.

    Args:
        toolbox: the episode's tools.
        name, arguments: the call.
        tools: the tools the caller may call, by name (``task_tools``); their schemas check the
            arguments. None leaves both to the toolbox (BFCL's executor runs any method of an involved
            class, even with arguments that break BFCL's own schema; a test fake that serves more
            than it lists).
        parse_error: why the arguments could not be parsed; the call is then refused as ``bad_json``.
        relaxed: coerce the arguments to the schema where unambiguous (``"3"`` -> 3 for an integer).
        timeout_s: how long the call may run.
        turn, step: where the call sits in the episode (kept on the record).
    """
    record = CallRecord(name=name, args=arguments, ok=False, turn=turn, step=step)
    result: ToolResult | None = None
    if parse_error is not None:
        kind, message = "bad_json", parse_error
    elif tools is not None and name not in tools:
        kind = "unknown_tool"
        message = f"there is no tool named {name!r}; available tools: {', '.join(tools)}"
    else:
        args, problem = arguments or {}, None
        if tools is not None:
            args, problem = check_arguments(args, tools[name].input_schema, relaxed=relaxed)
            record.args = args
        if problem is not None:
            kind, message = "schema", f"invalid arguments for {name}: {problem}"
        else:
            kind, message, result = await _invoke(toolbox, name, args, timeout_s, record)
    if kind is None:
        record.ok, record.result = True, message
    else:
        record.error, record.result = f"{kind}: {message}", f"Error ({kind}): {message}"
    return ExecutedCall(record, kind, message, result)


async def _invoke(
    toolbox: Toolbox, name: str, args: dict[str, Any], timeout_s: float, record: CallRecord
) -> tuple[str | None, str, ToolResult | None]:
    """Call the tool; returns (error kind or None, output or why it failed, the toolbox's answer)."""
    start = time.perf_counter()
    try:
        result = await asyncio.wait_for(toolbox.call_tool(name, args), timeout_s)
    except TimeoutError:
        return "timeout", f"{name} did not answer within {timeout_s:g} s", None
    except Exception as exc:  # a crashing tool is reported to the caller, the episode goes on
        return "tool_error", f"{type(exc).__name__}: {exc}", None
    finally:
        record.latency = time.perf_counter() - start
    if not result.ok:  # the episode's own timeout is reported as one, not as a tool error
        kind = "timeout" if getattr(result, "error_kind", None) == "timeout" else "tool_error"
        return kind, result.text, result
    return None, result.text, result
