"""PROVE's judge-free reward as the paper publishes it (PROVE, arXiv 2606.03892, section 3.3):

    R_total = 0.5 R_validity + 0.5 R_coverage + 0.15 R_efficiency + 0.2 R_name + 0.1 R_arg

- R_validity: mean over the model's calls of 1/3 (name in the task's tool schema), 2/3 (also every
  required parameter present with a compatible JSON type), 1 (also the call succeeded); 0 with no calls.
- R_coverage = (1/|G|) sum_g m(g) o(g). m(g) = 1 when a model call has g's tool name and carries all
  of g's argument keys (each gold step, in order, takes the earliest unused such call: one call matches
  at most one step). o(g) = product over g's dependencies j of 1[mu(j) < mu(g)], mu the matched call's
  position; a dependency with no matched call gives 0 (the order cannot hold). A step whose dependency
  is unmatched is still matched: it counts in R_arg.
- R_efficiency = -alpha max(0, n - B) / B, B = n_gold + ceil(n_gold beta); alpha = beta = 0.5.
- R_name: share of the model's calls whose tool name appears among the gold calls' names; 0 with none.
- R_arg: mean over the matched (call, gold step) pairs of the share of g's arguments whose value the
  call gives exactly (JSON equality: 2 == 2.0, "closed" != "Closed "); a step with no arguments scores
  1; 0 with no matched pair.
- A task with no gold calls (abstention) scores R = 1.0 with zero tool calls, else 0.0.

Range (-inf, 1.3]: a perfect trajectory scores 1.3, below 0 only through the efficiency term.
Options for the kit's variants: ``lenient_values`` (case/whitespace-insensitive strings),
``gate_on_dependencies`` (a step whose dependency is unmatched stays unmatched, the kit's earlier
matching). The kit's normalised variant is its own reward, ``prove-kit`` (``toolkit.rewards.prove_kit``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from toolkit.checks.normalize import loose_equal
from toolkit.records import CallRecord, GoldCall, RewardResult, Task, Trajectory
from toolkit.rewards.base import Reward, model_calls
from toolkit.rewards.matching import default_tool_schemas, dependency_match, required_params_ok, schemas_from

# PROVE, arXiv 2606.03892, section 3.3.
WEIGHTS = {"validity": 0.5, "coverage": 0.5, "efficiency": 0.15, "name": 0.2, "arg": 0.1}


def call_validity(call: CallRecord, task: Task, schemas: Mapping[str, dict[str, Any]]) -> float:
    """PROVE's graduated per-call validity: 0, 1/3, 2/3 or 1."""
    in_schema = call.name in task.tools and (not schemas or call.name in schemas)
    if not in_schema:
        return 0.0
    if not required_params_ok(call.args, schemas.get(call.name)):
        return 1 / 3
    return 1.0 if call.ok else 2 / 3


