"""The kit's earlier variant of PROVE's reward, kept under its own name ``prove-kit`` (the CPU proof's
recipe, cpu-demo, trains on it; ``toolkit.rewards.prove`` has the reward as PROVE, arXiv 2606.03892,
publishes it). It differs from the published one in four ways: it is normalised (the applicable
weights average to a score with maximum 1.0, then the efficiency penalty is added at weight 1); the
weights of precision and argument match are swapped (0.15 / 0.2) and abstention is a weighted component
(0.1); a gold step whose dependency is unmatched stays unmatched; argument values match
case/whitespace-insensitively ("Closed " == "closed"). Components, each in [0, 1] unless stated:

- validity: mean over the model's calls of 1/3 (name in the tool schema), 2/3 (plus every required
  parameter present with a compatible type), 1 (plus the call executed without error);
- coverage (dependency-aware): share of gold steps matched by a call with the same name that carries
  all the gold argument keys, placed after the calls matched to the steps it depends on
  (``GoldCall.depends_on``); one call matches at most one step;
- efficiency penalty in (-inf, 0]: ``-alpha * max(0, n - B) / B`` with ``B = n_gold + ceil(n_gold * beta)``;
- precision: share of the model's calls whose tool name appears in the gold trajectory;
- argument match: over the gold steps matched in coverage, the mean share of gold argument values the
  matched call reproduces (numbers numerically, strings case/whitespace-insensitively);
- abstention: 1 when the task expects no calls and the model made none.

Default weights 0.5 / 0.5 / 0.15 / 0.2 / 0.1 (validity, coverage, precision, argument match,
abstention), alpha = beta = 0.5.

How they are put together: the
weighted components that *apply* to the task are averaged by their weights, so a perfect trajectory
scores 1.0 on every task, then the efficiency penalty is added. For a task with gold calls, validity,
coverage, precision and argument match apply; for a task that expects no calls only abstention does
(calls made there cost the efficiency penalty with B taken as 1). Range: (-inf, 1], below 0 only
through the penalty. ``normalize=False`` gives the raw weighted sum instead (max 1.35 with calls).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from toolkit.checks.normalize import loose_equal
from toolkit.records import CallRecord, GoldCall, RewardResult, Task, Trajectory
from toolkit.rewards.base import Reward, model_calls
from toolkit.rewards.matching import default_tool_schemas, dependency_match, schemas_from
from toolkit.rewards.prove import call_validity, keys_match  # the same per-call checks as published

DEFAULT_WEIGHTS = {"validity": 0.5, "coverage": 0.5, "precision": 0.15, "arg_match": 0.2, "abstention": 0.1}


def _value_share(step: GoldCall, call: CallRecord) -> float:
    if not step.arguments:
        return 1.0
    args = call.args or {}
    return sum(loose_equal(args.get(k), v) for k, v in step.arguments.items()) / len(step.arguments)


class ProveKitReward(Reward):
    """The kit's normalised PROVE variant; see the module docstring for components and range.

    Args:
        weights: component weights (keys of ``DEFAULT_WEIGHTS``); missing keys keep their default.
        alpha, beta: efficiency penalty strength and budget slack.
        tool_schemas: ``{name: input_schema}`` or a list of ToolSpecs; default: the kit's registry
            (``toolkit.envs.registry.tool_specs``), loaded once, lazily.
        normalize: divide the weighted sum by the applicable weights (default) or report it raw.
    """

    name = "prove-kit"
    range = (-math.inf, 1.0)

    def __init__(
        self,
        weights: Mapping[str, float] | None = None,
        alpha: float = 0.5,
        beta: float = 0.5,
        tool_schemas: Any = None,
        normalize: bool = True,
    ):
        unknown = set(weights or {}) - set(DEFAULT_WEIGHTS)
        if unknown:
            raise ValueError(f"unknown PROVE weight(s) {sorted(unknown)}; known: {list(DEFAULT_WEIGHTS)}")
        self.weights = {**DEFAULT_WEIGHTS, **(weights or {})}
        self.alpha, self.beta, self.normalize = alpha, beta, normalize
        self._schemas = schemas_from(tool_schemas) if tool_schemas is not None else None
        if not normalize:
            self.range = (-math.inf, sum(self.weights.values()))

    @property
    def schemas(self) -> dict[str, dict[str, Any]]:
        if self._schemas is None:
            self._schemas = default_tool_schemas()
        return self._schemas

    def budget(self, n_gold: int) -> int:
        return n_gold + math.ceil(n_gold * self.beta)

    def score(self, task: Task, traj: Trajectory) -> RewardResult:
        calls, gold = model_calls(traj), task.gold
        n, n_gold = len(calls), len(gold)
        budget = self.budget(n_gold)
        penalty = -self.alpha * max(0, n - budget) / max(budget, 1)
        if n_gold:
            validity = sum(call_validity(c, task, self.schemas) for c in calls) / n if n else 0.0
            matched = dependency_match(gold, calls, keys_match)
            coverage = len(matched) / n_gold
            gold_names = {g.name for g in gold}
            precision = sum(c.name in gold_names for c in calls) / n if n else 0.0
            arg_match = (
                sum(_value_share(gold[j], calls[i]) for j, i in matched.items()) / len(matched)
                if matched
                else 0.0
            )
            comps = {
                "validity": validity,
                "coverage": coverage,
                "precision": precision,
                "arg_match": arg_match,
            }
            applicable = list(comps)  # abstention does not apply when calls are expected
        else:
            comps = {"abstention": float(n == 0)}
            applicable = ["abstention"]
            matched = {}
        weighted = sum(self.weights[k] * comps[k] for k in applicable)
        denom = sum(self.weights[k] for k in applicable) if self.normalize else 1.0
        total = (weighted / denom if denom else 0.0) + penalty
        breakdown = {**comps, "efficiency_penalty": penalty}
        details = {
            "n_calls": n,
            "n_gold": n_gold,
            "budget": budget,
            "matched": {str(j): i for j, i in matched.items()},
            "applicable": applicable,
        }
        return RewardResult(total, breakdown, details)
