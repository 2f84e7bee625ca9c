"""Digests of synthesis output, stored in tests/data/synth_digests.json and checked by
tests/test_synth_digests.py: the core presets' `mcp-rl synth` files, and every core template's
drafts for fixed random streams. A refactor of the generator or the templates must leave them
byte-identical; only a deliberate change to the core tasks may rewrite the file, with

    PYTHONPATH=. python tests/test_synth_digests.py --write
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from pathlib import Path
from typing import Any

DIGESTS = Path(__file__).parent / "data" / "synth_digests.json"
# The 11 servers the digests were taken on (the core set): later servers must not change them.
CORE = (
    "helpdesk",
    "crm",
    "directory",
    "calendar",
    "email",
    "filesystem",
    "shop",
    "finance",
    "weather",
    "chat",
    "calculator",
)
CLI_RUNS = {
    "cpu": ["--preset", "cpu", "--n", "120", "--n-eval", "20", "--seed", "3"],
    "default": ["--preset", "default", "--n", "120", "--n-eval", "20", "--seed", "3"],
    "hard": ["--preset", "hard", "--n", "120", "--n-eval", "20", "--seed", "3"],
}
FILES = ("train.jsonl", "eval.jsonl", "summary.json")
DRAWS = 6  # random streams per template and split


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cli_digests(out: Path, runs: dict[str, list[str]] = CLI_RUNS) -> dict[str, dict[str, str]]:
    """sha256 of each file `mcp-rl synth` writes, per preset run."""
    from toolkit.cli import main

    digests = {}
    for name, args in runs.items():
        folder = out / name
        if main(["synth", *args, "--out", str(folder), "--no-progress"]) != 0:
            raise RuntimeError(f"mcp-rl synth {' '.join(args)} failed")
        digests[name] = {f: sha((folder / f).read_bytes()) for f in FILES}
    return digests


def template_digests(template_ids: list[str] | None = None) -> dict[str, str]:
    """Per core template: sha256 of the task records its drafts become for fixed random streams
    (or "skip" markers), with distractors drawn from the core servers' tools."""
    from toolkit.synth.config import make_config
    from toolkit.synth.generate import default_env, draft_to_task
    from toolkit.synth.templates import Ctx, Skip, all_templates

    world_fn, specs, _ = default_env()
    specs = {n: s for n, s in specs.items() if s.server in CORE}
    config = make_config("default")
    templates = all_templates()
    out = {}
    for tid in sorted(template_ids if template_ids is not None else templates):
        tpl = templates[tid]
        if not set(tpl.servers) <= set(CORE):
            continue
        records: list[Any] = []
        for split in ("eval",) if tpl.eval_only else ("train", "eval"):
            for k in range(DRAWS):
                rng = random.Random(f"digest/{tid}/{split}/{k}")
                seed = 1 if split == "train" else 501
                ctx = Ctx(world=world_fn(seed), rng=rng, split=split, world_seed=seed, tools=frozenset(specs))
                try:
                    draft = tpl.build(ctx)
                except Skip as exc:
                    records.append(f"skip: {exc}")
                    continue
                draft.template, draft.kind, draft.world_seed = tid, tpl.kind, seed
                draft.phrasing = draft.phrasing or ctx.phrasing
                task = draft_to_task(draft, split, rng, specs, config, short=False)
                records.append(task.to_dict())
        out[tid] = sha(json.dumps(records, sort_keys=True, ensure_ascii=False).encode())
    return out


def stored() -> dict[str, Any]:
    return json.loads(DIGESTS.read_text())


def test_core_presets_write_the_same_files(tmp_path):
    assert cli_digests(tmp_path, stored()["cli_runs"]) == stored()["cli"]


def test_core_templates_draft_the_same_tasks():
    from toolkit.synth.templates import all_templates

    want = stored()["templates"]
    assert set(want) <= set(all_templates()), "a core template was removed or renamed"
    assert template_digests(sorted(want)) == want


def main() -> None:
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {DIGESTS.name}")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = {"cli_runs": CLI_RUNS, "cli": cli_digests(Path(tmp)), "templates": template_digests()}
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    if args.write:
        DIGESTS.write_text(text)
        print(f"wrote {DIGESTS}")
    else:
        print(text)


if __name__ == "__main__":
    main()
