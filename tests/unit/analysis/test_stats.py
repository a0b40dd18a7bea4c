"""Statistics over repetitions: known inputs, known answers."""

from __future__ import annotations

import pytest

from clusterbench.analysis.stats import compare, cv, cv_flag, median, median_ci, mwu_p, welch_p


def test_median() -> None:
    assert median([3, 1, 2]) == 2
    assert median([4, 1, 3, 2]) == 2.5
    with pytest.raises(ValueError):
        median([])


def test_median_ci_order_statistics_n10() -> None:
    # P(Binom(10, .5) <= 1) = 11/1024 -> j = 2: [x(2), x(9)], coverage 1 - 22/1024
    ci = median_ci([10, 1, 9, 2, 8, 3, 7, 4, 6, 5])
    assert (ci.median, ci.low, ci.high, ci.n) == (5.5, 2, 9, 10)
    assert ci.coverage == pytest.approx(1 - 22 / 1024)


def test_median_ci_n6_is_min_max_at_96_9_percent() -> None:
    ci = median_ci([5, 1, 4, 2, 6, 3])
    assert (ci.low, ci.high) == (1, 6)
    assert ci.coverage == pytest.approx(1 - 2 / 64)


def test_median_ci_small_n_reports_real_coverage() -> None:
    ci = median_ci([100.0, 110.0])
    assert (ci.median, ci.low, ci.high) == (105.0, 100.0, 110.0)
    assert ci.coverage == 0.5
    assert median_ci([7.0]).coverage == 0.0
    assert median_ci([1, 2, 3, 4, 5]).coverage == pytest.approx(0.9375)


def test_cv_and_flag() -> None:
    assert cv([10, 10, 10]) == 0
    assert cv([9, 11]) == pytest.approx(2**0.5 / 10)
    assert cv([5]) is None
    assert cv_flag([9, 11], 0.10) is True  # 14.1 %
    assert cv_flag([99, 101], 0.10) is False


def test_welch_known_p() -> None:
    # t = -9/sqrt(2/3) ... scipy reference value
    assert welch_p([100, 102, 101], [110, 111, 109]) == pytest.approx(3.8507e-4, rel=1e-3)
    assert welch_p([1], [2, 3]) is None
    assert welch_p([5, 5], [5, 5]) == 1.0


def test_mann_whitney_known_p() -> None:
    # complete separation of 3 vs 3: exact two-sided p = 2 / C(6, 3) = 0.1
    assert mwu_p([1, 2, 3], [4, 5, 6]) == pytest.approx(0.1)
    # 5 vs 5 separated: 2 / 252
    assert mwu_p([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)


def test_compare_verdicts() -> None:
    c = compare([100, 102, 101], [110, 111, 109])
    assert c.change == pytest.approx(9 / 101)
    assert c.verdict() == "faster"
    assert compare([110, 111, 109], [100, 102, 101]).verdict() == "slower"
    assert compare([100, 120, 90], [101, 119, 95]).verdict() == "no significant difference"
    # with Mann-Whitney, 3 vs 3 can never reach p < 0.05
    assert compare([100, 102, 101], [110, 111, 109], test="mwu").verdict() == "no significant difference"
    # latency: lower is better
    assert compare([10, 11, 10.5], [20, 21, 20.5]).verdict(higher_is_better=False) == "slower"
