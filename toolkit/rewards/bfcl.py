"""BFCL multi-turn reward: 1.0 when BFCL's official checker accepts the trajectory, else 0.0.

The verdict is bfcl-eval's ``multi_turn_checker`` (state check: every instance's public attributes
equal the ground truth's after each turn; response check: the execution results of the ground-truth
calls of a turn are among the model's results so far), with the eval runner's rule that a run
ending before the last turn fails (Bespoke Labs trained on exactly this binary reward, reference 001).

How the trajectory is handed to the checker. The checker takes per-turn lists of steps of call
strings and re-executes them (with ``eval``) on fresh instances. We never give it model text: each
recorded call (``traj.calls``: name, parsed arguments, turn, step) is re-rendered by
``toolkit.envs.bfcl.render_call`` from its parsed values, so the string is one call of a known BFCL
method with literal arguments. Calls left out: arguments that could not be parsed (never executed in
the episode) and names that are no method of the entry's classes (unknown tools). As in BFCL, a call
to a method whose doc is held out until a later turn (miss_func) is executed: BFCL only hides the doc,
and one ground truth (multi_turn_miss_func_49) calls ``tail`` before it is offered.

Isolation. bfcl-eval caches instances in its module globals under ``{model_name}_{entry_id}_{class}``;
every scoring uses a fresh model name and deletes its instances afterwards, so two scorings of the
same entry (or concurrent ones in threads) never share state.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections import defaultdict
from typing import Any

from toolkit.envs.bfcl import BFCLCallError, initial_config, render_call, tool_names
from toolkit.records import RewardResult, Task, Trajectory
from toolkit.rewards.base import Reward

# The loop stop reasons that mean the episode was cut off (BFCL's "force-terminated": fails the entry).
FORCE_TERMINATED = ("max_turns",)
_MAX_DETAIL = 400

_lock = threading.Lock()  # guards the sweep over bfcl-eval's globals, not the scoring itself


class BFCLReward(Reward):
    """``BFCLReward()(task, traj) -> RewardResult``: score in {0.0, 1.0} from BFCL's checker.

    ``breakdown``: ``state`` and ``response`` (1.0 passed / 0.0 failed) where the checker got that far
    (it stops at the first failing turn and check). ``details``: ``error_type`` and ``error_message``
    from the checker (``None`` when valid), ``n_calls`` replayed, ``skipped`` calls with the reason.
    """

    name = "bfcl"
    range = (0.0, 1.0)

    def score(self, task: Task, traj: Trajectory) -> RewardResult:
        meta = task.metadata.get("bfcl")
        if not meta:
            raise ValueError(f"task {task.id} is not a BFCL task (no metadata['bfcl'])")
        ground_truth: list[list[str]] = meta["ground_truth"]
        decoded, skipped = decode_trajectory(task, traj)
        details: dict[str, Any] = {
            "bfcl_id": meta["id"],
            "n_calls": sum(len(step) for turn in decoded for step in turn),
            "skipped": skipped,
        }

        reached = turns_reached(traj)
        if reached < len(ground_truth) or traj.stop_reason in FORCE_TERMINATED:
            details.update(
                error_type="multi_turn:force_terminated",
                error_message=(
                    f"episode reached {reached} of {len(ground_truth)} turns (stop reason {traj.stop_reason!r})"
                ),
            )
            return RewardResult(score=0.0, breakdown={}, details=details)

        result = run_checker(decoded[: len(ground_truth)], ground_truth, meta)
        valid = bool(result.get("valid"))
        error_type = result.get("error_type")
        breakdown: dict[str, float] = {}
        if valid:
            breakdown = {"state": 1.0, "response": 1.0}
        elif error_type == "multi_turn:instance_state_mismatch":
            breakdown = {"state": 0.0}
        elif error_type == "multi_turn:execution_response_mismatch":
            breakdown = {"state": 1.0, "response": 0.0}
        details.update(error_type=error_type, error_message=result.get("error_message"))
        if not valid:
            details["error_details"] = _summarise(result)
        return RewardResult(score=1.0 if valid else 0.0, breakdown=breakdown, details=details)


def turns_reached(traj: Trajectory) -> int:
    """How many user turns the episode got to: user messages, else answers or call turns."""
    users = sum(1 for m in traj.messages if m.get("role") == "user")
    if users:
        return users
    return max(len(traj.turn_answers), max((c.turn + 1 for c in traj.calls), default=0))


def decode_trajectory(task: Task, traj: Trajectory) -> tuple[list[list[list[str]]], list[dict[str, Any]]]:
    """The model's calls in the checker's shape: per turn, per step, BFCL call strings.

    Returns (decoded, skipped); one list per turn up to the last turn with calls or the task's turn
    count, whichever is larger.
    """
    n_turns = 1 + len(task.followups)
    by_turn: dict[int, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    skipped: list[dict[str, Any]] = []
    known = {name for cls in task.metadata["bfcl"]["involved_classes"] for name in tool_names(cls)}
    for call in traj.calls:
        reason = None
        if call.args is None:
            reason = "arguments not parsed"
        elif call.name not in known:
            reason = "unknown tool"
        else:
            try:
                by_turn[call.turn][call.step].append(render_call(call.name, call.args))
            except BFCLCallError as exc:
                reason = str(exc)
        if reason:
            skipped.append({"name": call.name, "turn": call.turn, "step": call.step, "reason": reason})
    last = max([n_turns - 1, *by_turn])
    decoded = [[by_turn[t][s] for s in sorted(by_turn[t])] if t in by_turn else [] for t in range(last + 1)]
    return decoded, skipped


def run_checker(decoded: list[list[list[str]]], ground_truth: list[list[str]], meta: dict[str, Any]) -> dict:
    """BFCL's ``multi_turn_checker`` on one entry, under a fresh model name, cleaned up afterwards."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    model_name = f"mcprl_{uuid.uuid4().hex}"
    entry = {
        "id": meta["id"],
        "initial_config": initial_config(meta),
        "involved_classes": list(meta["involved_classes"]),
    }
    category = "multi_turn_" + meta.get("category", "base")
    try:
        return multi_turn_checker(decoded, ground_truth, entry, category, model_name)
    except Exception as exc:  # a checker crash on odd input is a failed entry, not a crashed run
        return {
            "valid": False,
            "error_type": "multi_turn:checker_error",
            "error_message": f"{type(exc).__name__}: {exc}",
        }
    finally:
        prefix = re.sub(r"[-./:]", "_", model_name)
        namespace = vars(multi_turn_utils)
        with _lock:
            for key in [k for k in list(namespace) if k.startswith(prefix)]:
                namespace.pop(key, None)


def _summarise(result: dict[str, Any]) -> dict[str, Any]:
    """A short JSON-able view of the checker's failure details (its full states can be huge)."""
    details = result.get("details") or {}
    out: dict[str, Any] = {}
    if "differences" in details:
        out["differing_attributes"] = sorted(details["differences"])
        out["differences"] = {k: _short(v) for k, v in details["differences"].items()}
    if "missing_items" in details:
        out["missing_items"] = [_short(item) for item in details["missing_items"]]
    return out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_DETAIL else text[:_MAX_DETAIL] + "..."
