"""Finished reward: 1.0 when the episode ended with a reply to the user, 0.0 when it ran out of turns or
tokens, or failed.

Why a separate term: the rubric credits a tool or an argument as soon as any call gets it right, so on
the CPU proof GRPO learned to keep calling until the turn cap (calls per episode 1.0 -> 2.9, finish rate
0.88 -> 0.13 within 17 steps, docs/cpu-proof/README.md, run 5), and such an episode never answers. With
this term at weight 0.5 (run 6) the drift stopped, but nothing else was learned either, so the shipped
``cpu-demo`` recipe does not use it. A reply is a call to the loop's ``finish`` tool or a plain-text turn
without a tool call (``stop_reason``).
"""

from __future__ import annotations

from toolkit.records import RewardResult, Task, Trajectory
from toolkit.rewards.base import Reward

REPLIED = ("finish", "no_tool_call")


class FinishedReward(Reward):
    """1.0 if the episode stopped with a reply (``finish`` or a turn without a tool call), else 0.0."""

    name = "finished"
    range = (0.0, 1.0)

    def score(self, task: Task, traj: Trajectory) -> RewardResult:
        replied = traj.stop_reason in REPLIED
        return RewardResult(float(replied), {}, {"stop_reason": traj.stop_reason})
