"""The examples in docs/templates.md run: each registers a template that builds drafts which replay
through MCP with every check passing."""

from __future__ import annotations

import random
import re
from pathlib import Path

import toolkit.synth.templates as templates_module
from toolkit.synth.config import make_config
from toolkit.synth.generate import default_env, draft_to_task
from toolkit.synth.replay import validate_tasks_sync
from toolkit.synth.templates import Ctx, Skip, all_templates

DOC = Path(__file__).resolve().parents[1] / "docs" / "templates.md"


def test_doc_examples_register_templates_that_replay(monkeypatch):
    all_templates()
    registry = dict(templates_module.TEMPLATES)
    monkeypatch.setattr(templates_module, "TEMPLATES", registry)
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 2
    before = set(registry)
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), {})
    added = sorted(set(registry) - before)
    assert added == ["shop_product_price", "shop_set_price"]
    for code in blocks:  # the examples stay short: about 10-20 lines of template, as ruff formats them
        body = code[code.index("@template") :]
        assert len([line for line in body.splitlines() if line.strip()]) <= 22

    world_fn, specs, open_episode = default_env()
    tasks, recomputes = [], []
    for tid in added:
        tpl = registry[tid]
        for k in range(5):
            rng = random.Random(f"doc/{tid}/{k}")
            ctx = Ctx(world=world_fn(4), rng=rng, world_seed=4, tools=frozenset(specs))
            try:
                draft = tpl.build(ctx)
            except Skip:
                continue
            assert draft.template == tid and draft.servers == ["shop"]
            draft.world_seed, draft.phrasing = 4, ctx.phrasing
            tasks.append(draft_to_task(draft, "train", rng, specs, make_config("default"), short=False))
            recomputes.append(draft.recompute)
    assert {t.metadata["template"] for t in tasks} == set(added)
    ok, drops, details = validate_tasks_sync(tasks, open_episode, recomputes=recomputes)
    assert all(ok), details
    price = next(t for t in tasks if t.metadata["template"] == "shop_product_price")
    assert {r.category for r in price.rubric} == {
        "tool_selection",
        "query_construction",
        "answer_correctness",
    }
    write = next(t for t in tasks if t.metadata["template"] == "shop_set_price")
    assert any(r.check["type"] == "order" for r in write.rubric)
    assert any(r.check["type"] == "state" and r.check["field"] == "price" for r in write.rubric)
