"""End to end: synthesized tasks, gold calls executed in real episodes, every programmatic reward gives
full marks; and a perturbed trajectory re-executed for real loses them."""

import pytest

from toolkit.rewards import get_reward
from toolkit.study.perturb import perturb

NAMES = ["rubric", "atlas", "prove", "graduated", "toolrl"]


def best(reward, task):
    """The top score on this task: published PROVE gives 1.3 with gold calls, 1.0 on abstention."""
    return 1.0 if reward.name == "prove" and not task.gold else reward.range[1]


@pytest.fixture(scope="module")
def synthesized():
    from toolkit.synth.config import SynthConfig
    from toolkit.synth.generate import generate

    res = generate(SynthConfig(n_train=10, n_eval=0, seed=5, max_calls=4))
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
            assert res.score == pytest.approx(best(r, task)), (task.id, r.name, res.breakdown, res.details)


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


@pytest.mark.integration
def test_bfcl_gold_replay_gets_full_marks_including_bfcl_checker():
    from toolkit.rewards.replay import replay_gold
    from toolkit.synth.bfcl_tasks import load_bfcl_tasks

    rewards = [get_reward(n) for n in [*NAMES, "bfcl"]]
    for task in load_bfcl_tasks("base", limit=3):
        traj = replay_gold(task)
        assert len(traj.turn_answers) == 1 + len(task.followups)
        for r in rewards:
            res = r(task, traj)
            assert res.score == pytest.approx(best(r, task)), (task.id, r.name, res.breakdown, res.details)


def test_plain_callable_rewards_are_wrapped():
    from toolkit.records import RewardResult
    from toolkit.rewards import as_reward, as_trl_reward_func, combine
    from toolkit.study.examples import example_gold, helpdesk_task

    class Const:  # another area's reward: a callable with name and range, no batch
        name, range = "const", (0.0, 2.0)

        def __call__(self, task, traj):
            return RewardResult(2.0, {"c": 2.0})

    task = helpdesk_task()
    wrapped = as_reward(Const())
    assert wrapped.name == "const" and wrapped.range == (0.0, 2.0)
    assert [r.score for r in wrapped.batch([task], [example_gold(task)])] == [2.0]
    mix = combine([(Const(), 0.5), (get_reward("rubric"), 1.0)])
    assert mix(task, example_gold(task)).score == pytest.approx(0.5 * 2 + 1.0)
    fn = as_trl_reward_func(Const())
    assert fn.__name__ == "reward_const"
    assert fn(
        prompts=[1], completions=[1], task=[task.to_dict()], trajectory=[example_gold(task).to_dict()]
    ) == [2.0]
