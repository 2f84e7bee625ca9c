"""What the gold policy says and does, from the task alone: its final answer and its trajectory.

The gold policy (``toolkit.agent.policies``), the rewards' gold replay (``toolkit.rewards.replay``), the
scripted reward-hacking policies (``toolkit.eval.adversarial``) and the study tools (``toolkit.study``)
all answer with ``gold_answer``, so a gold episode scores the same whoever wrote it.
"""

from __future__ import annotations

import copy
from typing import Any

from toolkit.records import CallRecord, Task, Trajectory


def gold_answer(task: Task) -> str:
    """What the gold policy says at the end (the one definition: the gold policy, the gold replay and
    the gold trajectory all use it): the synthesizer's reference answer when the task has one
    (``metadata["reference_answer"]``), a question back on a clarification task, else every expected
    value, labelled."""
    if task.metadata.get("reference_answer"):
        return str(task.metadata["reference_answer"])
    if any(item.check.get("type") == "clarification" for item in task.rubric):
        return "Could you tell me the missing details so I can complete this request?"
    if not task.answers:
        return "Done."
    return "; ".join(f"{key}: {value_text(value)}" for key, value in task.answers.items())


def value_text(value: Any) -> str:
    """An expected answer value as the gold answer writes it (a list or mapping flattened to text)."""
    if isinstance(value, list | tuple):
        return ", ".join(value_text(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {value_text(v)}" for k, v in value.items())
    return str(value)


def gold_trajectory(task: Task, state_diff: dict | None = None) -> Trajectory:
    """The trajectory a perfect policy produces, built from the task alone (no execution): calls =
    gold calls (all ok), answer = expected values. ``state_diff`` is the diff the gold calls cause."""
    calls = [CallRecord(name=g.name, args=copy.deepcopy(g.arguments), ok=True, result="ok", turn=g.turn, step=i)
             for i, g in enumerate(task.gold)]  # fmt: skip
    answer = gold_answer(task)
    return Trajectory(
        task_id=task.id,
        messages=[{"role": "user", "content": task.prompt}, {"role": "assistant", "content": answer}],
        calls=calls,
        final_answer=answer,
        stop_reason="finish",
        state_diff=copy.deepcopy(state_diff or {}),
        turn_answers=[answer],
        metadata={"policy": "gold"},
    )
