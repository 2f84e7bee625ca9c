"""A claim.json (``toolkit.eval.claim``) as the Markdown tables docs/cpu-proof quotes: pass@0.75 per task
group (greedy, sampled, each test seed), each GRPO seed's own diff, the guards against their bars, greedy
per task kind, and the criteria. The numbers on that page come from this command, not from copying::

    python -m toolkit.eval.claim_tables docs/cpu-proof/claim-v3.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from toolkit.eval.claim import CALL_SPLIT, GROUPS, GUARD_BARS, GUARDS, guard_met

GROUP_NAMES = {"in_template": "in template", "held_out_templates": "held out templates", "all": "all"}


def change(block: dict[str, float]) -> str:
    """``0.506 -> 0.497, **-0.009** [-0.047, +0.031]``: before, after, the seed-mean diff and its CI."""
    return (
        f"{block['before']:.3f} -> {block['after']:.3f}, **{block['diff']:+.3f}** "
        f"[{block['ci_low']:+.3f}, {block['ci_high']:+.3f}]"
    )


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return [_row(header), _row(["---"] * len(header)), *(_row(r) for r in rows)]


def group_table(claim: dict[str, Any]) -> list[str]:
    seeds = [str(s) for s in claim["test_seeds"]]
    k = next((claim[g]["sampled"]["k"] for g in GROUPS if (claim.get(g) or {}).get("sampled")), None)
    header = ["tasks", "n", "greedy pass@0.75", f"sampled (k = {k})" if k else "sampled"]
    header += [f"greedy, test seed {s}" for s in seeds]
    rows = []
    for group in GROUPS:
        blocks = claim.get(group)
        if not blocks:
            rows.append([GROUP_NAMES[group], 0, "-", "-", *["-"] * len(seeds)])
            continue
        greedy, sampled = blocks["greedy"], blocks.get("sampled")
        per_seed = greedy["per_test_seed"]
        rows.append(
            [GROUP_NAMES[group], greedy["n_tasks"], change(greedy), change(sampled) if sampled else "-"]
            + [
                f"{b['diff']:+.3f} [{b['ci_low']:+.3f}, {b['ci_high']:+.3f}] ({b['n_tasks']})"
                if (b := per_seed.get(s))
                else "-"
                for s in seeds
            ]
        )
    return _table(header, rows)


def seed_table(claim: dict[str, Any]) -> list[str]:
    keys = [f"{g}_greedy_diff" for g in GROUPS]
    rows = [
        [seed, *(f"{d[k]:+.3f}" if k in d else "-" for k in keys)]
        for seed, d in sorted(claim["per_grpo_seed"].items())
    ]
    return _table(["GRPO seed", *(f"{GROUP_NAMES[g]}, greedy diff" for g in GROUPS)], rows)


def guard_table(claim: dict[str, Any]) -> list[str]:
    rows = []
    for guard in GUARDS:
        block = claim["guards"].get(guard)
        if block is None:
            continue
        sign, bound = GUARD_BARS[guard]
        met = "yes" if guard_met(guard, block["diff"]) else "no"
        rows.append([guard.replace("_", " "), change(block), f"{sign} {bound:+.2f}", met])
    for split in CALL_SPLIT:
        if block := (claim.get("calls_split") or {}).get(split):
            rows.append([f"{split.replace('_', ' ')} (reported)", change(block), "", ""])
    return _table(["guard", "warm start -> GRPO (seed mean), diff [95% CI]", "bar", "met"], rows)


def kind_table(claim: dict[str, Any]) -> list[str]:
    rows = [
        [kind, blocks["greedy"]["n_tasks"], change(blocks["greedy"])]
        for kind, blocks in sorted(claim.get("per_kind", {}).items())
    ]
    return _table(["task kind", "n", "greedy pass@0.75"], rows)


def criteria_table(claim: dict[str, Any]) -> list[str]:
    return _table(["criterion", "met"], [[n, "yes" if ok else "no"] for n, ok in claim["criteria"].items()])


def claim_tables(claim: dict[str, Any]) -> str:
    """Every table above, blank-line separated, with the claim's seeds and sizes on top."""
    sizes = ", ".join(f"{s}: {n}" for s, n in sorted(claim["tasks_per_test_seed"].items()))
    head = (
        f"GRPO seeds {', '.join(map(str, claim['grpo_seeds']))}; test seeds (tasks) {sizes}; every diff the "
        "mean over the GRPO seeds of (adapter - frozen warm start), paired by task, 95% CI by bootstrap "
        "over tasks"
    )
    parts = [group_table, seed_table, guard_table, kind_table, criteria_table]
    return "\n\n".join([head, *("\n".join(part(claim)) for part in parts)]) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m toolkit.eval.claim_tables", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("claim", type=Path, help="a claim.json written by python -m toolkit.eval.claim")
    args = parser.parse_args(argv)
    try:
        claim = json.loads(args.claim.read_text())
        text = claim_tables(claim)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"{args.claim}: not a claim.json ({type(exc).__name__}: {exc})") from exc
    print(text, end="")


if __name__ == "__main__":
    main()
