"""How far an LLM judge agrees with the programmatic grader: accuracy and Cohen's kappa, overall and
per rubric category, on binary verdicts (pass vs. not pass; ``partial`` counts as not pass, as in the
rubric reward). Items either grader left ungraded are excluded and counted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolkit.records import Task, Trajectory
from toolkit.rewards.grading import Grader
from toolkit.rewards.rubric import ProgrammaticGrader


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float:
    """Cohen's kappa of two binary raters: (p_o - p_e) / (1 - p_e).

    When chance agreement is 1 (both raters constant and equal) kappa is undefined; it is reported as
    1.0 if they agree everywhere and 0.0 otherwise.
    """
    n = len(a)
    if n != len(b):
        raise ValueError("raters must grade the same items")
    if n == 0:
        return float("nan")
    po = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    pe = pa * pb + (1 - pa) * (1 - pb)
    if pe >= 1.0:
        return 1.0 if po == 1.0 else 0.0
    return (po - pe) / (1 - pe)


def _agreement(pairs: list[tuple[bool, bool]]) -> dict[str, float]:
    if not pairs:
        return {"n": 0, "accuracy": float("nan"), "kappa": float("nan")}
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    return {
        "n": len(pairs),
        "accuracy": sum(x == y for x, y in pairs) / len(pairs),
        "kappa": cohen_kappa(a, b),
        "judge_pass_rate": sum(a) / len(a),
        "reference_pass_rate": sum(b) / len(b),
    }


def calibration_report(
    tasks: Sequence[Task],
    trajs: Sequence[Trajectory],
    judge: Grader,
    reference: Grader | None = None,
) -> dict[str, Any]:
    """Agreement of ``judge`` with ``reference`` (default: the programmatic grader) over every rubric
    item of every (task, trajectory) pair. Returns ``{"overall": {...}, "per_category": {cat: {...}},
    "ungraded": {"judge": n, "reference": n}, "confusion": {...}}``."""
    reference = reference or ProgrammaticGrader()
    pairs = list(zip(tasks, trajs, strict=True))
    judged, refd = judge.grade_many(pairs), reference.grade_many(pairs)
    rows: list[tuple[str, bool, bool]] = []
    ungraded = {"judge": 0, "reference": 0}
    for (task, _), jg, rg in zip(pairs, judged, refd, strict=True):
        jmap, rmap = {g.id: g for g in jg}, {g.id: g for g in rg}
        for item in task.rubric:
            j, r = jmap.get(item.id), rmap.get(item.id)
            if j is None or j.verdict is None:
                ungraded["judge"] += 1
            if r is None or r.verdict is None:
                ungraded["reference"] += 1
            if j is None or r is None or j.verdict is None or r.verdict is None:
                continue
            rows.append((item.category, j.verdict == "pass", r.verdict == "pass"))
    overall = _agreement([(j, r) for _, j, r in rows])
    per_category = {
        cat: _agreement([(j, r) for c, j, r in rows if c == cat]) for cat in sorted({c for c, _, _ in rows})
    }
    confusion = {
        "judge_pass_ref_pass": sum(j and r for _, j, r in rows),
        "judge_pass_ref_fail": sum(j and not r for _, j, r in rows),
        "judge_fail_ref_pass": sum(r and not j for _, j, r in rows),
        "judge_fail_ref_fail": sum(not j and not r for _, j, r in rows),
    }
    return {"overall": overall, "per_category": per_category, "ungraded": ungraded, "confusion": confusion}
