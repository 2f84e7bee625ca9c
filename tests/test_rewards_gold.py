"""End to end: synthesized tasks, gold calls executed in real episodes, every programmatic reward gives
full marks; and a perturbed trajectory re-executed for real loses them."""

import pytest

from toolkit.rewards import get_reward
from toolkit.rewards.perturb import perturb

NAMES = ["rubric", "atlas", "prove", "graduated", "toolrl"]


@pytest.fixture(scope="module")
def synthesized():
    from toolkit.synth.config import SynthConfig
    from toolkit.synth.generate import generate

    res = generate(SynthConfig(n_train=16, n_eval=0, seed=5, max_calls=4))
    assert res.train, "synthesis produced no tasks"
    return res.train


@pytest.mark.integration
def test_gold_replay_gets_full_marks_from_every_reward(synthesized):
    from toolkit.rewards.replay import replay_gold

    rewards = [get_reward(n) for n in NAMES]
    for task in synthesized:
        traj = replay_gold(task)
        assert all(c.ok for c in traj.calls), (task.id, [c.error for c in traj.calls])
        for r in rewards:
            res = r(task, traj)
            assert res.score == pytest.approx(r.range[1]), (task.id, r.name, res.breakdown, res.details)


@pytest.mark.integration
def test_reexecuted_perturbation_loses_marks(synthesized):
    from toolkit.rewards.replay import reexecute, replay_gold

    task = next(t for t in synthesized if len(t.gold) >= 2)
    gold = replay_gold(task)
    bad = reexecute(task, perturb(task, gold, ["drop_call", "hallucinated_tool"], seed=0))
    unknown = [c for c in bad.calls if c.name == "lookup_everything"]
    assert unknown and not unknown[0].ok and unknown[0].error.startswith("unknown_tool")
    for name in ["prove", "graduated", "toolrl"]:
        r = get_reward(name)
        assert r(task, bad).score < r.range[1]
