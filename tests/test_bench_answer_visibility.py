"""``python -m bench.answer_visibility``: the answers a cut tool output hides, on the shipped task sample."""

from __future__ import annotations

from toolkit.paths import DATA_DIR
from toolkit.records import Task, read_jsonl


def test_the_json_cut_shows_the_counts_that_the_tail_cut_hides():
    from bench.answer_visibility import answer_visible, visibility
    from toolkit.models import load_tokenizer

    assert answer_visible(5, ['{"rainy_days": [], "count": 5}']) and not answer_visible(5, ['{"n": 15}'])
    assert answer_visible("Jamal Ito", ['{"name": "Jamal Ito", "id": 1}'])
    tasks = [
        t
        for t in read_jsonl(DATA_DIR / "tasks" / "eval.jsonl", Task)
        if t.metadata["template"] in ("wx_rainy_days", "entity_field")
    ][:12]
    table = visibility(tasks, load_tokenizer("smollm2-135m"), 128, by="template")
    rainy, lookup = table["wx_rainy_days"], table["entity_field"]
    assert rainy["tasks"] > 0 and lookup["tasks"] > 0
    # find_rainy_days puts its count after the list of days: the plain cut drops it, the json cut names it
    assert rainy["uncut"] == rainy["json"] == rainy["tasks"] and rainy["tail"] < rainy["tasks"]
    assert lookup["json"] <= lookup["uncut"] == lookup["tasks"]
