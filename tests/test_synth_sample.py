"""The committed sample in data/tasks: it regenerates from its command, and the gold policy scores
full marks on it under the programmatic rubric reward."""

from __future__ import annotations

import json

from toolkit.paths import DATA_DIR
from toolkit.records import Task, read_jsonl
from toolkit.synth.config import make_config
from toolkit.synth.generate import generate

SAMPLE = DATA_DIR / "tasks"


def _head(path, n: int) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(next(fh)) for _ in range(n)]


def test_sample_regenerates_from_its_command():
    # docs/guide.md: mcp-rl synth --n 2000 --n-eval 300 --seed 0 --out data/tasks. A shorter run with the same
    # seed is a prefix of the longer one, so a slice regenerates cheaply.
    summary = json.loads((SAMPLE / "summary.json").read_text())
    assert summary["config"] == make_config("default", n_train=2000, n_eval=300, seed=0).to_dict()
    result = generate(make_config("default", n_train=40, n_eval=10, seed=0))
    assert result.summary["env"] == summary["env"], (
        "the tool library changed since data/tasks was generated: regenerate it with "
        "`mcp-rl synth --n 2000 --n-eval 300 --seed 0 --out data/tasks` (see data/tasks/README.md)"
    )
    assert [t.to_dict() for t in result.train] == _head(SAMPLE / "train.jsonl", 40)
    assert [t.to_dict() for t in result.eval] == _head(SAMPLE / "eval.jsonl", 10)


def test_sample_sizes_and_split_separation():
    train, eval_ = read_jsonl(SAMPLE / "train.jsonl", Task), read_jsonl(SAMPLE / "eval.jsonl", Task)
    assert len(train) == 2000 and len(eval_) == 300
    assert not {t.seed for t in train} & {t.seed for t in eval_}
    assert all(t.metadata["held_out"] for t in eval_)
    short = sum(len(t.gold) <= 2 for t in train) / len(train)
    assert short > 0.6


def test_gold_policy_scores_full_marks_on_the_sample():
    from toolkit.agent.loop import rollout
    from toolkit.agent.policies import make_policy
    from toolkit.rewards import rubric

    tasks = read_jsonl(SAMPLE / "train.jsonl", Task)[:24] + read_jsonl(SAMPLE / "eval.jsonl", Task)[:12]
    results = rubric.RubricReward().batch(tasks, rollout(tasks, make_policy("gold")))
    low = [(t.id, r.score) for t, r in zip(tasks, results, strict=True) if r.score < 1.0]
    assert not low


def test_every_gold_dependency_is_an_edge_of_the_graph():
    from toolkit.synth.library import library_graph

    graph = library_graph()
    missing = set()
    for name in ("train.jsonl", "eval.jsonl"):
        for task in read_jsonl(SAMPLE / name, Task):
            for call in task.gold:
                for j in call.depends_on:
                    producer = task.gold[j].name
                    if producer != call.name and not graph.has_edge(producer, call.name):
                        missing.add((producer, call.name))
    assert not missing, f"gold dependencies the graph does not know: {sorted(missing)}"
