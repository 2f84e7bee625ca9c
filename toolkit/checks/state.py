"""The one interpreter of rubric ``state`` and ``no_state_change`` checks (spec in ``toolkit.records``).

Synthesis keeps a task only when its gold's state diff passes these checks (``toolkit.synth.replay``) and
the rubric reward grades an episode's diff by the same function (``toolkit.rewards.rubric``), so a task is
validated by exactly the rule it is graded by: wildcard keys, normalisation, tolerance and partial credit
included.
"""

from __future__ import annotations

from typing import Any

from toolkit.checks import normalize as norm


def state_verdict(check: dict[str, Any], diff: dict[str, Any]) -> tuple[str, str]:
    """``("pass" | "partial" | "fail", reason)`` of a ``state`` or ``no_state_change`` check against a
    state diff. ``partial``: the record changed, but not by the asked operation or not to the value."""
    kind = check.get("type")
    if kind == "no_state_change":
        return ("pass", "state unchanged") if not diff else ("fail", f"{len(diff)} record(s) changed")
    if kind != "state":
        raise ValueError(f"not a state check: {check}")
    coll, key, op = check.get("collection"), check.get("key"), check.get("op", "update")
    field_name, value = check.get("field"), check.get("value")
    if key in (None, "*"):  # any record of the collection (e.g. a created record whose id is unknown)
        entries = [v for k, v in diff.items() if k.split("/", 1)[0] == coll]
    else:
        entries = [diff[f"{coll}/{key}"]] if f"{coll}/{key}" in diff else []
    if not entries:
        return "fail", f"no change to {coll}/{key}"
    partial = False
    for entry in entries:
        before, after = entry.get("before"), entry.get("after")
        happened = "create" if before is None else "delete" if after is None else "update"
        if happened != op:
            partial = True
            continue
        if field_name is None or op == "delete":
            return "pass", f"{coll}/{key} {op}d"
        if isinstance(after, dict) and field_name in after:
            tolerance = float(check.get("tolerance", 0.0))
            if norm.equal(check.get("normalize"), after[field_name], value, tolerance):
                return "pass", f"{coll}/{key}.{field_name} = {value!r}"
        partial = True
    verdict = "partial" if partial else "fail"
    return verdict, f"{coll}/{key} changed, but not to {field_name}={value!r} by {op}"
