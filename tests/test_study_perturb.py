"""The perturbation sampler (``toolkit.study.perturb``): deterministic, and the gold trajectory untouched."""

from toolkit.study.examples import example_gold, helpdesk_task
from toolkit.study.perturb import PERTURBATIONS, perturb, sample_group


def test_perturbation_sampler_is_deterministic_and_keeps_gold_intact():
    import random

    task = helpdesk_task()
    gold = example_gold(task)
    a = sample_group(task, gold, 6, random.Random(7))
    b = sample_group(task, gold, 6, random.Random(7))
    assert [t.to_dict() for t in a] == [t.to_dict() for t in b]
    assert gold.to_dict() == example_gold(task).to_dict()
    for name in PERTURBATIONS:  # each edit runs and leaves a valid record
        perturb(task, gold, [name], seed=0).to_dict()
    assert perturb(task, gold, ["drop_call"], seed=0).state_diff in ({}, gold.state_diff)
