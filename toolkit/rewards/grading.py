"""The grading types every rubric grader speaks: a verdict per rubric item, and the grader interface.

``toolkit.rewards.rubric.ProgrammaticGrader`` and ``toolkit.rewards.judge.JudgeGrader`` both return
``list[ItemGrade]`` (one per item); the rubric reward and MCP-Atlas claim scoring read them. They live
here, below both graders, so neither grader imports the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from toolkit.records import Task, Trajectory

Verdict = Literal["pass", "partial", "fail"]
VERDICT_CREDIT = {"pass": 1.0, "partial": 0.5, "fail": 0.0}


@dataclass
class ItemGrade:
    id: str
    verdict: Verdict | None  # None: ungraded (judge reply missing or malformed)
    reason: str = ""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


class Grader(Protocol):
    name: str

    def grade(self, task: Task, traj: Trajectory) -> list[ItemGrade]: ...

    def grade_many(self, pairs: Sequence[tuple[Task, Trajectory]]) -> list[list[ItemGrade]]: ...
