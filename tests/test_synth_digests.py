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

import pytest

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
                ctx = Ctx(
                    world=world_fn(seed),
                    rng=rng,
                    split=split,
                    world_seed=seed,
                    tools=frozenset(specs),
                    servers=frozenset(CORE),
                )
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


def _env_with_a_later_server():
    """The kit's env plus a server added later: its tools, a world collection (named to sort
    first, with keys that collide with core keys) and a read and a write template of its own."""
    from functools import cache

    from toolkit.synth.base import Answer, Draft, Step
    from toolkit.synth.generate import default_env
    from toolkit.toolbox import ToolSpec

    world_fn, specs, open_episode = default_env()
    extra = {
        f"fakebank_{verb}": ToolSpec(
            f"fakebank_{verb}", "A tool of a later server.", {"type": "object", "properties": {}}, "fakebank"
        )
        for verb in ("get", "list", "put", "close")
    }

    @cache
    def world(seed: int) -> dict:
        w = dict(world_fn(seed))
        w["aaa_fakebank"] = {
            k: {"id": k, "customer_id": c} for k, c in zip(w["staff"], w["customers"], strict=False)
        }
        return w

    def build(ctx):
        rec = ctx.choose(ctx.records("aaa_fakebank"))
        prompt = ctx.say(["Who owns fake account {id}?"], ["Fake account {id}: whose is it?"], id=rec["id"])
        step = Step("fakebank_get", {"id": rec["id"]})
        return Draft("", "", prompt, ["fakebank"], [step], answers=[Answer("owner", rec["customer_id"])])

    def build_mixed(ctx):
        draft = build(ctx)
        draft.servers.append("crm")
        draft.steps.append(Step("get_contact", {"contact_id": draft.answers[0].value}, depends_on=[0]))
        return draft

    return (world, {**specs, **extra}, open_episode), {
        "fakebank_owner": build,
        "fakebank_owner_contact": build_mixed,
    }


def test_a_later_server_and_its_templates_leave_the_core_presets_unchanged(tmp_path, monkeypatch):
    import toolkit.synth.generate as gen
    from toolkit.synth.config import make_config
    from toolkit.synth.templates import TEMPLATES, Template, all_templates

    all_templates()  # registers the real templates first
    env, builds = _env_with_a_later_server()
    monkeypatch.setitem(
        TEMPLATES,
        "fakebank_owner",
        Template("fakebank_owner", "lookup", ("fakebank",), builds["fakebank_owner"]),
    )
    monkeypatch.setitem(
        TEMPLATES,
        "fakebank_owner_contact",
        Template(
            "fakebank_owner_contact", "chain", ("crm", "fakebank"), builds["fakebank_owner_contact"], (2, 2)
        ),
    )
    monkeypatch.setattr(gen, "default_env", lambda: env)
    assert cli_digests(tmp_path, stored()["cli_runs"]) == stored()["cli"]

    # Every server includes the later one; drawn with a few core servers (among all 25 real servers,
    # 150 tasks need not happen to sample these two templates), its templates and tools are used.
    assert "fakebank" in gen.select_servers("all", env[1])
    res = gen.generate(
        make_config("all", server_set="crm,helpdesk,fakebank", n_train=150, n_eval=0, seed=3, validate=False),
        env=env,
    )
    templates = {t.metadata["template"] for t in res.train}
    assert {"fakebank_owner", "fakebank_owner_contact"} <= templates
    assert any(t.metadata["template"] == "multi_part" and "fakebank" in t.servers for t in res.train)
    assert any("fakebank" in t.servers and "fakebank" not in t.metadata["needed_servers"] for t in res.train)
    assert res.summary["config"]["server_set"] == "crm,helpdesk,fakebank"
    with pytest.raises(ValueError, match="unknown server"):
        gen.generate(make_config("default", server_set="crm,nobank", n_train=1, n_eval=0), env=env)


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
