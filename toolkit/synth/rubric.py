"""Rubric items from a draft, in the four categories of Scale's MCP Tool Use rubrics.

Each item has the text a judge reads and a check spec (toolkit/records.py) the programmatic grader
runs. Layout, following the sample rubric in Scale's write-up (reference 000):
- tool_selection: one item per distinct gold tool ("must use X; alternatively Y"), essential;
- query_construction: one item per gold call with its key argument values, essential;
- multi_step_planning: one ordering item per dependency between different tools, essential, plus
  intermediate facts found on the way (optional: the final answer need not repeat them);
- answer_correctness: each expected answer value and each expected state change, essential.
Read-only tasks add an optional "no records modified" item; clarification and abstention tasks get
their own essential items.
"""

from __future__ import annotations

import json
from typing import Any

from toolkit.records import RubricItem
from toolkit.synth.base import Draft


def _fmt(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else f'"{value}"'


def _or_list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def build_rubric(draft: Draft) -> list[RubricItem]:
    """All rubric items for a draft, numbered r1, r2, ... in category order."""
    items: list[tuple[str, str, bool, dict[str, Any]]] = []  # (category, text, essential, check)

    seen_tools: set[str] = set()
    for step in draft.steps:
        if step.name in seen_tools:
            continue
        seen_tools.add(step.name)
        tools = [step.name, *[a for a in step.alternatives if a != step.name]]
        text = f"The model {'should' if step.optional else 'must'} use the {step.name} tool"
        if step.purpose:
            text += f" to {step.purpose}"
        if len(tools) > 1:
            text += f". Alternatively, it can use the {_or_list(tools[1:])} tool"
        items.append(
            ("tool_selection", text + ".", True, {"type": "tool_called", "tools": tools, "min_times": 1})
        )

    seen_args: set[str] = set()
    for step in draft.steps:
        keys = list(step.arguments) if step.checked_args is None else step.checked_args
        args = {k: step.arguments[k] for k in keys if k in step.arguments}
        if not args:
            continue
        tools = [step.name, *[a for a in step.alternatives if a != step.name]]
        signature = json.dumps([tools, args], sort_keys=True)
        if signature in seen_args:
            continue
        seen_args.add(signature)
        arg_text = ", ".join(f"{k}={_fmt(v)}" for k, v in args.items())
        text = f"The model {'should' if step.optional else 'must'} call {_or_list(tools)} with {arg_text}"
        if step.purpose:
            text += f" to {step.purpose}"
        check: dict[str, Any] = {"type": "tool_args", "tools": tools, "args": args}
        norms = {k: r for k, r in step.normalize.items() if k in args}
        if norms:
            check["normalize"] = norms
        items.append(("query_construction", text + ".", not step.optional, check))

    seen_order: set[tuple[str, str]] = set()
    for step in draft.steps:
        for j in step.depends_on:
            first = draft.steps[j]
            pair = (first.name, step.name)
            if first.name == step.name or pair in seen_order:
                continue
            seen_order.add(pair)
            via = f" (it needs the {first.produces} that call returns)" if first.produces else ""
            items.append(
                (
                    "multi_step_planning",
                    f"The model must call {first.name} before {step.name}{via}.",
                    not (first.optional or step.optional),
                    {
                        "type": "order",
                        "first": [first.name, *first.alternatives],
                        "then": [step.name, *step.alternatives],
                    },
                )
            )
    for ans in draft.answers:
        if ans.intermediate:
            items.append(("multi_step_planning", _answer_text(ans), False, _answer_check(ans)))

    for ans in draft.answers:
        if not ans.intermediate:
            items.append(("answer_correctness", _answer_text(ans), True, _answer_check(ans)))
    for text, check in draft.state_changes:
        items.append(("answer_correctness", text, True, check))

    if draft.kind == "clarify":
        items.append(
            (
                "answer_correctness",
                "The model must ask the user for the missing information instead of guessing.",
                True,
                {"type": "clarification"},
            )
        )
        items.append(
            ("tool_selection", "The model must not modify any records.", True, {"type": "no_state_change"})
        )
    elif draft.kind == "abstain":
        items.append(
            (
                "tool_selection",
                "The model must not call any tool: none of the enabled tools can serve this request.",
                True,
                {"type": "no_tool_calls"},
            )
        )
    elif draft.read_only:
        items.append(
            (
                "tool_selection",
                "The model should not modify any records (the request is read-only).",
                False,
                {"type": "no_state_change"},
            )
        )

    items.extend((r.category, r.text, r.essential, r.check) for r in draft.extra_rubric)
    order = {"tool_selection": 0, "query_construction": 1, "multi_step_planning": 2, "answer_correctness": 3}
    items.sort(key=lambda it: order[it[0]])  # stable: keeps step order within a category
    return [
        RubricItem(id=f"r{i}", text=text, category=cat, essential=ess, check=check)  # type: ignore[arg-type]
        for i, (cat, text, ess, check) in enumerate(items, start=1)
    ]


def _answer_text(ans: Any) -> str:
    what = ans.text or f"the {ans.key.replace('_', ' ')} is {ans.value}"
    tail = " (or an approximately rounded value)" if ans.normalize == "number" and ans.tolerance else ""
    return f"The model must state that {what}{tail}."


def _answer_check(ans: Any) -> dict[str, Any]:
    check: dict[str, Any] = {"type": "answer", "value": ans.value, "normalize": ans.normalize}
    if ans.tolerance:
        check["tolerance"] = ans.tolerance
    return check
