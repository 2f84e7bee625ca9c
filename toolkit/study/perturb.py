"""Record-level perturbations of a gold trajectory: the kit's stand-in for policy rollouts when none
are at hand (tests, benchmarks, notebook 03 before a model is trained).

Each perturbation edits the call list or the answer the way a weak policy goes wrong: drop a step,
swap two steps, repeat a call, corrupt an argument value, send unparseable arguments, call a tool that
does not exist or a distractor tool, give a wrong or empty answer. Nothing is executed, so two effects
are approximated: a changed call keeps the gold call's ``ok``/``result`` unless the perturbation makes
it fail (unknown tool, bad JSON), and the gold state diff is kept only while every gold call is still
made, successfully, with its gold arguments (in any order); otherwise the diff is empty.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable

from toolkit.checks.normalize import loose_equal
from toolkit.records import CallRecord, Task, Trajectory
from toolkit.rewards.base import model_calls

HALLUCINATED_TOOL = "lookup_everything"


def _fix_state(task: Task, traj: Trajectory, gold_diff: dict) -> Trajectory:
    calls = [c for c in model_calls(traj) if c.ok and c.args is not None]
    intact = all(any(c.name == g.name and loose_equal(c.args, g.arguments) for c in calls) for g in task.gold)
    traj.state_diff = copy.deepcopy(gold_diff) if intact else {}
    return traj


def drop_call(traj: Trajectory, task: Task, rng: random.Random) -> None:
    if traj.calls:
        traj.calls.pop(rng.randrange(len(traj.calls)))


def swap_calls(traj: Trajectory, task: Task, rng: random.Random) -> None:
    if len(traj.calls) >= 2:
        i = rng.randrange(len(traj.calls) - 1)
        traj.calls[i], traj.calls[i + 1] = traj.calls[i + 1], traj.calls[i]


def duplicate_call(traj: Trajectory, task: Task, rng: random.Random) -> None:
    if traj.calls:
        i = rng.randrange(len(traj.calls))
        traj.calls.insert(i + 1, copy.deepcopy(traj.calls[i]))


def corrupt_arg(traj: Trajectory, task: Task, rng: random.Random) -> None:
    with_args = [c for c in traj.calls if c.args]
    if not with_args:
        return
    call = rng.choice(with_args)
    key = rng.choice(sorted(call.args))
    v = call.args[key]
    call.args[key] = v + 1 if isinstance(v, int | float) and not isinstance(v, bool) else f"{v}x"


def malformed_args(traj: Trajectory, task: Task, rng: random.Random) -> None:
    if traj.calls:
        call = traj.calls[rng.randrange(len(traj.calls))]
        call.args, call.ok, call.error, call.result = None, False, "bad_json: could not parse arguments", None
        traj.n_parse_errors += 1


def hallucinated_tool(traj: Trajectory, task: Task, rng: random.Random) -> None:
    call = CallRecord(
        HALLUCINATED_TOOL, {"query": task.prompt[:40]}, ok=False, error="unknown_tool: no such tool"
    )
    traj.calls.insert(rng.randrange(len(traj.calls) + 1), call)


def distractor_call(traj: Trajectory, task: Task, rng: random.Random) -> None:
    spare = sorted(set(task.tools) - {g.name for g in task.gold})
    if spare:
        traj.calls.insert(
            rng.randrange(len(traj.calls) + 1), CallRecord(rng.choice(spare), {}, ok=True, result="{}")
        )


def wrong_answer(traj: Trajectory, task: Task, rng: random.Random) -> None:
    traj.final_answer = "I looked into it; the value is 0 and nothing else applies."
    traj.turn_answers = [traj.final_answer]


def empty_answer(traj: Trajectory, task: Task, rng: random.Random) -> None:
    traj.final_answer, traj.turn_answers, traj.stop_reason = "", [], "max_turns"


PERTURBATIONS: dict[str, Callable[[Trajectory, Task, random.Random], None]] = {
    "drop_call": drop_call,
    "swap_calls": swap_calls,
    "duplicate_call": duplicate_call,
    "corrupt_arg": corrupt_arg,
    "malformed_args": malformed_args,
    "hallucinated_tool": hallucinated_tool,
    "distractor_call": distractor_call,
    "wrong_answer": wrong_answer,
    "empty_answer": empty_answer,
}


def perturb(task: Task, gold: Trajectory, names: list[str], seed: int = 0) -> Trajectory:
    """Apply the named perturbations to a copy of ``gold`` (state diff fixed up as documented)."""
    traj = copy.deepcopy(gold)
    rng = random.Random(seed)
    for name in names:
        PERTURBATIONS[name](traj, task, rng)
    for i, c in enumerate(traj.calls):
        c.step = i
    traj.metadata = {**traj.metadata, "policy": "perturbed", "perturbations": list(names)}
    return _fix_state(task, traj, gold.state_diff)


def sample_group(
    task: Task, gold: Trajectory, size: int, rng: random.Random, max_edits: int = 3, min_edits: int = 0
) -> list[Trajectory]:
    """``size`` trajectories, each ``gold`` with ``min_edits``..``max_edits`` random perturbations: a
    crude model of a policy's samples for one prompt (a GRPO group). ``min_edits=1`` models a weak
    policy that never reproduces the gold exactly (though some edits, e.g. a repeated read, are harmless)."""
    names = sorted(PERTURBATIONS)
    group = []
    for _ in range(size):
        k = rng.randint(min_edits, max(min_edits, max_edits))
        group.append(perturb(task, gold, [rng.choice(names) for _ in range(k)], seed=rng.randrange(2**31)))
    return group


# ---- named scenarios (notebook 03's side-by-side table) ---------------------------------------------


def _scenario_partial(traj: Trajectory, task: Task) -> None:
    keep = (len(traj.calls) + 1) // 2
    traj.calls = traj.calls[:keep]
    wrong_answer(traj, task, random.Random(0))


def _scenario_wrong_order(traj: Trajectory, task: Task) -> None:
    traj.calls.reverse()


def _scenario_over_budget(traj: Trajectory, task: Task) -> None:
    traj.calls = [copy.deepcopy(c) for c in traj.calls for _ in range(3)]  # 3n calls > B = n + ceil(n/2)


def _scenario_hallucinated(traj: Trajectory, task: Task) -> None:
    hallucinated_tool(traj, task, random.Random(0))


SCENARIOS: dict[str, Callable[[Trajectory, Task], None] | None] = {
    "gold": None,
    "partial": _scenario_partial,  # first half of the calls, a wrong answer
    "wrong order": _scenario_wrong_order,  # the gold calls reversed
    "over budget": _scenario_over_budget,  # every gold call made three times
    "hallucinated tool": _scenario_hallucinated,  # gold plus one call to a tool that does not exist
}


def scenario(task: Task, gold: Trajectory, name: str) -> Trajectory:
    """One of ``SCENARIOS`` applied to a copy of ``gold`` (state diff fixed up as for ``perturb``)."""
    traj = copy.deepcopy(gold)
    edit = SCENARIOS[name]
    if edit is not None:
        edit(traj, task)
    for i, c in enumerate(traj.calls):
        c.step = i
    traj.metadata = {**traj.metadata, "policy": name}
    return _fix_state(task, traj, gold.state_diff)
