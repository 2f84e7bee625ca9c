"""The `prove` synthesis preset realises PROVE's mix (PROVE, arXiv 2606.03892, section 3.1)."""

import pytest

from toolkit.records import GoldCall, Task
from toolkit.synth.config import make_config
from toolkit.synth.prove_mix import drop_call_set_duplicates, info_level, quotas
from toolkit.toolbox import strip_enums


@pytest.fixture(scope="module")
def prove_tasks():
    from toolkit.synth.generate import default_env, generate

    res = generate(make_config("prove", n_train=200, n_eval=0, seed=3))
    return res, default_env()[1]


def test_realised_shares_are_within_five_points_of_the_published_mix(prove_tasks):
    res, specs = prove_tasks
    tasks = res.train
    assert len(tasks) == 200
    mix = res.summary["splits"]["train"]["prove_mix"]["realised"]
    relevant = mix["information_level_of_relevant"]
    assert relevant["complete"] == pytest.approx(0.6, abs=0.05)
    assert relevant["missing_required"] == pytest.approx(0.2, abs=0.05)
    assert relevant["minimal"] == pytest.approx(0.2, abs=0.05)
    assert mix["abstain"] == pytest.approx(0.05, abs=0.05) and mix["abstain"] > 0
    assert mix["with_distractors"] == pytest.approx(0.4, abs=0.05)
    assert mix["enum_stripped"] == pytest.approx(0.3, abs=0.05)
    for t in tasks:  # distractors: 3-8, never from a server the task needs
        d = [x for x in t.tools if x not in t.metadata["needed_tools"]]
        assert not d or 3 <= len(d) <= 8
        assert not {specs[x].server for x in d} & set(t.metadata["needed_servers"])
        assert set(t.servers) >= {specs[x].server for x in t.tools}


def test_other_presets_do_not_use_the_mix():
    assert make_config("cpu").mix is None and make_config("default").mix is None
    with pytest.raises(ValueError, match="unknown synth mix"):
        make_config("default", mix="other")


def test_levels_quotas_and_call_set_dedup():
    def task(kind, gold):
        return Task("t", "train", "p", [], [], 0, gold=gold, metadata={"kind": kind})

    a, b = GoldCall("view", {"id": 1}), GoldCall("update", {"id": 1}, depends_on=[0])
    assert info_level(task("lookup", [a])) == "complete"
    assert info_level(task("chain", [a, b])) == "minimal"
    assert info_level(task("clarify", [])) == "missing_required"
    assert info_level(task("abstain", [])) == "abstain"
    assert quotas(100) == {"abstain": 5, "complete": 57, "missing_required": 19, "minimal": 19}
    assert sum(quotas(33).values()) == 33
    c = GoldCall("view", {"id": 2})
    # {a, b} vs {a, b, c}: Jaccard 2/3 < 0.7 kept; {a, b} again: 1.0 dropped; no-call tasks kept
    kept, dropped = drop_call_set_duplicates(
        [task("chain", [a, b]), task("chain", [a, b, c]), task("chain", [a, b]), task("clarify", [])], 0.7
    )
    assert dropped == 1 and len(kept) == 3


def test_strip_enums_removes_every_enum_list():
    schema = {
        "type": "object",
        "properties": {"tier": {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}]}},
        "$defs": {"Team": {"enum": ["x"], "type": "string"}},
    }
    out = strip_enums(schema)
    assert out["properties"]["tier"]["anyOf"][0] == {"type": "string"}
    assert out["$defs"]["Team"] == {"type": "string"} and "enum" in schema["$defs"]["Team"]


def test_the_agent_loop_hides_enum_lists_on_marked_tasks():
    from toolkit.agent.loop import RolloutConfig, rollout
    from toolkit.agent.policies import GoldPolicy
    from toolkit.synth.prove_mix import has_enum

    def shown(strip):
        task = Task("e", "eval", "Change a tier.", ["crm"], ["update_company"], 0)
        task.metadata["strip_enums"] = strip
        traj = rollout([task], GoldPolicy(), RolloutConfig(max_turns=2))[0]
        return [t for t in traj.metadata["tools"] if t["function"]["name"] == "update_company"][0]

    assert has_enum(shown(False)) and not has_enum(shown(True))