def json_equal(a: Any, b: Any) -> bool:
    """Equality of two JSON values: numbers by value (2 == 2.0), booleans never equal numbers,
    strings exactly, lists and objects element by element."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def keys_match(step: GoldCall, call: CallRecord) -> bool:
    """m(g): same tool name, and the call carries every argument key of the gold step."""
    return call.name == step.name and call.args is not None and all(k in call.args for k in step.arguments)


def key_match(gold: Sequence[GoldCall], calls: Sequence[CallRecord]) -> dict[int, int]:
    """Each gold step, in order, takes the earliest unused call that ``keys_match`` it, whatever its
    dependencies did. Returns ``{gold index: call index}``."""
    matched: dict[int, int] = {}
    used: set[int] = set()
    for j, step in enumerate(gold):
        for i, call in enumerate(calls):
            if i not in used and keys_match(step, call):
                matched[j] = i
                used.add(i)
                break
    return matched


def order_factor(j: int, gold: Sequence[GoldCall], matched: Mapping[int, int]) -> float:
    """o(g): 1 when every dependency's matched call comes before g's matched call, else 0."""
    deps = [d for d in gold[j].depends_on if 0 <= d < len(gold)]
    return float(all(d in matched and matched[d] < matched[j] for d in deps))


class ProveReward(Reward):
    """PROVE's reward as published; see the module docstring.

    Args:
        weights: component weights (keys of ``WEIGHTS``); missing keys keep the paper's value.
        alpha, beta: efficiency penalty strength and budget slack (paper: 0.5, 0.5).
        tool_schemas: ``{name: input_schema}`` or a list of ToolSpecs; default: the kit's registry.
        lenient_values: compare string argument values case/whitespace-insensitively (a kit variant).
        gate_on_dependencies: leave a step unmatched when a dependency is unmatched or matched later
            (the kit's earlier matching); o(g) is then 1 for every matched step.
    """

    name = "prove"

    def __init__(
        self,
        weights: Mapping[str, float] | None = None,
        alpha: float = 0.5,
        beta: float = 0.5,
        tool_schemas: Any = None,
        lenient_values: bool = False,
        gate_on_dependencies: bool = False,
    ):
        unknown = set(weights or {}) - set(WEIGHTS)
        if unknown:
            raise ValueError(f"unknown PROVE weight(s) {sorted(unknown)}; known: {list(WEIGHTS)}")
        self.weights = {**WEIGHTS, **(weights or {})}
        self.alpha, self.beta = alpha, beta
        self.lenient_values, self.gate_on_dependencies = lenient_values, gate_on_dependencies
        self._schemas = schemas_from(tool_schemas) if tool_schemas is not None else None
        top = sum(w for k, w in self.weights.items() if k != "efficiency")
        self.range = (-math.inf, max(top, 1.0))

    @property
    def schemas(self) -> dict[str, dict[str, Any]]:
        if self._schemas is None:
            self._schemas = default_tool_schemas()
        return self._schemas

    def budget(self, n_gold: int) -> int:
        return n_gold + math.ceil(n_gold * self.beta)

    def _value_share(self, step: GoldCall, call: CallRecord) -> float:
        if not step.arguments:
            return 1.0
        args = call.args or {}
        same = (lambda a, b: loose_equal(a, b)) if self.lenient_values else json_equal
        return sum(k in args and same(args[k], v) for k, v in step.arguments.items()) / len(step.arguments)

    def score(self, task: Task, traj: Trajectory) -> RewardResult:
        calls, gold = model_calls(traj), task.gold
        n, n_gold = len(calls), len(gold)
        if not n_gold:  # abstention example: no calls is right, any call is wrong
            abstention = float(n == 0)
            return RewardResult(abstention, {"abstention": abstention}, {"n_calls": n, "n_gold": 0})
        budget = self.budget(n_gold)
        if self.gate_on_dependencies:
            matched = dependency_match(gold, calls, keys_match)
            order = {j: 1.0 for j in matched}
        else:
            matched = key_match(gold, calls)
            order = {j: order_factor(j, gold, matched) for j in matched}
        gold_names = {g.name for g in gold}
        comps = {
            "validity": sum(call_validity(c, task, self.schemas) for c in calls) / n if n else 0.0,
            "coverage": sum(order.values()) / n_gold,
            "efficiency": -self.alpha * max(0, n - budget) / budget,
            "name": sum(c.name in gold_names for c in calls) / n if n else 0.0,
            "arg": (
                sum(self._value_share(gold[j], calls[i]) for j, i in matched.items()) / len(matched)
                if matched
                else 0.0
            ),
        }
        total = sum(self.weights[k] * v for k, v in comps.items())
        details = {
            "n_calls": n,
            "n_gold": n_gold,
            "budget": budget,
            "matched": {str(j): i for j, i in matched.items()},
            "order": {str(j): o for j, o in order.items()},
        }
        return RewardResult(total, comps, details)
