"""Agreement statistics of grader calibration (``toolkit.study.calibration``); the judge against the
programmatic grader end to end is in tests/test_rewards_judge.py."""

import pytest

from toolkit.study.calibration import cohen_kappa


def test_cohen_kappa_hand_computed():
    # p_o = 3/4; p_a = 1/2, p_b = 1/4 -> p_e = 1/8 + 3/8 = 1/2 -> kappa = (3/4 - 1/2) / (1/2) = 1/2
    assert cohen_kappa([True, True, False, False], [True, False, False, False]) == pytest.approx(0.5)
    assert cohen_kappa([True, False], [False, True]) == pytest.approx(-1.0)
    assert cohen_kappa([True, True], [True, True]) == 1.0
