"""BFCL v4 multi-turn entries as tasks: every ground truth parses, turns, tools, split."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from toolkit.envs.bfcl import parse_call, tool_names
from toolkit.records import Task
from toolkit.synth.bfcl_tasks import (
    ADDED_FUNCTIONS_PROMPT,
    BFCL_CATEGORIES,
    gold_by_turn,
    load_bfcl_tasks,
    split_of,
    tools_at_turn,
    turn_prompts,
)


@pytest.mark.parametrize("category", BFCL_CATEGORIES)
def test_every_ground_truth_of_the_category_parses_into_gold_calls(category):
    tasks = load_bfcl_tasks(category)
    assert len(tasks) == 200
    assert len({t.id for t in tasks}) == 200
    for task in tasks:
        meta = task.metadata["bfcl"]
        ground_truth = meta["ground_truth"]
        assert len(turn_prompts(task)) == len(ground_truth) == task.metadata["n_turns"]
        # one GoldCall per ground-truth string, in order, with its turn and values
        strings = [(turn, s) for turn, calls in enumerate(ground_truth) for s in calls]
        assert len(task.gold) == len(strings)
        for gold, (turn, text) in zip(task.gold, strings, strict=True):
            assert gold.turn == turn
            assert parse_call(text) == (gold.name, gold.arguments)
            assert gold.name in task.tools
            assert all(d < task.gold.index(gold) for d in gold.depends_on)
        assert task.servers and set(task.tools) == {
            n for cls in meta["involved_classes"] for n in tool_names(cls)
        }
        assert meta["category"] == category and meta["id"] == task.id
        assert meta["long_context"] is (category == "long_context")
        assert len(task.rubric) == len(task.gold)


def test_miss_func_holds_tools_back_until_their_turn():
    task = next(t for t in load_bfcl_tasks("miss_func") if t.id == "multi_turn_miss_func_0")
    assert task.metadata["bfcl"]["missed_function"] == {"3": ["sort"]}
    assert "sort" in task.tools  # routed by the episode from the start ...
    assert "sort" not in tools_at_turn(task, 2)  # ... but offered to the model only from turn 3
    assert "sort" in tools_at_turn(task, 3)
    assert task.followups[2] == ADDED_FUNCTIONS_PROMPT  # turn 3 has no user message in BFCL
    assert [g.name for g in gold_by_turn(task)[3]] == ["sort"]
    assert gold_by_turn(task)[2] == []


def test_tasks_round_trip_through_json():
    for category in BFCL_CATEGORIES:
        task = load_bfcl_tasks(category, limit=1)[0]
        again = Task.from_dict(json.loads(json.dumps(task.to_dict())))
        assert again == task


def test_split_is_deterministic_shared_across_categories_and_about_half():
    by_category = {c: {t.id.rsplit("_", 1)[1]: t.split for t in load_bfcl_tasks(c)} for c in BFCL_CATEGORIES}
    assert all(by_category[c] == by_category["base"] for c in BFCL_CATEGORIES)
    counts = Counter(by_category["base"].values())
    assert 70 <= counts["eval"] <= 130 and counts["eval"] + counts["train"] == 200
    assert split_of("multi_turn_base_17") == split_of("multi_turn_long_context_17")

    train = load_bfcl_tasks("base", split="train")
    held_out = load_bfcl_tasks("miss_param", split="eval")
    assert {t.split for t in train} == {"train"} and {t.split for t in held_out} == {"eval"}
    assert not {t.id.rsplit("_", 1)[1] for t in train} & {t.id.rsplit("_", 1)[1] for t in held_out}
    first_eval = load_bfcl_tasks("base", 3, split="eval")
    assert [t.id for t in first_eval] == [t.id for t in load_bfcl_tasks("base") if t.split == "eval"][:3]


def test_unknown_category_and_split_are_clear_errors():
    assert len(load_bfcl_tasks("multi_turn_base", limit=2)) == 2
    with pytest.raises(ValueError, match="unknown BFCL multi-turn category"):
        load_bfcl_tasks("multi_turn_composite")
    with pytest.raises(ValueError, match="split"):
        load_bfcl_tasks("base", split="test")


def test_ground_truth_calls_the_loop_would_refuse_are_marked_and_optional():
    quirky = {
        t.id: t for c in BFCL_CATEGORIES for t in load_bfcl_tasks(c) if t.metadata["bfcl"]["gold_quirks"]
    }
    assert sorted(quirky) == sorted(
        [f"multi_turn_{c}_173" for c in ("base", "miss_func", "miss_param", "long_context")]
        + ["multi_turn_miss_func_49"]
    )
    early = quirky["multi_turn_miss_func_49"]
    assert "before it is offered" in early.metadata["bfcl"]["gold_quirks"]["2"]
    assert early.gold[2].name == "tail" and early.rubric[2].essential is False
    typed = quirky["multi_turn_base_173"]
    assert "schema" in typed.metadata["bfcl"]["gold_quirks"]["4"] and typed.gold[4].name == "close_ticket"
    assert [item.essential for item in typed.rubric] == [True, True, True, True, False]


def test_a_bad_line_in_a_bfcl_data_file_names_the_file_and_line(tmp_path, monkeypatch):
    from toolkit.records import RecordError
    from toolkit.synth import bfcl_tasks

    name = "BFCL_v4_multi_turn_base.json"
    (tmp_path / "possible_answer").mkdir()
    (tmp_path / "possible_answer" / name).write_text('{"id": "multi_turn_base_0", "ground_truth": [[]]}\n')
    (tmp_path / name).write_text('{"id": "multi_turn_base_0"}\n\n{"id": "multi_turn_base_1",\n')
    monkeypatch.setattr(bfcl_tasks, "bfcl_data_dir", lambda: tmp_path)
    bfcl_tasks._load_category.cache_clear()  # the real files' entries may be cached already
    try:
        with pytest.raises(RecordError, match=rf"{name}:3: not a valid BFCL entry record"):
            load_bfcl_tasks("base")
    finally:
        bfcl_tasks._load_category.cache_clear()
