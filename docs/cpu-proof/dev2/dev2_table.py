"""One line per dev-2 arm (runs/dev2/<arm>, toolkit.eval.claim's layout): greedy pass@0.75 against the
frozen warm start for all / in-template / held-out templates, the guards, and passes per kind.

usage: python runs/dev2_table.py [--root ROOT] ARM [ARM ...]    (ROOT: runs/dev2; protocol v2's look: runs/dev2v2)"""

import json
import sys
from pathlib import Path

from toolkit.eval.claim import compute_claim, read_root


def d(b):
    return f"{b['after']:.3f} ({b['diff']:+.3f} [{b['ci_low']:+.3f}, {b['ci_high']:+.3f}])"


if __name__ == "__main__":
    rows = []
    args = sys.argv[1:]
    root = Path("runs/dev2")
    if args[:1] == ["--root"]:
        root, args = Path(args[1]), args[2:]
    for arm in args:
        c = compute_claim(*read_root(root / arm))
        (root / arm / "claim.json").write_text(json.dumps(c, indent=1, sort_keys=True) + "\n")
        g = c["guards"]
        kinds = c["per_kind"]
        if not rows:
            rows.append(arm)
            w = c["all"]["greedy"]["before"]
            print(
                f"warm start: all {w:.3f}, in-template {c['in_template']['greedy']['before']:.3f};"
                f" per kind: "
                + ", ".join(
                    f"{k} {v['greedy']['before']:.3f} ({v['greedy']['n_tasks']})"
                    for k, v in sorted(kinds.items())
                )
            )
            print(
                "guards before: "
                + ", ".join(f"{k} {v['before']:.3f}" for k, v in {**g, **c.get("calls_split", {})}.items())
            )
        print(
            f"\n{arm}: all {d(c['all']['greedy'])}; in-template {d(c['in_template']['greedy'])};"
            f" held-out templates {d(c['held_out_templates']['greedy'])}"
        )
        print(
            "  guards: "
            + ", ".join(f"{k} {v['diff']:+.3f}" for k, v in {**g, **c.get("calls_split", {})}.items())
        )
        if "sampled" in c["all"]:
            print(f"  sampled: all {d(c['all']['sampled'])}; in-template {d(c['in_template']['sampled'])}")
        print(
            "  per kind: "
            + ", ".join(
                f"{k} {v['greedy']['after']:.3f} ({v['greedy']['diff']:+.3f})"
                for k, v in sorted(kinds.items())
            )
        )
