"""The pieces a task template produces before it becomes a Task: steps, answers, state changes.

A template samples entities from the world, writes a prompt, and returns a ``Draft``: the gold steps
(tool, arguments, which earlier steps feed it), the answer values computed from the world state, the
expected state changes for write tasks, and a ``recompute`` function that derives the same answers
from the tool outputs of a replay. The validator replays the steps through MCP on a fresh world and
keeps the draft only when the two computations agree.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolkit.toolbox import ToolResult


@dataclass
class Step:
    """One gold tool call. ``alternatives`` are other tools that would do the same job (rubric items
    accept them); ``checked_args`` are the arguments the rubric's query-construction item checks
    (None: all of them); ``purpose`` is a short phrase for the rubric text ("find the customer")."""

    name: str
    arguments: dict[str, Any]
    depends_on: list[int] = field(default_factory=list)
    alternatives: list[str] = field(default_factory=list)
    checked_args: list[str] | None = None
    normalize: dict[str, str] = field(default_factory=dict)
    purpose: str = ""
    produces: str = ""  # the field a later step consumes ("customer_id"), for the rubric text
    optional: bool = False  # a helpful but not required call (a calculator step): optional rubric items


@dataclass
class Answer:
    """An expected answer value. ``normalize`` is a records.py rule (number, date, name, text, exact);
    ``intermediate`` answers are facts found on the way (rubric: multi-step planning, optional)."""

    key: str
    value: Any
    normalize: str = "text"
    tolerance: float = 0.0
    text: str = ""  # "the number of open tickets is 7"
    intermediate: bool = False


@dataclass
class Draft:
    # The registered template fills ``template``, ``kind`` and (when left empty) ``servers``; the
    # helpers in templates/common.py (read, count, lookup, write) build drafts by keyword.
    template: str = ""
    kind: str = ""
    prompt: str = ""
    servers: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)
    # State checks in records.py form ({"type": "state", ...}), with the rubric text for each.
    state_changes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # A final answer that passes every answer check (the gold policy and SFT use it).
    reference_answer: str = ""
    # Answers derived from the replayed tool outputs; must equal ``answers`` for the draft to survive.
    recompute: Callable[[list[ToolResult]], dict[str, Any]] | None = None
    # Strings the prompt must keep through a paraphrase (ids, names, dates, numbers).
    keep: list[str] = field(default_factory=list)
    phrasing: str = ""  # which wording variant made the prompt ("t0", "e1": eval-only)
    world_seed: int = 0
    read_only: bool = True
    extra_rubric: list[Any] = field(default_factory=list)  # RubricItems a template adds by hand
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def chain_length(self) -> int:
        return len(self.steps)


def payload(result: ToolResult) -> Any:
    """A tool result as data: the structured content when the server sent one, else the text parsed
    as JSON, else the text itself. MCP SDK servers wrap non-object returns as {"result": value}."""
    data = result.structured
    if data is None:
        try:
            data = json.loads(result.text)
        except (TypeError, ValueError):
            return result.text
    if isinstance(data, dict) and set(data) == {"result"}:
        return data["result"]
    return data


def pick(rng: random.Random, options: Sequence[Any]) -> Any:
    """rng.choice that fails loudly on an empty sequence (a template with nothing to sample)."""
    if not options:
        raise IndexError("nothing to sample from")
    return options[rng.randrange(len(options))]


# Ways to open and close a request: real variation in wording around each template's core sentence.
OPENERS = (
    "",
    "",
    "Hi! ",
    "Quick question: ",
    "Could you help me with something? ",
    "I need some help. ",
    "Hello. ",
    "Please help: ",
)
CLOSERS = ("", "", "", " Thanks!", " Thank you.", " Thanks in advance.")


def dress(rng: random.Random, core: str) -> str:
    """Wrap a core request in a random opener and closer, fixing capitalisation."""
    opener = pick(rng, OPENERS)
    return (opener + core[0].upper() + core[1:] + pick(rng, CLOSERS)).strip()
